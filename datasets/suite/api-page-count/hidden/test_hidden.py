import pytest

from listing.pagination import page_count, page_items, page_links, page_slice


@pytest.mark.parametrize("total,per_page,expected", [
    (1, 10, 1), (9, 10, 1), (10, 10, 1), (11, 10, 2), (19, 10, 2),
    (20, 10, 2), (21, 10, 3), (7, 1, 7), (1000, 3, 334),
])
def test_page_count(total, per_page, expected):
    assert page_count(total, per_page) == expected


def test_beyond_last_page_rejected():
    with pytest.raises(ValueError):
        page_slice(4, 30, 10)


def test_single_item_page():
    assert page_items(["a"], 1, 50) == ["a"]


def test_links_include_partial_last_page():
    assert page_links(1, 41, 10) == [1, 2, 3, 5]
