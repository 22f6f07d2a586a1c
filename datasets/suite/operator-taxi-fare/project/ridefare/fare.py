"""Taxi fare calculation: a base fare plus distance and waiting-time charges."""

TARIFFS = {
    "day": {"base": 3.0, "per_km": 2.0, "per_min_wait": 0.5},
    "night": {"base": 4.5, "per_km": 2.6, "per_min_wait": 0.6},
}
MINIMUM_FARE = 7.0


def fare(km, wait_minutes=0, tariff="day"):
    """Fare in euros: base + per_km * km + per_min_wait * wait_minutes, at least
    MINIMUM_FARE, rounded to ten cents."""
    t = TARIFFS[tariff]
    amount = t["base"] * t["per_km"] * km + t["per_min_wait"] * wait_minutes
    return round(max(amount, MINIMUM_FARE), 1)


def split(total, people):
    """Each person's share, rounded up to the next ten cents."""
    if people < 1:
        raise ValueError("need at least one person")
    share = -(-round(total * 100) // people)
    return -(-share // 10) / 10
