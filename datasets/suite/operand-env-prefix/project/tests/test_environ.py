from appconfig.environ import _convert, merged, settings_from_env


def test_convert_bool_and_int():
    assert _convert("Yes") is True
    assert _convert("8080") == 8080


def test_convert_text():
    assert _convert("db.local") == "db.local"


def test_other_variables_ignored():
    assert settings_from_env({"HOME": "/root", "PATH": "/bin"}) == {}


def test_prefixed_variable():
    assert settings_from_env({"MYAPP_DEBUG": "true"}) == {"debug": True}


def test_merged_overrides_defaults():
    env = {"MYAPP_WORKERS": "8", "USER": "svc"}
    assert merged({"workers": 2, "debug": False}, env) == {"workers": 8, "debug": False}
