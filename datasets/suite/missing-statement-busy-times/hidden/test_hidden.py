from scheduler.freebusy import free_windows, merge_busy


def test_reverse_order():
    assert merge_busy([(700, 720), (600, 650), (500, 550)]) == [(500, 550), (600, 650), (700, 720)]


def test_contained_interval_out_of_order():
    assert merge_busy([(600, 700), (500, 800)]) == [(500, 800)]


def test_chain_out_of_order():
    assert merge_busy([(30, 40), (10, 20), (20, 30)]) == [(10, 40)]


def test_generator_input():
    assert merge_busy(iv for iv in [(5, 6), (1, 2)]) == [(1, 2), (5, 6)]


def test_empty():
    assert merge_busy([]) == []


def test_free_windows_unsorted_calendars():
    assert free_windows([[(900, 960)], [(600, 660)]]) == [(540, 600), (660, 900), (960, 1020)]


def test_fully_booked():
    assert free_windows([[(540, 1020)]]) == []
