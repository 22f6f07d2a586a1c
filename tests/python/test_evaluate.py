"""src/debugger/dap/evaluate.py: expressions against recorded reprs."""
import json
import signal
import subprocess
import sys

import pytest
from embedded import deployed_source, load

evaluate = load("src/debugger/dap/evaluate.py")


@pytest.fixture(autouse=True)
def keep_the_alarm_handler():
    saved = signal.getsignal(signal.SIGALRM)
    yield
    signal.signal(signal.SIGALRM, saved)


def test_literals_are_rebuilt_other_reprs_stand_for_themselves():
    assert evaluate.rebuild("[1, (2, 'a'), {3: None}]") == [1, (2, "a"), {3: None}]
    assert evaluate.rebuild("-1.5") == -1.5
    opaque = evaluate.rebuild("<Point object>")
    assert isinstance(opaque, evaluate.Recorded) and repr(opaque) == "<Point object>"
    assert isinstance(evaluate.rebuild("f(1)"), evaluate.Recorded)  # not a literal: never called
    assert isinstance(evaluate.rebuild("(" * 1000 + ")" * 1000), evaluate.Recorded)


def test_answers():
    answer = evaluate.answer
    assert answer({"expression": "sum(xs) * n", "locals": {"xs": "[1, 2, 3]", "n": "2"}}) == \
        {"ok": True, "value": "12", "type": "int"}
    assert answer({"expression": "obj", "locals": {"obj": "<Point object>"}}) == \
        {"ok": True, "value": "<Point object>", "type": "Recorded"}
    assert answer({"expression": "missing"}) == {"ok": False, "error": "NameError: name 'missing' is not defined"}
    assert answer({"expression": "1 +"})["error"].startswith("SyntaxError: ")
    assert answer({"expression": "1 / 0"}) == {"ok": False, "error": "ZeroDivisionError: division by zero"}
    broken = "type('B', (), {'__repr__': lambda self: 1 / 0})()"
    assert answer({"expression": broken}) == {"ok": True, "value": "<unrepresentable: ZeroDivisionError>", "type": "B"}
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # the alarm is off after each answer


def test_it_serves_json_lines_when_run_with_dash_c():
    requests = [{"expression": "x + 1", "locals": {"x": "41"}}, {"expression": "y"}]
    done = subprocess.run([sys.executable, "-c", deployed_source("src/debugger/dap/evaluate.py")], capture_output=True,
                          text=True, timeout=30, input="\n".join(json.dumps(r) for r in requests) + "\n\n")
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"ok": True, "value": "42", "type": "int"},
        {"ok": False, "error": "NameError: name 'y' is not defined"},
    ]
