import pytest

from mailer.attachments import check_sizes, is_inline, mime_type


def test_pdf():
    assert mime_type("invoice.pdf") == "application/pdf"


def test_inline_image():
    assert is_inline("logo.PNG")


def test_size_ok():
    assert check_sizes([("a.pdf", 1000), ("b.png", 2000)]) == 3000


def test_size_limit():
    with pytest.raises(ValueError):
        check_sizes([("big.iso", 11 * 1024 * 1024)])


def test_empty_name_is_not_inline():
    assert not is_inline("")
