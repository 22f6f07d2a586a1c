"""`python -m deepdebug ...` runs the installed `deepdebug` command with the same arguments."""

from __future__ import annotations

import os
import subprocess
import sys

from deepdebug import find_deepdebug_bin


def main() -> None:
    binary = find_deepdebug_bin()
    if sys.platform == "win32":
        sys.exit(subprocess.run([binary, *sys.argv[1:]]).returncode)
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    main()
