from uploads.filenames import is_allowed, safe_name, split_extension, unique_names


def test_tarball():
    assert split_extension("backup.tar.gz") == ("backup.tar", "gz")


def test_dotfile_with_extension():
    assert split_extension(".config.yaml") == (".config", "yaml")


def test_disguised_executable_rejected():
    assert not is_allowed("invoice.pdf.exe")


def test_double_extension_allowed_by_last():
    assert is_allowed("site.v2.backup.gz")


def test_trailing_dot():
    assert split_extension("notes.") == ("notes", "")


def test_safe_name_keeps_inner_dots():
    assert safe_name("Q1 report.v2.PDF") == "Q1_report.v2.pdf"


def test_unique_names_with_dotted_stem():
    assert unique_names(["a.b.png", "a.b.png", "c"]) == ["a.b.png", "a.b (2).png", "c"]


def test_plain_name():
    assert split_extension("README") == ("README", "")
