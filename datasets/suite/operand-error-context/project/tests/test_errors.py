from templating.errors import caret, position, render_error, source_line

SOURCE = "<h1>{{ title }}</h1>\n<p>{{ body }</p>\n<footer/>"


def test_caret():
    assert caret(4) == "   ^"


def test_position_first_line():
    assert position(SOURCE, 4) == (1, 5)


def test_position_second_line():
    assert position(SOURCE, SOURCE.index("{{ body")) == (2, 4)


def test_source_line():
    assert source_line(SOURCE, 2) == "<p>{{ body }</p>"


def test_render_error():
    text = render_error("page.html", SOURCE, 2, 13, "unclosed tag")
    assert text.split("\n") == [
        "page.html:2:13: unclosed tag",
        "    <p>{{ body }</p>",
        "                ^",
    ]
