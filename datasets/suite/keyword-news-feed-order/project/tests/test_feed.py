from newsfeed.feed import by_section, headlines, latest

ARTICLES = [
    {"title": "Budget passes", "section": "politics", "published": "2024-03-02T09:00:00"},
    {"title": "Derby tonight", "section": "sports", "published": "2024-03-04T18:30:00"},
    {"title": "Draft", "section": "sports"},
    {"title": "Rain again", "section": "weather", "published": "2024-03-03T07:15:00"},
]


def test_drafts_are_hidden():
    assert all(a["title"] != "Draft" for a in latest(ARTICLES))


def test_newest_first():
    assert [a["title"] for a in latest(ARTICLES)] == ["Derby tonight", "Rain again", "Budget passes"]


def test_headlines_limit():
    assert headlines(ARTICLES, limit=1) == ["2024-03-04  Derby tonight"]


def test_by_section():
    assert by_section(ARTICLES) == {"politics": 1, "sports": 1, "weather": 1}
