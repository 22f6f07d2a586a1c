"""deepdebug fork server: pays Python and pytest start-up (and test collection) once, then forks
a fresh child per request so that each candidate patch runs in isolation.

Protocol: JSON lines. stdin receives requests, fd 3 (inherited) receives replies; the test
output of children goes to /dev/null. Started with the pytest arguments as argv[1:], in the
project's scratch directory, with DEEPDEBUG_ROOT set and the deepdebug plugin importable.

Request:  {"id": n, "report": path, "nodeids": [...] | null, "exit_first": bool, "timeout": s, "cpu": s,
           "swap": {"file": rel, "functions": [[qualname, def_line], ...]} | null}
Replies:  {"kind": "ready", "mode": "warm" | "cold", "tests": [...], "why": str}
          {"kind": "started", "id": n, "pid": pid}
          {"kind": "done", "id": n, "status": waitstatus, "path": "warm" | "cold"}
"""
import json
import os
import sys
import threading

_PROTO = os.fdopen(3, "w", buffering=1)
_REQUESTS = os.fdopen(os.dup(0), "r")  # pytest's capturing later replaces fd 0
sys.path.insert(0, os.getcwd())  # as `python -m pytest` does
_LOG = os.environ.get("DEEPDEBUG_SERVER_LOG") or os.devnull  # for debugging the server
_devnull = os.open(_LOG, os.O_RDWR | os.O_CREAT | os.O_APPEND)
os.dup2(_devnull, 1)
os.dup2(_devnull, 2)
sys.stdout = sys.stderr = open(_LOG, "a")

import pytest  # noqa: E402
import _pytest.config  # noqa: E402
import _pytest.main  # noqa: E402
import _pytest.runner  # noqa: E402
import deepdebug_plugin  # noqa: E402

_ROOT = os.path.realpath(os.environ.get("DEEPDEBUG_ROOT") or os.getcwd()) + os.sep
_ARGS = sys.argv[1:]


def reply(message):
    _PROTO.write(json.dumps(message) + "\n")
    _PROTO.flush()


def collect():
    """Collect the suite in this process; returns (session, items) or raises."""
    config = _pytest.config._prepareconfig(["-p", "no:cacheprovider", "-q", "--tb=no", "-p", "deepdebug_plugin"] + _ARGS)
    config._do_configure()
    session = _pytest.main.Session.from_config(config)
    config.hook.pytest_sessionstart(session=session)
    session.perform_collect()
    if session.testsfailed:
        raise RuntimeError("collection errors")
    return session, list(session.items)


_real = {}


def realpath(path):
    known = _real.get(path)
    if known is None:
        known = _real[path] = os.path.realpath(path)
    return known


def project_modules():
    found = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if path and realpath(path).startswith(_ROOT):
            found[name] = module
    return found


def find_code(code, path, def_line):
    """The code object for a dotted path of class/function names inside module code."""
    matches = []

    def walk(c, remaining):
        for const in c.co_consts:
            if hasattr(const, "co_name") and const.co_name == remaining[0]:
                if len(remaining) == 1:
                    matches.append(const)
                else:
                    walk(const, remaining[1:])

    walk(code, path)
    exact = [m for m in matches if m.co_firstlineno == def_line]
    if len(exact) == 1:
        return exact[0]
    return matches[0] if len(matches) == 1 else None


def live_functions(module, path):
    """Every live function object reachable at the dotted path (descriptors unwrapped)."""
    objs = [module]
    for part in path:
        nxt = []
        for obj in objs:
            value = vars(obj).get(part) if hasattr(obj, "__dict__") else None
            if value is not None:
                nxt.append(value)
        objs = nxt
    out = []
    for obj in objs:
        for candidate in (obj, getattr(obj, "__func__", None), getattr(obj, "fget", None),
                          getattr(obj, "fset", None), getattr(obj, "fdel", None)):
            seen = 0
            while candidate is not None and seen < 10:
                if hasattr(candidate, "__code__"):
                    out.append(candidate)
                candidate = getattr(candidate, "__wrapped__", None)
                seen += 1
    return out


# The project's modules by real path, taken once in the server before forking. A child must
# not walk sys.modules: touching every module object copies hundreds of shared pages.
_BY_FILE = {}


def hot_swap(swap):
    """Give the live functions of `swap` the code compiled from the patched file on disk."""
    path = os.path.join(_ROOT, swap["file"])
    module = _BY_FILE.get(os.path.realpath(path))
    if module is None:
        return True  # not imported yet: it will be imported from the patched file
    with open(path, encoding="utf-8") as handle:
        code = compile(handle.read(), module.__file__, "exec")
    for qualname, def_line in swap["functions"]:
        parts = qualname.split(".")
        new = find_code(code, parts, def_line)
        if new is None:
            return False
        targets = [f for f in live_functions(module, parts) if f.__code__.co_name == new.co_name]
        if len(targets) != 1 or targets[0].__code__.co_freevars != new.co_freevars:
            return False
        targets[0].__code__ = new
    return True


def run_items(items, exit_first):
    for index, item in enumerate(items):
        nextitem = items[index + 1] if index + 1 < len(items) else None
        if exit_first and index > 0 and deepdebug_plugin.outcome_of(items[index - 1].nodeid) not in ("passed", "skipped"):
            nextitem = None
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        if exit_first and deepdebug_plugin.outcome_of(item.nodeid) not in ("passed", "skipped"):
            break
    deepdebug_plugin._emit({"kind": "session-finish", "exitstatus": 0})


def child(request, session, items):
    os.setpgid(0, 0)
    deepdebug_plugin.configure(report=request["report"], timeout=request.get("timeout", 0),
                               cpu=request.get("cpu", 0), coverage=False)
    swap = request.get("swap")
    if session is not None and swap is not None and hot_swap(swap):
        wanted = request.get("nodeids")
        if wanted is None:
            selected = items
        else:
            by_id = {item.nodeid: item for item in items}
            selected = [by_id[n] for n in wanted if n in by_id]
            if len(selected) != len(wanted):
                selected = None
        if selected is not None:
            deepdebug_plugin._emit({"kind": "engine-path", "path": "warm"})
            run_items(selected, request.get("exit_first", False))
            os._exit(0)
    # Cold path: forget the project's modules and run a fresh pytest session on the files.
    deepdebug_plugin._emit({"kind": "engine-path", "path": "cold"})
    for name in project_modules():
        del sys.modules[name]
    args = ["-p", "no:cacheprovider", "-q", "--tb=no", "-p", "deepdebug_plugin"]
    if request.get("exit_first"):
        args.append("-x")
    nodeids = request.get("nodeids")
    args += _ARGS if nodeids is None else nodeids
    try:
        pytest.main(args)
    finally:
        os._exit(0)


def main():
    session, items, why = None, [], ""
    if not hasattr(os, "fork"):
        reply({"kind": "ready", "mode": "unavailable", "tests": [], "why": "os.fork is not available"})
        return
    try:
        session, items = collect()
        if threading.active_count() > 1:
            why = "the project starts threads at import; forking a threaded process is unsafe"
            session = None
    except BaseException as exc:  # collection failed: every request takes the cold path
        import traceback
        traceback.print_exc()
        why = "collection in the server failed: %s" % type(exc).__name__
        session = None
    for module in project_modules().values():
        _BY_FILE[realpath(module.__file__)] = module
    # Move everything allocated so far out of the collector's reach: children then do not
    # touch (and copy) the parent's pages when the garbage collector runs.
    import gc
    gc.collect()
    gc.freeze()
    reply({
        "kind": "ready",
        "mode": "warm" if session is not None else "cold",
        "tests": [item.nodeid for item in items],
        "why": why,
    })
    for line in _REQUESTS:
        line = line.strip()
        if not line:
            continue
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            try:
                child(request, session, items)
            finally:
                os._exit(70)
        reply({"kind": "started", "id": request["id"], "pid": pid})
        _, status = os.waitpid(pid, 0)
        reply({"kind": "done", "id": request["id"], "status": status})


main()
