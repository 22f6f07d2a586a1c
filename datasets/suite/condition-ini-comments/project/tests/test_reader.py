import pytest

from iniconf.reader import get, parse


def test_sections():
    config = parse("[server]\nport = 8080\nhost=0.0.0.0")
    assert config["server"] == {"port": "8080", "host": "0.0.0.0"}


def test_comments_are_ignored():
    config = parse("# main settings\n[db]\n; legacy\nname = shop")
    assert config["db"] == {"name": "shop"}


def test_malformed_line():
    with pytest.raises(ValueError, match="line 2"):
        parse("[a]\njust words")


def test_config_with_blank_lines():
    config = parse("[a]\nx = 1\n\n[b]\ny = 2\n")
    assert config["b"] == {"y": "2"}


def test_get_falls_back_to_default():
    config = {"DEFAULT": {"timeout": "30"}, "api": {}}
    assert get(config, "api", "timeout") == "30"
