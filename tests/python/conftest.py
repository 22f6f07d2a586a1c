"""Unit tests of the Python that deepdebug embeds (see embedded.py): `python3 -m pytest tests/python`."""
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the embedded scripts
