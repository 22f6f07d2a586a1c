"""Build the front-page feed of a small news site."""
from datetime import datetime


def _published(article):
    return datetime.fromisoformat(article["published"])


def latest(articles, limit=5):
    """The `limit` most recently published articles, newest first.
    Drafts (no 'published' key) are never shown."""
    live = [a for a in articles if a.get("published")]
    ordered = sorted(live, key=_published)
    return ordered[:limit]


def headlines(articles, limit=5):
    """'YYYY-MM-DD  Title' lines for the front page."""
    return [f"{_published(a):%Y-%m-%d}  {a['title']}" for a in latest(articles, limit)]


def by_section(articles):
    """Section name -> number of published articles."""
    counts = {}
    for article in articles:
        if article.get("published"):
            counts[article["section"]] = counts.get(article["section"], 0) + 1
    return counts
