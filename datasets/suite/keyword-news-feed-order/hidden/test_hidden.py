from newsfeed.feed import headlines, latest


def art(title, when):
    return {"title": title, "section": "x", "published": when}


FEED = [art(f"t{i}", f"2024-01-{i:02d}T12:00:00") for i in (5, 1, 9, 3, 7, 2, 8)]


def test_limit_keeps_the_newest():
    assert [a["title"] for a in latest(FEED, limit=3)] == ["t9", "t8", "t7"]


def test_all_newest_first():
    assert [a["title"] for a in latest(FEED, limit=10)] == ["t9", "t8", "t7", "t5", "t3", "t2", "t1"]


def test_same_day_by_time():
    feed = [art("morning", "2024-02-01T08:00:00"), art("evening", "2024-02-01T20:00:00")]
    assert [a["title"] for a in latest(feed)] == ["evening", "morning"]


def test_default_limit_is_five():
    assert len(latest(FEED)) == 5 and latest(FEED)[-1]["title"] == "t3"


def test_headlines_order():
    assert headlines(FEED, limit=2) == ["2024-01-09  t9", "2024-01-08  t8"]


def test_empty_feed():
    assert latest([]) == []
