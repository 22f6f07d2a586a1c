from ridefare.fare import fare


def test_night_ride():
    assert fare(10, tariff="night") == 30.5


def test_waiting_time():
    assert fare(5, wait_minutes=10) == 18.0


def test_long_ride():
    assert fare(42.5) == 88.0


def test_night_short():
    assert fare(1.0, tariff="night") == 7.1


def test_minimum_with_wait():
    assert fare(0, wait_minutes=4) == 7.0
