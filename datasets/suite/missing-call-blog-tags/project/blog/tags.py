"""Tag handling for a static blog generator."""
import re

_NON_WORD = re.compile(r"[^a-z0-9]+")


def normalize_tag(tag):
    """'Machine Learning ' -> 'machine-learning'."""
    return _NON_WORD.sub("-", tag.strip().lower()).strip("-")


def all_tags(posts):
    """Alphabetical list of the distinct (normalised) tags used by the posts."""
    tags = set()
    for post in posts:
        for tag in post.get("tags", ()):
            tag = normalize_tag(tag)
            if tag:
                tags.add(tag)
    return tags


def posts_by_tag(posts):
    """Map each normalised tag to the titles of its posts, in post order."""
    index = {}
    for post in posts:
        for tag in {normalize_tag(t) for t in post.get("tags", ())} - {""}:
            index.setdefault(tag, []).append(post["title"])
    return index


def tag_cloud(posts, min_count=1):
    """(tag, count) pairs for tags used at least min_count times, alphabetical."""
    index = posts_by_tag(posts)
    return [(tag, len(index[tag])) for tag in all_tags(posts) if len(index[tag]) >= min_count]
