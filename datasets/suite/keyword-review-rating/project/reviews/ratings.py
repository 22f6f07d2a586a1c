"""Star ratings for a product catalogue (1 to 5 stars)."""
from collections import Counter


def validate(stars):
    if stars not in (1, 2, 3, 4, 5):
        raise ValueError(f"rating must be 1-5 stars, got {stars!r}")
    return stars


def average(ratings):
    """Mean rating shown on product pages, to one decimal; None without ratings."""
    if not ratings:
        return None
    mean = sum(validate(r) for r in ratings) / len(ratings)
    return round(mean)


def distribution(ratings):
    """Share of each star value in percent (integers), 5 stars first."""
    counts = Counter(ratings)
    total = len(ratings) or 1
    return {stars: round(100 * counts[stars] / total) for stars in (5, 4, 3, 2, 1)}


def badge(ratings, min_reviews=10):
    """'top rated' for well-reviewed products with an average of 4.5 or better."""
    avg = average(ratings)
    if avg is not None and len(ratings) >= min_reviews and avg >= 4.5:
        return "top rated"
    return ""
