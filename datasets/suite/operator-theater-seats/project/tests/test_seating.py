from boxoffice.seating import best_pair, empty_hall, free_seats, seat_label


def test_seat_label():
    assert seat_label(2, 6) == "C7"


def test_best_pair_in_empty_hall():
    assert best_pair(empty_hall(3, 4)) == ("A1", "A2")


def test_free_seats_small_hall():
    hall = empty_hall(2, 3)
    hall[0][1] = True
    assert free_seats(hall) == ["A1", "A3", "B1", "B2", "B3"]


def test_sold_out():
    assert free_seats([[True, True]]) == []
