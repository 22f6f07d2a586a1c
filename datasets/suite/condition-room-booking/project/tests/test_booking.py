import pytest

from rooms.booking import Booking, Calendar, clashes


def test_invalid_booking():
    with pytest.raises(ValueError):
        Booking("A", 600, 600)


def test_back_to_back_is_fine():
    assert not clashes(Booking("A", 540, 600), Booking("A", 600, 660))


def test_other_room_never_clashes():
    assert not clashes(Booking("A", 540, 600), Booking("B", 540, 600))


def test_partial_overlap_is_refused():
    cal = Calendar()
    assert cal.book(Booking("A", 540, 600, "ann"))
    assert not cal.book(Booking("A", 570, 630, "bob"))


def test_free_slots():
    cal = Calendar()
    cal.book(Booking("A", 540, 600))
    cal.book(Booking("A", 720, 780))
    assert cal.free_slots("A") == [(480, 540), (600, 720), (780, 1080)]
