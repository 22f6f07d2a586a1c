from sqltools.script import migration_header, split_script


def test_two_statements():
    statements, comments = split_script("CREATE TABLE a (id int);\nDROP TABLE b;\n")
    assert statements == ["CREATE TABLE a (id int);", "DROP TABLE b;"]
    assert comments == []


def test_multiline_statement():
    statements, _ = split_script("INSERT INTO t\nVALUES (1);\n")
    assert statements == ["INSERT INTO t\nVALUES (1);"]


def test_comments_collected():
    script = "-- version: 3\nALTER TABLE a ADD b int;\n"
    assert split_script(script)[1] == ["version: 3"]


def test_comments_not_in_statements():
    script = "-- add index\nCREATE INDEX i ON t (c);\n"
    assert split_script(script)[0] == ["CREATE INDEX i ON t (c);"]


def test_header():
    assert migration_header(["Version: 7", "just a note"]) == {"version": "7"}
