from mailer.attachments import is_inline, mime_type


def test_unknown_extension():
    assert mime_type("setup.exe") == "application/octet-stream"


def test_no_extension():
    assert mime_type("README") == "application/octet-stream"


def test_uppercase_extension():
    assert mime_type("SCAN.JPEG") == "image/jpeg"


def test_dotted_name():
    assert mime_type("report.2024.csv") == "text/csv"


def test_path_with_dotted_folder():
    assert mime_type("/home/ann/v1.2/notes.txt") == "text/plain"


def test_pdf_not_inline():
    assert not is_inline("a.pdf")


def test_dotfile():
    assert mime_type(".png") == "application/octet-stream"
