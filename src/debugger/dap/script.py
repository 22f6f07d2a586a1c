# deepdebug script recorder: runs a Python program as __main__ under sys.settrace and records
# every event of the program's own code (files under its directory, outside site-packages),
# with structured locals, the output the program wrote, and how it ended.
#
# Usage: python3 script.py CONFIG.json
# CONFIG: {"program", "args", "cwd", "out_path", "max_events", "max_bytes", "timeout_s",
#          "max_repr", "max_items"}.
# Writes JSON lines to out_path: {"kind": "event", ...}, {"kind": "output", "after": n,
# "category": "stdout"|"stderr", "text": ...}, and last {"kind": "end", "exit": "normal" |
# "exception" | "system_exit" | "os_exit" | "truncated", "code": int | null, "limit": ...,
# "exception": str | null}. Lines are flushed as they go, so a process killed by a signal
# still leaves what it recorded.
# Deployed with src/python_shared/values.py prepended (`plain_repr`).
import json
import os
import signal
import sys
import traceback


class Recorder:
    def __init__(self, cfg):
        self.program = os.path.realpath(cfg["program"])
        self.root = os.path.dirname(self.program) + os.sep
        self.out = open(cfg["out_path"], "w", encoding="utf-8")
        self.max_events = int(cfg["max_events"])
        self.max_bytes = int(cfg["max_bytes"])
        self.max_repr = int(cfg["max_repr"])
        self.max_items = int(cfg["max_items"])
        self.events = 0
        self.bytes = 0
        self.frames = {}  # id(frame) -> (number, depth)
        self.depth = -1
        self.next_frame = 0
        self.ended = False
        self.own = {}  # co_filename -> whether it is the program's own code
        self.paths = {}  # co_filename -> its real path

    # --- what is recorded --------------------------------------------------------------

    def emit(self, record):
        line = json.dumps(record)
        self.bytes += len(line)
        self.out.write(line + "\n")

    def is_own(self, filename):
        known = self.own.get(filename)
        if known is None:
            path = os.path.realpath(filename) if os.path.exists(filename) else ""
            known = path.startswith(self.root) and "site-packages" not in path
            self.own[filename] = known
            self.paths[filename] = path
        return known

    def text(self, value):
        return plain_repr(value, self.max_repr)

    def variable(self, name, value, level):
        var = {"name": name, "value": self.text(value), "type": type(value).__name__}
        if level < 2:
            children = self.children(value, level + 1)
            if children:
                var["children"] = children
        return var

    def children(self, value, level):
        if isinstance(value, (str, bytes, int, float, complex, bool, type(None))):
            return None
        try:
            if isinstance(value, dict):
                pairs = [(self.text(k), v) for k, v in list(value.items())[: self.max_items]]
            elif isinstance(value, (list, tuple, set, frozenset)):
                items = list(value)[: self.max_items]
                pairs = [("[%d]" % i, v) for i, v in enumerate(items)]
            elif isinstance(getattr(value, "__dict__", None), dict) and not isinstance(value, type) \
                    and not callable(value) and type(value).__module__ != "builtins":
                pairs = [(k, v) for k, v in list(vars(value).items())[: self.max_items]]
            else:
                return None
        except BaseException:  # noqa: BLE001 - a container that fails to iterate
            return None
        return [self.variable(name, v, level) for name, v in pairs]

    def locals_of(self, frame):
        module_level = frame.f_code.co_name == "<module>"
        out = []
        for name, value in list(frame.f_locals.items()):
            if not name.isidentifier():
                continue
            if module_level and (name.startswith("__") or type(value).__name__ in ("module", "function", "type")):
                continue
            out.append(self.variable(name, value, 0))
        return out

    def record(self, frame, event, arg):
        if event == "call":
            self.depth += 1
            self.next_frame += 1
            self.frames[id(frame)] = (self.next_frame, self.depth)
        number, depth = self.frames.get(id(frame), (0, self.depth))
        value = None
        if event == "return":
            value = self.text(arg)
        elif event == "exception":
            value = self.text(arg[1])
        self.emit({
            "kind": "event",
            "event": event,
            "frame": number,
            "depth": depth,
            "func": frame.f_code.co_name,
            "file": self.paths.get(frame.f_code.co_filename, frame.f_code.co_filename),
            "line": frame.f_lineno or 0,
            "locals": self.locals_of(frame),
            "value": value,
        })
        self.events += 1
        if event == "return":
            self.frames.pop(id(frame), None)
            self.depth -= 1
        if self.events >= self.max_events:
            self.end("truncated", None, "events", None, force=True)
        if self.bytes >= self.max_bytes:
            self.end("truncated", None, "bytes", None, force=True)

    def local_trace(self, frame, event, arg):
        if event in ("line", "return", "exception"):
            self.record(frame, event, arg)
        return self.local_trace

    def global_trace(self, frame, event, arg):
        if not self.is_own(frame.f_code.co_filename):
            return None
        self.record(frame, "call", arg)
        return self.local_trace

    def end(self, how, code, limit, exception, force=False):
        if self.ended:
            return
        self.ended = True
        sys.settrace(None)
        self.emit({"kind": "end", "exit": how, "code": code, "limit": limit, "exception": exception})
        self.out.flush()
        if force:
            os._exit(0)


class Output:
    """sys.stdout / sys.stderr: what the program writes is recorded with its position."""

    def __init__(self, recorder, category):
        self.recorder = recorder
        self.category = category
        self.encoding = "utf-8"
        self.errors = "replace"

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        if text and not self.recorder.ended:
            tracing = sys.gettrace()
            sys.settrace(None)
            self.recorder.emit({"kind": "output", "after": self.recorder.events, "category": self.category,
                                "text": text})
            sys.settrace(tracing)
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False

    def writable(self):
        return True


def main():
    with open(sys.argv[1], encoding="utf-8") as fh:
        cfg = json.load(fh)
    rec = Recorder(cfg)
    os.chdir(cfg["cwd"])
    sys.argv = [rec.program] + list(cfg["args"])
    sys.path[0] = os.path.dirname(rec.program)
    sys.stdout, sys.stderr = Output(rec, "stdout"), Output(rec, "stderr")
    real_exit = os._exit

    def os_exit(code):
        rec.end("os_exit", int(code), None, None)
        real_exit(code)

    os._exit = os_exit

    def on_alarm(signum, frame):
        rec.end("truncated", None, "time", None, force=True)

    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, float(cfg["timeout_s"]))
    with open(rec.program, encoding="utf-8") as fh:
        source = fh.read()
    globals_ = {"__name__": "__main__", "__file__": rec.program, "__builtins__": __builtins__}
    how, code, exception = "normal", 0, None
    try:
        code_obj = compile(source, rec.program, "exec")
        sys.settrace(rec.global_trace)
        exec(code_obj, globals_)
    except SystemExit as exc:
        sys.settrace(None)
        how = "system_exit"
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            sys.stderr.write("%s\n" % exc.code)
            code = 1
    except BaseException as exc:  # noqa: BLE001 - the program may raise anything
        sys.settrace(None)
        how, code, exception = "exception", 1, rec.text(exc)
        own = exc.__traceback__.tb_next if exc.__traceback__ else None  # not this file's frame
        sys.stderr.write("".join(traceback.format_exception(type(exc), exc, own)))
    finally:
        sys.settrace(None)
        signal.setitimer(signal.ITIMER_REAL, 0)
    rec.end(how, code, None, exception)


if __name__ == "__main__":
    main()
