"""Read application settings from environment variables.

Variables named like 'MYAPP_DB_HOST' become settings like 'db_host'.
"""


def _convert(value):
    """'true'/'false' -> bool, integers -> int, everything else unchanged."""
    lowered = value.strip().lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    if lowered.lstrip("-").isdigit():
        return int(lowered)
    return value


def settings_from_env(environ, prefix="MYAPP_"):
    """Collect the variables that start with `prefix` into a settings dict."""
    settings = {}
    for name, value in environ.items():
        if not name.startswith(prefix):
            continue
        key = name.lower()
        settings[key] = _convert(value)
    return settings


def merged(defaults, environ, prefix="MYAPP_"):
    """Defaults overridden by environment settings."""
    result = dict(defaults)
    result.update(settings_from_env(environ, prefix))
    return result
