import pytest

from charmap.codepoints import expand, from_notation, to_notation


@pytest.mark.parametrize("char", ["a", "Z", "0", "ß", "€", "中", "😀"])
def test_roundtrip(char):
    assert from_notation(to_notation(char)) == char


def test_lowercase_hex():
    assert from_notation("U+00e9") == "é"


def test_digits_only_code_point():
    assert from_notation("U+0030") == "0"


def test_expand_emoji():
    assert expand("ok {U+1F44D}!") == "ok 👍!"


def test_malformed_hex_digit():
    with pytest.raises(ValueError):
        from_notation("U+00G9")
