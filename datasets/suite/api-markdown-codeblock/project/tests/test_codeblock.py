from mdtools.codeblock import clean_lines, dedent, extract_blocks, fence


def test_clean_lines_drops_trailing_spaces_and_blank_tail():
    assert clean_lines("x = 1   \ny = 2\t\n\n\n") == ["x = 1", "y = 2"]


def test_clean_lines_keeps_indentation():
    code = "def area(r):\n    return 3.14 * r * r  \n"
    assert clean_lines(code) == ["def area(r):", "    return 3.14 * r * r"]


def test_dedent():
    assert dedent(["    a", "      b", "", "    c"]) == ["a", "  b", "", "c"]


def test_fence_python():
    code = "if ok:\n    run()\n"
    assert fence(code, "python") == "```python\nif ok:\n    run()\n```\n"


def test_extract_blocks():
    doc = "Intro\n```sh\nmake test\n```\ntext\n```\nplain\n```\n"
    assert extract_blocks(doc) == [("sh", "make test"), ("", "plain")]
