"""deepdebug fork server: pays Python and pytest start-up (and test collection) once, then forks
a fresh child per request so that each candidate patch runs in isolation.

Protocol: JSON lines. stdin receives requests, the fd named by DEEPDEBUG_PROTO_FD (default 3,
inherited; 1 in a container, whose stdout is attached) receives replies; the test output of
children goes to /dev/null. Started with the pytest arguments as argv[1:], in the project's
scratch directory, with DEEPDEBUG_ROOT set and the deepdebug plugin importable.

Request:  {"id": n, "report": path, "nodeids": [...] | null, "exit_first": bool, "timeout": s, "cpu": s,
           "deadline": s (0: none), "frames": bool (failure frames with locals; default true),
           "swap": {"file": rel, "functions": [[qualname, def_line], ...],
                    "source": [first_line, text] | null (the whole file)} | null}
Batch:    {"id": n, "batch": [request without "id", ...], "until": s (0: none)}: one child runs
          the requests one after another on the warm path, restoring the swapped code after each
          (see `run_batch`); a timeout, a crash or state left behind ends the child, and the rest
          of the batch goes on in a fresh one.
Replies:  {"kind": "ready", "mode": "warm" | "cold", "tests": [...], "why": str, "batch": bool}
          {"kind": "started", "id": n, "pid": pid}            (a batch: once per child)
          {"kind": "item", "id": n, "index": i, "status": waitstatus, "timed_out": bool,
           "ran": bool}                                        (a batch: once per request)
          {"kind": "done", "id": n, "status": waitstatus, "timed_out": bool}
Each child writes {"kind": "engine-path", "path": "warm" | "cold", "why": reason} to its
report first: a cold session's `why` names what kept the request off the warm path
(`server-cold`, `no-swap`, `not-found`, `not-live`, `decorator`, `ambiguous`, `closure`,
`test-not-collected`). Patched statements that CPython does not compile are answered on the
warm path with the collection error a fresh session would report (no session runs).

The child for a request is forked before the request arrives (after the previous answer), so
the fork overlaps with the host's work; it reads the request from a pipe and prepares it. It says
when it has finished (a byte on a second pipe) just before it exits, and the answer goes then,
not after the kernel has torn its address space down. The server enforces each request's
deadline itself: at expiry the child's process group is killed (SIGKILL), and after every child
its group is killed again to remove stray grandchildren.
"""
import __future__
import builtins
import collections
import json
import marshal
import operator
import os
import select
import signal
import sys
import threading
import time
import types

_PROTO = None  # replies
_REQUESTS = None  # requests


def take_over_stdio():
    """The server process's set-up, before it imports pytest: the protocol's files, and its own
    output (and pytest's) out of the way."""
    global _PROTO, _REQUESTS
    # Duplicated before fds 1 and 2 are pointed at /dev/null (the protocol fd may be fd 1).
    _PROTO = os.fdopen(os.dup(int(os.environ.get("DEEPDEBUG_PROTO_FD") or 3)), "w", buffering=1)
    _REQUESTS = os.fdopen(os.dup(0), "r")  # pytest's capturing later replaces fd 0
    sys.path.insert(0, os.getcwd())  # as `python -m pytest` does
    log = os.environ.get("DEEPDEBUG_SERVER_LOG") or os.devnull  # for debugging the server
    devnull = os.open(log, os.O_RDWR | os.O_CREAT | os.O_APPEND)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    sys.stdout = sys.stderr = open(log, "a")


# Run as the server (a script); imported (the unit tests), the module changes nothing.
if __name__ == "__main__":
    take_over_stdio()

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


def lean_failure_reports():
    """Failed tests are reported with their exception's value alone. Validation reads outcomes
    (and the plugin's own record, built from the exception): formatting pytest's long traceback
    took a sixth of a failing child's time. Outcomes and hooks are unchanged."""
    import _pytest.nodes
    import _pytest.python
    function = _pytest.python.Function
    if hasattr(function, "_repr_failure_py") and hasattr(_pytest.nodes.Node, "_traceback_filter"):
        full = function.repr_failure

        def lean(self, excinfo):
            try:
                return self._repr_failure_py(excinfo, style="value")
            except Exception:  # the exception's own __str__ fails (a patch broke it): pytest's report copes
                return full(self, excinfo)

        function.repr_failure = lean
        function._traceback_filter = _pytest.nodes.Node._traceback_filter


# Rounds of pytest's per-test machinery run on a do-nothing test in the server before forking.
_WARM_UP_ROUNDS = 10


def warm_up(items):
    """Run pytest's per-test protocol on a do-nothing test (no fixtures) in the server, so that
    children inherit warmed-up bytecode and caches instead of writing them (copying pages) on
    every request. Skipped when anything but pytest itself and this plugin implements a
    per-test hook: only pytest's own code may run here."""
    import _pytest.fixtures
    import _pytest.python
    module = items[0].getparent(_pytest.python.Module) if items else None
    if module is None or not only_own_test_hooks(module.config):
        return
    hook = module.config.hook

    def deepdebug_warm_up():
        pass

    info = _pytest.fixtures.FuncFixtureInfo(argnames=(), initialnames=(), names_closure=[], name2fixturedefs={})
    try:
        dummy = _pytest.python.Function.from_parent(module, name="deepdebug_warm_up", callobj=deepdebug_warm_up,
                                                   fixtureinfo=info)
        for _ in range(_WARM_UP_ROUNDS):
            hook.pytest_runtest_protocol(item=dummy, nextitem=None)
    except Exception:  # an unexpected pytest version: children simply start colder
        import traceback
        traceback.print_exc()
    deepdebug_plugin.reset()


def only_own_test_hooks(config):
    """Whether nothing but pytest itself and this plugin implements a per-test hook."""
    hook = config.hook
    for name in ("pytest_runtest_protocol", "pytest_runtest_logstart", "pytest_runtest_setup",
                 "pytest_runtest_call", "pytest_runtest_teardown", "pytest_runtest_makereport",
                 "pytest_runtest_logreport", "pytest_runtest_logfinish", "pytest_report_teststatus"):
        for impl in getattr(hook, name).get_hookimpls():
            owner = getattr(impl.plugin, "__name__", None) or type(impl.plugin).__module__
            if not (owner.startswith("_pytest.") or owner == "deepdebug_plugin"):
                return False
    return True


def quiet_terminal(config):
    """Take pytest's terminal reporter out of the server's session: children write their
    output to /dev/null, and reporting each test's progress took a tenth of a failing test's
    protocol. Outcomes come from the plugin. Left in place when another plugin implements a
    per-test hook (it may look the reporter up)."""
    if only_own_test_hooks(config):
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            config.pluginmanager.unregister(reporter)


# The server imports the plugin before pytest does, so pytest warns that it cannot rewrite its
# asserts; a project with `filterwarnings = error` must not turn that into a failed start.
# A module that cannot be collected does not stop the rest (a user's suite often has one), and a
# project's `-x` or `--maxfail` in addopts does not end a child's session early (requests say -x).
_BASE_ARGS = ["-p", "no:cacheprovider", "-q", "--tb=no", "-p", "deepdebug_plugin",
              "-W", "ignore::pytest.PytestAssertRewriteWarning",
              "--continue-on-collection-errors", "--maxfail=0"]


def collect():
    """Collect the suite in this process; returns (session, items) or raises."""
    config = _pytest.config._prepareconfig(_BASE_ARGS + _ARGS)
    config._do_configure()
    session = _pytest.main.Session.from_config(config)
    config.hook.pytest_sessionstart(session=session)
    session.perform_collect()
    if session.testsfailed and not session.items:
        raise RuntimeError("collection errors")
    # Modules that could not be collected failed at baseline too: the rest of the suite runs warm.
    session.testsfailed = 0
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


def mangled(owner, name):
    """The attribute a class keeps `name` under: `__private` names are mangled to
    `_Class__private` (the code object keeps the plain name)."""
    if isinstance(owner, type) and name.startswith("__") and not name.endswith("__"):
        stripped = owner.__name__.lstrip("_")
        return "_%s%s" % (stripped, name) if stripped else name
    return name


def live_functions(module, path):
    """Every live function object reachable at the dotted path (descriptors unwrapped)."""
    objs = [module]
    for part in path:
        nxt = []
        for obj in objs:
            value = vars(obj).get(mangled(obj, part)) if hasattr(obj, "__dict__") else None
            if value is not None:
                nxt.append(value)
        objs = nxt
    out, found = [], set()
    for obj in objs:
        for candidate in (obj, getattr(obj, "__func__", None), getattr(obj, "fget", None),
                          getattr(obj, "fset", None), getattr(obj, "fdel", None)):
            seen = 0
            while candidate is not None and seen < 10:
                # A classmethod or staticmethod reaches its function twice (`__func__`, and
                # `__wrapped__` since Python 3.10): once is enough.
                if hasattr(candidate, "__code__") and id(candidate) not in found:
                    found.add(id(candidate))
                    out.append(candidate)
                candidate = getattr(candidate, "__wrapped__", None)
                seen += 1
    return out


# The project's modules by real path, taken once in the server before forking. A child must
# not walk sys.modules: touching every module object copies hundreds of shared pages.
_BY_FILE = {}


# Every `from __future__` compiler flag: a function's code carries those of its module.
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag


def patched_code(swap, module, path, live):
    """The patched module code to take the swapped functions from: the module-level statements
    the request carries, compiled at their own lines under the module's `__future__` flags
    (read off a live function of the module), else the whole patched file."""
    source = swap.get("source")
    own = [f for f in live if f.__code__.co_filename == module.__file__]
    if source is not None and own:
        first, text = source
        flags = own[0].__code__.co_flags & _FUTURE_FLAGS
        return compile("\n" * (first - 1) + text, module.__file__, "exec", flags=flags, dont_inherit=True)
    with open(path, encoding="utf-8") as handle:
        return compile(handle.read(), module.__file__, "exec")


class Cold(str):
    """Why a request cannot be hot-swapped; `detail`: the error that says so, when it is one
    that every session of the patched project would meet."""

    def __new__(cls, reason, detail=None):
        self = super().__new__(cls, reason)
        self.detail = detail
        return self


def swap_plan(swap):
    """The (live function, new code) pairs that give the functions of `swap` the code compiled
    from the patched source; [] when the module is not imported yet (it will be imported
    from the patched file), or why the edit cannot be hot-swapped (a reason's name)."""
    path = os.path.join(_ROOT, swap["file"])
    module = _BY_FILE.get(os.path.realpath(path))
    if module is None:
        return []
    live = [live_functions(module, qualname.split(".")) for qualname, _ in swap["functions"]]
    try:
        code = patched_code(swap, module, path, [f for found in live for f in found])
    except Exception as exc:  # e.g. a SyntaxError only CPython sees
        import traceback
        return Cold("compile-error", "".join(traceback.format_exception_only(type(exc), exc)).strip())
    plan = []
    for (qualname, def_line), found in zip(swap["functions"], live):
        new = find_code(code, qualname.split("."), def_line)
        if new is None:
            return "not-found"
        targets = [f for f in found if f.__code__.co_name == new.co_name]
        if len(targets) > 1:  # a property's getter and setter share a name: the one at this line
            targets = [f for f in targets if f.__code__.co_firstlineno == new.co_firstlineno]
        if not found:
            return "not-live"
        if not targets:
            return "decorator"
        if len(targets) != 1:
            return "ambiguous"
        if targets[0].__code__.co_freevars != new.co_freevars:
            return "closure"
        plan.append((targets[0], new))
    return plan


def run_items(items, exit_first):
    for index, item in enumerate(items):
        nextitem = items[index + 1] if index + 1 < len(items) else None
        if (exit_first and index > 0
                and deepdebug_plugin.outcome_of(items[index - 1].nodeid) not in ("passed", "skipped")):
            nextitem = None
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        if exit_first and deepdebug_plugin.outcome_of(item.nodeid) not in ("passed", "skipped"):
            break
    deepdebug_plugin._emit({"kind": "session-finish", "exitstatus": 0})


# Items by node id, taken once in the server: building it in a child touches every item.
_BY_ID = {}


def prepare(request, session):
    """A request's settings, in the child that runs it: the plugin's settings and report file,
    the patched code and the selected items (from maps the server built once: a child pays for
    each page it writes). Returns (swap plan, items) for the warm path, or why it runs cold."""
    deepdebug_plugin.configure(report=request["report"], timeout=request.get("timeout", 0),
                               cpu=request.get("cpu", 0), coverage=False,
                               frames=request.get("frames", True))
    swap = request.get("swap")
    if session is None:
        return "server-cold"
    if swap is None:
        return "no-swap"
    plan = swap_plan(swap)
    if isinstance(plan, str):
        return plan
    wanted = request.get("nodeids")
    if wanted is None:
        return plan, list(_BY_ID.values())
    selected = [_BY_ID[n] for n in wanted if n in _BY_ID]
    return (plan, selected) if len(selected) == len(wanted) else "test-not-collected"


# The pid of the request's child, in that child (a process a test forks is not it).
_CHILD = None


def finished(done):
    """Tell the server this child is about to exit normally, then exit: the server answers
    at once instead of after the kernel has torn the child's address space down."""
    try:
        sys.stdout.flush()
        if os.getpid() == _CHILD:
            os.write(done, b".")
    finally:
        os._exit(0)


def fork_spare(session):
    """Fork the child for the next request before that request comes: the fork and the
    child's start-up overlap with the host's handling of the previous answer. The child
    reads its request from a pipe (until the server closes it), prepares it and runs it.
    Returns (pid, request pipe, `done` pipe)."""
    global _CHILD
    request_r, request_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        _CHILD = os.getpid()
        try:
            os.setpgid(0, 0)
            os.close(request_w)
            os.close(done_r)
            data = read_all(request_r)
            os.close(request_r)
            if not data:  # the server is shutting down
                os._exit(0)
            request = marshal.loads(data)
            if "batch" in request:
                run_batch(request, session, done_w)
            child(request, prepare(request, session), done_w)
        finally:
            os._exit(70)
    os.close(request_r)
    os.close(done_w)
    try:
        os.setpgid(pid, pid)  # the child does it too; whoever runs first makes the group
    except OSError:
        pass
    return pid, request_w, done_r


def read_all(fd):
    """Everything until end of input (plain reads: a file object costs a child pages)."""
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def hand_over(send, request):
    """Write a request (marshalled: the child reads it back without touching the json
    module's pages) to the spare child and close the pipe (its end of input). False when the
    child is gone."""
    data = marshal.dumps(request)
    try:
        while data:
            data = data[os.write(send, data):]
    except BrokenPipeError:
        return False
    finally:
        os.close(send)
    return True


def child(request, warm, done):
    if getattr(warm, "detail", None) is not None:
        # The patched statements do not compile: a fresh session would fail to import the
        # module, so the child reports that collection error without starting one.
        deepdebug_plugin._emit({"kind": "engine-path", "path": "warm"})
        deepdebug_plugin._emit({"kind": "collect-error", "nodeid": request["swap"]["file"], "message": warm.detail})
        deepdebug_plugin._emit({"kind": "session-finish", "exitstatus": 2})
        finished(done)
    if not isinstance(warm, str):
        plan, selected = warm
        for function, code in plan:
            function.__code__ = code
        deepdebug_plugin._emit({"kind": "engine-path", "path": "warm"})
        run_items(selected, request.get("exit_first", False))
        finished(done)
    # Cold path: forget the project's modules and run a fresh pytest session on the files.
    deepdebug_plugin._emit({"kind": "engine-path", "path": "cold", "why": warm})
    for name in project_modules():
        del sys.modules[name]
    args = list(_BASE_ARGS)
    if request.get("exit_first"):
        args.append("-x")
    nodeids = request.get("nodeids")
    args += _ARGS if nodeids is None else nodeids
    try:
        pytest.main(args)
    finally:
        finished(done)


# --- Batches: several candidates in one child ------------------------------------------------
#
# A child that validates a batch hot-swaps each request's functions, runs its tests, puts the
# original code back and checks that the tests left no state behind (a fingerprint of the
# project's module globals, class attributes and the containers in them, `sys.modules`,
# threads, cwd, environment and `sys.path`) before it takes the next request. It tells the
# server about each request with one byte on its `done` pipe: `e` ran, `d` not run here (it
# needs the patched file on disk or a cold session, or the batch's time is up), `s` ran and
# left state behind (the child exits; the rest goes to a fresh child), `.` all done. State a
# request changed in the watched containers (a memo filled, a class attribute set) is put back
# from the server's `Snapshot` first; only what cannot be put back ends the child.


class _TooBig(Exception):
    """The project's module state is too large to fingerprint cheaply."""


# Entries the watched containers may hold in all, and how deep the server looks for them.
_WATCH_BUDGET = 20000
_WATCH_DEPTH = 4
# A fingerprint slower than this (seconds, in the server) turns batches off.
_FINGERPRINT_SLOW = 0.002
_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), range, type(Ellipsis))
_SEQUENCES = (list, set, collections.deque)
# Containers that cannot change: their entries are walked, not compared.
_FROZEN = (tuple, frozenset)


class Watch:
    """What the fingerprint compares, found once in the server: every dict (module globals,
    class and instance attributes), list, set and deque reachable from the project's modules
    within `_WATCH_DEPTH` steps (through tuples and frozensets, which cannot change), the code
    of every function found and the number of its attributes (those it had are watched as a
    dict), and the size of every `functools` cache. Comparing the identities of the entries of
    each container catches a rebinding, an insertion or a removal at any of these places; a
    container created later hangs off a watched one, whose entries then change."""

    def __init__(self):
        self.mappings, self.sequences, self.functions, self.caches, self.buffers = [], [], [], [], []
        # The class of each watched class-attribute proxy, by the proxy's position in `mappings`.
        self.owners = {}
        self.seen = set()
        self.budget = _WATCH_BUDGET

    def add(self, value, depth):
        if isinstance(value, _IMMUTABLE) or isinstance(value, types.ModuleType) or id(value) in self.seen:
            return
        self.seen.add(id(value))
        if isinstance(value, (dict, types.MappingProxyType)):
            self.take(len(value))
            self.mappings.append(value)
            children = value.values()
        elif isinstance(value, _SEQUENCES):
            self.take(len(value))
            self.sequences.append(value)
            children = value
        elif isinstance(value, _FROZEN):
            self.take(len(value))
            children = value
        elif isinstance(value, bytearray):
            self.buffers.append(value)
            return
        elif isinstance(value, types.FunctionType):
            self.functions.append(value)
            # Most functions have no attributes: their count is compared instead of a dict.
            children = (value.__dict__ or None, value.__defaults__, value.__kwdefaults__)
        elif isinstance(value, type):
            children = ()
            if value.__module__ in _PROJECT_NAMES:
                self.owners[len(self.mappings)] = value  # the proxy added next is its
                children = (vars(value),)
        elif type(value).__name__ == "_lru_cache_wrapper":  # functools.lru_cache / cache
            self.caches.append(value)
            children = (value.__wrapped__,)
        elif type(value).__module__ in _PROJECT_NAMES and isinstance(getattr(value, "__dict__", None), dict):
            children = (value.__dict__,)
        else:
            return
        if depth < _WATCH_DEPTH:
            for child in children:
                self.add(child, depth + 1)

    def take(self, entries):
        self.budget -= entries + 1
        if self.budget < 0:
            raise _TooBig()

    def fingerprint(self):
        """The identities of everything watched, and the process-wide state a test can
        change: cwd, `sys.path`, threads, the environment, the builtins."""
        acc = [os.getcwd(), tuple(sys.path), threading.active_count(), tuple(_ENVIRON.items())]
        acc.extend(map(id, vars(builtins).values()))
        for mapping in self.mappings:
            acc.append(len(mapping))
            acc.extend(map(id, mapping))
            acc.extend(map(id, mapping.values()))
        for sequence in self.sequences:
            acc.append(len(sequence))
            acc.extend(map(id, sequence))
        acc.extend(map(id, map(_CODE, self.functions)))
        acc.extend(map(len, map(_ATTRIBUTES, self.functions)))
        acc.extend(cache.cache_info().currsize for cache in self.caches)
        acc.extend(map(hash, map(bytes, self.buffers)))
        return acc


_CODE = operator.attrgetter("__code__")
_ATTRIBUTES = operator.attrgetter("__dict__")
# The environment as os.environ keeps it (encoded; iterating os.environ decodes every entry).
_ENVIRON = getattr(os.environ, "_data", os.environ)

# Taken in the server before it forks (None: batches run one request per child).
_WATCH = None
_BASE = None
_SNAPSHOT = None
_PROJECT_NAMES = frozenset()
_BASE_MODULES = frozenset()


class Snapshot:
    """The contents of everything a [`Watch`] watches, taken in the server: a batch child puts
    them back after a request that changed them (a cache filled, a class attribute set), so
    that the next request starts from the state a fresh child has, as far as the fingerprint
    can tell."""

    def __init__(self, watch):
        self.mappings = [dict(m) for m in watch.mappings]
        self.sequences = [list(q) for q in watch.sequences]
        self.attributes = [len(f.__dict__) for f in watch.functions]
        self.caches = [c.cache_info().currsize for c in watch.caches]
        self.buffers = [bytes(b) for b in watch.buffers]

    def restore(self, watch):
        for index, (mapping, saved) in enumerate(zip(watch.mappings, self.mappings)):
            if not same_entries(mapping, saved):
                put_back(mapping, saved, watch.owners.get(index))
        for sequence, saved in zip(watch.sequences, self.sequences):
            if len(sequence) != len(saved) or any(a is not b for a, b in zip(sequence, saved)):
                if isinstance(sequence, list):
                    sequence[:] = saved
                elif isinstance(sequence, collections.deque):
                    sequence.clear()
                    sequence.extend(saved)
                else:
                    sequence.clear()
                    sequence.update(saved)
        for function, count in zip(watch.functions, self.attributes):
            if count == 0 and function.__dict__:
                function.__dict__.clear()
        for cache, size in zip(watch.caches, self.caches):
            if size == 0 and cache.cache_info().currsize:
                cache.cache_clear()
        for buffer, saved in zip(watch.buffers, self.buffers):
            if buffer != saved:
                buffer[:] = saved


def same_entries(mapping, saved):
    if len(mapping) != len(saved):
        return False
    for key, value in mapping.items():
        if saved.get(key, saved) is not value:
            return False
    return True


def put_back(mapping, saved, owner):
    """Give `mapping` the entries `saved` again: in place for a dict, through the class's
    attributes for a class's proxy (what cannot be set stays, and the fingerprint says so)."""
    if owner is None:
        for key in [k for k in mapping if k not in saved]:
            del mapping[key]
        if list(mapping) != list(saved):  # entries removed: put the whole dict back in order
            mapping.clear()
            mapping.update(saved)
        for key, value in saved.items():
            if mapping[key] is not value:
                mapping[key] = value
        return
    for key in [k for k in mapping if k not in saved]:
        try:
            delattr(owner, key)
        except (AttributeError, TypeError):
            pass
    for key, value in saved.items():
        if mapping.get(key, saved) is not value:
            try:
                setattr(owner, key, value)
            except (AttributeError, TypeError):
                pass


def forget_warning_registries():
    """Drop the warning registries the project's modules gained: pytest resets them anyway
    (every change of the warning filters does), and they are not state a test relies on."""
    for module in _BY_FILE.values():
        module.__dict__.pop("__warningregistry__", None)


def take_base():
    """The server's fingerprint, if it is cheap enough to check after every request."""
    global _WATCH, _BASE, _SNAPSHOT, _PROJECT_NAMES, _BASE_MODULES
    _PROJECT_NAMES = frozenset(m.__name__ for m in _BY_FILE.values())
    _BASE_MODULES = frozenset(sys.modules)
    forget_warning_registries()
    watch = Watch()
    try:
        for module in _BY_FILE.values():
            watch.add(module.__dict__, 0)
    except (_TooBig, RuntimeError):
        return
    watch.seen = None
    start = time.perf_counter()
    base = watch.fingerprint()
    if time.perf_counter() - start <= _FINGERPRINT_SLOW:
        _WATCH, _BASE, _SNAPSHOT = watch, base, Snapshot(watch)


def state_left_behind():
    """Whether the requests run so far in this child left anything a fresh child would not
    have: new project modules count, new library modules do not (importing is idempotent)."""
    if _BASE is None:
        return True
    if len(sys.modules) != len(_BASE_MODULES):
        names = set(sys.modules)
        if not _BASE_MODULES <= names:
            return True
        for name in names - _BASE_MODULES:
            path = getattr(sys.modules[name], "__file__", None)
            if path and realpath(path).startswith(_ROOT):
                return True
    forget_warning_registries()
    try:
        return _WATCH.fingerprint() != _BASE
    except RuntimeError:  # a container changed size while being walked
        return True


def restored():
    """Put back what the last request changed of the watched state; whether the fingerprint
    is the server's again (new project modules, process-wide state and whatever could not be
    set back end the child instead)."""
    try:
        _SNAPSHOT.restore(_WATCH)
    except Exception:  # a container that refuses its old entries: a fresh child is safer
        return False
    return not state_left_behind()


def tell(done, word):
    """One byte to the server about the current request; only the request's child speaks (a
    process a test forked returns through here too, and must not)."""
    if os.getpid() != _CHILD:
        os._exit(0)
    os.write(done, word)


def run_batch(request, session, done):
    """Run the batch's requests from `start` on, one after another, on the warm path."""
    items, end = request["batch"], request.get("end") or 0
    rnd = sys.modules.get("random")
    state = rnd.getstate() if rnd is not None and hasattr(rnd, "getstate") else None
    for index in range(request["start"], len(items)):
        item = items[index]
        warm = "time-up" if end and time.monotonic() > end else prepare(item, session)
        if isinstance(warm, str) or not warm[0]:
            tell(done, b"d")
            continue
        plan, selected = warm
        originals = [(function, function.__code__) for function, _ in plan]
        for function, code in plan:
            function.__code__ = code
        deepdebug_plugin.reset()
        deepdebug_plugin._emit({"kind": "engine-path", "path": "warm"})
        for test in selected:  # what pytest appends to per run, as a fresh child has it
            if isinstance(getattr(test, "_report_sections", None), list):
                test._report_sections = []
            if isinstance(getattr(test, "user_properties", None), list):
                test.user_properties = []
        try:
            run_items(selected, item.get("exit_first", False))
            torn_down = tear_down(session)
        finally:
            for function, code in originals:
                function.__code__ = code
            if state is not None:
                rnd.setstate(state)
        if not torn_down or (state_left_behind() and not restored()):
            tell(done, b"s")
            os._exit(0)
        tell(done, b"e")
    tell(done, b".")
    os._exit(0)


def tear_down(session):
    """Finish the fixtures a request left set up (a run stopped at its first failure leaves
    them for the next test), as the end of a session would. False when that failed."""
    state = getattr(session, "_setupstate", None)
    try:
        if hasattr(state, "teardown_all"):  # pytest < 7
            state.teardown_all()
        elif state is not None:
            state.teardown_exact(None)
        return True
    except BaseException:  # a fixture's finalizer failed: this child is not clean any more
        return False


def serve_batch(request, spare, session):
    """Answer a batch: children run its requests, a fresh one wherever the last one ended.
    Returns the next spare child."""
    items = request["batch"]
    end = time.monotonic() + request["until"] if request.get("until") else 0
    index = 0
    while index < len(items):
        pid, send, done = spare
        if not hand_over(send, {"batch": items, "start": index, "end": end}):
            os.close(done)
            reap_orphans()
            spare = fork_spare(session)
            continue
        reply({"kind": "started", "id": request["id"], "pid": pid})
        index = follow(request["id"], items, index, pid, done)
        os.close(done)
        spare = fork_spare(session)
    reply({"kind": "done", "id": request["id"], "status": 0, "timed_out": False})
    return spare


def follow(rid, items, index, pid, done):
    """Answer each request the child runs from `index` on, enforcing each one's deadline,
    until the child ends; then clear its group. Returns the first request not answered."""
    while index < len(items):
        word, status, timed_out = wait_word(pid, done, items[index].get("deadline") or 0)
        if word in (b"e", b"d", b"s"):
            reply({"kind": "item", "id": rid, "index": index, "status": 0, "timed_out": False, "ran": word != b"d"})
            index += 1
            if word == b"s":
                break
            continue
        if word is None:  # the child crashed, or was killed at the request's deadline
            reply({"kind": "item", "id": rid, "index": index, "status": status, "timed_out": timed_out, "ran": True})
            clear_group(pid)
            kill_strays()
            return index + 1
        break  # b".": nothing left
    kill_group(pid, unreaped=True)
    os.waitpid(pid, 0)
    clear_group(pid)
    kill_strays()
    return index


def kill_group(pid, unreaped):
    """SIGKILL the child's process group. With `unreaped` (the pid cannot have been reused
    yet) the child alone is killed when it has no group of its own yet."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        if unreaped:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    except PermissionError:
        pass


def reaped(pid):
    """The child's wait status if it has ended (reaping it), else None."""
    done, status = os.waitpid(pid, os.WNOHANG)
    return status if done == pid else None


def wait_child(pid, done, deadline):
    """Wait until the child says it is finished (a byte on `done`) or ends; kill its group at
    `deadline` seconds (0: never). Returns (wait status, or None when the child said it is
    finished and is exiting normally; timed_out)."""
    word, status, timed_out = wait_word(pid, done, deadline)
    return (None, False) if word is not None else (status, timed_out)


def wait_word(pid, done, deadline):
    """Wait for the child's next byte on `done` or its end; kill its group at `deadline`
    seconds (0: never). Returns (the byte or None, wait status when it ended, timed_out)."""
    end = time.monotonic() + deadline if deadline > 0 else None
    pidfd = None
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:  # an old kernel, or seccomp refusing the call
            pidfd = None
    watch = [done] if pidfd is None else [done, pidfd]
    try:
        while True:
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                break
            if pidfd is None:  # poll for an end without a word (a crash)
                left = 0.005 if left is None else min(left, 0.005)
            ready = select.select(watch, [], [], left)[0]
            if done in ready:
                word = os.read(done, 1)
                if word:
                    return word, None, False
                watch.remove(done)  # closed without a word: the child ended or crashed
            status = reaped(pid)
            if status is not None:
                return None, status, False
    finally:
        if pidfd is not None:
            os.close(pidfd)
    kill_group(pid, unreaped=True)
    return None, os.waitpid(pid, 0)[1], True


def reap_orphans():
    """Reap grandchildren re-parented to the server (it is pid 1 in a container)."""
    while True:
        try:
            done, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if done == 0:
            return


def become_subreaper():
    """Orphans of our children (a test's processes that left its group with setsid, daemons)
    are re-parented to the server instead of init, so `kill_strays` can find them."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def kill_strays():
    """Kill every child of the server and wait for it, until none is left. Between requests
    the server has no child of its own: any child then is a stray re-parented to it."""
    path = "/proc/self/task/%d/children" % os.getpid()
    for _ in range(100):
        try:
            with open(path) as f:
                pids = [int(p) for p in f.read().split()]
        except OSError:
            return
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def clear_group(pid):
    """Kill what is left of the (reaped) child's group and wait a little for it to be gone:
    SIGKILL takes effect asynchronously, and the dead become zombies to reap."""
    kill_group(pid, unreaped=False)
    end = time.monotonic() + 0.05
    while True:
        reap_orphans()
        try:
            os.killpg(pid, 0)
        except OSError:  # no such group left (or not ours to signal)
            return
        if time.monotonic() > end:
            return
        time.sleep(0.001)


def main():
    session, items, why = None, [], ""
    if not hasattr(os, "fork"):
        reply({"kind": "ready", "mode": "unavailable", "tests": [], "why": "os.fork is not available"})
        return
    lean_failure_reports()
    become_subreaper()
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
    for item in items:
        _BY_ID[item.nodeid] = item
    if session is not None:
        quiet_terminal(session.config)
        warm_up(items)
        take_base()
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
        "batch": _BASE is not None,
    })
    spare = fork_spare(session)
    for line in _REQUESTS:
        line = line.strip()
        if not line:
            continue
        request = json.loads(line)
        reap_orphans()  # any that died since the last request
        if "batch" in request:
            spare = serve_batch(request, spare, session)
            continue
        pid, send, done = spare
        if not hand_over(send, request):  # the spare died waiting (killed from outside): another
            os.close(done)
            reap_orphans()  # it, if not reaped above already
            pid, send, done = spare = fork_spare(session)
            hand_over(send, request)
        reply({"kind": "started", "id": request["id"], "pid": pid})
        status, timed_out = wait_child(pid, done, request.get("deadline") or 0)
        os.close(done)
        if status is None:
            # The child has finished and is exiting: its stray grandchildren go now (it is
            # not reaped, so its pid names it still), the answer goes before its teardown.
            kill_group(pid, unreaped=True)
            reply({"kind": "done", "id": request["id"], "status": 0, "timed_out": False})
            os.waitpid(pid, 0)
            clear_group(pid)
            kill_strays()  # and those that left the group
        else:
            clear_group(pid)  # stray grandchildren
            kill_strays()
            reply({"kind": "done", "id": request["id"], "status": status, "timed_out": timed_out})
        spare = fork_spare(session)
    pid, send, done = spare
    os.close(send)  # the spare reads an empty request and exits
    os.close(done)
    os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
