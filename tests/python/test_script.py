"""src/debugger/dap/script.py (with its prelude): the recorder's value views, directly."""
import json
import os
import sys

import pytest
from embedded import Broken, load, run_deployed

script = load("src/debugger/dap/script.py")


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


@pytest.fixture
def recorder(tmp_path):
    program = tmp_path / "prog.py"
    program.write_text("x = 1\n", encoding="utf-8")
    rec = script.Recorder({
        "program": str(program), "out_path": str(tmp_path / "run.jsonl"), "max_events": 100,
        "max_bytes": 10 ** 6, "max_repr": 30, "max_items": 3,
    })
    yield rec
    rec.out.close()


def lines(rec):
    rec.out.flush()
    with open(rec.out.name, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def test_text_is_the_repr_without_addresses_clipped(recorder):
    assert recorder.text([1, "a"]) == "[1, 'a']"
    assert recorder.text(Point(1, 2)) == "<test_script.Point object>"
    assert recorder.text("z" * 100) == "'" + "z" * 29 + "..."
    assert recorder.text(Broken()) == "<unrepresentable Broken: RuntimeError>"  # longer than 30: not cut


def test_variables_have_children_two_levels_deep(recorder):
    var = recorder.variable("p", {"a": [Point(1, [2])], "b": 2, "c": 3, "d": 4}, 0)
    assert (var["name"], var["type"]) == ("p", "dict")
    assert [c["name"] for c in var["children"]] == ["'a'", "'b'", "'c'"]  # max_items
    inner = var["children"][0]
    assert inner["type"] == "list" and [c["name"] for c in inner["children"]] == ["[0]"]
    assert "children" not in inner["children"][0]  # the third level is not expanded
    point = recorder.variable("pt", Point(1, "s"), 0)
    assert [(c["name"], c["value"], c["type"]) for c in point["children"]] == [("x", "1", "int"), ("y", "'s'", "str")]
    assert "children" not in recorder.variable("s", "text", 0)
    assert recorder.children(len, 0) is None and recorder.children(Point, 0) is None


def test_locals_skip_module_machinery(recorder):
    def frame_of_function():
        value = 3  # noqa: F841 - seen through the frame
        return sys._getframe()

    assert [v["name"] for v in recorder.locals_of(frame_of_function())] == ["value"]
    module_frame = sys._getframe()
    while module_frame.f_code.co_name != "<module>":
        module_frame = module_frame.f_back
    names = [v["name"] for v in recorder.locals_of(module_frame)]
    assert not [n for n in names if n.startswith("__")]
    assert "os" not in names and "Point" not in names and "test_locals_skip_module_machinery" not in names


def test_own_code_is_the_program_s_directory(recorder, tmp_path):
    assert recorder.is_own(str(tmp_path / "prog.py"))
    assert not recorder.is_own(os.__file__)
    assert not recorder.is_own("<string>")
    os.makedirs(tmp_path / "site-packages")
    (tmp_path / "site-packages" / "lib.py").write_text("", encoding="utf-8")
    assert not recorder.is_own(str(tmp_path / "site-packages" / "lib.py"))


def test_events_output_and_end_are_json_lines(recorder):
    def callee(a):
        return sys._getframe()

    frame = callee([1, 2])
    recorder.record(frame, "call", None)
    recorder.record(frame, "return", {"k": Point(0, 0)})
    script.Output(recorder, "stdout").write("hi\n")
    recorder.end("normal", 0, None, None)
    recorder.end("exception", 1, None, "again")  # only the first end counts
    call, ret, out, end = lines(recorder)
    assert (call["event"], call["frame"], call["depth"], call["func"]) == ("call", 1, 0, "callee")
    assert [v["value"] for v in call["locals"]] == ["[1, 2]"]
    assert (ret["event"], ret["frame"], ret["value"]) == ("return", 1, "{'k': <test_script.Point object>}"[:30] + "...")
    assert out == {"kind": "output", "after": 2, "category": "stdout", "text": "hi\n"}
    assert end == {"kind": "end", "exit": "normal", "code": 0, "limit": None, "exception": None}
    with pytest.raises(TypeError):
        script.Output(recorder, "stderr").write(b"bytes")


def test_a_script_runs_as_main_with_its_output_and_exit(tmp_path):
    program = tmp_path / "prog.py"
    program.write_text("import sys\nclass C: pass\nc = C()\nprint('out', len(sys.argv))\nsys.exit(3)\n")
    config = {"program": str(program), "args": ["a"], "cwd": str(tmp_path), "out_path": str(tmp_path / "run.jsonl"),
              "max_events": 100, "max_bytes": 10 ** 6, "timeout_s": 20, "max_repr": 300, "max_items": 50}
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    done = run_deployed("src/debugger/dap/script.py", tmp_path, [str(tmp_path / "config.json")])
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "run.jsonl", encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    assert records[-1] == {"kind": "end", "exit": "system_exit", "code": 3, "limit": None, "exception": None}
    assert [r["text"] for r in records if r["kind"] == "output"] == ["out", " ", "2", "\n"]
    last = [r for r in records if r["kind"] == "event"][-1]
    assert {v["name"]: v["value"] for v in last["locals"]}["c"] == "<__main__.C object>"
