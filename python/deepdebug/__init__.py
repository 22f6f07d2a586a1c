"""deepdebug: automatic repair of Python programs (the `deepdebug` command, built from Rust)."""

from __future__ import annotations

import os
import sys
import sysconfig

__all__ = ["find_deepdebug_bin"]


def find_deepdebug_bin() -> str:
    """Path of the `deepdebug` executable installed with this package."""
    exe = "deepdebug" + (sysconfig.get_config_var("EXE") or "")
    candidates = [sysconfig.get_path("scripts")]
    user_scheme = f"{os.name}_user" if sys.version_info < (3, 10) else sysconfig.get_preferred_scheme("user")
    try:
        candidates.append(sysconfig.get_path("scripts", scheme=user_scheme))
    except KeyError:
        pass
    # `pip install --target DIR`: the scripts land in DIR/bin, beside the package's parent.
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    candidates += [os.path.join(here, "bin"), os.path.join(here, "..", "..", "..", "bin")]
    for directory in candidates:
        path = os.path.join(directory, exe)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError(f"the {exe} executable was not found in {candidates}: reinstall deepdebug")
