"""deepdebug pytest plugin: per-test outcomes, tracebacks with locals and line coverage as JSON lines.

Loaded with `-p deepdebug_plugin`; configured through environment variables:
  DEEPDEBUG_REPORT         path of the JSON-lines report (required)
  DEEPDEBUG_ROOT           project root: only files below it are covered and reported
  DEEPDEBUG_COVERAGE       "1" to record per-test line coverage, and for failing tests the project
                           functions called from each line of the test function (value flow)
  DEEPDEBUG_TEST_TIMEOUT   per-test wall-clock limit in seconds (0 = none)
  DEEPDEBUG_TEST_CPU       per-test CPU-time limit in seconds (0 = none): catches busy loops
                           early without mistaking a loaded machine for a hang
  DEEPDEBUG_WATCH          "path.py:LINE,..." (relative to the root; LINE: the code's first line,
                           its first decorator's): the types each of these functions returns
                           while a test runs go into the test's record as `returns`, and
                           what it returned per argument list as `values` (see `_call_key`)
The file `deepdebug_origin` beside this module, when present, names the user's checkout that
the scratch copy at DEEPDEBUG_ROOT was made from (see `_follow_the_copy`).
Deployed with src/python_shared/values.py prepended (`unrepresentable`).
"""
import dis
import inspect
import json
import os
import reprlib
import signal
import sys
import threading
import time

_REPORT = os.environ.get("DEEPDEBUG_REPORT")
_ROOT = os.path.realpath(os.environ.get("DEEPDEBUG_ROOT") or os.getcwd()) + os.sep
_COVERAGE = os.environ.get("DEEPDEBUG_COVERAGE") == "1"
_TIMEOUT = float(os.environ.get("DEEPDEBUG_TEST_TIMEOUT") or 0)
_CPU = float(os.environ.get("DEEPDEBUG_TEST_CPU") or 0)
_HERE = os.path.realpath(__file__)


def _watch_keys(spec):
    """{(real path, first line): "path:LINE"} of DEEPDEBUG_WATCH."""
    keys = {}
    for item in (spec or "").split(","):
        path, _, line = item.strip().rpartition(":")
        if path and line.isdigit():
            keys[(os.path.realpath(os.path.join(_ROOT, path)), int(line))] = item.strip()
    return keys


_WATCHED = _watch_keys(os.environ.get("DEEPDEBUG_WATCH"))
_code_keys = {}  # code object -> its DEEPDEBUG_WATCH key, or None
_returns = {}  # key -> set of type names returned during the current test
_values = {}  # key -> {repr of the arguments: repr of the result} during the current test
_calls = {}  # id(frame) -> repr of its arguments at the call, for watched frames
_MAX_VALUES = 256  # argument lists remembered per function and test
_MAX_REPR = 400  # longer reprs of arguments are not compared; longer results by digest
_RETURNS = {dis.opmap[n] for n in ("RETURN_VALUE", "RETURN_CONST", "YIELD_VALUE") if n in dis.opmap}


def _exact_repr(value):
    """repr(value) when it identifies the value across runs (no memory address, not too
    long), else None."""
    try:
        text = repr(value)
    except BaseException:  # a broken __repr__ must not break the run
        return None
    return None if " at 0x" in text else text


def _call_key(frame):
    """The arguments of a frame at its call, as one string; None when they cannot be told apart
    across runs."""
    code = frame.f_code
    names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    text = _exact_repr(tuple(frame.f_locals.get(n) for n in names))
    return text if text is not None and len(text) <= _MAX_REPR else None


def _result_text(value):
    text = _exact_repr(value)
    if text is None or len(text) <= _MAX_REPR:
        return text
    import hashlib

    return "#" + hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()


def _watch_profile(frame, event, arg):
    """sys.setprofile hook: the type of each value a watched function returns (or yields), and
    per argument list the value it returned."""
    if event not in ("call", "return"):
        return
    code = frame.f_code
    key = _code_keys.get(code, False)
    if key is False:
        key = _code_keys[code] = _WATCHED.get((os.path.realpath(code.co_filename), code.co_firstlineno))
    if key is None:
        return
    if event == "call":
        if len(_values.get(key, ())) < _MAX_VALUES and not code.co_flags & inspect.CO_GENERATOR:
            _calls[id(frame)] = _call_key(frame)
        return
    call = _calls.pop(id(frame), None)
    if arg is None:
        # A 'return' event with None also ends a frame that an exception unwinds.
        try:
            if code.co_code[frame.f_lasti] not in _RETURNS:
                return
        except (IndexError, TypeError):
            return
    _returns.setdefault(key, set()).add(type(arg).__qualname__)
    if call is not None:
        result = _result_text(arg)
        if result is not None:
            _values.setdefault(key, {}).setdefault(call, result)


def _follow_the_copy():
    """Point imports that lead into the user's checkout at the scratch copy instead: an
    editable install in the project's virtualenv (a `.pth` path entry, or the MAPPING of a
    setuptools `__editable__` finder) names the checkout's absolute paths, and a patch in the
    copy would otherwise never be imported. Only paths that exist in the copy are moved."""
    try:
        with open(os.path.join(os.path.dirname(_HERE), "deepdebug_origin")) as f:
            origin = os.path.realpath(f.read().strip()) + os.sep
    except OSError:
        return
    if origin == _ROOT:
        return

    def moved(path):
        if not isinstance(path, str) or not path:
            return path
        real = os.path.realpath(path)
        if not (real + os.sep).startswith(origin):
            return path
        copy = os.path.join(_ROOT, real[len(origin):]).rstrip(os.sep)
        return copy if os.path.exists(copy) else path

    sys.path[:] = [moved(p) for p in sys.path]
    for name, module in list(sys.modules.items()):
        mapping = getattr(module, "MAPPING", None) if name.startswith("__editable__") else None
        if isinstance(mapping, dict):
            for key, value in list(mapping.items()):
                mapping[key] = moved(value)
    sys.path_importer_cache.clear()


_follow_the_copy()
# Whether failures carry their frames with locals (validation only needs outcomes).
_FRAMES = True

_repr = reprlib.Repr()
_repr.maxstring = 120
_repr.maxother = 120
_repr.maxlist = _repr.maxtuple = _repr.maxset = _repr.maxdict = 12
_repr.maxlevel = 3


def _open_report(path):
    """The report's file descriptor (appending; a plain fd: a file object costs each fork-server
    child the pages of the io machinery)."""
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


_out = _open_report(_REPORT) if _REPORT else None
_tests = {}


def configure(report=None, coverage=None, timeout=None, cpu=None, frames=None):
    """Redirect the report and change settings (used in each fork-server child for its request)."""
    global _out, _COVERAGE, _TIMEOUT, _CPU, _FRAMES
    if report is not None:
        if _out is not None:
            os.close(_out)
        _out = _open_report(report)
        _tests.clear()
    if frames is not None:
        _FRAMES = bool(frames)
    if coverage is not None:
        _COVERAGE = bool(coverage)
    if timeout is not None:
        _TIMEOUT = float(timeout)
    if cpu is not None:
        _CPU = float(cpu)


def reset():
    """Forget every test seen so far (the fork server's warm-up runs)."""
    global _hangs, _slowest_pass
    _tests.clear()
    _hangs = 0
    _slowest_pass = 0.0


def outcome_of(nodeid):
    """The merged outcome recorded for a test so far, or None."""
    rec = _tests.get(nodeid)
    return rec and rec["outcome"]
_in_root = {}
_lines = set()


class DeepdebugTimeout(BaseException):
    """Raised inside a test that ran past DEEPDEBUG_TEST_TIMEOUT."""


class DeepdebugCpuTimeout(DeepdebugTimeout):
    """Raised inside a test that used more CPU time than DEEPDEBUG_TEST_CPU."""


def _emit(record):
    if _out is not None:
        data = (json.dumps(record) + "\n").encode()
        while data:
            data = data[os.write(_out, data):]


def _message(value):
    """str(value), clipped; its repr when its own __str__ fails (a patch may break it)."""
    try:
        return str(value)[:2000]
    except Exception:
        return _safe_repr(value)


def _safe_repr(value):
    try:
        return _repr.repr(value)
    except BaseException as exc:  # a broken __repr__ must not break the report
        return unrepresentable(value, exc)


def _below_root(filename):
    known = _in_root.get(filename)
    if known is None:
        path = os.path.realpath(filename) if filename and not filename.startswith("<") else ""
        known = (
            path.startswith(_ROOT)
            and path != _HERE
            and os.sep + "site-packages" + os.sep not in path
            and os.sep + ".venv" + os.sep not in path
        )
        _in_root[filename] = known
    return known


def _local_tracer(frame, event, arg):
    if event == "line":
        _lines.add((frame.f_code.co_filename, frame.f_lineno))
    return _local_tracer


# Value flow of the test being run (with coverage on): the project functions called while each
# line of the test function ran, with their call depth below it. A failing assertion's line
# names the functions whose values reached it.
_FLOW_DEPTH = 6
_flow_code = None  # the test function's code object
_flow_line = None  # the test function's current line while it runs
_flow_last = None  # its last line, once it returned or raised
_flow_calls = {}  # (test line, id(code)) -> [code, depth]


def _test_tracer(frame, event, arg):
    global _flow_line, _flow_last
    if event == "line":
        _lines.add((frame.f_code.co_filename, frame.f_lineno))
        _flow_line = frame.f_lineno
    elif event == "return":
        _flow_last, _flow_line = frame.f_lineno, None
    return _test_tracer


def _note_call(code, frame):
    """Record a project function called while the test's line `_flow_line` ran."""
    depth, caller = 1, frame.f_back
    while caller is not None and caller.f_code is not _flow_code and depth <= _FLOW_DEPTH:
        caller, depth = caller.f_back, depth + 1
    key = (_flow_line, id(code))
    seen = _flow_calls.get(key)
    if seen is None:
        _flow_calls[key] = [code, depth]
    elif depth < seen[1]:
        seen[1] = depth


def _global_tracer(frame, event, arg):
    if event == "call" and _below_root(frame.f_code.co_filename):
        code = frame.f_code
        _lines.add((code.co_filename, frame.f_lineno))
        if code is _flow_code:
            return _test_tracer
        if _flow_line is not None:
            _note_call(code, frame)
        return _local_tracer
    return None


def _flow_start(item):
    """Follow the value flow of `item`'s test function (when it is a plain function)."""
    global _flow_code, _flow_line, _flow_last
    func = getattr(item, "obj", None)
    func = getattr(func, "__func__", func)
    try:
        func = inspect.unwrap(func) if func is not None else None
    except ValueError:  # a cycle of __wrapped__
        func = None
    _flow_code = getattr(func, "__code__", None)
    _flow_line = _flow_last = None
    _flow_calls.clear()


def _flow_record():
    """The recorded flow as report data (bounded), and stop following."""
    global _flow_code, _flow_line
    calls = [
        {
            "line": line,
            "file": _relpath(code.co_filename),
            "function": code.co_name,
            "first_line": code.co_firstlineno,
            "depth": depth,
        }
        for (line, _), (code, depth) in _flow_calls.items()
    ]
    calls.sort(key=lambda c: (c["depth"], -c["line"]))
    flow = {"last_line": _flow_last, "calls": calls[:400]}
    _flow_code = _flow_line = None
    _flow_calls.clear()
    return flow


_rel = {}


def _relpath(filename):
    known = _rel.get(filename)
    if known is None:
        path = os.path.realpath(filename)
        known = _rel[filename] = path[len(_ROOT):] if path.startswith(_ROOT) else filename
    return known


def _line_of(tb):
    """The traceback entry's line. tb_lineno is None (3.11+) on an instruction without a line,
    e.g. a loop's backward jump interrupted by a signal: the last line started before it."""
    if tb.tb_lineno is not None:
        return tb.tb_lineno
    import dis
    code = tb.tb_frame.f_code
    line = None
    for offset, start in dis.findlinestarts(code):
        if offset > tb.tb_lasti:
            break
        if start is not None:
            line = start
    return line or code.co_firstlineno


def _frames(tb):
    frames = []
    while tb is not None:
        frame = tb.tb_frame
        code = frame.f_code
        if not frames and not _below_root(code.co_filename) or code.co_filename == __file__:
            tb = tb.tb_next  # pytest's own frames before the test, and this plugin's
            continue
        entry = {
            "file": _relpath(code.co_filename),
            "line": _line_of(tb),
            "function": code.co_name,
            "in_project": _below_root(code.co_filename),
        }
        if entry["in_project"]:
            entry["locals"] = {
                name: _safe_repr(value)
                for name, value in list(frame.f_locals.items())[:40]
                if not name.startswith("@")
            }
        frames.append(entry)
        tb = tb.tb_next
    return frames[-30:]


# After a test hangs, later tests get a shorter limit (10x the slowest passing test, at least
# 0.5 s): a buggy program that hangs on many parametrized cases must not eat the whole budget.
_hangs = 0
_slowest_pass = 0.0


def _limit():
    if _hangs == 0:
        return _TIMEOUT
    return min(_TIMEOUT, max(0.5, 10 * _slowest_pass))


def _disarm():
    """Stop both timers: one timeout per test. The other one firing later would raise inside
    pytest's own reporting of the first (the two can be equal: a lenient re-check)."""
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.setitimer(signal.ITIMER_PROF, 0)


def _on_alarm(signum, frame):
    _disarm()
    raise DeepdebugTimeout("test exceeded %.1fs" % _limit())


def _on_cpu(signum, frame):
    _disarm()
    raise DeepdebugCpuTimeout("test used more than %.2fs of CPU time" % _CPU)


def _record(nodeid):
    rec = _tests.get(nodeid)
    if rec is None:
        rec = _tests[nodeid] = {
            "kind": "test",
            "nodeid": nodeid,
            "outcome": "passed",
            "duration": 0.0,
            "cpu": 0.0,
            "failure": None,
        }
    return rec


def pytest_configure(config):
    # Lines run while collecting (module imports) are reported apart from the tests' own.
    if _COVERAGE:
        _lines.clear()
        threading.settrace(_global_tracer)
        sys.settrace(_global_tracer)


def pytest_collection_finish(session):
    if _COVERAGE:
        sys.settrace(None)
        threading.settrace(None)
        _emit({"kind": "collect-coverage", "coverage": _coverage_map()})
        _lines.clear()


def _coverage_map():
    cover = {}
    for filename, line in _lines:
        cover.setdefault(_relpath(filename), []).append(line)
    return {name: sorted(lines) for name, lines in cover.items()}


def pytest_collectreport(report):
    if report.failed:
        _emit({"kind": "collect-error", "nodeid": report.nodeid, "message": str(report.longreprtext)[-4000:]})


import pytest  # noqa: E402


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    global _hangs, _slowest_pass
    rec = _record(item.nodeid)
    main = threading.current_thread() is threading.main_thread()
    use_alarm = _TIMEOUT > 0 and main
    use_cpu = _CPU > 0 and main
    previous = previous_cpu = None
    if use_alarm:
        previous = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, _limit())
    if use_cpu:
        previous_cpu = signal.signal(signal.SIGPROF, _on_cpu)
        signal.setitimer(signal.ITIMER_PROF, _CPU)
    cpu_start = time.process_time()
    if _COVERAGE:
        _lines.clear()
        _flow_start(item)
        threading.settrace(_global_tracer)
        sys.settrace(_global_tracer)
    if _WATCHED:
        _returns.clear()
        _values.clear()
        _calls.clear()
        threading.setprofile(_watch_profile)
        sys.setprofile(_watch_profile)
    try:
        yield
    finally:
        if _WATCHED:
            sys.setprofile(None)
            threading.setprofile(None)
            rec["returns"] = {key: sorted(types) for key, types in _returns.items()}
            rec["values"] = {key: dict(calls) for key, calls in _values.items()}
        if use_cpu:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, previous_cpu or signal.SIG_DFL)
        rec["cpu"] = max(0.0, time.process_time() - cpu_start)  # a forked copy restarts the clock
        if rec["outcome"] == "timeout":
            _hangs += 1
        elif rec["outcome"] == "passed":
            _slowest_pass = max(_slowest_pass, rec["duration"])
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous or signal.SIG_DFL)
        if _COVERAGE:
            sys.settrace(None)
            threading.settrace(None)
            rec["coverage"] = _coverage_map()
            _lines.clear()
            flow = _flow_record()
            if rec["outcome"] not in ("passed", "skipped"):
                rec["flow"] = flow
        _emit(rec)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    rec = _record(item.nodeid)
    rec["duration"] += float(getattr(report, "duration", 0.0) or 0.0)
    excinfo = call.excinfo
    if report.skipped and rec["outcome"] == "passed":
        rec["outcome"] = "skipped"
    elif report.failed:
        timed_out = excinfo is not None and excinfo.errisinstance(DeepdebugTimeout)
        if timed_out:
            rec["outcome"] = "timeout"
        elif rec["outcome"] not in ("failed", "error", "timeout"):
            rec["outcome"] = "failed" if call.when == "call" else "error"
        if rec["failure"] is None:
            failure = {"when": call.when, "type": "", "message": "", "frames": [], "limit": None}
            if excinfo is not None:
                failure["type"] = excinfo.typename
                if timed_out:
                    failure["limit"] = "cpu" if excinfo.errisinstance(DeepdebugCpuTimeout) else "wall"
                failure["message"] = _safe_repr(excinfo.value) if timed_out else _message(excinfo.value)
                failure["frames"] = _frames(excinfo.tb) if _FRAMES else []
            else:
                failure["message"] = str(report.longreprtext)[-2000:]
            rec["failure"] = failure


def pytest_sessionfinish(session, exitstatus):
    _emit({"kind": "session-finish", "exitstatus": int(exitstatus)})
