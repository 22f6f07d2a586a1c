#!/usr/bin/env python3
"""Builds (function, input, output) rows for the neural debugger's next-state model.

Every output row is one JSON object per line:

    {"id": "gen-00000", "origin": "generated" | "corpus:OWNER/NAME",
     "code": "<source defining the function>", "entry": "f",
     "input": "[3, 1], 'ab'", "output": "<repr of the return value>"}

A consumer execs `code`, evaluates `eval('(' + input + ',)')` and calls `entry(*args)`;
the return value's repr is `output`. Inputs are literals whose repr round-trips (< 120
chars); outputs are < 200 chars, deterministic and never an object address.

Subcommands (stdlib only, Python 3.9+):

    python3 programs.py generate --n 2000 --seed 0 --out gen.jsonl [--start-id 0]
        Small random functions `f` from this file's own typed grammar (never copied from
        CruxEval, HumanEval or QuixBugs); byte-identical output for the same arguments.
    python3 programs.py corpus --corpus ../shared/corpus/fix-pairs.jsonl.gz \
            --limit 1500 --seed 0 --out cor.jsonl [--exclude-repo OWNER/NAME ...]
        Self-contained top-level functions (`after` side) of the mined fix corpus, with
        fuzzed inputs. pylint-dev/pylint and pylint-dev/astroid (GPL/LGPL) are always
        excluded.
    python3 programs.py split --input rows.jsonl --test-fraction 0.1 --seed 0 \
            --train train.jsonl --test test.jsonl
        Split by program (normalized code): no program lands in both files.
    python3 programs.py self-test [--corpus PATH]
        Determinism of `generate`, re-execution of generated and corpus rows, split check.

Untrusted code (mined functions, and generated ones) only ever runs in child processes:
`python3 -I -S -c RUNNER` in a new session and a fresh empty temporary directory, with
the environment stripped to PATH, rlimits (512 MB address space, CPU seconds, 16 open
files, no file writes), a per-input CPU/wall timer, a 5,000 line-event budget counted
with sys.settrace, and an audit hook that refuses os/subprocess/socket/... events and
files opened for writing. The parent kills a child's process group when it overruns
its wall-clock deadline and restarts it past the item that killed it. At most two
children run at a time.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import collections
import gzip
import itertools
import json
import os
import random
import re
import selectors
import shutil
import subprocess
import symtable
import sys
import tempfile
import textwrap
import time

try:
    import resource
except ImportError:  # not POSIX: the children run without rlimits
    resource = None

MAX_INPUT_CHARS = 119      # `input` is under 120 characters
MAX_OUTPUT_CHARS = 199     # `output` is under 200 characters
LINE_EVENT_LIMIT = 5000    # a run over this many line events is abandoned
CPU_PER_INPUT = 0.5        # seconds of CPU per input (ITIMER_PROF)
WALL_PER_INPUT = 3.0       # seconds of wall time per input (ITIMER_REAL), a backstop
PER_INPUT_DEADLINE = WALL_PER_INPUT + 2.0   # parent's kill deadline per input (C-level hangs)
WORKERS = 2                # child processes at a time (the machine has 2 cores)
ALWAYS_EXCLUDED = ("pylint-dev/pylint", "pylint-dev/astroid")  # GPL-2.0 / LGPL-2.1


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


# =============================================================== sandboxed execution

# The child: reads JSON items from stdin, writes one JSON result per item to a dup of its
# stdout (fds 0-2 are pointed at /dev/null before any candidate runs). An item is
# {"code", "entry", "inputs": [args text, ...], "opts": {...}}; the inputs are tried in
# order and the first acceptable run is reported (see run_item).
RUNNER = r'''
import ast, builtins, json, os, signal, sys

class Abort(BaseException):
    pass

STATE = {"armed": False, "lines": 0, "limit": 5000, "why": None}
BLOCKED = ("os.", "subprocess.", "socket.", "shutil.", "ctypes.", "pty.", "fcntl.", "mmap.",
           "resource.", "urllib.", "http.", "ftplib.", "smtplib.", "poplib.", "imaplib.",
           "nntplib.", "telnetlib.", "webbrowser.", "glob.", "tempfile.", "sqlite3.", "gc.",
           "winreg.", "msvcrt.", "sys.", "cpython.", "pickle.", "marshal.")

def audit(event, args):
    if not STATE["armed"] or event == "sys.settrace":
        return
    bad = event.startswith(BLOCKED)
    if event == "open":
        mode = args[1]
        bad = not isinstance(mode, str) or any(ch in mode for ch in "wax+")
    if bad:
        STATE["why"] = "blocked:" + event
        raise Abort()

def on_timer(signum, frame):
    if STATE["armed"]:
        STATE["why"] = "timeout"
        raise Abort()

def trace_lines(frame, event, arg):
    if event == "line":
        STATE["lines"] += 1
        if STATE["lines"] > STATE["limit"]:
            STATE["why"] = "line-limit"
            raise Abort()
    return trace_lines

def trace_calls(frame, event, arg):
    if frame.f_code.co_filename == "<prog>":
        return trace_lines
    return None

def disarm():
    STATE["armed"] = False
    signal.setitimer(signal.ITIMER_PROF, 0)
    signal.setitimer(signal.ITIMER_REAL, 0)

def run_input(code, entry, text, opts):
    try:
        args = ast.literal_eval("(" + text + ",)")
    except Exception:
        return {"ok": False, "err": "bad-input"}
    namespace = {"__name__": "__prog__", "__builtins__": builtins}
    STATE.update(lines=0, limit=opts["line_limit"], why=None)
    out = err = None
    try:
        signal.setitimer(signal.ITIMER_PROF, opts["cpu"], 0.05)
        signal.setitimer(signal.ITIMER_REAL, opts["wall"], 0.05)
        STATE["armed"] = True
        exec(code, namespace)
        func = namespace[entry]
        sys.settrace(trace_calls)
        try:
            value = func(*args)
        finally:
            sys.settrace(None)
        out = repr(value)
    except Abort:
        err = STATE["why"] or "abort"
    except BaseException as exc:
        err = type(exc).__name__
    finally:
        disarm()
    if STATE["why"] or err:
        return {"ok": False, "err": STATE["why"] or err}
    return {"ok": True, "out": out, "lines": STATE["lines"]}

def acceptable(out, lines, opts):
    return (len(out) <= opts["max_output"] and lines >= opts["min_lines"]
            and " at 0x" not in out and not out.startswith("<"))

def run_item(item, cache):
    src = item["code"]
    code = cache.get(src)
    if code is None:
        try:
            code = compile(src, "<prog>", "exec")
        except Exception:
            return {"index": None, "errors": {"compile": 1}}
        if len(cache) > 256:
            cache.clear()
        cache[src] = code
    opts = item["opts"]
    errors, fallback, slow = {}, None, 0
    for index, text in enumerate(item["inputs"]):
        RESULTS.write("+\n")   # heartbeat: the parent's wall-clock deadline restarts
        RESULTS.flush()
        res = run_input(code, item["entry"], text, opts)
        if not res["ok"]:
            errors[res["err"]] = errors.get(res["err"], 0) + 1
            slow += res["err"] in ("timeout", "line-limit")
            if slow >= opts["max_slow"]:
                break
            continue
        if not acceptable(res["out"], res["lines"], opts):
            errors["rejected-output"] = errors.get("rejected-output", 0) + 1
            continue
        found = {"index": index, "output": res["out"], "lines": res["lines"]}
        if res["out"] == "None" and opts["prefer_value"]:
            fallback = fallback or found
            continue
        return found
    return fallback or {"index": None, "errors": errors}

def main():
    global RESULTS
    data = sys.stdin.buffer.read()
    results = RESULTS = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    signal.signal(signal.SIGALRM, on_timer)
    signal.signal(signal.SIGPROF, on_timer)
    sys.addaudithook(audit)
    cache = {}
    for line in data.splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        try:
            res = run_item(item, cache)
        except Abort:
            disarm()
            res = {"index": None, "errors": {STATE["why"] or "abort": 1}}
        results.write(json.dumps(res) + "\n")
        results.flush()

main()
'''


def run_options(min_lines, prefer_value, max_slow=3):
    """The per-item options the child understands."""
    return {"line_limit": LINE_EVENT_LIMIT, "cpu": CPU_PER_INPUT, "wall": WALL_PER_INPUT,
            "max_output": MAX_OUTPUT_CHARS, "min_lines": min_lines,
            "prefer_value": prefer_value, "max_slow": max_slow}


def _limit_child(cpu_seconds):
    """preexec_fn: rlimits for one child (runs in the forked child before exec)."""
    def apply():
        if resource is None:
            return
        limits = [(resource.RLIMIT_AS, 512 << 20), (resource.RLIMIT_CPU, cpu_seconds),
                  (resource.RLIMIT_NOFILE, 16), (resource.RLIMIT_FSIZE, 0),
                  (resource.RLIMIT_CORE, 0)]
        for which, value in limits:
            resource.setrlimit(which, (value, value))
    return apply


class _Job:
    """One child process working through a chunk of item indices."""

    def __init__(self, proc, indices, workdir):
        self.proc = proc
        self.indices = indices
        self.workdir = workdir
        self.done = 0
        self.buf = b""
        self.deadline = time.monotonic() + 10.0 + PER_INPUT_DEADLINE   # + interpreter start

    def current(self):
        return self.indices[self.done]


class Sandbox:
    """Runs items in fresh child processes (a new one per chunk), `workers` at a time.

    `run(items)` returns one result per item, in order: {"index", "output", "lines"} for
    the first acceptable input, or {"index": None, "errors": {...}}. The child writes a
    heartbeat line before each input; a child that dies, or is silent for longer than
    PER_INPUT_DEADLINE, is killed (whole process group); its current item counts as
    failed and the rest of its chunk is requeued in a new child.
    """

    def __init__(self, workers=WORKERS, chunk=48):
        self.workers = max(1, workers)
        self.chunk = chunk
        self.root = tempfile.mkdtemp(prefix="nextstate-")
        self.children_started = 0
        self.crashes = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def run(self, items):
        results = [None] * len(items)
        if not items:
            return results
        queue = collections.deque(
            list(range(start, min(start + self.chunk, len(items))))
            for start in range(0, len(items), self.chunk))
        sel = selectors.DefaultSelector()
        active = []
        try:
            while queue or active:
                while queue and len(active) < self.workers:
                    job = self._spawn(queue.popleft(), items)
                    sel.register(job.proc.stdout, selectors.EVENT_READ, job)
                    active.append(job)
                wait = max(0.0, min(job.deadline for job in active) - time.monotonic())
                for key, _ in sel.select(wait):
                    job = key.data
                    data = os.read(job.proc.stdout.fileno(), 1 << 16)
                    if data:
                        self._take_lines(job, data, results)
                    else:
                        self._finish(job, sel, active, queue, results, "crash")
                now = time.monotonic()
                for job in list(active):
                    if job.done < len(job.indices) and now > job.deadline:
                        self._finish(job, sel, active, queue, results, "wall-timeout")
                    elif job.done >= len(job.indices):
                        self._finish(job, sel, active, queue, results, None)
        finally:
            for job in list(active):
                self._kill(job)
            sel.close()
        return results

    def _spawn(self, indices, items):
        workdir = tempfile.mkdtemp(dir=self.root)
        cwd = os.path.join(workdir, "cwd")
        os.mkdir(cwd)
        path = os.path.join(workdir, "items.jsonl")
        with open(path, "w", encoding="utf-8") as fh:
            for i in indices:
                fh.write(json.dumps(items[i]) + "\n")
        n_inputs = sum(len(items[i]["inputs"]) for i in indices)
        cpu = int(5 + (CPU_PER_INPUT + 0.1) * n_inputs)
        with open(path, "rb") as stdin:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", RUNNER], stdin=stdin,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                preexec_fn=_limit_child(cpu), start_new_session=True, close_fds=True)
        self.children_started += 1
        return _Job(proc, indices, workdir)

    @staticmethod
    def _take_lines(job, data, results):
        job.buf += data
        while b"\n" in job.buf and job.done < len(job.indices):
            line, job.buf = job.buf.split(b"\n", 1)
            job.deadline = time.monotonic() + PER_INPUT_DEADLINE
            if line == b"+":
                continue
            results[job.current()] = json.loads(line)
            job.done += 1

    def _finish(self, job, sel, active, queue, results, failure):
        if job not in active:
            return
        sel.unregister(job.proc.stdout)
        active.remove(job)
        if job.done < len(job.indices):
            # Results may still sit in the pipe: drain before judging the child dead.
            job.proc.stdout.close() if failure == "wall-timeout" else self._drain(job, results)
        self._kill(job)
        if job.done < len(job.indices):
            self.crashes += 1
            results[job.current()] = {"index": None, "errors": {failure or "crash": 1}}
            rest = job.indices[job.done + 1:]
            if rest:
                queue.appendleft(rest)
        shutil.rmtree(job.workdir, ignore_errors=True)

    def _drain(self, job, results):
        data = job.proc.stdout.read()
        if data:
            self._take_lines(job, data, results)
        job.proc.stdout.close()

    @staticmethod
    def _kill(job):
        try:
            os.killpg(job.proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
        if job.proc.stdout and not job.proc.stdout.closed:
            job.proc.stdout.close()
        job.proc.wait()


def confirm(box, found, runs=2):
    """Re-runs each (code, entry, input, output) `runs` more times, each batch in fresh
    processes (fresh hash seeds); True where every run gave the same output."""
    ok = [True] * len(found)
    for _ in range(runs):
        items = [{"code": code, "entry": entry, "inputs": [text],
                  "opts": run_options(0, False)} for code, entry, text, _out in found]
        for i, res in enumerate(box.run(items)):
            if res.get("index") is None or res["output"] != found[i][3]:
                ok[i] = False
    return ok


def args_text(values):
    """The `input` text for a tuple of argument values, or None if it is unusable."""
    text = ", ".join(repr(v) for v in values)
    if len(text) > MAX_INPUT_CHARS:
        return None
    try:
        back = ast.literal_eval("(" + text + ",)")
    except (ValueError, SyntaxError):
        return None
    return text if repr(back) == repr(tuple(values)) else None


# =============================================================== the program grammar

INT, STR, LINT, LSTR, DICT, BOOL = "int", "str", "list[int]", "list[str]", "dict[str,int]", "bool"
TYPES = (INT, STR, LINT, LSTR, DICT, BOOL)
ELEM = {STR: STR, LINT: INT, LSTR: STR}
VAR_NAMES = {
    INT: ["n", "k", "m", "total", "count", "acc", "idx", "step", "lo", "hi", "best", "diff"],
    STR: ["s", "t", "text", "word", "res", "out", "prefix", "buf", "tail", "head"],
    LINT: ["nums", "xs", "vals", "arr", "stack", "ys", "seq", "marks"],
    LSTR: ["words", "parts", "names", "toks", "items", "chunks"],
    DICT: ["d", "counts", "seen", "table", "freq", "pos"],
    BOOL: ["flag", "found", "ok", "done", "changed"],
}
LOOP_NAMES = {INT: ["i", "j", "v", "e", "x", "y", "a", "b"], STR: ["c", "ch", "w", "p", "u", "q"]}
STR_LITS = ["", "a", "b", "e", "x", "ab", "abc", " ", ",", "-", "_", ".", "o", "hi", "xy", "!", "1", "z"]
SEPS = [",", " ", "-", ":", "|", "_", "a"]
JOINERS = ["", " ", ",", "-", "|", ", "]
CHAR_PREDS = ["isdigit", "isalpha", "isupper", "islower", "isspace", "isalnum"]
CMPS = ["<", "<=", ">", ">=", "==", "!="]
MAX_DEPTH = 2


def weighted(rng, options):
    """Picks the payload of a (weight, payload) list."""
    total = sum(w for w, _ in options)
    r = rng.random() * total
    for w, payload in options:
        r -= w
        if r < 0:
            return payload
    return options[-1][1]


def indent(lines):
    return ["    " + line for line in lines]


class ProgramBuilder:
    """Builds one program from typed templates, tracking variable types in `env`.

    Invariants that keep programs exception-free by construction: every variable keeps
    its type; names first bound inside a block are forgotten after it; the iterable of a
    for loop and the counter/bound of a while loop are frozen (never mutated) inside the
    loop; indexing, pop, max/min, int() and division are guarded.
    """

    def __init__(self, rng, name="f"):
        self.rng = rng
        self.name = name
        self.env = {}            # variable -> type (insertion-ordered: deterministic)
        self.frozen = set()      # only used for membership tests
        self.touched = []        # variables assigned or mutated, latest last
        self.kinds = collections.Counter()
        self.helper = None       # (name, [param types], return type) of a helper to call
        self.helper_calls = 0
        self.loop_depth = 0
        self.focus = None        # a name var() favours (the loop variable being used)
        self.ret_type = None     # fixed return type (helpers), else any

    # ---------------------------------------------------------------- variables

    def var(self, t, mutable=False):
        if self.focus and self.env.get(self.focus) == t and self.rng.random() < 0.6:
            if not (mutable and self.focus in self.frozen):
                return self.focus
        names = [n for n, ty in self.env.items()
                 if ty == t and not (mutable and n in self.frozen)]
        return self.rng.choice(names) if names else None

    def var_any(self, types, mutable=False):
        names = [n for n, ty in self.env.items()
                 if ty in types and not (mutable and n in self.frozen)]
        return self.rng.choice(names) if names else None

    def fresh(self, t, pool=None):
        taken = set(self.env) | {"f", "g"}
        names = [n for n in (pool or VAR_NAMES[t]) if n not in taken]
        if names:
            return self.rng.choice(names[:4]) if self.rng.random() < 0.7 else self.rng.choice(names)
        base = (pool or VAR_NAMES[t])[0]
        k = 2
        while f"{base}{k}" in taken:
            k += 1
        return f"{base}{k}"

    def fresh_loop(self, t):
        return self.fresh(t, LOOP_NAMES.get(t, LOOP_NAMES[INT]))

    def bind(self, name, t):
        self.env[name] = t
        self.touch(name)

    def touch(self, name):
        if name in self.touched:
            self.touched.remove(name)
        self.touched.append(name)

    def snapshot(self):
        return (dict(self.env), set(self.frozen), list(self.touched), self.kinds.copy(),
                self.helper_calls, self.focus)

    def restore(self, snap):
        env, frozen, touched, kinds, calls, focus = snap
        self.env, self.frozen, self.touched = dict(env), set(frozen), list(touched)
        self.kinds, self.helper_calls, self.focus = kinds.copy(), calls, focus

    def scoped(self, body, *, bind=(), freeze=()):
        """Runs body() with extra bindings/frozen names; forgets names it introduced."""
        before_env = dict(self.env)
        before_frozen = set(self.frozen)
        for name, t in bind:
            self.env[name] = t
        self.frozen |= set(freeze) | {name for name, _ in bind}
        try:
            return body()
        finally:
            self.env = {n: t for n, t in self.env.items() if n in before_env}
            self.frozen = before_frozen
            self.touched = [n for n in self.touched if n in self.env]

    # ---------------------------------------------------------------- literals

    def literal(self, t):
        rng = self.rng
        if t == INT:
            return str(rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 5, 7, 10, -1, -2, rng.randint(-5, 12)]))
        if t == STR:
            return repr(rng.choice(STR_LITS))
        if t == LINT:
            return rng.choice(["[]", "[]", repr([rng.randint(-3, 9) for _ in range(rng.randint(1, 3))])])
        if t == LSTR:
            return rng.choice(["[]", "[]", repr(rng.sample(["a", "b", "ab", "x", "yes", "no"], 2))])
        if t == DICT:
            return rng.choice(["{}", "{}", "{'a': 1}", "{'x': 0, 'y': 2}"])
        return rng.choice(["True", "False"])

    def str_arg(self):
        v = self.var(STR)
        if v and self.rng.random() < 0.35:
            return v
        return repr(self.rng.choice([s for s in STR_LITS if s]))

    # ---------------------------------------------------------------- expressions

    def expr(self, t, depth=1):
        return self._expr(t, depth)[0]

    def operand(self, t, depth=0):
        text, atomic = self._expr(t, depth)
        return text if atomic else f"({text})"

    def recv(self, t, depth=0):
        """A method receiver: a variable if one exists, else a (bracketed) expression."""
        v = self.var(t)
        return v if v is not None and self.rng.random() < 0.85 else self.operand(t, depth)

    def atom(self, t):
        v = self.var(t)
        if v is not None and self.rng.random() < 0.8:
            return v, True
        if t == BOOL and self.rng.random() < 0.97:
            return self.b_cmp_int(1)   # a literal True/False makes a dead branch
        lit = self.literal(t)
        return lit, not lit.startswith("-")

    def _expr(self, t, depth):
        if depth <= 0 or self.rng.random() < 0.25:
            return self.atom(t)
        forms = EXPR_FORMS[t]
        for _ in range(8):
            result = weighted(self.rng, forms)(self, depth)
            if result is not None:
                return result
        return self.atom(t)

    @staticmethod
    def mentions(text, name):
        return re.search(r"\b%s\b" % re.escape(name), text) is not None

    def live_expr(self, t, depth=1):
        """An expression of type t that reads at least one variable (tries a few times)."""
        if not self.env:
            return self.expr(t, depth)
        pattern = re.compile(r"\b(%s)\b" % "|".join(map(re.escape, self.env)))
        for _ in range(6):
            snap = self.snapshot()
            text = self.expr(t, depth)
            if pattern.search(text):
                return text
            self.restore(snap)
        return self.expr(t, depth)

    def expr_using(self, t, name, depth=1):
        """An expression of type t that mentions `name` (tries a few times)."""
        old, self.focus = self.focus, name
        try:
            pattern = re.compile(r"\b%s\b" % re.escape(name))
            for _ in range(6):
                snap = self.snapshot()
                text = self.expr(t, depth)
                if pattern.search(text):
                    return text
                self.restore(snap)
                self.focus = name
            return self.expr(t, depth)
        finally:
            self.focus = old

    def in_comprehension(self, t, make):
        """Runs make(name) with a fresh comprehension variable of type t bound."""
        name = self.fresh_loop(t)
        return self.scoped(lambda: make(name), bind=[(name, t)])

    def call_helper(self, t, depth):
        if not self.helper or self.helper[2] != t:
            return None
        name, params, _ret = self.helper
        self.helper_calls += 1
        self.kinds["call-helper"] += 1
        return f"{name}({', '.join(self.operand(p, depth - 1) for p in params)})", True

    def two_operands(self, t, d):
        """Two operands of type t that are not the same text (x - x, y < y, ...)."""
        a, b = self.operand(t, d), self.operand(t, d)
        for _ in range(3):
            if a != b:
                break
            b = self.operand(t, d)
        if a == b:
            b = self.literal(t)
            b = f"({b})" if b.startswith("-") else b
        return a, b

    # int forms
    def i_arith(self, d):
        op = self.rng.choice(["+", "+", "-", "*"])
        a, b = self.two_operands(INT, d - 1)
        return f"{a} {op} {b}", False

    def i_divmod(self, d):
        op = self.rng.choice(["//", "%"])
        x = self.var_any((STR, LINT, LSTR))
        div = f"(len({x}) + 1)" if x and self.rng.random() < 0.25 else self.rng.choice(["2", "3", "4", "5", "7", "10"])
        return f"{self.operand(INT, d - 1)} {op} {div}", False

    def i_len(self, d):
        x = self.var_any((STR, LINT, LSTR, DICT))
        if x is None:
            return None
        if self.env[x] == STR and self.rng.random() < 0.3:
            return f"len({x}.split())", True
        return f"len({x})", True

    def i_search(self, d):
        s = self.var(STR)
        if s is None:
            return None
        return f"{s}.{self.rng.choice(['find', 'count', 'rfind', 'count'])}({self.str_arg()})", True

    def i_aggregate(self, d):
        xs = self.var(LINT)
        if xs is None:
            return None
        if self.rng.random() < 0.4:
            return f"sum({xs})", True
        return f"{self.rng.choice(['max', 'min'])}({xs}) if {xs} else {self.literal(INT)}", False

    def i_call(self, d):
        fn = self.rng.choice(["abs", "min", "max"])
        if fn == "abs":
            return f"abs({self.expr(INT, d - 1)})", True
        a, b = self.two_operands(INT, d - 1)
        return f"{fn}({a}, {b})", True

    def i_dict_get(self, d):
        dv = self.var(DICT)
        if dv is None:
            return None
        return f"{dv}.get({self.str_arg()}, {self.literal(INT)})", True

    def i_list_count(self, d):
        xs = self.var_any((LINT, LSTR))
        if xs is None:
            return None
        if self.rng.random() < 0.5:
            return f"{xs}.count({self.atom(ELEM[self.env[xs]])[0]})", True
        e = self.atom(ELEM[self.env[xs]])[0]
        return f"{xs}.index({e}) if {e} in {xs} else -1", False

    def i_ord(self, d):
        s = self.var(STR)
        if s is None:
            return None
        return f"ord({s}[0]) if {s} else 0", False

    def i_cond(self, d):
        return (f"{self.operand(INT, d - 1)} if {self.operand(BOOL, d - 1)} "
                f"else {self.operand(INT, d - 1)}"), False

    def i_count_gen(self, d):
        s = self.var(STR)
        if s is not None and self.rng.random() < 0.6:
            pred = self.rng.choice(CHAR_PREDS)
            self.kinds["genexpr"] += 1
            return self.in_comprehension(
                STR, lambda c: (f"sum(1 for {c} in {s} if {c}.{pred}())", True))
        xs = self.var(LINT)
        if xs is None:
            return None
        self.kinds["genexpr"] += 1
        return self.in_comprehension(
            INT, lambda v: (f"sum({v} for {v} in {xs} if {v} {self.rng.choice(CMPS)} {self.literal(INT)})", True))

    def i_parse(self, d):
        s = self.var(STR)
        if s is None:
            return None
        return f"int({s}) if {s}.isdigit() else {self.literal(INT)}", False

    def i_square(self, d):
        return f"{self.operand(INT, 0)} ** 2", False

    # str forms
    def s_method(self, d):
        m = self.rng.choice(["upper", "lower", "strip", "title", "capitalize", "swapcase", "lstrip", "rstrip"])
        return f"{self.recv(STR, d - 1)}.{m}()", True

    def s_replace(self, d):
        return f"{self.recv(STR, d - 1)}.replace({self.str_arg()}, {repr(self.rng.choice(STR_LITS))})", True

    def s_slice(self, d):
        s = self.recv(STR, d - 1)
        i, j = self.operand(INT, 0), self.operand(INT, 0)
        form = self.rng.choice([f"[{i}:{j}]", f"[{i}:]", f"[:{j}]", "[::-1]", "[::2]", "[1:]", "[:-1]"])
        return f"{s}{form}", True

    def s_concat(self, d):
        return f"{self.operand(STR, d - 1)} + {self.operand(STR, d - 1)}", False

    def s_repeat(self, d):
        return f"{self.operand(STR, 0)} * {self.rng.choice([2, 2, 3, 0])}", False

    def s_join(self, d):
        sep = repr(self.rng.choice(JOINERS))
        xs = self.var(LINT)
        if xs is not None and self.rng.random() < 0.3:
            self.kinds["genexpr"] += 1
            return self.in_comprehension(INT, lambda v: (f"{sep}.join(str({v}) for {v} in {xs})", True))
        return f"{sep}.join({self.expr(LSTR, d - 1)})", True

    def s_sorted(self, d):
        s = self.var(STR)
        if s is None:
            return None
        return f"''.join({self.rng.choice(['sorted', 'reversed'])}({s}))", True

    def s_str(self, d):
        return f"str({self.expr(INT, d - 1)})", True

    def s_index(self, d):
        s = self.var(STR)
        if s is None:
            return None
        return f"{s}[{self.operand(INT, 0)} % len({s})] if {s} else ''", False

    def s_fstring(self, d):
        a = self.var_any((INT, STR, BOOL))
        b = self.var_any((INT, STR, LINT))
        if a is None or b is None:
            return None
        sep = self.rng.choice(["-", ":", "/", " ", "="])
        return "f'{" + a + "}" + sep + "{" + b + "}'", True

    def s_pad(self, d):
        k = self.rng.randint(2, 8)
        form = self.rng.choice([f".zfill({k})", f".center({k}, '*')", f".ljust({k}, '.')", f".rjust({k})"])
        return f"{self.recv(STR, d - 1)}{form}", True

    def s_partition(self, d):
        s = self.var(STR)
        if s is None:
            return None
        return f"{s}.partition({repr(self.rng.choice(SEPS))})[{self.rng.choice([0, 2])}]", True

    def s_pick_word(self, d):
        w = self.var(LSTR)
        if w is None:
            return None
        if self.rng.random() < 0.3:
            return f"max({w}, key=len) if {w} else ''", False
        return f"{w}[{self.rng.choice([0, -1])}] if {w} else ''", False

    def s_chr(self, d):
        return f"chr(ord('a') + {self.operand(INT, d - 1)} % 26)", True

    def s_cond(self, d):
        return (f"{self.operand(STR, d - 1)} if {self.operand(BOOL, d - 1)} "
                f"else {self.operand(STR, d - 1)}"), False

    # bool forms
    def b_cmp_int(self, d):
        a, b = self.two_operands(INT, d - 1)
        return f"{a} {self.rng.choice(CMPS)} {b}", False

    def b_cmp_str(self, d):
        s = self.var(STR)
        if s is None:
            return None
        other = self.operand(STR, 0)
        if other == s:
            other = repr(self.rng.choice(STR_LITS))
        return f"{s} {self.rng.choice(['==', '!=', '<', '>'])} {other}", False

    def b_pred(self, d):
        return f"{self.recv(STR, d - 1)}.{self.rng.choice(CHAR_PREDS)}()", True

    def b_affix(self, d):
        s = self.var(STR)
        if s is None:
            return None
        arg = self.str_arg()
        if arg == s:
            arg = repr(self.rng.choice(STR_LITS[1:]))
        return f"{s}.{self.rng.choice(['startswith', 'endswith'])}({arg})", True

    def b_contains(self, d):
        x = self.var_any((STR, LINT, LSTR, DICT))
        if x is None:
            return None
        t = self.env[x]
        needle = self.str_arg() if t in (STR, DICT) else self.atom(ELEM[t])[0]
        if needle == x:
            needle = self.literal(STR if t in (STR, DICT) else ELEM[t])
        return f"{needle} {self.rng.choice(['in', 'in', 'not in'])} {x}", False

    def b_not(self, d):
        return f"not {self.operand(BOOL, d - 1)}", False

    def b_andor(self, d):
        a, b = self.two_operands(BOOL, d - 1)
        return f"{a} {self.rng.choice(['and', 'or'])} {b}", False

    def b_len(self, d):
        x = self.var_any((STR, LINT, LSTR, DICT))
        if x is None:
            return None
        return f"len({x}) {self.rng.choice(CMPS)} {self.rng.randint(0, 5)}", False

    def b_parity(self, d):
        return f"{self.operand(INT, 0)} % 2 == {self.rng.choice([0, 1])}", False

    def b_any_all(self, d):
        fn = self.rng.choice(["any", "all"])
        s = self.var(STR)
        self.kinds["genexpr"] += 1
        if s is not None and self.rng.random() < 0.5:
            pred = self.rng.choice(CHAR_PREDS)
            return self.in_comprehension(STR, lambda c: (f"{fn}({c}.{pred}() for {c} in {s})", True))
        xs = self.var(LINT)
        if xs is None:
            return None
        return self.in_comprehension(
            INT, lambda v: (f"{fn}({v} {self.rng.choice(CMPS)} {self.literal(INT)} for {v} in {xs})", True))

    # list[int] forms
    def l_sorted(self, d):
        rev = ", reverse=True" if self.rng.random() < 0.3 else ""
        return f"sorted({self.expr(LINT, d - 1)}{rev})", True

    def l_slice(self, d):
        xs = self.var(LINT)
        if xs is None:
            return None
        i, j = self.operand(INT, 0), self.operand(INT, 0)
        return f"{xs}{self.rng.choice([f'[{i}:{j}]', f'[{i}:]', f'[:{j}]', '[::-1]', '[1:]', '[::2]'])}", True

    def l_concat(self, d):
        return f"{self.operand(LINT, d - 1)} + {self.operand(LINT, d - 1)}", False

    def l_comp(self, d):
        xs = self.var(LINT)
        if xs is None:
            return None
        self.kinds["listcomp"] += 1

        def make(v):
            body = self.expr_using(INT, v, 1)
            cond = f" if {self.expr_using(BOOL, v, 1)}" if self.rng.random() < 0.5 else ""
            return f"[{body} for {v} in {xs}{cond}]", True
        return self.in_comprehension(INT, make)

    def l_from_str(self, d):
        s = self.var(STR)
        words = self.var(LSTR)
        self.kinds["listcomp"] += 1
        if words is not None and (s is None or self.rng.random() < 0.4):
            return self.in_comprehension(STR, lambda w: (f"[len({w}) for {w} in {words}]", True))
        if s is None:
            return None
        if self.rng.random() < 0.5:
            return self.in_comprehension(STR, lambda c: (f"[int({c}) for {c} in {s} if {c}.isdigit()]", True))
        lit = repr(self.rng.choice(["a", "e", " ", "-", "o"]))
        return self.in_comprehension(
            INT, lambda i: self.in_comprehension(
                STR, lambda c: (f"[{i} for {i}, {c} in enumerate({s}) if {c} == {lit}]", True)))

    def l_range(self, d):
        x = self.var_any((STR, LINT, LSTR))
        r = self.rng.random()
        if x is not None and r < 0.35:
            return f"list(range(len({x})))", True
        if r < 0.7:
            return f"list(range({self.rng.randint(1, 6)}))", True
        n = self.var(INT)
        if n is None:
            return None
        return f"list(range(min({n}, {self.rng.randint(3, 8)})))", True

    def l_values(self, d):
        dv = self.var(DICT)
        if dv is None:
            return None
        return f"{self.rng.choice(['list', 'sorted'])}({dv}.values())", True

    def l_pair(self, d):
        return f"[{self.expr(INT, d - 1)}, {self.expr(INT, d - 1)}]", True

    # list[str] forms
    def w_split(self, d):
        s = self.recv(STR, d - 1)
        if self.rng.random() < 0.5:
            return f"{s}.split()", True
        return f"{s}.split({repr(self.rng.choice(SEPS))})", True

    def w_list(self, d):
        return f"list({self.recv(STR, d - 1)})", True

    def w_sorted(self, d):
        w = self.var(LSTR)
        if w is None:
            return None
        return f"sorted({w}{self.rng.choice(['', ', key=len', ', reverse=True'])})", True

    def w_slice(self, d):
        w = self.var(LSTR)
        if w is None:
            return None
        return f"{w}{self.rng.choice(['[1:]', '[:2]', '[::-1]', '[:-1]'])}", True

    def w_comp(self, d):
        words = self.var(LSTR)
        if words is None:
            return None
        self.kinds["listcomp"] += 1

        def make(w):
            r = self.rng.random()
            if r < 0.4:
                return f"[{w}.{self.rng.choice(['upper', 'lower', 'strip', 'title'])}() for {w} in {words}]", True
            if r < 0.7:
                return f"[{w} for {w} in {words} if len({w}) {self.rng.choice(CMPS)} {self.rng.randint(1, 4)}]", True
            return f"[{self.expr_using(STR, w, 1)} for {w} in {words} if {self.expr_using(BOOL, w, 1)}]", True
        return self.in_comprehension(STR, make)

    def w_keys(self, d):
        dv = self.var(DICT)
        if dv is None:
            return None
        return self.rng.choice([f"list({dv})", f"sorted({dv})", f"sorted({dv}, key={dv}.get)"]), True

    def w_from_ints(self, d):
        xs = self.var(LINT)
        if xs is None:
            return None
        self.kinds["listcomp"] += 1
        return self.in_comprehension(INT, lambda v: (f"[str({v}) for {v} in {xs}]", True))

    def w_append_one(self, d):
        return f"{self.operand(LSTR, d - 1)} + [{self.expr(STR, d - 1)}]", False

    # dict forms
    def d_comp(self, d):
        words = self.var(LSTR)
        s = self.var(STR)
        self.kinds["dictcomp"] += 1
        if words is not None and (s is None or self.rng.random() < 0.5):
            return self.in_comprehension(STR, lambda w: ("{" + f"{w}: len({w}) for {w} in {words}" + "}", True))
        if s is None:
            return None
        return self.in_comprehension(STR, lambda c: ("{" + f"{c}: {s}.count({c}) for {c} in {s}" + "}", True))

    def d_zip(self, d):
        words, xs = self.var(LSTR), self.var(LINT)
        if words is None or xs is None:
            return None
        return f"dict(zip({words}, {xs}))", True

    def d_enumerate(self, d):
        words = self.var(LSTR)
        if words is None:
            return None
        self.kinds["dictcomp"] += 1
        return self.in_comprehension(INT, lambda i: self.in_comprehension(
            STR, lambda w: ("{" + f"{w}: {i} for {i}, {w} in enumerate({words})" + "}", True)))

    def d_filter(self, d):
        dv = self.var(DICT)
        if dv is None:
            return None
        self.kinds["dictcomp"] += 1
        cmp, lit = self.rng.choice(CMPS), self.literal(INT)
        return self.in_comprehension(STR, lambda k: self.in_comprehension(
            INT, lambda v: ("{" + f"{k}: {v} for {k}, {v} in {dv}.items() if {v} {cmp} {lit}" + "}", True)))

    def d_copy(self, d):
        dv = self.var(DICT)
        return (f"dict({dv})", True) if dv else ("{}", True)

    # ---------------------------------------------------------------- statements

    def statement(self, budget, depth):
        """One statement of at most `budget` lines, or None."""
        options = []
        for kind, (weight, loop_weight, min_lines, compound) in STMT_KINDS.items():
            w = loop_weight if self.loop_depth else weight
            if w > 0 and min_lines <= budget and (not compound or depth < MAX_DEPTH):
                options.append((w, kind))
        for _ in range(10):
            kind = weighted(self.rng, options)
            snap = self.snapshot()
            lines = getattr(self, "st_" + kind.replace("-", "_"))(budget, depth)
            if lines and len(lines) <= budget:
                self.kinds[kind] += 1
                return lines
            self.restore(snap)
        return None

    def block(self, budget, depth, max_stmts=3):
        lines = []
        for _ in range(self.rng.randint(1, max_stmts)):
            if budget - len(lines) <= 0:
                break
            stmt = self.statement(budget - len(lines), depth)
            if stmt:
                lines += stmt
        if not lines:
            lines = self.st_assign(1, depth) or ["pass"]
        return lines

    def nested(self, budget, depth, bind=(), freeze=(), loop=False):
        """An indented block run with scoped bindings."""
        def body():
            self.loop_depth += loop
            try:
                return indent(self.block(budget, depth + 1))
            finally:
                self.loop_depth -= loop
        return self.scoped(body, bind=bind, freeze=freeze)

    def copy_if_alias(self, t, text):
        if t in (LINT, LSTR) and text in self.env:
            return f"{text}[:]" if self.rng.random() < 0.5 else f"list({text})"
        if t == DICT and text in self.env:
            return f"dict({text})"
        return text

    def st_assign(self, budget, depth):
        t = self.rng.choice([INT, INT, INT, STR, STR, STR, LINT, LINT, LSTR, DICT, BOOL])
        text = self.copy_if_alias(t, self.live_expr(t, self.rng.choice([1, 1, 2])))
        name = self.fresh(t)
        self.bind(name, t)
        return [f"{name} = {text}"]

    def st_reassign(self, budget, depth):
        name = self.var_any(TYPES, mutable=True)
        if name is None:
            return None
        t = self.env[name]
        text = self.copy_if_alias(t, self.live_expr(t, self.rng.choice([1, 2])))
        if text == name:
            return None
        self.touch(name)
        return [f"{name} = {text}"]

    def st_augassign(self, budget, depth):
        name = self.var_any((INT, STR, LINT), mutable=True)
        if name is None:
            return None
        t = self.env[name]
        if t == INT:
            op = self.rng.choice(["+=", "+=", "-=", "*="])
            text = self.live_expr(INT, 1)
        elif t == STR:
            op, text = "+=", self.live_expr(STR, 1)
        else:
            op, text = "+=", f"[{self.live_expr(INT, 1)}]"
        if self.loop_depth and t == STR and self.mentions(text, name):
            return None   # s += s... in a loop grows exponentially
        self.touch(name)
        return [f"{name} {op} {text}"]

    def st_append(self, budget, depth):
        xs = self.var_any((LINT, LSTR), mutable=True)
        if xs is None:
            return None
        self.touch(xs)
        return [f"{xs}.append({self.live_expr(ELEM[self.env[xs]], 1)})"]

    def st_extend(self, budget, depth):
        xs = self.var_any((LINT, LSTR), mutable=True)
        if xs is None:
            return None
        text = self.live_expr(self.env[xs], 1)
        if self.loop_depth and self.mentions(text, xs):
            return None   # xs.extend(xs) in a loop grows exponentially
        self.touch(xs)
        return [f"{xs}.extend({text})"]

    def st_insert(self, budget, depth):
        xs = self.var_any((LINT, LSTR), mutable=True)
        if xs is None:
            return None
        self.touch(xs)
        return [f"{xs}.insert({self.operand(INT, 0)}, {self.live_expr(ELEM[self.env[xs]], 1)})"]

    def st_pop(self, budget, depth):
        xs = self.var_any((LINT, LSTR), mutable=True)
        if xs is None:
            return None
        elem = ELEM[self.env[xs]]
        where = self.rng.choice(["", "", "0"])
        self.touch(xs)
        if budget >= 2 and self.rng.random() < 0.3:
            return [f"if {xs}:", f"    {xs}.pop({where})"]
        default = "0" if elem == INT else "''"
        name = self.var(elem, mutable=True) if self.rng.random() < 0.3 else None
        name = name or self.fresh(elem)
        self.bind(name, elem)
        return [f"{name} = {xs}.pop({where}) if {xs} else {default}"]

    def st_remove(self, budget, depth):
        xs = self.var_any((LINT, LSTR), mutable=True)
        if xs is None or budget < 2:
            return None
        e = self.atom(ELEM[self.env[xs]])[0]
        self.touch(xs)
        return [f"if {e} in {xs}:", f"    {xs}.remove({e})"]

    def st_sort(self, budget, depth):
        xs = self.var_any((LINT, LSTR), mutable=True)
        if xs is None:
            return None
        forms = ["sort()", "sort(reverse=True)", "reverse()"]
        if self.env[xs] == LSTR:
            forms.append("sort(key=len)")
        self.touch(xs)
        return [f"{xs}.{self.rng.choice(forms)}"]

    def dict_key(self):
        return self.str_arg() if self.rng.random() < 0.7 else f"str({self.operand(INT, 0)})"

    def st_dict_set(self, budget, depth):
        dv = self.var(DICT, mutable=True)
        if dv is None:
            return None
        self.touch(dv)
        return [f"{dv}[{self.dict_key()}] = {self.live_expr(INT, 1)}"]

    def st_dict_inc(self, budget, depth):
        dv = self.var(DICT, mutable=True)
        if dv is None:
            return None
        k = self.dict_key()
        self.touch(dv)
        return [f"{dv}[{k}] = {dv}.get({k}, 0) + {self.operand(INT, 0)}"]

    def st_dict_branch(self, budget, depth):
        dv = self.var(DICT, mutable=True)
        if dv is None:
            return None
        k = self.dict_key()
        self.touch(dv)
        return [f"if {k} in {dv}:", f"    {dv}[{k}] += {self.operand(INT, 0)}",
                "else:", f"    {dv}[{k}] = {self.live_expr(INT, 1)}"]

    def st_setdefault(self, budget, depth):
        dv = self.var(DICT, mutable=True)
        if dv is None:
            return None
        self.touch(dv)
        line = f"{dv}.setdefault({self.dict_key()}, {self.live_expr(INT, 1)})"
        if self.rng.random() < 0.5:
            name = self.fresh(INT)
            self.bind(name, INT)
            return [f"{name} = {line}"]
        return [line]

    def st_dict_pop(self, budget, depth):
        dv = self.var(DICT, mutable=True)
        if dv is None:
            return None
        name = self.fresh(INT)
        line = f"{name} = {dv}.pop({self.dict_key()}, {self.literal(INT)})"
        self.touch(dv)
        self.bind(name, INT)
        return [line]

    def st_swap(self, budget, depth):
        for t in self.rng.sample(TYPES, len(TYPES)):
            names = [n for n, ty in self.env.items() if ty == t and n not in self.frozen]
            if len(names) >= 2:
                a, b = self.rng.sample(names, 2)
                self.touch(a)
                self.touch(b)
                return [f"{a}, {b} = {b}, {a}"]
        return None

    def st_divmod(self, budget, depth):
        text = self.live_expr(INT, 1)
        q = self.fresh(INT)
        self.bind(q, INT)
        r = self.fresh(INT)
        self.bind(r, INT)
        return [f"{q}, {r} = divmod({text}, {self.rng.choice([2, 3, 5, 7, 10])})"]

    def st_try(self, budget, depth):
        name = self.fresh(INT)
        r = self.rng.random()
        s, xs, dv = self.var(STR), self.var(LINT), self.var(DICT)
        if s is not None and r < 0.5:
            head, exc = f"{name} = int({s})", "ValueError"
        elif xs is not None and r < 0.75:
            head, exc = f"{name} = {xs}[{self.operand(INT, 0)}]", "IndexError"
        elif dv is not None:
            head, exc = f"{name} = {dv}[{self.str_arg()}]", "KeyError"
        else:
            return None
        fallback = self.live_expr(INT, 1)
        self.bind(name, INT)
        return ["try:", f"    {head}", f"except {exc}:", f"    {name} = {fallback}"]

    def accumulator_init(self):
        t = self.rng.choice([INT, INT, STR, LINT, LSTR, DICT, BOOL])
        name = self.fresh(t)
        init = {INT: "0", STR: "''", LINT: "[]", LSTR: "[]", DICT: "{}", BOOL: "False"}[t]
        if t == INT and self.rng.random() < 0.3:
            init = "1"
        self.bind(name, t)
        return name, f"{name} = {init}"

    def accumulator_update(self, acc, loop_var):
        """A body line (or two) folding the loop variable into the accumulator."""
        t = self.env[acc]
        lines = None
        if t == INT:
            lines = [self.rng.choice([f"{acc} += {self.expr_using(INT, loop_var, 1)}",
                                      f"{acc} = max({acc}, {self.expr_using(INT, loop_var, 1)})"])]
        elif t == STR:
            e = self.expr_using(STR, loop_var, 1)
            lines = [self.rng.choice([f"{acc} += {e}", f"{acc} = {self.operand_text(e)} + {acc}"])]
        elif t in (LINT, LSTR):
            lines = [f"{acc}.append({self.expr_using(ELEM[t], loop_var, 1)})"]
        elif t == DICT:
            key = loop_var if self.env.get(loop_var) == STR else f"str({loop_var})"
            lines = [f"{acc}[{key}] = {acc}.get({key}, 0) + 1"]
        elif t == BOOL:
            lines = [f"if {self.expr_using(BOOL, loop_var, 1)}:", f"    {acc} = True"]
        self.touch(acc)
        return lines

    @staticmethod
    def operand_text(text):
        return text if re.fullmatch(r"[\w.]+(\(.*\))?", text) else f"({text})"

    def loop_body(self, budget, depth, bind, freeze, acc, loop_var):
        """Body of a loop: optional accumulator update, then random statements."""
        def body():
            self.loop_depth += 1
            old_focus, self.focus = self.focus, loop_var
            try:
                lines = self.accumulator_update(acc, loop_var) if acc else []
                rest = budget - len(lines)
                if rest > 0 and (not lines or self.rng.random() < 0.6):
                    lines += self.block(rest, depth + 1, max_stmts=2)
                return indent(lines)
            finally:
                self.loop_depth -= 1
                self.focus = old_focus
        return self.scoped(body, bind=bind, freeze=freeze)

    def st_for(self, budget, depth):
        pre = []
        acc = None
        if budget >= 3 and self.rng.random() < 0.55:
            acc, init = self.accumulator_init()
            pre.append(init)
        header, bind, freeze, loop_var = self.for_header()
        if header is None:
            return None
        room = budget - len(pre) - 1
        if room < 1:
            return None
        body = self.loop_body(room, depth, bind, freeze, acc, loop_var)
        return pre + [header] + body

    def for_header(self):
        """(header line, bindings, frozen names, main loop variable) of a for loop."""
        rng = self.rng
        choices = []
        for name, t in self.env.items():
            if t in (STR, LINT, LSTR):
                choices.append(("iter", name))
            if t == DICT:
                choices.append(("items", name))
        choices += [("range", None)] * 2
        if self.var(LSTR) and self.var(LINT):
            choices.append(("zip", None))
        how, src = rng.choice(choices)
        if how == "iter":
            t = ELEM[self.env[src]]
            v = self.fresh_loop(t)
            if rng.random() < 0.2:
                i = self.fresh_loop(INT)
                self.kinds["enumerate"] += 1
                return f"for {i}, {v} in enumerate({src}):", [(i, INT), (v, t)], [src], v
            return f"for {v} in {src}:", [(v, t)], [src], v
        if how == "items":
            k, v = self.fresh_loop(STR), self.fresh_loop(INT)
            return (f"for {k}, {v} in {src}.items():", [(k, STR), (v, INT)], [src],
                    rng.choice([k, v]))
        if how == "zip":
            words, xs = self.var(LSTR), self.var(LINT)
            w, v = self.fresh_loop(STR), self.fresh_loop(INT)
            return f"for {w}, {v} in zip({words}, {xs}):", [(w, STR), (v, INT)], [words, xs], v
        i = self.fresh_loop(INT)
        x = self.var_any((STR, LINT, LSTR))
        n = self.var(INT)
        forms = [f"range({rng.randint(2, 6)})", f"range(1, {rng.randint(3, 7)})"]
        freeze = []
        if x:
            forms += [f"range(len({x}))"] * 2 + [f"range(0, len({x}), 2)", f"range(len({x}) - 1, -1, -1)"]
        if n:
            forms += [f"range(min({n}, {rng.randint(3, 9)}))", f"range({n} % 7)"]
        form = rng.choice(forms)
        freeze = [name for name in (x, n) if name and re.search(r"\b%s\b" % name, form)]
        return f"for {i} in {form}:", [(i, INT)], freeze, i

    def st_while(self, budget, depth):
        rng = self.rng
        r = rng.random()
        xs = self.var_any((LINT, LSTR), mutable=True)
        s = self.var(STR, mutable=True)
        n = self.var(INT)
        if xs and r < 0.3 and budget >= 2:
            # drain a list: pop strictly shrinks it; nothing else touches it in the body
            elem = ELEM[self.env[xs]]
            v = self.fresh_loop(elem)
            pop = f"{v} = {xs}.pop({rng.choice(['', '0'])})"
            body = self.loop_body(budget - 2, depth, [(v, elem)], [xs], None, v) if budget >= 3 else []
            self.touch(xs)
            self.kinds["while-drain"] += 1
            return [f"while {xs}:", "    " + pop] + body
        if s and r < 0.45:
            ch = repr(rng.choice([" ", "a", "-", "x", "0"]))
            end, cut = rng.choice([("[0]", "[1:]"), ("[-1]", "[:-1]")])
            self.touch(s)
            self.kinds["while-strip"] += 1
            return [f"while {s} and {s}{end} == {ch}:", f"    {s} = {s}{cut}"]
        if n and r < 0.65 and budget >= 4:
            # digits / halving loop on a copy of an int
            m = self.fresh(INT)
            base = rng.choice(["10", "2", "3"])
            pre = f"{m} = abs({n})"
            self.bind(m, INT)
            body = self.loop_body(budget - 3, depth, [], [m], None, m)
            self.kinds["while-digits"] += 1
            return [pre, f"while {m} > 0:"] + body + [f"    {m} //= {base}"]
        if budget < 4:
            return None
        i = self.fresh(INT, ["i", "j", "pos", "step"])
        x = self.var_any((STR, LINT, LSTR))
        bounds = [str(rng.randint(2, 7))]
        if x:
            bounds.append(f"len({x})")
        if n:
            bounds.append(f"min({n}, {rng.randint(3, 8)})")
        bound = rng.choice(bounds)
        freeze = [name for name in (x, n) if name and re.search(r"\b%s\b" % name, bound)]
        self.env[i] = INT
        body = self.loop_body(budget - 3, depth, [], freeze + [i], None, i)
        self.frozen.discard(i)
        self.kinds["while-counter"] += 1
        return [f"{i} = 0", f"while {i} < {bound}:"] + body + [f"    {i} += {rng.choice([1, 1, 2])}"]

    def st_if(self, budget, depth):
        if budget < 2:
            return None
        lines = [f"if {self.live_expr(BOOL, self.rng.choice([1, 2]))}:"]
        room = budget - 1
        first = self.nested(max(1, min(room - 2, self.rng.randint(1, 3))) if room > 2 else 1, depth)
        lines += first
        room = budget - len(lines)
        if room >= 2 and self.rng.random() < 0.25:
            lines.append(f"elif {self.live_expr(BOOL, 1)}:")
            lines += self.nested(1 if room < 4 else self.rng.randint(1, 2), depth)
            room = budget - len(lines)
            self.kinds["elif"] += 1
        if room >= 2 and self.rng.random() < 0.5:
            lines.append("else:")
            lines += self.nested(min(room - 1, self.rng.randint(1, 2)), depth)
            self.kinds["else"] += 1
        return lines

    def st_guard_return(self, budget, depth):
        if budget < 2 or self.loop_depth:
            return None
        return [f"if {self.live_expr(BOOL, 1)}:", f"    return {self.return_value()}"]

    def st_early_return(self, budget, depth):
        if budget < 2:
            return None
        return [f"if {self.live_expr(BOOL, 1)}:", f"    return {self.return_value()}"]

    def st_break(self, budget, depth):
        if budget < 2:
            return None
        return [f"if {self.live_expr(BOOL, 1)}:", "    break"]

    def st_helper_call(self, budget, depth):
        if not self.helper:
            return None
        _name, _params, ret = self.helper
        text, _ = self.call_helper(ret, 1)
        name = self.fresh(ret)
        self.bind(name, ret)
        return [f"{name} = {text}"]

    def return_value(self):
        rng = self.rng
        if self.ret_type:
            return self.live_expr(self.ret_type, 1)
        touched = [n for n in self.touched if n in self.env]
        r = rng.random()
        if touched and r < 0.6:
            return touched[-1] if rng.random() < 0.6 else rng.choice(touched)
        names = list(self.env)
        if len(names) >= 2 and r < 0.75:
            a, b = rng.sample(names, 2)
            return f"({a}, {b})"
        return self.live_expr(rng.choice(TYPES), 1)

    # ---------------------------------------------------------------- programs

    def function(self, params, budget):
        """Source lines of `def NAME(params):` with a body of at most `budget` lines."""
        for name, t in params:
            self.env[name] = t
        body = []
        failures = 0
        while len(body) < budget - 1 and failures < 4:
            stmt = self.statement(budget - 1 - len(body), 0)
            if stmt:
                body += stmt
            else:
                failures += 1
        while len(body) < 2:
            body += self.st_assign(1, 0)
        if self.helper and self.helper_calls == 0:
            _name, _params, ret = self.helper
            body.append(f"return {self.call_helper(ret, 1)[0]}")
        else:
            body.append(f"return {self.return_value()}")
        head = f"def {self.name}({', '.join(n for n, _ in params)}):"
        return [head] + indent(body)


STMT_KINDS = {   # kind: (weight, weight inside loops, minimum lines, compound)
    "assign": (8, 2, 1, False), "reassign": (3, 2, 1, False), "augassign": (4, 5, 1, False),
    "append": (3, 4, 1, False), "extend": (1, 1, 1, False), "insert": (1, 1, 1, False),
    "pop": (2, 1, 1, False), "remove": (1, 1, 2, False), "sort": (2, 1, 1, False),
    "dict-set": (2, 2, 1, False), "dict-inc": (2, 3, 1, False), "dict-branch": (1, 2, 4, False),
    "setdefault": (1, 1, 1, False), "dict-pop": (1, 1, 1, False), "swap": (1, 1, 1, False),
    "divmod": (1, 1, 1, False), "try": (1, 1, 4, False),
    "for": (6, 2, 2, True), "while": (3, 1, 2, True), "if": (4, 4, 2, True),
    "guard-return": (1, 0, 2, False), "early-return": (0, 2, 2, False), "break": (0, 1, 2, False),
    "helper-call": (1, 0, 1, False),
}

EXPR_FORMS = {
    INT: [(4, ProgramBuilder.i_arith), (2, ProgramBuilder.i_divmod), (4, ProgramBuilder.i_len),
          (2, ProgramBuilder.i_search), (2, ProgramBuilder.i_aggregate), (1, ProgramBuilder.i_call),
          (2, ProgramBuilder.i_dict_get), (1, ProgramBuilder.i_list_count), (1, ProgramBuilder.i_ord),
          (1, ProgramBuilder.i_cond), (1, ProgramBuilder.i_count_gen), (1, ProgramBuilder.i_parse),
          (0.5, ProgramBuilder.i_square), (2, lambda b, d: b.call_helper(INT, d))],
    STR: [(4, ProgramBuilder.s_method), (2, ProgramBuilder.s_replace), (3, ProgramBuilder.s_slice),
          (3, ProgramBuilder.s_concat), (1, ProgramBuilder.s_repeat), (2, ProgramBuilder.s_join),
          (1, ProgramBuilder.s_sorted), (1, ProgramBuilder.s_str), (1, ProgramBuilder.s_index),
          (1, ProgramBuilder.s_fstring), (1, ProgramBuilder.s_pad), (1, ProgramBuilder.s_partition),
          (1, ProgramBuilder.s_pick_word), (0.5, ProgramBuilder.s_chr), (1, ProgramBuilder.s_cond),
          (2, lambda b, d: b.call_helper(STR, d))],
    BOOL: [(4, ProgramBuilder.b_cmp_int), (1, ProgramBuilder.b_cmp_str), (2, ProgramBuilder.b_pred),
           (2, ProgramBuilder.b_affix), (3, ProgramBuilder.b_contains), (1, ProgramBuilder.b_not),
           (1, ProgramBuilder.b_andor), (2, ProgramBuilder.b_len), (1, ProgramBuilder.b_parity),
           (1, ProgramBuilder.b_any_all), (2, lambda b, d: b.call_helper(BOOL, d))],
    LINT: [(2, ProgramBuilder.l_sorted), (2, ProgramBuilder.l_slice), (1, ProgramBuilder.l_concat),
           (3, ProgramBuilder.l_comp), (2, ProgramBuilder.l_from_str), (1, ProgramBuilder.l_range),
           (1, ProgramBuilder.l_values), (1, ProgramBuilder.l_pair), (2, lambda b, d: b.call_helper(LINT, d))],
    LSTR: [(3, ProgramBuilder.w_split), (1, ProgramBuilder.w_list), (2, ProgramBuilder.w_sorted),
           (1, ProgramBuilder.w_slice), (3, ProgramBuilder.w_comp), (1, ProgramBuilder.w_keys),
           (1, ProgramBuilder.w_from_ints), (1, ProgramBuilder.w_append_one),
           (2, lambda b, d: b.call_helper(LSTR, d))],
    DICT: [(3, ProgramBuilder.d_comp), (1, ProgramBuilder.d_zip), (1, ProgramBuilder.d_enumerate),
           (1, ProgramBuilder.d_filter), (1, ProgramBuilder.d_copy),
           (2, lambda b, d: b.call_helper(DICT, d))],
}

PARAM_NAMES = {INT: ["n", "k", "x", "m", "limit"], STR: ["s", "text", "word", "t", "sep"],
               LINT: ["nums", "xs", "vals", "arr"], LSTR: ["words", "names", "parts", "items"],
               DICT: ["d", "counts", "table"], BOOL: ["flag", "strict", "rev"]}
PARAM_TYPES = [(5, INT), (6, STR), (4, LINT), (3, LSTR), (2, DICT), (1, BOOL)]


def pick_params(rng, count, taken=()):
    params, used = [], set(taken)
    for _ in range(count):
        t = weighted(rng, PARAM_TYPES)
        names = [n for n in PARAM_NAMES[t] if n not in used]
        name = rng.choice(names[:2]) if rng.random() < 0.7 else rng.choice(names)
        used.add(name)
        params.append((name, t))
    return params


def build_program(rng):
    """(source, [param types], statement-kind counter) of one random program."""
    helper_lines = []
    helper = None
    kinds = collections.Counter()
    if rng.random() < 0.12:
        hb = ProgramBuilder(rng, "g")
        hparams = pick_params(rng, rng.choice([1, 1, 2]))
        ret = hb.ret_type = rng.choice([INT, INT, STR, STR, BOOL, LINT])
        for name, t in hparams:
            hb.env[name] = t
        body = []
        for _ in range(rng.randint(0, 2)):
            stmt = hb.statement(2, 1)
            if stmt:
                body += stmt
        body.append(f"return {hb.live_expr(ret, 1)}")
        helper_lines = [f"def g({', '.join(n for n, _ in hparams)}):"] + indent(body) + ["", ""]
        helper = ("g", [t for _, t in hparams], ret)
        kinds["helper-function"] += 1
    fb = ProgramBuilder(rng, "f")
    fb.helper = helper
    params = pick_params(rng, weighted(rng, [(4, 1), (4, 2), (2, 3)]))
    lines = fb.function(params, rng.randint(3, 14))
    kinds.update(fb.kinds)
    return "\n".join(helper_lines + lines) + "\n", [t for _, t in params], kinds


# =============================================================== generated inputs

WORDS = ["apple", "kiwi", "sun", "data", "node", "alpha", "beta", "red", "blue", "x", "ab",
         "moon", "tree", "cat", "dog", "hello", "world", "py", "zip", "queue", "a", "bb", "level"]
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def random_word(rng):
    if rng.random() < 0.6:
        return rng.choice(WORDS)
    return "".join(rng.choice(LETTERS[:8]) for _ in range(rng.randint(1, 5)))


def random_text(rng):
    style = rng.randrange(6)
    if style == 0:
        return " ".join(random_word(rng) for _ in range(rng.randint(1, 3)))
    if style == 1:
        return "".join(rng.choice(LETTERS + LETTERS.upper() + "0123456789") for _ in range(rng.randint(0, 8)))
    if style == 2:
        return "".join(rng.choice("ab1 ,.-!?_x") for _ in range(rng.randint(1, 9)))
    if style == 3:
        return random_word(rng)
    if style == 4:
        return "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 4)))
    return rng.choice(["", " ", "a", "Hello World", "  pad  ", "a-b-c", "x,y,z", "AbC", "123abc"])


def random_value(rng, t):
    if t == INT:
        return rng.randint(-10, 20)
    if t == STR:
        return random_text(rng)
    if t == LINT:
        return [rng.randint(-10, 20) for _ in range(rng.randint(0, 6))]
    if t == LSTR:
        return [random_word(rng) for _ in range(rng.randint(0, 5))]
    if t == DICT:
        return {random_word(rng): rng.randint(-5, 10) for _ in range(rng.randint(0, 4))}
    return rng.random() < 0.5


def generated_candidate(rng, tries=3):
    code, types, kinds = build_program(rng)
    inputs = []
    for _ in range(tries):
        text = args_text([random_value(rng, t) for t in types])
        if text is not None and text not in inputs:
            inputs.append(text)
    return {"code": code, "kinds": kinds, "inputs": inputs}


def cmd_generate(args):
    started = time.monotonic()
    rows = generate_rows(args.n, args.seed, args.start_id, verbose=True)
    write_rows(args.out, rows)
    log(f"generate: {len(rows)} rows in {time.monotonic() - started:.1f}s -> {args.out}")


def generate_rows(n, seed, start_id=0, verbose=False):
    """The first n valid programs of the seeded candidate stream (deterministic)."""
    rng = random.Random(seed)
    rows, seen = [], set()
    hist = collections.Counter()
    stats = collections.Counter()
    with Sandbox() as box:
        while len(rows) < n:
            want = n - len(rows)
            batch = []
            for _ in range(min(400, max(40, want + want // 4 + 10))):
                cand = generated_candidate(rng)
                stats["candidates"] += 1
                if cand["code"] in seen or not cand["inputs"]:
                    stats["duplicate-or-no-input"] += 1
                    continue
                seen.add(cand["code"])
                try:
                    compile(cand["code"], "<prog>", "exec")
                except SyntaxError:
                    stats["syntax-error"] += 1
                    continue
                batch.append(cand)
            items = [{"code": c["code"], "entry": "f", "inputs": c["inputs"],
                      "opts": run_options(4, False)} for c in batch]
            found = []
            for cand, res in zip(batch, box.run(items)):
                if res.get("index") is None:
                    stats.update(f"fail:{e}" for e in res.get("errors", {"?": 1}))
                    continue
                found.append((cand, cand["inputs"][res["index"]], res["output"]))
            same = confirm(box, [(c["code"], "f", text, out) for c, text, out in found])
            for (cand, text, out), ok in zip(found, same):
                if not ok:
                    stats["nondeterministic"] += 1
                    continue
                stats["valid"] += 1
                if len(rows) < n:
                    rows.append({"id": f"gen-{start_id + len(rows):05d}", "origin": "generated",
                                 "code": cand["code"], "entry": "f", "input": text, "output": out})
                    hist.update(cand["kinds"])
    if verbose:
        log(f"generate: {stats['candidates']} candidates, {stats['valid']} valid "
            f"({100.0 * stats['valid'] / max(1, stats['candidates']):.0f}%), {len(rows)} written, "
            f"{box.children_started} child processes")
        log("  rejections: " + ", ".join(
            f"{k}={v}" for k, v in sorted(stats.items()) if k not in ("candidates", "valid")))
        log("  statement kinds / features in kept programs (programs can count several):")
        for kind, count in hist.most_common():
            log(f"    {kind:16s} {count}")
    return rows


def write_rows(path, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_rows(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# =============================================================== corpus functions

BANNED_BUILTINS = {"open", "exec", "eval", "compile", "__import__", "input", "globals", "locals",
                   "vars", "setattr", "delattr", "getattr", "breakpoint", "exit", "quit", "help",
                   "memoryview", "copyright", "credits", "license"}
BUILTIN_NAMES = set(dir(builtins)) - BANNED_BUILTINS


def global_reads(source):
    """Names the module-level code and every function scope read as globals."""
    top = symtable.symtable(source, "<prog>", "exec")
    names = {s.get_name() for s in top.get_symbols() if s.is_referenced() and not s.is_assigned()}

    def walk(table):
        for sym in table.get_symbols():
            if sym.is_declared_global():
                names.add("global " + sym.get_name())
            elif sym.is_global() and sym.is_referenced():
                names.add(sym.get_name())
        for child in table.get_children():
            walk(child)
    for child in top.get_children():
        walk(child)
    return names


def body_line_count(source, fn):
    """Non-blank, non-comment lines of the body, docstring excluded."""
    body = fn.body
    if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        body = body[1:]
    if not body:
        return 0
    lines = source.splitlines()[body[0].lineno - 1:fn.end_lineno]
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))


def self_contained(source):
    """(function info, None) for a usable function, else (None, reason)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None, "syntax"
    if len(tree.body) != 1:
        return None, "not-one-def"
    fn = tree.body[0]
    if isinstance(fn, ast.AsyncFunctionDef):
        return None, "async"
    if not isinstance(fn, ast.FunctionDef):
        return None, "not-one-def"
    if fn.decorator_list:
        return None, "decorated"
    if fn.name.startswith("test"):
        return None, "test-function"
    a = fn.args
    if a.vararg or a.kwarg or a.kwonlyargs:
        return None, "varargs-or-kwonly"
    params = a.posonlyargs + a.args
    required = params[:len(params) - len(a.defaults)]
    if not 1 <= len(required) <= 3:
        return None, "param-count"
    for node in ast.walk(fn):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return None, "yield"
        if isinstance(node, (ast.Await, ast.AsyncFor, ast.AsyncWith, ast.AsyncFunctionDef)):
            return None, "async"
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return None, "import"
        if isinstance(node, (ast.Global, ast.Nonlocal)) and isinstance(node, ast.Global):
            return None, "global-stmt"
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            return None, "private-attribute"
    if not 3 <= body_line_count(source, fn) <= 40:
        return None, "body-length"
    try:
        names = global_reads(source) - {fn.name}
    except (SyntaxError, ValueError):
        return None, "symtable"
    for name in sorted(names):
        if name.startswith("global "):
            return None, "global-stmt"
        if name.startswith("_") or name in BANNED_BUILTINS:
            return None, "banned-builtin"
        if name not in BUILTIN_NAMES:
            return None, "non-builtin-global"
    info = {"entry": fn.name,
            "params": [(p.arg, ast.unparse(p.annotation) if p.annotation else "") for p in required]}
    return info, None


IMPORT_LINE = re.compile(r"^\s*(import\s+[\w.]+\s*(,\s*[\w.]+\s*)*(\s+as\s+\w+)?|from\s+[\w.]+\s+import\s.*)$", re.M)


def quick_reject(name, source):
    """Cheap textual checks that spare most rows an ast.parse (same verdicts)."""
    if name.startswith("test"):
        return "test-function"
    if source.startswith("@"):
        return "decorated"
    if source.startswith("async "):
        return "async"
    if IMPORT_LINE.search(source):
        return "import"
    return None


def scan_corpus(path, excluded, stats):
    """Yields self-contained top-level functions (deduplicated by source), in file order.

    A generator: the caller stops reading (and decompressing) once it has enough."""
    seen = set()
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            stats["rows scanned"] += 1
            if '"class":null' not in line and '"class": null' not in line:
                continue
            row = json.loads(line)
            if row.get("class") is not None or "." in row.get("function", "."):
                continue
            if row.get("repo") in excluded:
                stats["excluded-repo rows"] += 1
                continue
            stats["top-level functions"] += 1
            source = textwrap.dedent(row.get("after") or "").strip("\n") + "\n"
            if source in seen:
                stats["duplicates"] += 1
                continue
            seen.add(source)
            reason = quick_reject(row["function"], source)
            info = None
            if reason is None:
                info, reason = self_contained(source)
            if info is None:
                stats["reject:" + reason] += 1
                continue
            stats["self-contained"] += 1
            info.update(code=source, repo=row["repo"])
            yield info
    stats["read to the end"] = 1


# -------------------------------------------------------------- argument fuzzing pools

STR_NAMES = {"s", "text", "name", "string", "path", "prefix", "suffix", "line", "word", "msg",
             "message", "url", "filename", "fname", "pattern", "sep", "char", "c", "ch", "label",
             "title", "source", "src", "code", "version", "spec", "ident", "identifier", "token",
             "fmt", "template", "key", "attr", "attrname", "field", "tag", "domain", "host",
             "encoding", "charset", "header", "content", "body", "rest", "data_str", "sentence",
             "verb", "noun", "kind", "mode", "style", "module", "modname", "dirname", "basename",
             "ext", "extension", "uri", "email", "word1", "word2", "value_str", "arg", "needle",
             "haystack", "txt", "docstring", "doc", "lineno_str", "expr", "input_str", "st", "x_str"}
STR_SUFFIXES = ("_name", "_str", "_path", "_text", "_prefix", "_suffix", "_line", "_string",
                "_url", "_msg", "_file", "_dir", "_key", "_id", "name", "path", "text", "str")
INT_NAMES = {"n", "i", "j", "k", "count", "num", "size", "width", "index", "level", "length",
             "depth", "offset", "start", "end", "stop", "pos", "idx", "lineno", "number", "limit",
             "height", "indent", "base", "precision", "digits", "ncols", "nrows", "m", "bits",
             "nbytes", "col", "row", "column", "line_no", "year", "month", "day", "hour", "minute",
             "second", "seconds", "port", "code_point", "codepoint", "status", "exit_code", "step",
             "maxlen", "max_len", "minlen", "tabsize", "retries", "times", "amount", "total",
             "value_int", "x", "y", "a", "b", "val", "integer", "p", "q", "r", "nth", "ndigits"}
INT_AFFIXES = (("n_", "num_", "max_", "min_", "nb_"),
               ("_count", "_size", "_len", "_length", "_index", "_idx", "_num", "_width", "_level",
                "_lineno", "_no", "_number", "_depth", "_offset", "_pos", "_limit"))
LIST_NAMES = {"items", "lst", "values", "seq", "xs", "args", "parts", "names", "lines", "elements",
              "list", "arr", "array", "nodes", "tokens", "words", "rows", "keys", "paths",
              "iterable", "l", "sequence", "entries", "chunks", "pieces", "elems", "data", "li",
              "seqs", "iterables", "objs", "objects", "fields", "columns", "cols", "tags", "choices",
              "candidates", "files", "filenames", "strings", "numbers", "nums", "ints", "vals",
              "argv", "results", "pairs", "tuples", "collection", "container", "it", "iter"}
LIST_SUFFIXES = ("_list", "_lines", "_items", "_names", "_values", "_seq", "_args", "_tuple", "_set")
DICT_NAMES = {"d", "mapping", "kwargs", "options", "attrs", "dct", "dic", "dict", "config", "params",
              "headers", "env", "kw", "opts", "meta", "info", "table", "mapper", "cache", "context",
              "ctx", "settings", "environ", "defaults", "overrides", "dictionary", "namespace",
              "ns", "metadata", "extra", "fields_dict", "conf", "cfg", "props", "properties", "m_dict"}
DICT_SUFFIXES = ("_map", "_dict", "_mapping", "_kwargs", "_options", "_attrs", "_attributes",
                 "_config", "_settings", "_params")
BOOL_NAMES = {"flag", "strict", "verbose", "enabled", "quiet", "force", "raw", "recursive",
              "reverse", "debug", "dry_run", "check", "enable", "disable", "silent", "full",
              "inplace", "required", "optional", "default", "strip", "lower", "upper", "allow",
              "deep", "shallow", "sort", "unique", "ignore_case", "case_sensitive", "value_bool"}
BOOL_PREFIXES = ("is_", "has_", "use_", "allow_", "should_", "include_", "skip_", "no_", "with_",
                 "show_", "keep_", "can_", "do_", "enable_", "disable_", "ignore_")

POOLS = {
    "str": ["", "a", "abc", "hello world", "Hello, World!", "foo_bar", "fooBar", "x.y.z", "a,b,c",
            "  padded  ", "123", "3.14", "-7", "foo/bar/baz.txt", "src/pkg/mod.py", "line1\nline2",
            "key=value", "name: value", "HTTP/1.1", "snake_case_name", "CamelCaseName", "v1.2.3",
            "#comment", "{x}", "%s", "a-b-c", "UPPER", "tab\there", "café", "...", "test",
            "__init__", "x", "foo bar baz", "1,2,3", "[1, 2]", "True", "None", "ab cd ef", "   "],
    "int": [0, 1, 2, 3, 4, 5, 7, 8, 10, 12, 16, 100, -1, -2, 255, 3, 1, 2],
    "list": [[], [1, 2, 3], [3, 1, 2], ["a", "b", "c"], ["foo", "bar", "baz"], [1, "a", None],
             [[1, 2], [3, 4]], [("a", 1), ("b", 2)], [0], ["x"], [1, 1, 2, 3, 5], ["hello world", "foo"],
             [1, 2, 2, 3], ["b", "a", "b"], [-1, 0, 1], ["1", "2", "10"], [True, False], [(1, 2), (3, 4)]],
    "dict": [{}, {"a": 1, "b": 2}, {"name": "x", "value": 3}, {"x": [1, 2], "y": []},
             {1: "one", 2: "two"}, {"key": "value"}, {"a": {"b": 1}}, {"a": None, "b": 0},
             {"foo": "bar", "baz": "qux"}, {"x": 1}],
    "bool": [True, False],
    "float": [0.5, 1.5, -2.25, 3.0, 0.0, 10.0, 2.5],
}
MIXED_EXTRA = [None, (1, 2), ("a", "b"), (), 0.5, 2.5]


def param_kind(name, annotation):
    """The value pool a parameter draws from: by annotation, then by name."""
    ann = annotation.lower()
    if ann:
        for kind, words in (("bool", ("bool",)), ("int", ("int",)), ("float", ("float",)),
                            ("str", ("str",)), ("dict", ("dict", "mapping")),
                            ("list", ("list", "sequence", "iterable", "tuple", "set"))):
            if any(w in ann for w in words):
                return kind
    low = name.lower().lstrip("_")
    if low in BOOL_NAMES or low.startswith(BOOL_PREFIXES):
        return "bool"
    if low in INT_NAMES or low.startswith(INT_AFFIXES[0]) or low.endswith(INT_AFFIXES[1]):
        return "int"
    if low in DICT_NAMES or low.endswith(DICT_SUFFIXES):
        return "dict"
    if low in LIST_NAMES or low.endswith(LIST_SUFFIXES):
        return "list"
    if low in STR_NAMES or low.endswith(STR_SUFFIXES):
        return "str"
    if len(low) > 3 and low.endswith("s") and not low.endswith("ss"):
        return "list"
    return "mixed"


def pool_value(rng, kind):
    if kind == "mixed":
        kind = rng.choice(["str", "str", "int", "int", "list", "dict", "bool", "float", "none"])
        if kind == "none":
            return rng.choice(MIXED_EXTRA)
    if kind == "str" and rng.random() < 0.2:
        return random_text(rng)
    if kind == "int" and rng.random() < 0.3:
        return rng.randint(-10, 20)
    if kind == "list" and rng.random() < 0.25:
        return [rng.randint(-5, 9) for _ in range(rng.randint(0, 5))]
    return rng.choice(POOLS[kind])


def fuzz_inputs(rng, params, count=40):
    """Up to `count` distinct argument texts; the first ones use each parameter's own pool."""
    kinds = [param_kind(name, ann) for name, ann in params]
    inputs = []
    for attempt in range(count * 5):
        if len(inputs) >= count:
            break
        stray = 0.0 if attempt < count // 2 else 0.4
        values = [pool_value(rng, "mixed" if rng.random() < stray else k) for k in kinds]
        text = args_text(values)
        if text is not None and text not in inputs:
            inputs.append(text)
    return inputs


def cmd_corpus(args):
    started = time.monotonic()
    excluded = set(ALWAYS_EXCLUDED) | set(args.exclude_repo or ())
    rows, stats = corpus_rows(args.corpus, args.limit, args.seed, excluded,
                              per_round=args.per_round, max_per_repo=args.max_per_repo)
    rows = [dict(row, id=f"cor-{args.start_id + i:05d}") for i, row in enumerate(rows)]
    write_rows(args.out, rows)
    for key in ("rows scanned", "read to the end", "top-level functions", "duplicates",
                "self-contained", "fuzzed", "with inputs", "nondeterministic", "written"):
        log(f"corpus: {key:20s} {stats.get(key, 0)}")
    log("corpus: rejections: " + ", ".join(
        f"{k[7:]}={v}" for k, v in stats.most_common() if k.startswith("reject:")))
    log("corpus: functions without inputs, by their most frequent error: " + ", ".join(
        f"{k[5:]}={v}" for k, v in stats.most_common() if k.startswith("fail:")))
    log("corpus: rows per repo: " + ", ".join(
        f"{k[5:]}={v}" for k, v in stats.most_common() if k.startswith("repo:")))
    log(f"corpus: {len(rows)} rows in {time.monotonic() - started:.1f}s "
        f"(scan {stats['scan seconds']:.1f}s) -> {args.out}")


def corpus_rows(path, limit, seed, excluded, per_round=None, max_per_repo=0.0):
    """Rows (without ids) for up to `limit` corpus functions, and counters.

    Works in rounds: read the next `per_round` candidates (default 3 x the rows still
    missing) from the corpus stream, shuffle them with the seed, fuzz them, keep the
    first input that works; stop as soon as `limit` rows exist or the corpus is used up.
    """
    stats = collections.Counter()
    stream = scan_corpus(path, excluded, stats)
    order = random.Random(seed)
    cap = int(max_per_repo * limit) if 0 < max_per_repo < 1 else int(max_per_repo or 0)
    per_repo = collections.Counter()
    rows = []
    with Sandbox() as box:
        while len(rows) < limit:
            t0 = time.monotonic()
            batch = list(itertools.islice(stream, per_round or max(50, 3 * (limit - len(rows)))))
            stats["scan seconds"] += time.monotonic() - t0
            if not batch:
                break
            order.shuffle(batch)
            if cap:
                batch = [c for c in batch if per_repo[c["repo"]] < cap]
            for start in range(0, len(batch), 200):
                if len(rows) >= limit:
                    break
                group = batch[start:start + 200]
                rows += fuzz_group(box, group, seed, limit - len(rows), cap, per_repo, stats)
    stats["written"] = len(rows)
    stats.update({"repo:" + repo: n for repo, n in per_repo.items()})
    return rows, stats


def fuzz_group(box, group, seed, room, cap, per_repo, stats):
    """Fuzzes a group of candidates; returns up to `room` confirmed rows (no ids)."""
    items = []
    for cand in group:
        rng = random.Random(f"{seed}:{cand['code']}")
        items.append({"code": cand["code"], "entry": cand["entry"],
                      "inputs": fuzz_inputs(rng, cand["params"]), "opts": run_options(3, True)})
    stats["fuzzed"] += len(group)
    found = []
    for cand, item, res in zip(group, items, box.run(items)):
        if res.get("index") is None:
            errors = res.get("errors") or {"no-input": 1}
            stats["fail:" + max(errors, key=errors.get)] += 1
            continue
        found.append((cand, item["inputs"][res["index"]], res["output"]))
    stats["with inputs"] += len(found)
    rows = []
    same = confirm(box, [(c["code"], c["entry"], text, out) for c, text, out in found])
    for (cand, text, out), ok in zip(found, same):
        if not ok:
            stats["nondeterministic"] += 1
            continue
        if len(rows) >= room or (cap and per_repo[cand["repo"]] >= cap):
            continue
        per_repo[cand["repo"]] += 1
        rows.append({"id": "", "origin": "corpus:" + cand["repo"], "code": cand["code"],
                     "entry": cand["entry"], "input": text, "output": out})
    return rows


# =============================================================== split

def normalized_code(code):
    try:
        return ast.dump(ast.parse(code))
    except (SyntaxError, ValueError):
        return " ".join(code.split())


def cmd_split(args):
    rows = read_rows(args.input)
    groups = collections.OrderedDict()
    seen_rows = set()
    dropped = 0
    for row in rows:
        key = normalized_code(row["code"])
        if (key, row["input"]) in seen_rows:
            dropped += 1
            continue
        seen_rows.add((key, row["input"]))
        groups.setdefault(key, []).append(row)
    keys = list(groups)
    random.Random(args.seed).shuffle(keys)
    n_test = int(round(args.test_fraction * len(keys)))
    test_keys = set(keys[:n_test])
    train = [r for k, rs in groups.items() if k not in test_keys for r in rs]
    test = [r for k, rs in groups.items() if k in test_keys for r in rs]
    write_rows(args.train, train)
    write_rows(args.test, test)
    log(f"split: {len(rows)} rows, {dropped} duplicate rows dropped, {len(keys)} programs -> "
        f"train {len(train)} rows / test {len(test)} rows ({n_test} programs)")


# =============================================================== self-test

def check_rows(box, rows, label):
    """Schema checks and re-execution of every row; returns a list of problems."""
    problems = []
    for row in rows:
        if set(row) != {"id", "origin", "code", "entry", "input", "output"}:
            problems.append(f"{label} {row.get('id')}: keys {sorted(row)}")
        if len(row["input"]) >= 120 or len(row["output"]) >= 200:
            problems.append(f"{label} {row['id']}: input/output too long")
        try:
            values = ast.literal_eval("(" + row["input"] + ",)")
            if args_text(list(values)) != row["input"]:
                problems.append(f"{label} {row['id']}: input does not round-trip")
        except (ValueError, SyntaxError):
            problems.append(f"{label} {row['id']}: input is not a literal list")
        if any(row["origin"].endswith(repo) for repo in ALWAYS_EXCLUDED):
            problems.append(f"{label} {row['id']}: excluded repository")
    items = [{"code": r["code"], "entry": r["entry"], "inputs": [r["input"]],
              "opts": run_options(0, False)} for r in rows]
    for row, res in zip(rows, box.run(items)):
        if res.get("index") is None or res["output"] != row["output"]:
            problems.append(f"{label} {row['id']}: re-run gave {res.get('output', res.get('errors'))!r}")
    return problems


def cmd_self_test(args):
    problems = []
    t0 = time.monotonic()
    me = os.path.abspath(__file__)
    with tempfile.TemporaryDirectory() as tmp, Sandbox() as box:
        outs = []
        for name in ("a.jsonl", "b.jsonl"):
            out = os.path.join(tmp, name)
            subprocess.run([sys.executable, me, "generate", "--n", "50", "--seed", "1", "--out", out],
                           check=True, stderr=subprocess.DEVNULL)
            with open(out, "rb") as fh:
                outs.append(fh.read())
        if outs[0] != outs[1]:
            problems.append("generate --n 50 --seed 1 is not byte-identical across runs")
        generated = read_rows(os.path.join(tmp, "a.jsonl"))
        if len(generated) != 50:
            problems.append(f"generate wrote {len(generated)} rows, not 50")
        problems += check_rows(box, generated, "generated")
        log(f"self-test: generate x2 (byte-identical: {outs[0] == outs[1]}) + re-run of "
            f"{len(generated)} rows: {time.monotonic() - t0:.1f}s")
        corpus = []
        if args.corpus and os.path.exists(args.corpus):
            t1 = time.monotonic()
            out = os.path.join(tmp, "corpus.jsonl")
            subprocess.run([sys.executable, me, "corpus", "--corpus", args.corpus, "--limit", "30",
                            "--seed", "0", "--out", out], check=True, stderr=subprocess.DEVNULL)
            corpus = read_rows(out)
            if len(corpus) != 30:
                problems.append(f"corpus --limit 30 gave {len(corpus)} rows")
            problems += check_rows(box, corpus, "corpus")
            log(f"self-test: corpus --limit 30 + re-run of {len(corpus)} rows: "
                f"{time.monotonic() - t1:.1f}s")
        else:
            log("self-test: corpus file not found; corpus check skipped")
        src = os.path.join(tmp, "all.jsonl")
        write_rows(src, generated + generated[:5] + corpus)
        ns = argparse.Namespace(input=src, test_fraction=0.3, seed=0,
                                train=os.path.join(tmp, "train.jsonl"), test=os.path.join(tmp, "test.jsonl"))
        cmd_split(ns)
        train = {normalized_code(r["code"]) for r in read_rows(ns.train)}
        test = {normalized_code(r["code"]) for r in read_rows(ns.test)}
        if train & test or not test:
            problems.append("split: a program is in both files (or the test file is empty)")
        broken = [dict(generated[0], output=generated[0]["output"] + " ")]
        if not check_rows(box, broken, "planted"):
            problems.append("re-execution check did not notice a wrong output")
    for p in problems:
        log("FAIL " + p)
    log(f"self-test: {'FAILED' if problems else 'ok'} ({time.monotonic() - t0:.1f}s)")
    return 1 if problems else 0


# =============================================================== command line

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="random programs from the built-in grammar")
    g.add_argument("--n", type=int, required=True)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--out", required=True)
    g.add_argument("--start-id", type=int, default=0)
    c = sub.add_parser("corpus", help="self-contained functions of the mined fix corpus")
    c.add_argument("--corpus", required=True)
    c.add_argument("--limit", type=int, required=True)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--out", required=True)
    c.add_argument("--start-id", type=int, default=0)
    c.add_argument("--exclude-repo", action="append", metavar="OWNER/NAME",
                   help="more repositories to skip (pylint-dev/pylint and pylint-dev/astroid "
                        "are always skipped)")
    c.add_argument("--per-round", type=int, default=None,
                   help="candidates read from the corpus per round (default: 3 x the rows "
                        "still missing); reading stops once --limit rows exist")
    c.add_argument("--max-per-repo", type=float, default=0.0,
                   help="cap rows per repository (<1: fraction of --limit; 0: no cap)")
    s = sub.add_parser("split", help="train/test split by program")
    s.add_argument("--input", required=True)
    s.add_argument("--test-fraction", type=float, required=True)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--train", required=True)
    s.add_argument("--test", required=True)
    t = sub.add_parser("self-test", help="determinism and re-execution checks")
    t.add_argument("--corpus", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                    "..", "..", "..", "shared", "corpus", "fix-pairs.jsonl.gz"),
                   help="the corpus for the corpus check (skipped when the file does not exist)")
    args = ap.parse_args(argv)
    if args.cmd == "generate":
        cmd_generate(args)
    elif args.cmd == "corpus":
        cmd_corpus(args)
    elif args.cmd == "split":
        cmd_split(args)
    else:
        return cmd_self_test(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
