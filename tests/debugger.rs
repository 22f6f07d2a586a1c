//! Integration tests for the neural-debugger subcommands, run through the real binary.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;
use common::cli::{run, stdout_ok};

use deepdebug::debugger::cruxeval::{self, CruxRow, Outcome};
use deepdebug::debugger::grammar::{Arg, Frame};
use deepdebug::debugger::predictor::{NextStatePredictor, OraclePredictor, PredictError, Prompt};
use deepdebug::debugger::record::{record_call, RecordLimits};
use deepdebug::debugger::trace::{ExitKind, Limit, Trace};
use deepdebug::debugger::tree::NodeKind;
use std::path::{Path, PathBuf};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The first `n` rows of the shipped sample, as a file in `dir` (keeps tests quick).
fn sample_subset(dir: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(repo("datasets/cruxeval_sample.jsonl")).expect("dataset");
    let path = dir.join("subset.jsonl");
    std::fs::write(&path, text.lines().take(n).map(|l| format!("{l}\n")).collect::<String>()).expect("write subset");
    path.display().to_string()
}

fn write_code(dir: &Path, code: &str) -> String {
    let path = dir.join("code.py");
    std::fs::write(&path, code).expect("write code");
    path.display().to_string()
}

fn trace_json(code: &str, call: &str, extra: &[&str]) -> Trace {
    let dir = tempfile::tempdir().expect("tempdir");
    let code_path = write_code(dir.path(), code);
    let mut args = vec!["trace", "--code", &code_path, "--call", call];
    args.extend_from_slice(extra);
    serde_json::from_str(&stdout_ok(&args, "")).expect("trace JSON")
}

const COUNT: &str = "def count(s, t):\n    n = 0\n    for c in s:\n        n += int(c == t)\n    return n\n";

#[test]
fn trace_records_calls_lines_returns_with_depth_and_locals() {
    let t = trace_json(COUNT, "count('berry', 'r')", &[]);
    assert_eq!(t.format_version, 1);
    assert_eq!(t.exit, ExitKind::Normal);
    let kinds: Vec<String> = t.events.iter().map(|e| format!("{:?}{}", e.event, e.depth)).collect();
    assert_eq!(&kinds[..4], ["Call0", "Line0", "Call1", "Line1"]);
    assert_eq!(kinds.last().map(String::as_str), Some("Return0"));
    let call = &t.events[2];
    assert_eq!(call.src, "def count(s, t):");
    assert_eq!(call.locals, vec![("s".to_string(), "'berry'".to_string()), ("t".to_string(), "'r'".to_string())]);
    let ret = &t.events[t.events.len() - 2];
    assert_eq!((ret.src.as_str(), ret.value.as_deref()), ("    return n", Some("2")));
    // Line events show locals before the line runs: `n` appears only after `n = 0`.
    assert!(t.events[3].locals.iter().all(|(k, _)| k != "n"));
}

#[test]
fn trace_grammar_matches_the_paper_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let code_path = write_code(dir.path(), COUNT);
    let text = stdout_ok(&["trace", "--code", &code_path, "--call", "count('ab', 'b')", "--grammar"], "");
    assert!(text.starts_with("<|begin_of_text|><|trace_context_start|>def count(s, t):\n"));
    assert!(text.contains("<|frame_sep|><|call_sep|><|src_sep|>def count(s, t):<|arg_sep|>{\"s\": \"'ab'\", \"t\": \"'b'\"}<|action_sep|><|step_into|>"));
    assert!(
        text.contains("<|frame_sep|><|line_sep|><|arg_sep|>{\"..\": \"..\", \"n\": \"0\"}<|src_sep|>    for c in s:")
    );
    assert!(text.contains("<|frame_sep|><|return_sep|><|src_sep|>    return n<|arg_sep|>\"1\""));
    assert!(text.trim_end().ends_with("<|frame_sep|><|exit_normal|><|trace_end|><|end_of_text|>"));
}

#[test]
fn infinite_loops_exit_never_and_errors_exit_error() {
    let code = "import itertools\n\ndef spin():\n    x = 0\n    while True:\n        x += 1\n\ndef stuck():\n    return sum(itertools.count())\n\ndef boom(d):\n    return d['missing']\n";
    // The event cap stops the recording; the program runs on until the time limit says it
    // never finishes.
    let spin = trace_json(code, "spin()", &["--max-events", "500", "--timeout", "2"]);
    assert_eq!((spin.exit, spin.events.len()), (ExitKind::Never, 500));
    assert!(!spin.is_truncated());
    // No Python-level events at all: only the wall clock can stop it.
    let stuck = trace_json(code, "stuck()", &["--timeout", "1.5"]);
    assert_eq!(stuck.exit, ExitKind::Never);
    let boom = trace_json(code, "boom({})", &[]);
    assert_eq!(boom.exit, ExitKind::Error);
    assert_eq!(boom.exception.as_deref(), Some("KeyError('missing')"));
    assert!(boom.events.iter().any(|e| format!("{:?}", e.event) == "Exception"));
}

#[test]
fn huge_and_unprintable_values_have_bounded_reprs() {
    let code = "class Bad:\n    def __repr__(self):\n        raise RuntimeError('no')\n\ndef f(n):\n    big = list(range(n))\n    s = 'x' * n\n    i = 10 ** 5000\n    b = Bad()\n    me = []\n    me.append(me)\n    return len(big)\n";
    let t = trace_json(code, "f(1000000)", &["--max-repr", "200"]);
    assert_eq!(t.exit, ExitKind::Normal);
    let last_line = t.events.iter().rev().find(|e| format!("{:?}", e.event) == "Line").expect("a line event");
    let get = |name: &str| last_line.locals.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_default();
    assert!(get("big").starts_with("[0, 1, 2, ") && get("big").len() <= 203, "{}", get("big"));
    assert!(get("s").len() <= 203 && get("s").ends_with("..."));
    assert!(get("i").starts_with("<int with "));
    assert_eq!(get("b"), "<unrepresentable Bad: RuntimeError>");
    assert_eq!(get("me"), "[[...]]");
}

#[test]
fn a_pdb_session_with_conditional_and_temporary_breakpoints_displays_frames_and_reverse_steps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let code_path = write_code(dir.path(), COUNT);
    let args = ["debug", "--code", &code_path, "--call", "count('berry', 'r')"];
    let commands = "b 4, c == 'r'\nc\np n\np n + 10\ndisplay n\nc\n\nrc\nargs\nw\nup\np c\ndown\nl\ntbreak 5\nb\ncl 1\nc\nuntil\nretval\nc\nback\nrnext\nll\nstep\njump 4\nbk\nrcall\nfrobnicate\nq\n";
    insta::assert_snapshot!("count_session", stdout_ok(&args, commands));
    // The oracle backend goes through serialize -> predict -> parse and stops at the same places.
    let oracle = stdout_ok(&[&args[..], &["--backend", "oracle"]].concat(), "b 4, c == 'r'\nc\np n\nc\np n\nc\n");
    insta::assert_snapshot!("count_session_oracle", oracle);
    let neural = run(&[&args[..], &["--backend", "neural"]].concat(), "");
    assert!(!neural.status.success());
}

#[test]
fn debug_replays_a_saved_trace_and_reports_the_exception() {
    let dir = tempfile::tempdir().expect("tempdir");
    let code_path = write_code(
        dir.path(),
        "def f(xs):\n    total = 0\n    for x in xs:\n        total += 10 // x\n    return total\n",
    );
    let trace_path = dir.path().join("t.json").display().to_string();
    stdout_ok(&["trace", "--code", &code_path, "--call", "f([5, 0])", "--out", &trace_path], "");
    let out = stdout_ok(&["debug", "--trace", &trace_path], "jump total += 10 // x\np\nnext\nnext\nnext\ncontinue\n");
    assert!(out.contains("> t.json(4)f()\n-> total += 10 // x\n(Pdb) p\nxs = [5, 0]\ntotal = 0\nx = 5\n"), "{out}");
    assert!(
        out.contains("ZeroDivisionError('integer division or modulo by zero')\n> t.json(4)f()\n-> total += 10 // x"),
        "{out}"
    );
    assert!(out.contains("[exit] error: ZeroDivisionError('integer division or modulo by zero')"), "{out}");
    // A syntax error is data too: the trace exits with error before any event.
    let broken = trace_json("def f(:\n    pass\n", "f()", &[]);
    assert_eq!((broken.exit, broken.events.len()), (ExitKind::Error, 0));
    assert!(broken.exception.as_deref().is_some_and(|e| e.starts_with("SyntaxError")), "{:?}", broken.exception);
    let mut bad = serde_json::to_value(&broken).expect("to json");
    bad["format_version"] = 99.into();
    std::fs::write(&trace_path, bad.to_string()).expect("write");
    assert!(!run(&["debug", "--trace", &trace_path], "").status.success());
}

#[test]
fn trace_dataset_is_seeded_and_serialized_in_the_grammar() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = sample_subset(dir.path(), 6);
    let input = input.as_str();
    let gen = |seed: &str, name: &str| {
        let out = dir.path().join(name);
        let out_s = out.to_str().expect("utf-8 path").to_string();
        stdout_ok(&["trace-dataset", "--input", input, "--out", &out_s, "--seed", seed, "--per-trace", "2"], "");
        std::fs::read_to_string(out).expect("dataset")
    };
    let a = gen("7", "a.jsonl");
    assert_eq!(a, gen("7", "b.jsonl"));
    assert_ne!(a, gen("8", "c.jsonl"));
    let rows: Vec<serde_json::Value> = a.lines().map(|l| serde_json::from_str(l).expect("row")).collect();
    assert_eq!(rows.len(), 12);
    for row in &rows {
        assert_eq!(row["format_version"], 1);
        let text = row["text"].as_str().expect("text");
        assert!(text.starts_with("<|begin_of_text|><|trace_context_start|>def "), "{text}");
        assert!(text.contains("<|action_sep|>"));
    }
    assert!(rows.iter().any(|r| r["direction"] == "inverse") && rows.iter().any(|r| r["direction"] == "forward"));
}

#[test]
fn next_state_eval_oracle_is_exact_and_copy_last_is_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = sample_subset(dir.path(), 8);
    let input = input.as_str();
    let report = |p: &str| -> serde_json::Value {
        serde_json::from_str(&stdout_ok(
            &["eval-next-state", "--input", input, "--per-trace", "4", "--seed", "1", "--predictor", p],
            "",
        ))
        .expect("report")
    };
    let oracle = report("oracle");
    let total = oracle["overall"]["exact"]["total"].as_u64().expect("total");
    assert!(total > 50, "{oracle}");
    assert_eq!(oracle["overall"]["exact"]["correct"].as_u64(), Some(total));
    for (action, m) in oracle["per_action"].as_object().expect("per action") {
        assert_eq!(m["exact"]["correct"], m["exact"]["total"], "{action}");
    }
    let baseline = report("copy-last");
    assert_eq!(baseline["overall"]["exact"]["total"].as_u64(), Some(total));
    assert!(baseline["overall"]["exact"]["correct"].as_u64().expect("n") < total / 2, "{baseline}");
}

#[test]
fn cruxeval_oracle_passes_every_task_of_the_sample() {
    assert_oracle_passes_every_task("datasets/cruxeval_sample.jsonl", 20);
}

/// `eval-cruxeval` with the oracle on `file` (relative to the repository) scores 100 % on
/// every task of its `rows` rows.
fn assert_oracle_passes_every_task(file: &str, rows: usize) {
    let input = repo(file);
    let report: serde_json::Value =
        serde_json::from_str(&stdout_ok(&["eval-cruxeval", "--input", input.to_str().expect("utf-8 path")], ""))
            .expect("report");
    assert_eq!(report["rows"], rows);
    for task in ["output_step_return", "output_breakpoint", "input_inv_step_call"] {
        assert_eq!(report["pass_at_1"][task].as_f64(), Some(1.0), "{task}: {report}");
    }
}

/// Functions written for this test whose return lines run more than once or hold more than a
/// return (`if x in seen: return x`, early returns in loops, recursion, nested functions and
/// lambdas): the breakpoint task continues to the return line until the function returns.
#[test]
fn cruxeval_oracle_passes_every_task_around_repeated_and_nested_returns() {
    assert_oracle_passes_every_task("tests/fixtures/cruxeval_returns.jsonl", 30);
}

/// Wraps the oracle and corrupts every return value and call argument it predicts: the
/// checks must then fail, so pass@1 is computed by executing predictions.
struct WrongValues(OraclePredictor);

impl NextStatePredictor for WrongValues {
    fn predict(&mut self, prompt: &Prompt<'_>) -> Result<String, PredictError> {
        let frame = self.0.predict_frame(prompt)?;
        Ok(match frame {
            Frame::State { event, src, arg: Arg::Value(_) } => {
                Frame::State { event, src, arg: Arg::Value("'wrong'".into()) }
            }
            Frame::State { event: event @ NodeKind::InvCall, src, arg: Arg::Locals(l) } => Frame::State {
                event,
                src,
                arg: Arg::Locals(
                    l.into_iter().map(|(k, v)| if k == ".." { (k, v) } else { (k, "None".into()) }).collect(),
                ),
            },
            other => other,
        }
        .serialize())
    }
}

#[test]
fn cruxeval_scores_wrong_predictions_as_failures() {
    let text = std::fs::read_to_string(repo("datasets/cruxeval_sample.jsonl")).expect("dataset");
    let rows: Vec<CruxRow> = text.lines().take(4).map(|l| serde_json::from_str(l).expect("row")).collect();
    let limits = RecordLimits::standard();
    let traces: Vec<Option<Trace>> =
        rows.iter().map(|r| record_call(&r.code, &format!("f({})", r.input), &limits).ok()).collect();
    let oracle = || OraclePredictor::new(traces.iter().flatten().cloned().collect());
    let good = cruxeval::evaluate(&rows, &traces, &mut oracle(), &limits).expect("python runs");
    assert_eq!(good.pass_at_1.input_inv_step_call, 1.0);
    let bad = cruxeval::evaluate(&rows, &traces, &mut WrongValues(oracle()), &limits).expect("python runs");
    for r in &bad.results {
        assert_eq!(r.output_step_return.outcome, Outcome::Fail, "{r:?}");
        assert_eq!(r.output_breakpoint.outcome, Outcome::Fail, "{r:?}");
        assert_eq!(r.input_inv_step_call.outcome, Outcome::Fail, "{r:?}");
    }
    assert_eq!(bad.pass_at_1.output_step_return, 0.0);
}

#[test]
fn exits_are_labelled_as_they_happened_and_a_decorated_call_starts_at_its_def_line() {
    let limits = RecordLimits::standard();
    let record = |code: &str| record_call(code, "f()", &limits).unwrap();
    let clean = record("import sys\n\ndef f():\n    sys.exit(0)\n");
    assert_eq!((clean.exit, clean.exception.as_deref()), (ExitKind::Normal, None));
    let failed = record("import sys\n\ndef f():\n    sys.exit(2)\n");
    assert_eq!(failed.exit, ExitKind::Error);
    // os._exit ends the process inside the call: the trace is written first.
    let left = record("import os\n\ndef f():\n    x = 1\n    os._exit(3)\n");
    assert_eq!((left.exit, left.exception.as_deref()), (ExitKind::Error, Some("os._exit(3)")));
    assert!(left.events.iter().any(|e| e.src.contains("x = 1")), "{:?}", left.events);
    let quiet = record("import os\n\ndef f():\n    os._exit(0)\n");
    assert_eq!(quiet.exit, ExitKind::Normal);
    let killed = record("import os, signal\n\ndef f():\n    os.kill(os.getpid(), signal.SIGTERM)\n");
    assert_eq!((killed.exit, killed.exception.as_deref()), (ExitKind::Error, Some("killed by signal 15")));
    let decorated = record(
        "import functools\n\ndef twice(g):\n    @functools.wraps(g)\n    def inner():\n        return 2 * g()\n    return inner\n\n@twice\ndef f():\n    return 21\n",
    );
    let call = decorated.events.iter().find(|e| e.func == "f").unwrap();
    assert_eq!((call.lineno, call.src.as_str()), (10, "def f():"));
    let inner = decorated.events.iter().find(|e| e.func == "inner").unwrap();
    assert_eq!(inner.src, "    def inner():");
}

#[test]
fn a_loop_that_finishes_after_the_event_cap_is_truncated_not_never() {
    let code = "def count(n):\n    total = 0\n    for i in range(n):\n        total += i\n    return total\n";
    let t = trace_json(code, "count(5000)", &["--max-events", "500"]);
    assert_eq!((t.exit, t.limit, t.events.len()), (ExitKind::Normal, Some(Limit::Events), 500));
    assert!(t.is_truncated());
    let dir = tempfile::tempdir().unwrap();
    let path = write_code(dir.path(), code);
    let text =
        stdout_ok(&["debug", "--code", &path, "--call", "count(5000)", "--max-events", "500"], "continue\nquit\n");
    assert!(
        text.contains("[truncated] the recording stopped at its event limit here; the program ran on and ended normal"),
        "{text}"
    );
}

#[test]
fn a_runaway_recursion_keeps_its_unwinding_or_says_it_is_truncated() {
    let limits = RecordLimits { max_events: 100_000, ..RecordLimits::standard() };
    let count = |t: &Trace, kind: &str| t.events.iter().filter(|e| format!("{:?}", e.event) == kind).count();
    let t = record_call("def down(n):\n    return down(n + 1)\n", "down(0)", &limits).unwrap();
    assert_eq!((t.exit, t.limit), (ExitKind::Error, None));
    assert!(count(&t, "Call") > 100);
    assert_eq!(count(&t, "Call"), count(&t, "Return"), "every call unwinds");
    assert_eq!(count(&t, "Call"), count(&t, "Exception"));
    let last = t.events.last().unwrap();
    assert_eq!((format!("{:?}", last.event).as_str(), last.depth), ("Return", 0));
    // A frame with a finally block could run code while unwinding: not invented, truncated.
    let code = "def down(n):\n    try:\n        return down(n + 1)\n    finally:\n        n = 0\n";
    let t = record_call(code, "down(0)", &limits).unwrap();
    assert_eq!((t.exit, t.limit), (ExitKind::Error, Some(Limit::Recursion)));
    assert!(t.is_truncated());
}

#[test]
fn functions_passed_as_arguments_carry_their_source_so_the_oracle_predicts_inputs_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rows = [
        ("lambda", "def f(g, xs):\n    return [g(x) for x in xs]\n", "lambda x: x * 2, [1, 2]", "[2, 4]"),
        ("named", "def inc(n):\n    return n + 1\n\ndef f(g, x):\n    return g(g(x))\n", "inc, 1", "3"),
        ("two", "def f(a, b):\n    return a(1) + b(1)\n", "lambda x: x + 1, lambda y: y * 10", "12"),
    ];
    let text: String = rows
        .iter()
        .map(|(id, code, input, output)| {
            format!("{}\n", serde_json::json!({"id": id, "code": code, "input": input, "output": output}))
        })
        .collect();
    let path = dir.path().join("rows.jsonl");
    std::fs::write(&path, text).expect("write");
    let report: serde_json::Value =
        serde_json::from_str(&stdout_ok(&["eval-cruxeval", "--input", path.to_str().expect("utf-8")], ""))
            .expect("report");
    for task in ["output_step_return", "output_breakpoint", "input_inv_step_call"] {
        assert_eq!(report["pass_at_1"][task].as_f64(), Some(1.0), "{task}: {report}");
    }
    let t = trace_json(rows[0].1, "f(lambda x: x * 2, [1, 2])", &[]);
    let call = t.events.iter().find(|e| e.func == "f").expect("f's call");
    assert_eq!(call.locals[0], ("g".to_string(), "lambda x: x * 2".to_string()));
}
