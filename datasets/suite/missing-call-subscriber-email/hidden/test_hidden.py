import pytest

from mailing.subscribers import domain_counts, merge_lists, normalize_email


def test_normalize_lowercases():
    assert normalize_email(" Bo@Mail.COM ") == "bo@mail.com"


def test_normalize_lowercase_input_unchanged():
    assert normalize_email("cy@site.net") == "cy@site.net"


def test_merge_keeps_first_occurrence_order():
    merged, _ = merge_lists(["Zed@a.io", "amy@a.io"], ["ZED@A.IO", "bob@a.io"])
    assert merged == ["zed@a.io", "amy@a.io", "bob@a.io"]


def test_domain_counts_case_insensitive():
    assert domain_counts(["a@X.org", "b@x.org", "c@y.org"]) == [("x.org", 2), ("y.org", 1)]


def test_missing_domain_dot_rejected():
    with pytest.raises(ValueError):
        normalize_email("root@localhost")


def test_rejected_keep_raw_spelling():
    _, rejected = merge_lists(["Bad Address@x.io", "ok@x.io"])
    assert rejected == ["Bad Address@x.io"]
