from mdtools.codeblock import clean_lines, extract_blocks, fence


def test_nested_indentation_preserved():
    code = "for x in xs:\n    if x:\n        yield x   \n"
    assert clean_lines(code) == ["for x in xs:", "    if x:", "        yield x"]


def test_leading_blank_line_kept():
    assert clean_lines("\nx\n") == ["", "x"]


def test_tab_indentation_kept():
    assert clean_lines("a:\n\tb \n") == ["a:", "\tb"]


def test_whitespace_only_lines_become_empty():
    assert clean_lines("a\n   \nb") == ["a", "", "b"]


def test_fence_dedents_indented_snippet():
    code = "    def f():\n        return 1\n"
    assert fence(code) == "```\ndef f():\n    return 1\n```\n"


def test_fence_roundtrip():
    code = "class A:\n    x = 1\n\n    def m(self):\n        return self.x\n"
    lang, body = extract_blocks(fence(code, "py"))[0]
    assert lang == "py"
    assert body == code.rstrip("\n")


def test_empty_code():
    assert clean_lines("\n\n") == []
