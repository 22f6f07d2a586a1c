import pytest

from mailing.subscribers import domain_counts, merge_lists, normalize_email


def test_normalize_trims():
    assert normalize_email("  ana@example.org\n") == "ana@example.org"


def test_normalize_rejects_garbage():
    with pytest.raises(ValueError):
        normalize_email("not an address")


def test_merge_drops_exact_duplicates():
    merged, rejected = merge_lists(["a@x.io", "b@x.io"], ["a@x.io", "oops"])
    assert merged == ["a@x.io", "b@x.io"]
    assert rejected == ["oops"]


def test_merge_is_case_insensitive():
    merged, _ = merge_lists(["Ana@Example.org"], ["ana@example.org", "ANA@EXAMPLE.ORG"])
    assert len(merged) == 1
