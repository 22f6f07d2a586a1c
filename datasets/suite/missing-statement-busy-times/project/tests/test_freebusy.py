from scheduler.freebusy import fmt, free_windows, merge_busy


def test_fmt():
    assert fmt(545) == "09:05"


def test_merge_sorted_input():
    assert merge_busy([(540, 600), (590, 660), (700, 720)]) == [(540, 660), (700, 720)]


def test_merge_touching():
    assert merge_busy([(540, 600), (600, 630)]) == [(540, 630)]


def test_merge_two_calendars():
    ann = [(540, 600), (780, 840)]
    bob = [(570, 660)]
    assert merge_busy(ann + bob) == [(540, 660), (780, 840)]


def test_free_windows():
    ann = [(600, 660)]
    bob = [(540, 570), (900, 1020)]
    assert free_windows([ann, bob]) == [(570, 600), (660, 900)]
