from blog.tags import all_tags, normalize_tag, posts_by_tag, tag_cloud

POSTS = [
    {"title": "Intro", "tags": ["Python", "Beginners"]},
    {"title": "Decorators", "tags": ["python", "Advanced Topics", "metaprogramming"]},
    {"title": "Async IO", "tags": ["python", "concurrency", "advanced topics"]},
    {"title": "Drafts", "tags": []},
    {"title": "Zen", "tags": ["zen", "Design"]},
]


def test_normalize_tag():
    assert normalize_tag("  Machine Learning!") == "machine-learning"


def test_posts_by_tag():
    assert posts_by_tag(POSTS)["python"] == ["Intro", "Decorators", "Async IO"]


def test_all_tags_alphabetical():
    assert all_tags(POSTS) == [
        "advanced-topics", "beginners", "concurrency", "design",
        "metaprogramming", "python", "zen",
    ]


def test_tag_cloud():
    assert tag_cloud(POSTS) == [
        ("advanced-topics", 2), ("beginners", 1), ("concurrency", 1), ("design", 1),
        ("metaprogramming", 1), ("python", 3), ("zen", 1),
    ]
