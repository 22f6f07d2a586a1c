"""deepdebug's embedded Python scripts, loaded by path as the Rust side deploys them.

src/python_shared/values.py is prepended to the scripts whose Rust embedding says so
(`concat!(include_str!(".../python_shared/values.py"), include_str!("script.py"))`): `load`
reads that off the Rust source, so these tests run what the binary ships.
"""
import functools
import importlib.util
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = ROOT / "src" / "python_shared" / "values.py"
_CONST = re.compile(r"const \w+: &(?:'static )?str = (.*?);", re.S)
_INCLUDE = re.compile(r'include_str!\("([^"]+\.py)"\)')


@functools.lru_cache(maxsize=None)
def embeddings():
    """{script path: [paths included with it, in order]} for every Python file a Rust source
    under src/ embeds in a `&str` constant."""
    found = {}
    for rust in sorted((ROOT / "src").rglob("*.rs")):
        for value in _CONST.findall(rust.read_text(encoding="utf-8")):
            paths = [(rust.parent / p).resolve() for p in _INCLUDE.findall(value)]
            if paths:
                found[paths[-1]] = paths
    return found


def deployed_source(relpath):
    """The text the binary embeds for `relpath` (its prelude included)."""
    parts = embeddings()[(ROOT / relpath).resolve()]
    return "".join(p.read_text(encoding="utf-8") for p in parts)


def load(relpath, name=None):
    """Import the script at `relpath` (under the repository root) as a fresh module, after the
    prelude its Rust embedding prepends, if any."""
    path = (ROOT / relpath).resolve()
    spec = importlib.util.spec_from_file_location(name or "deepdebug_under_test_" + path.stem, path)
    module = importlib.util.module_from_spec(spec)
    for prelude in embeddings()[path][:-1]:
        exec(compile(prelude.read_text(encoding="utf-8"), str(prelude), "exec"), module.__dict__)
    spec.loader.exec_module(module)
    return module


def run_deployed(relpath, tmp_path, args, **kwargs):
    """Run the script as the binary does: its deployed text written to a file of its own."""
    script = tmp_path / ("deployed_" + pathlib.Path(relpath).name)
    script.write_text(deployed_source(relpath), encoding="utf-8")
    return subprocess.run([sys.executable, str(script)] + list(args), capture_output=True, text=True, timeout=30,
                          **kwargs)


# Values whose repr fails, shared by the tests of the scripts that show values.
class Broken:
    def __repr__(self):
        raise RuntimeError("no")


class Stop(BaseException):
    """Not an Exception (reprlib lets it through); not KeyboardInterrupt, which would end pytest
    when it shows a failed assertion's values."""


class Stopping:
    def __repr__(self):
        raise Stop
