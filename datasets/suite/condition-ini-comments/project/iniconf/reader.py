"""A forgiving reader for INI-style configuration text."""


def parse(text):
    """Parse '[section]' headers and 'key = value' lines into nested dicts.

    Blank lines and lines starting with '#' or ';' are ignored. Keys before
    the first section go into the 'DEFAULT' section.
    """
    config = {"DEFAULT": {}}
    section = "DEFAULT"
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line and line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            config.setdefault(section, {})
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"line {number}: expected key = value")
        config[section][key.strip().lower()] = value.strip()
    return config


def get(config, section, key, fallback=None):
    """Look a key up in a section, then in DEFAULT."""
    if key in config.get(section, {}):
        return config[section][key]
    return config["DEFAULT"].get(key, fallback)
