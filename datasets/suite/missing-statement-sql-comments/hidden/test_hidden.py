from sqltools.script import migration_header, split_script


def test_comment_between_statement_lines():
    script = "UPDATE t\n-- only active rows\nSET x = 1\nWHERE active;\n"
    statements, comments = split_script(script)
    assert statements == ["UPDATE t\nSET x = 1\nWHERE active;"]
    assert comments == ["only active rows"]


def test_only_comments():
    assert split_script("-- a\n  -- b\n") == ([], ["a", "b"])


def test_trailing_statement_without_semicolon():
    assert split_script("-- x\nSELECT 1")[0] == ["SELECT 1"]


def test_inline_comment_stays_in_statement():
    assert split_script("SELECT 1; -- one\n")[0] == ["SELECT 1; -- one"]


def test_header_from_script():
    _, comments = split_script("-- version: 12\n-- author: ann\nSELECT 1;\n")
    assert migration_header(comments) == {"version": "12", "author": "ann"}


def test_comment_after_last_statement():
    assert split_script("SELECT 1;\n-- done\n") == (["SELECT 1;"], ["done"])
