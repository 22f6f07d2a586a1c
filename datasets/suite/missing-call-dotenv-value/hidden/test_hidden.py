from envfile.dotenv import load, parse_line


def test_quoted_value_after_space():
    assert parse_line('GREETING = "hello world"') == ("GREETING", "hello world")


def test_single_quoted_value_after_space():
    assert parse_line("PASS= 'p=ss word' ") == ("PASS", "p=ss word")


def test_empty_value():
    assert parse_line("EMPTY=") == ("EMPTY", "")


def test_empty_value_with_spaces():
    assert parse_line("EMPTY =   ") == ("EMPTY", "")


def test_inner_spaces_kept():
    assert parse_line("TITLE =  Big   Report  ") == ("TITLE", "Big   Report")


def test_tab_separated():
    assert parse_line("PORT\t=\t8080") == ("PORT", "8080")


def test_load_file():
    text = "# db\nDB_HOST = localhost\nDB_PORT=5432\n\nDB_HOST= db.internal\n"
    assert load(text) == {"DB_HOST": "db.internal", "DB_PORT": "5432"}
