from rooms.booking import Booking, Calendar, clashes


def test_overlap_at_start():
    assert clashes(Booking("R", 600, 700), Booking("R", 550, 650))


def test_overlap_at_end():
    assert clashes(Booking("R", 600, 700), Booking("R", 650, 750))


def test_contained():
    assert clashes(Booking("R", 600, 700), Booking("R", 620, 640))


def test_containing():
    assert clashes(Booking("R", 620, 640), Booking("R", 600, 700))


def test_identical():
    assert clashes(Booking("R", 600, 700), Booking("R", 600, 700))


def test_before_without_gap():
    assert not clashes(Booking("R", 600, 700), Booking("R", 500, 600))


def test_far_apart():
    assert not clashes(Booking("R", 600, 700), Booking("R", 800, 900))


def test_calendar_refuses_same_slot():
    cal = Calendar()
    assert cal.book(Booking("R", 600, 660))
    assert not cal.book(Booking("R", 600, 660))
    assert len(cal.bookings) == 1
