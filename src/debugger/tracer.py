# deepdebug tracer: records call/line/return/exception events of one Python call with sys.settrace.
#
# Usage: python3 tracer.py CONFIG.json
# CONFIG: {"program_path", "out_path", "max_events", "max_bytes", "soft_timeout_s",
#          "max_repr", "max_items", "entry"}.
# The program is executed untraced (definitions), then `entry()` (normally the generated
# `main`) is called under the tracer. Only frames whose code lives in the program file are
# recorded. The result is written as JSON to out_path exactly once; hitting a limit writes
# the events recorded so far with exit "never" and terminates the process immediately.
# Deployed with src/python_shared/values.py prepended (`plain_repr`, `unrepresentable`, `clipped`).
import ast
import json
import os
import signal
import sys
import types

FORMAT_VERSION = 1


def main():
    with open(sys.argv[1], encoding="utf-8") as fh:
        cfg = json.load(fh)
    program_path = cfg["program_path"]
    out_path = cfg["out_path"]
    max_events = int(cfg["max_events"])
    max_bytes = int(cfg["max_bytes"])
    max_repr = int(cfg["max_repr"])
    max_items = int(cfg["max_items"])
    with open(program_path, encoding="utf-8") as fh:
        source = fh.read()
    lines = source.splitlines()

    state = {"events": [], "bytes": 0, "written": False, "frames": [], "next_id": 0, "capped": None}

    def bounded(value, budget, seen):
        """repr(value), identical for small builtin values, bounded for huge ones."""
        t = type(value)
        if t is str:
            if len(value) > budget:
                return repr(value[:budget]) + "..."
            return repr(value)
        if t is int:
            try:
                return repr(value)
            except ValueError:
                return "<int with %d bits>" % value.bit_length()
        if t is types.FunctionType:
            shown = function_source(value)
            if shown is not None:
                return shown
        if t in (list, tuple, dict, set, frozenset):
            if id(value) in seen:
                return {list: "[...]", dict: "{...}"}.get(t, "...")
            if len(value) == 0:
                return {list: "[]", tuple: "()", dict: "{}", set: "set()",
                        frozenset: "frozenset()"}[t]
            seen.add(id(value))
            parts = []
            used = 0
            items = value.items() if t is dict else value
            for i, item in enumerate(items):
                if i >= max_items or used > budget:
                    parts.append("...")
                    break
                if t is dict:
                    text = bounded(item[0], budget, seen) + ": " + bounded(item[1], budget, seen)
                else:
                    text = bounded(item, budget, seen)
                used += len(text) + 2
                parts.append(text)
            seen.discard(id(value))
            body = ", ".join(parts)
            if t is list:
                return "[" + body + "]"
            if t is tuple:
                return "(" + body + ("," if len(value) == 1 else "") + ")"
            if t is frozenset:
                return "frozenset({" + body + "})"
            return "{" + body + "}"
        return plain_repr(value)

    parsed = {}

    def lambdas_on(line):
        if "tree" not in parsed:
            try:
                parsed["tree"] = ast.parse(source)
            except SyntaxError:
                parsed["tree"] = None
        tree = parsed["tree"]
        if tree is None:
            return []
        if "lambdas" not in parsed:
            parsed["lambdas"] = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
        return [n for n in parsed["lambdas"] if n.lineno == line]

    def function_source(fn):
        """A function of the program shown as code that evaluates back to it: a lambda as
        its source, a function defined at the top of the program as its name (a lambda's
        or function's repr, `<function f.<locals>.<lambda>>`, cannot be evaluated)."""
        code = fn.__code__
        if code.co_filename != program_path:
            return None
        if fn.__name__ != "<lambda>":
            return fn.__name__ if namespace.get(fn.__name__) is fn else None
        found = lambdas_on(code.co_firstlineno)
        if len(found) > 1 and hasattr(code, "co_positions"):
            cols = [c for _, _, c, _ in code.co_positions() if c is not None]
            found = [n for n in found if cols and n.body.col_offset in cols] or found
        return ast.get_source_segment(source, found[0]) if len(found) == 1 else None

    def safe_repr(value):
        try:
            text = bounded(value, max_repr, set())
        except BaseException as exc:  # noqa: BLE001 - e.g. RecursionError in deep nesting.
            text = unrepresentable(value, exc)
        return clipped(text, max_repr)

    def write(exit_kind, limit, exception, force_exit):
        if state["written"]:
            return
        state["written"] = True
        sys.settrace(None)
        result = {
            "format_version": FORMAT_VERSION,
            "events": state["events"],
            "exit": exit_kind,
            "limit": limit,
            "exception": exception,
        }
        tmp = out_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(result, fh)
        os.replace(tmp, out_path)
        if force_exit:
            os._exit(0)

    def src_of(lineno):
        if 1 <= lineno <= len(lines):
            return lines[lineno - 1]
        return ""

    def def_line(lineno):
        """The `def` (or `class`) line of a definition whose code starts at `lineno`: past
        its decorators (a decorated function's code starts at the first decorator)."""
        if not src_of(lineno).lstrip().startswith("@"):
            return lineno
        for candidate in range(lineno, min(lineno + 50, len(lines)) + 1):
            text = src_of(candidate).lstrip()
            if text.startswith(("def ", "async def ", "class ")):
                return candidate
        return lineno

    def record(frame, event, arg):
        frames = state["frames"]
        if event == "call":
            state["next_id"] += 1
            frames.append((frame, state["next_id"]))
        depth = len(frames) - 1
        lineno = frame.f_lineno or 0
        if event == "call":
            lineno = def_line(lineno)
        frame_id = frames[-1][1] if frames else 0
        if event in ("call", "line"):
            local_pairs = [[name, safe_repr(value)] for name, value in frame.f_locals.items()
                           if name.isidentifier()]
            value = None
        else:
            local_pairs = [[name, safe_repr(v)] for name, v in frame.f_locals.items()
                           if name.isidentifier()]
            value = safe_repr(arg[1] if event == "exception" else arg)
        ev = {
            "event": event,
            "depth": depth,
            "frame": frame_id,
            "func": frame.f_code.co_name,
            "lineno": lineno,
            "src": src_of(lineno),
            "locals": local_pairs,
            "value": value,
        }
        state["events"].append(ev)
        state["bytes"] += sum(len(k) + len(v) for k, v in local_pairs) + len(value or "") + 64
        if event == "return" and frames:
            frames.pop()
        if len(state["events"]) >= max_events:
            stop_recording("events")
        elif state["bytes"] >= max_bytes:
            stop_recording("bytes")

    def stop_recording(limit):
        """A cap was hit: record nothing more, but let the program run on (untraced, at full
        speed) to learn whether it finishes within the time limit: then the trace is only
        truncated (its real exit, with `limit` set); otherwise the alarm labels it `never`."""
        state["capped"] = limit
        sys.settrace(None)
        frame = sys._getframe(1)
        while frame is not None:
            frame.f_trace = None
            frame = frame.f_back

    def local_trace(frame, event, arg):
        if state["capped"]:
            return None
        if event in ("line", "return", "exception"):
            record(frame, event, arg)
        return local_trace

    def global_trace(frame, event, arg):
        if state["capped"] or frame.f_code.co_filename != program_path:
            return None
        record(frame, "call", arg)
        return local_trace

    def unwind(exc):
        """Python switches tracing off for good when the tracer itself overflows the stack,
        which it does at the bottom of a runaway recursion (it runs on top of the program's
        frames): the unwinding of the RecursionError is then not seen. When it reached the
        traced call uncaught, through frames that cannot run code while unwinding (no try,
        with or finally: an empty exception table), the unwinding is known: each open frame,
        innermost first, gets its `exception` and `return` events. Otherwise the trace is
        labelled truncated at the recursion limit."""
        frames = state["frames"]
        if not all(getattr(f.f_code, "co_exceptiontable", b"x") == b"" for f, _ in frames):
            state["capped"] = "recursion"
            return
        last = {}
        for ev in state["events"]:
            last[ev["frame"]] = ev
        value = safe_repr(exc)
        while frames:
            frame, frame_id = frames.pop()
            ev = last.get(frame_id)
            if ev is None:
                continue
            for kind, shown in (("exception", value), ("return", "None")):
                state["events"].append(dict(ev, event=kind, value=shown, depth=len(frames)))

    def on_alarm(signum, frm):
        write("never", state["capped"] or "time", None, True)

    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, float(cfg["soft_timeout_s"]))
    namespace = {"__name__": "__deepdebug__"}
    try:
        # Definitions only, untraced; the traced call is the entry below.
        exec(compile(source, program_path, "exec"), namespace)
        entry = namespace[cfg["entry"]]
    except BaseException as exc:  # noqa: BLE001 - broken programs are data.
        write("error", None, safe_repr(exc), False)
        return
    exit_kind, exception = "normal", None
    real_exit = os._exit

    def os_exit(code):
        # The process ends here, the call never returns: an exit like sys.exit's.
        write("normal" if code == 0 else "error", state["capped"], None if code == 0 else "os._exit(%d)" % code, False)
        real_exit(code)

    os._exit = os_exit
    sys.settrace(global_trace)
    try:
        entry()
    except SystemExit as exc:  # sys.exit(0) / sys.exit() end the program normally
        if exc.code not in (None, 0):
            exit_kind, exception = "error", safe_repr(exc)
    except BaseException as exc:  # noqa: BLE001 - the traced program may raise anything.
        exit_kind, exception = "error", safe_repr(exc)
        if isinstance(exc, RecursionError) and sys.gettrace() is None and not state["capped"]:
            unwind(exc)
    finally:
        sys.settrace(None)
        signal.setitimer(signal.ITIMER_REAL, 0)
    write(exit_kind, state["capped"], exception, False)


if __name__ == "__main__":
    main()
