from netfiles.hosts import lookup, parse_hosts


def test_whitespace_only_line():
    assert parse_hosts("10.0.0.1 a\n   \t\n10.0.0.2 b") == [("10.0.0.1", ["a"]), ("10.0.0.2", ["b"])]


def test_crlf_file():
    assert parse_hosts("10.0.0.1 a\r\n\r\n") == [("10.0.0.1", ["a"])]


def test_trailing_space_after_comment_strip():
    assert lookup("10.1.1.1 db  # primary\n \n", "db") == ["10.1.1.1"]


def test_tab_separated():
    assert parse_hosts("\t10.0.0.3\tweb\twww\n") == [("10.0.0.3", ["web", "www"])]


def test_empty_file():
    assert parse_hosts("") == []


def test_unknown_name():
    assert lookup("10.0.0.1 a\n", "b") == []
