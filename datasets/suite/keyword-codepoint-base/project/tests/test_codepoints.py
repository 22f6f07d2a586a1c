import pytest

from charmap.codepoints import describe, expand, from_notation, to_notation


def test_to_notation():
    assert to_notation("é") == "U+00E9"


def test_describe():
    assert describe("A") == "U+0041 LATIN CAPITAL LETTER A"


def test_from_notation_letter():
    assert from_notation("U+0041") == "A"


def test_malformed():
    with pytest.raises(ValueError):
        from_notation("0041")


def test_expand_template():
    assert expand("caf{U+00E9}") == "café"
