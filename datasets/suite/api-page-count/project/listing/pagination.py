"""Pagination for list views (pages are numbered from 1)."""
import math


def page_count(total, per_page):
    """Number of pages needed to show `total` items; an empty list still has one page."""
    if per_page <= 0:
        raise ValueError("per_page must be positive")
    if total <= 0:
        return 1
    return math.floor(total / per_page)


def page_slice(page, total, per_page):
    """Return (start, stop) indexes of the items shown on `page`."""
    pages = page_count(total, per_page)
    if not 1 <= page <= pages:
        raise ValueError(f"page {page} out of range 1..{pages}")
    start = (page - 1) * per_page
    return start, min(start + per_page, total)


def page_items(items, page, per_page):
    """The items shown on `page`."""
    start, stop = page_slice(page, len(items), per_page)
    return items[start:stop]


def page_links(current, total, per_page, window=2):
    """Page numbers to link to: first, last, and `window` pages around `current`."""
    pages = page_count(total, per_page)
    links = {1, pages}
    for p in range(current - window, current + window + 1):
        if 1 <= p <= pages:
            links.add(p)
    return sorted(links)
