from boxoffice.seating import best_pair, empty_hall, free_seats


def test_single_row():
    assert free_seats([[False, True, False, False]]) == ["A1", "A3", "A4"]


def test_wide_hall_count():
    assert len(set(free_seats(empty_hall(3, 10)))) == 30


def test_last_seat():
    hall = [[True] * 5, [True] * 4 + [False]]
    assert free_seats(hall) == ["B5"]


def test_best_pair_skips_single_gaps():
    hall = [[False, True, False, True], [True, False, False, True]]
    assert best_pair(hall) == ("B2", "B3")


def test_no_pair():
    assert best_pair([[False, True, False]]) is None
