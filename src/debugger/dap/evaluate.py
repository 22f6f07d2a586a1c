# deepdebug evaluator: evaluates expressions against a recorded state, whose values are known
# only by their reprs. A value whose repr is a Python literal is rebuilt (ast.literal_eval);
# any other stands for itself by its repr. One JSON request per line on stdin:
# {"expression": str, "locals": {name: repr}}; one reply per line on stdout:
# {"ok": true, "value": repr, "type": name} or {"ok": false, "error": message}.
import ast
import json
import signal
import sys


class Recorded:
    """A recorded value that is not a literal: it can only be shown."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def rebuild(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return Recorded(text)


def on_alarm(signum, frame):
    raise TimeoutError("the evaluation took too long")


def answer(request):
    names = {name: rebuild(text) for name, text in request.get("locals", {}).items()}
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, 2.0)
    try:
        value = eval(compile(request["expression"], "<expression>", "eval"), {}, names)
    except BaseException as exc:  # noqa: BLE001 - any error is the answer
        return {"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        text = repr(value)
    except BaseException as exc:  # noqa: BLE001
        text = "<unrepresentable: %s>" % type(exc).__name__
    return {"ok": True, "value": text, "type": type(value).__name__}


def main():
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write(json.dumps(answer(json.loads(line))) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":  # as `python3 -c` runs it
    main()
