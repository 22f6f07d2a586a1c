"""deepdebug's behaviour comparison child: runs one program on JSON inputs, or compares ASTs.

Usage:
  equivalence.py run ROOT PACKAGE NAME INPUTS_FILE PER_CALL_SECONDS
      Imports PACKAGE.NAME from ROOT, calls NAME(*args) for every JSON line of INPUTS_FILE and
      prints one JSON line per input: {"i": index, "r": "ok:<canonical value>" | "exc:<type>" | "timeout"}.
  equivalence.py ast FILE_A FILE_B
      Prints "equal" when both files have the same AST (docstrings and bare strings dropped).
"""

import ast
import importlib
import json
import os
import signal
import sys
import types

MAX_ITEMS = 10000
MAX_DEPTH = 50


class _Timeout(BaseException):
    """Raised by the per-call alarm; a BaseException so that `except Exception` cannot swallow it."""


def _alarm(signum, frame):
    raise _Timeout()


def canon(value, depth=0):
    """A deterministic text for a return value (no addresses, sets sorted, iterators expanded)."""
    if depth > MAX_DEPTH:
        return "..."
    if isinstance(value, float):
        # Floats agree to 9 significant digits (iterative numeric code may differ in the last bits).
        return format(value, ".9g")
    if value is None or isinstance(value, (bool, int, complex, str, bytes)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(canon(v, depth + 1) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(canon(v, depth + 1) for v in value) + ",)"
    if isinstance(value, dict):
        items = sorted(canon(k, depth + 1) + ": " + canon(v, depth + 1) for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, (set, frozenset)):
        return type(value).__name__ + "{" + ", ".join(sorted(canon(v, depth + 1) for v in value)) + "}"
    if isinstance(value, (types.GeneratorType, map, filter, zip, range)) or hasattr(value, "__next__"):
        items = []
        for item in value:
            items.append(canon(item, depth + 1))
            if len(items) >= MAX_ITEMS:
                items.append("...")
                break
        return "iter[" + ", ".join(items) + "]"
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        return type(value).__name__ + canon(attributes, depth + 1)
    return type(value).__name__


def run(root, package, name, inputs_file, per_call):
    out = os.fdopen(os.dup(1), "w")
    devnull = open(os.devnull, "w")
    sys.stdout = devnull
    os.chdir(root)
    sys.path.insert(0, os.path.join(root, package))
    sys.path.insert(0, root)
    sys.setrecursionlimit(3000)
    signal.signal(signal.SIGALRM, _alarm)
    try:
        function = getattr(importlib.import_module(package + "." + name), name)
    except BaseException as err:  # noqa: BLE001 - reported as data
        out.write(json.dumps({"i": -1, "r": "import:" + type(err).__name__ + ": " + str(err)[:200]}) + "\n")
        out.flush()
        return
    with open(inputs_file) as handle:
        lines = [line for line in handle if line.strip()]
    for index, line in enumerate(lines):
        args = json.loads(line)
        try:
            signal.setitimer(signal.ITIMER_REAL, per_call)
            try:
                result = "ok:" + canon(function(*args))
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _Timeout:
            result = "timeout"
        except RecursionError:
            result = "exc:RecursionError"
        except BaseException as err:  # noqa: BLE001 - exceptions (SystemExit included) are results
            result = "exc:" + type(err).__name__
        sys.stdout = devnull
        out.write(json.dumps({"i": index, "r": result}) + "\n")
        out.flush()


def _bare_string(stmt):
    """Whether a statement is a string on its own (a docstring, or a string used as a comment)."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


class _DropStrings(ast.NodeTransformer):
    def _body(self, body):
        kept = [stmt for stmt in body if not _bare_string(stmt)]
        return kept or [ast.Pass()]

    def generic_visit(self, node):
        node = super().generic_visit(node)
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                setattr(node, field, self._body(body))
        return node


def normalized_ast(path):
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    return ast.dump(_DropStrings().visit(tree))


def main(argv):
    if len(argv) == 6 and argv[0] == "run":
        run(argv[1], argv[2], argv[3], argv[4], float(argv[5]))
        return 0
    if len(argv) == 3 and argv[0] == "ast":
        print("equal" if normalized_ast(argv[1]) == normalized_ast(argv[2]) else "different")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
