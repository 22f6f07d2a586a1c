from uploads.filenames import is_allowed, safe_name, split_extension, unique_names


def test_simple_extension():
    assert split_extension("photo.PNG") == ("photo", "png")


def test_no_extension():
    assert split_extension("Makefile") == ("Makefile", "")


def test_dotfile_has_no_extension():
    assert split_extension(".env") == (".env", "")


def test_extension_is_the_last_suffix():
    assert split_extension("report.final.pdf") == ("report.final", "pdf")


def test_is_allowed():
    assert is_allowed("cv.pdf")
    assert not is_allowed("run.exe")


def test_safe_name():
    assert safe_name("my holiday pic!.JPG") == "my_holiday_pic.jpg"
