from appconfig.environ import merged, settings_from_env


def test_multi_word_setting():
    assert settings_from_env({"MYAPP_DB_HOST": "db"}) == {"db_host": "db"}


def test_custom_prefix():
    assert settings_from_env({"SHOP_TAX_RATE": "x", "MYAPP_A": "1"}, prefix="SHOP_") == {
        "tax_rate": "x"}


def test_short_prefix():
    assert settings_from_env({"X_Y": "1"}, prefix="X_") == {"y": 1}


def test_key_containing_prefix_text():
    assert settings_from_env({"MYAPP_MYAPP_MODE": "a"}) == {"myapp_mode": "a"}


def test_negative_int():
    assert settings_from_env({"MYAPP_OFFSET": "-3"}) == {"offset": -3}


def test_merged_keeps_unrelated_defaults():
    assert merged({"port": 1, "host": "h"}, {"MYAPP_PORT": "2"}) == {"port": 2, "host": "h"}
