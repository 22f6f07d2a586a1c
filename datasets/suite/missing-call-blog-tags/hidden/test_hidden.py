from blog.tags import all_tags, tag_cloud


def test_no_posts():
    assert all_tags([]) == []


def test_blank_tags_ignored():
    assert all_tags([{"title": "a", "tags": [" ", "--", "ok"]}]) == ["ok"]


def test_result_is_a_list():
    assert isinstance(all_tags([{"title": "a", "tags": ["x"]}]), list)


def test_many_tags_sorted():
    names = ["kiwi", "apple", "mango", "fig", "banana", "cherry", "date", "lime", "grape"]
    assert all_tags([{"title": "t", "tags": names}]) == sorted(names)


def test_digits_sort_before_letters():
    assert all_tags([{"title": "t", "tags": ["web", "3d", "api", "2024"]}]) == [
        "2024", "3d", "api", "web"]


def test_tag_cloud_all():
    posts = [{"title": "a", "tags": ["Go", "rust"]}, {"title": "b", "tags": ["rust", "c"]}]
    assert tag_cloud(posts) == [("c", 1), ("go", 1), ("rust", 2)]
