import pytest

from listing.pagination import page_count, page_items, page_links


def test_exact_pages():
    assert page_count(100, 25) == 4


def test_empty_list_has_one_page():
    assert page_count(0, 20) == 1


def test_invalid_page_size():
    with pytest.raises(ValueError):
        page_count(10, 0)


def test_last_partial_page():
    items = list(range(23))
    assert page_items(items, 3, 10) == [20, 21, 22]


def test_links_around_current():
    assert page_links(5, 200, 20) == [1, 3, 4, 5, 6, 7, 10]
