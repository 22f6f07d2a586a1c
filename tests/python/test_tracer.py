"""src/debugger/tracer.py (with its prelude): run as the binary runs it, on a small program."""
import json
import textwrap

import pytest
from embedded import load, run_deployed

PROGRAM = textwrap.dedent('''
    class Opaque:
        pass


    class Broken:
        def __repr__(self):
            raise RuntimeError("no")


    def f(n):
        obj = Opaque()
        bad = Broken()
        text = "y" * 50
        items = list(range(20))
        nested = [[1, 2], (3,), {"k": {4}}, frozenset()]
        me = []
        me.append(me)
        g = lambda x: x + 1
        big = 10 ** 100
        return n * 2


    def main():
        return f(3)


    def fails():
        return f(None)
''')


def trace(tmp_path, entry="main", program=PROGRAM, **limits):
    (tmp_path / "program.py").write_text(program, encoding="utf-8")
    config = {
        "program_path": str(tmp_path / "program.py"), "out_path": str(tmp_path / "trace.json"),
        "max_events": 1000, "max_bytes": 10 ** 6, "soft_timeout_s": 20, "max_repr": 40, "max_items": 5,
        "entry": entry,
    }
    config.update(limits)
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    done = run_deployed("src/debugger/tracer.py", tmp_path, [str(tmp_path / "config.json")], cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    return json.loads((tmp_path / "trace.json").read_text(encoding="utf-8"))


def test_importing_the_tracer_runs_nothing():
    tracer = load("src/debugger/tracer.py")
    assert tracer.FORMAT_VERSION == 1 and callable(tracer.main)


def test_locals_are_shown_bounded_and_without_addresses(tmp_path):
    result = trace(tmp_path)
    assert (result["exit"], result["limit"], result["exception"]) == ("normal", None, None)
    ret = next(e for e in result["events"] if e["event"] == "return" and e["func"] == "f")
    assert ret["value"] == "6"
    shown = dict(ret["locals"])
    assert shown == {
        "n": "3",
        "obj": "<__deepdebug__.Opaque object>",
        "bad": "<unrepresentable Broken: RuntimeError>",
        "text": "'" + "y" * 39 + "...",
        "items": "[0, 1, 2, 3, 4, ...]",
        "nested": "[[1, 2], (3,), {'k': {4}}, frozenset()]",
        "me": "[[...]]",
        "g": "lambda x: x + 1",
        "big": "1" + "0" * 39 + "...",
    }


def test_events_follow_the_call(tmp_path):
    result = trace(tmp_path)
    kinds = [(e["event"], e["func"], e["depth"]) for e in result["events"]]
    assert kinds[0] == ("call", "main", 0) and kinds[-1] == ("return", "main", 0)
    assert ("call", "f", 1) in kinds
    first_line = next(e for e in result["events"] if e["event"] == "line" and e["func"] == "f")
    assert first_line["src"].strip() == "obj = Opaque()" and first_line["locals"] == [["n", "3"]]


def test_an_exception_is_the_program_s_error(tmp_path):
    result = trace(tmp_path, entry="fails")
    assert result["exit"] == "error"
    assert result["exception"] == "TypeError(\"unsupported operand type(s) for *: 'NoneType' and 'int'\")"[:40] + "..."


@pytest.mark.parametrize("limits, limit", [({"max_events": 5}, "events"), ({"max_bytes": 10}, "bytes")])
def test_a_cap_truncates_the_trace_but_the_program_ends(tmp_path, limits, limit):
    result = trace(tmp_path, **limits)
    assert (result["exit"], result["limit"]) == ("normal", limit)
    assert 1 <= len(result["events"]) <= limits.get("max_events", 1000)


def test_a_program_that_does_not_load_is_an_error(tmp_path):
    result = trace(tmp_path, program="def main(:\n    pass\n")
    assert (result["exit"], result["events"]) == ("error", [])
    assert result["exception"].startswith("SyntaxError(")
