//! CruxEval-style harness: output prediction (step_return, breakpoint) and input prediction
//! (inv_step_call), scored pass@1 by executing the prediction in Python.

use super::dataset::record_rows;
use super::grammar::{replay, serialize_action, serialize_locals, Arg, Frame};
use super::predictor::{NextStatePredictor, Prompt};
use super::record::{run_python, RecordError, RecordLimits};
use super::sampler::{context_for, FunctionRow};
use super::trace::{EventKind, Trace};
use super::tree::{Action, Direction, NodeKind, StateTree, Target};
use crate::io_error::io_err;
use serde::{Deserialize, Serialize};
use std::ffi::OsStr;

/// Version of [`CruxReport`].
pub const CRUX_FORMAT_VERSION: u32 = 1;

/// One CruxEval row: `f(INPUT) == OUTPUT`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CruxRow {
    pub code: String,
    pub input: String,
    pub output: String,
    pub id: String,
}

/// Result of one task on one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Pass,
    /// The prediction was made but does not satisfy the check.
    Fail,
    /// The predictor failed, or predicted a frame of the wrong kind.
    NoPrediction,
    /// The reference trace could not be recorded or has no call of `f`.
    SetupFailed,
}

/// One task's outcome and the predicted value (a repr, or the argument dict).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskResult {
    pub outcome: Outcome,
    pub prediction: Option<String>,
    /// The check to run (filled in by the batch runner).
    #[serde(skip)]
    script: Option<String>,
}

impl TaskResult {
    fn setup() -> TaskResult {
        TaskResult { outcome: Outcome::SetupFailed, prediction: None, script: None }
    }

    fn none() -> TaskResult {
        TaskResult { outcome: Outcome::NoPrediction, prediction: None, script: None }
    }
}

/// Per-row results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CruxRowResult {
    pub id: String,
    pub output_step_return: TaskResult,
    pub output_breakpoint: TaskResult,
    pub input_inv_step_call: TaskResult,
}

/// pass@1 per task, in [0, 1]: of the greedy predictions, or with `--samples N` of the first
/// sample (pass@k over all samples is [`PassAtK`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassAt1 {
    pub output_step_return: f64,
    pub output_breakpoint: f64,
    pub input_inv_step_call: f64,
}

/// The report of `deepdebug eval-cruxeval`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CruxReport {
    pub format_version: u32,
    pub rows: usize,
    pub pass_at_1: PassAt1,
    /// With several samples per task (`--samples N`): pass@k per task, from all samples.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_at_k: Vec<PassAtK>,
    pub results: Vec<CruxRowResult>,
}

/// The unbiased pass@k estimate (Chen et al. 2021) per task over rows with `n` samples each:
/// the mean over rows of `1 - C(n - c, k) / C(n, k)`, where `c` samples passed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassAtK {
    pub k: usize,
    pub samples: usize,
    pub output_step_return: f64,
    pub output_breakpoint: f64,
    pub input_inv_step_call: f64,
}

/// `1 - C(n - c, k) / C(n, k)`: the chance that k of n samples, c of them correct, hold one.
#[must_use]
pub fn pass_at_k(n: usize, c: usize, k: usize) -> f64 {
    if n < k || n - c < k {
        return if c > 0 { 1.0 } else { 0.0 };
    }
    1.0 - ((n - c + 1)..=n).map(|i| 1.0 - k as f64 / i as f64).product::<f64>()
}

/// Combine reports of the same rows, one per sample (each from a sampling predictor), into
/// one: the first sample's results and pass@1, and pass@k for k = 1 and every power of two
/// up to the number of samples, estimated from all of them.
///
/// # Panics
/// When `samples` is empty.
#[must_use]
pub fn combine_samples(samples: Vec<CruxReport>) -> CruxReport {
    let n = samples.len();
    let passes = |row: usize, get: fn(&CruxRowResult) -> &TaskResult| {
        samples.iter().filter(|r| get(&r.results[row]).outcome == Outcome::Pass).count()
    };
    let rows = samples[0].results.len();
    let rate = |k: usize, get: fn(&CruxRowResult) -> &TaskResult| {
        (0..rows).map(|row| pass_at_k(n, passes(row, get), k)).sum::<f64>() / rows.max(1) as f64
    };
    let ks: Vec<usize> = std::iter::successors(Some(1usize), |k| Some(k * 2)).take_while(|&k| k <= n).collect();
    let pass_at_k = ks
        .into_iter()
        .chain((!n.is_power_of_two()).then_some(n))
        .map(|k| PassAtK {
            k,
            samples: n,
            output_step_return: rate(k, |r| &r.output_step_return),
            output_breakpoint: rate(k, |r| &r.output_breakpoint),
            input_inv_step_call: rate(k, |r| &r.input_inv_step_call),
        })
        .collect();
    let mut first = samples.into_iter().next().expect("at least one sample");
    first.pass_at_k = pass_at_k;
    first
}

/// Record the reference trace of every row (`None` where recording failed), in order.
#[must_use]
pub fn record(rows: &[CruxRow], limits: &RecordLimits) -> Vec<Option<Trace>> {
    let fn_rows: Vec<FunctionRow> = rows
        .iter()
        .map(|r| FunctionRow {
            code: r.code.clone(),
            input: r.input.clone(),
            id: Some(r.id.clone()),
            output: Some(r.output.clone()),
            entry: None,
        })
        .collect();
    record_rows(&fn_rows, limits).into_iter().map(Result::ok).collect()
}

/// Index of the first call of `f` (depth 1, right under `main`).
fn f_call(trace: &Trace) -> Option<usize> {
    trace.events.iter().position(|e| e.event == EventKind::Call && e.depth == 1)
}

fn value_of(frame: &Frame, kind: NodeKind) -> Option<String> {
    match frame {
        Frame::State { event, arg: Arg::Value(v), .. } if *event == kind => Some(v.clone()),
        _ => None,
    }
}

/// Hits of the return line the breakpoint task follows before it gives up.
const MAX_BREAKPOINT_HITS: usize = 64;

/// The return value reached by running to `bp` and stepping over it, again and again until a
/// step returns (or a prediction fails, or a hit repeats the previous one exactly, which a
/// model stuck in a loop of its own does, or [`MAX_BREAKPOINT_HITS`] hits).
fn output_by_breakpoint(predictor: &mut dyn NextStatePredictor, prefix: &str, bp: Action) -> Option<String> {
    let mut prefix = prefix.to_string();
    let mut last_hit: Option<Frame> = None;
    for _ in 0..MAX_BREAKPOINT_HITS {
        let frame = predictor.predict_frame(&Prompt { prefix: &prefix, action: &bp }).ok()?;
        if let Some(value) = value_of(&frame, NodeKind::Return) {
            return Some(value);
        }
        let Frame::State { .. } = frame else { return None };
        if last_hit.as_ref() == Some(&frame) {
            return None;
        }
        last_hit = Some(frame.clone());
        prefix = format!("{prefix}{}{}", serialize_action(&bp), frame.serialize());
        let next = predictor.predict_frame(&Prompt { prefix: &prefix, action: &Action::StepOver }).ok()?;
        if let Some(value) = value_of(&next, NodeKind::Return) {
            return Some(value);
        }
        let Frame::State { .. } = next else { return None };
        prefix = format!("{prefix}{}{}", serialize_action(&Action::StepOver), next.serialize());
    }
    None
}

/// Predictions for the three tasks of one row; outcomes stay `Fail` with a pending check
/// script until [`evaluate`] runs the checks.
fn run_row(row: &CruxRow, trace: &Trace, predictor: &mut dyn NextStatePredictor) -> CruxRowResult {
    let setup = || CruxRowResult {
        id: row.id.clone(),
        output_step_return: TaskResult::setup(),
        output_breakpoint: TaskResult::setup(),
        input_inv_step_call: TaskResult::setup(),
    };
    let Some(f) = f_call(trace) else { return setup() };
    let fwd = StateTree::forward(&trace.whole());
    // Prompt: main's call, step_into, main's line, step_into, f's call frame.
    let Ok(traj) = replay(&fwd, &context_for(trace, Direction::Forward), 0, &[Action::StepInto, Action::StepInto])
    else {
        return setup();
    };
    if traj.targets.get(2) != Some(&Target::Node(f)) {
        return setup();
    }
    let prefix = traj.prefix(2);
    let check_output = |value: Option<String>| match value {
        Some(v) => {
            let script =
                format!("{}\n\n__pred = eval({})\nassert f({}) == __pred\n", row.code.trim_end(), json(&v), row.input);
            TaskResult { outcome: Outcome::Fail, prediction: Some(v), script: Some(script) }
        }
        None => TaskResult::none(),
    };

    // Output via step_return: the target is f's return frame.
    let step_return = predictor.predict_frame(&Prompt { prefix: &prefix, action: &Action::StepReturn }).ok();
    let output_step_return = check_output(step_return.and_then(|fr| value_of(&fr, NodeKind::Return)));

    // Output via breakpoint on f's return line: the target is that line (full locals); one
    // step_over then yields the return value. A return line that runs without returning
    // (`if x in seen: return x`, a loop's early return) is hit again, as a user continues to
    // the breakpoint until the function returns.
    let scope = trace.scope(f);
    let return_src =
        scope.as_ref().and_then(|s| s.events.last()).filter(|e| e.event == EventKind::Return).map(|e| e.src.clone());
    let output_breakpoint = match return_src {
        None => TaskResult::setup(),
        Some(src) => check_output(output_by_breakpoint(predictor, &prefix, Action::Breakpoint(src))),
    };

    // Input via inv_step_call from f's return: the target is f's call frame with its args.
    let input_inv_step_call = match scope {
        None => TaskResult::setup(),
        Some(scope) => {
            let inv = StateTree::inverse(&scope);
            match replay(&inv, &context_for(trace, Direction::Inverse), 0, &[]) {
                Err(_) => TaskResult::setup(),
                Ok(t) => {
                    match predictor.predict_frame(&Prompt { prefix: &t.prefix(0), action: &Action::InvStepCall }) {
                        Ok(Frame::State { event: NodeKind::InvCall, arg: Arg::Locals(locals), .. }) => {
                            let dict = serialize_locals(&locals);
                            let script = input_check(&row.code, &dict, &row.output);
                            TaskResult { outcome: Outcome::Fail, prediction: Some(dict), script: Some(script) }
                        }
                        _ => TaskResult::none(),
                    }
                }
            }
        }
    };
    CruxRowResult { id: row.id.clone(), output_step_return, output_breakpoint, input_inv_step_call }
}

fn json(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// A script asserting `f(ARGS) == OUTPUT`, where ARGS binds the predicted argument dict
/// (name → repr) to `f`'s signature.
fn input_check(code: &str, dict: &str, output: &str) -> String {
    format!(
        r#"{code}

import inspect as __inspect
__vals = {{__k: eval(__v) for __k, __v in ({dict}).items()}}
__args, __kwargs, __skipped = [], {{}}, False
for __p in __inspect.signature(f).parameters.values():
    if __p.name not in __vals:
        __skipped = True
        continue
    __v = __vals[__p.name]
    if __p.kind == __p.VAR_POSITIONAL:
        __args.extend(__v)
    elif __p.kind == __p.VAR_KEYWORD:
        __kwargs.update(__v)
    elif __p.kind == __p.POSITIONAL_ONLY or (__p.kind == __p.POSITIONAL_OR_KEYWORD and not __skipped):
        __args.append(__v)
    else:
        __kwargs[__p.name] = __v
assert f(*__args, **__kwargs) == {output}
"#,
        code = code.trim_end()
    )
}

const CHECK_RUNNER_PY: &str = r#"
import json, signal, sys

class _CheckTimeout(BaseException):
    pass

def _alarm(signum, frame):
    raise _CheckTimeout()

def main():
    scripts = json.load(open(sys.argv[1], encoding="utf-8"))
    per_check = float(sys.argv[3])
    signal.signal(signal.SIGALRM, _alarm)
    with open(sys.argv[2], "w", encoding="utf-8") as out:
        for script in scripts:
            ok = False
            try:
                signal.setitimer(signal.ITIMER_REAL, per_check)
                exec(compile(script, "<check>", "exec"), {"__name__": "__check__"})
                ok = True
            except BaseException:
                ok = False
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            out.write("1\n" if ok else "0\n")
            out.flush()

main()
"#;

/// Run check scripts in one sandboxed Python process (each in a fresh namespace, with its
/// own soft timeout). A script passes iff it runs without raising; scripts that never
/// report (the process was killed) fail.
///
/// # Errors
/// Fails only if Python cannot be started.
pub fn run_checks(scripts: &[String], limits: &RecordLimits) -> Result<Vec<bool>, RecordError> {
    if scripts.is_empty() {
        return Ok(Vec::new());
    }
    let dir = tempfile::tempdir().map_err(io_err("create a temporary directory"))?;
    let runner = dir.path().join("checks.py");
    let input = dir.path().join("scripts.json");
    let results = dir.path().join("results.txt");
    std::fs::write(&runner, CHECK_RUNNER_PY).map_err(io_err("write checks.py"))?;
    std::fs::write(&input, serde_json::to_string(scripts)?).map_err(io_err("write scripts.json"))?;
    let per_check = 3.0_f64;
    let per_check_arg = per_check.to_string();
    let batch = RecordLimits {
        timeout: limits.timeout + std::time::Duration::from_secs_f64(per_check * scripts.len() as f64),
        ..limits.clone()
    };
    run_python(dir.path(), &runner, &[input.as_os_str(), results.as_os_str(), OsStr::new(&per_check_arg)], &batch)?;
    let text = std::fs::read_to_string(&results).unwrap_or_default();
    let mut passed: Vec<bool> = text.lines().map(|l| l.trim() == "1").collect();
    passed.resize(scripts.len(), false);
    Ok(passed)
}

/// Evaluate `predictor` on rows whose reference traces are given (same order; `None` where
/// recording failed).
///
/// # Errors
/// Fails only if Python cannot be started for the checks.
pub fn evaluate(
    rows: &[CruxRow],
    traces: &[Option<Trace>],
    predictor: &mut dyn NextStatePredictor,
    limits: &RecordLimits,
) -> Result<CruxReport, RecordError> {
    let mut results: Vec<CruxRowResult> = rows
        .iter()
        .zip(traces)
        .map(|(row, trace)| match trace {
            Some(trace) => run_row(row, trace, predictor),
            None => CruxRowResult {
                id: row.id.clone(),
                output_step_return: TaskResult::setup(),
                output_breakpoint: TaskResult::setup(),
                input_inv_step_call: TaskResult::setup(),
            },
        })
        .collect();
    let scripts: Vec<String> = results.iter().flat_map(tasks).filter_map(|t| t.script.clone()).collect();
    let mut passed = run_checks(&scripts, limits)?.into_iter();
    for r in &mut results {
        for task in [&mut r.output_step_return, &mut r.output_breakpoint, &mut r.input_inv_step_call] {
            if task.script.take().is_some() && passed.next() == Some(true) {
                task.outcome = Outcome::Pass;
            }
        }
    }
    let rate = |get: fn(&CruxRowResult) -> &TaskResult| {
        let passed = results.iter().filter(|r| get(r).outcome == Outcome::Pass).count();
        if results.is_empty() {
            0.0
        } else {
            passed as f64 / results.len() as f64
        }
    };
    Ok(CruxReport {
        format_version: CRUX_FORMAT_VERSION,
        rows: rows.len(),
        pass_at_1: PassAt1 {
            output_step_return: rate(|r| &r.output_step_return),
            output_breakpoint: rate(|r| &r.output_breakpoint),
            input_inv_step_call: rate(|r| &r.input_inv_step_call),
        },
        pass_at_k: Vec::new(),
        results,
    })
}

fn tasks(r: &CruxRowResult) -> [&TaskResult; 3] {
    [&r.output_step_return, &r.output_breakpoint, &r.input_inv_step_call]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(outcomes: &[[Outcome; 3]]) -> CruxReport {
        let task = |outcome| TaskResult { outcome, prediction: None, script: None };
        let results = outcomes
            .iter()
            .enumerate()
            .map(|(i, [a, b, c])| CruxRowResult {
                id: i.to_string(),
                output_step_return: task(*a),
                output_breakpoint: task(*b),
                input_inv_step_call: task(*c),
            })
            .collect();
        let zero = PassAt1 { output_step_return: 0.0, output_breakpoint: 0.0, input_inv_step_call: 0.0 };
        CruxReport { format_version: 1, rows: outcomes.len(), pass_at_1: zero, pass_at_k: Vec::new(), results }
    }

    #[test]
    fn pass_at_k_is_the_unbiased_estimate() {
        assert!((pass_at_k(4, 0, 1)).abs() < 1e-12);
        assert!((pass_at_k(4, 1, 1) - 0.25).abs() < 1e-12);
        assert!((pass_at_k(4, 1, 2) - 0.5).abs() < 1e-12); // 1 - C(3,2)/C(4,2) = 1 - 3/6
        assert!((pass_at_k(4, 3, 2) - 1.0).abs() < 1e-12);
        assert!((pass_at_k(5, 2, 5) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn samples_combine_into_pass_at_k_per_task() {
        use Outcome::{Fail, NoPrediction as None_, Pass};
        // Row 0 passes the output task in one sample of four, row 1 in none.
        let samples = vec![
            report(&[[Pass, Fail, None_], [Fail, Fail, Fail]]),
            report(&[[Fail, Fail, None_], [Fail, Fail, Fail]]),
            report(&[[Fail, Fail, None_], [Fail, Pass, Fail]]),
            report(&[[Fail, Fail, None_], [Fail, Pass, Fail]]),
        ];
        let combined = combine_samples(samples);
        let ks: Vec<usize> = combined.pass_at_k.iter().map(|p| p.k).collect();
        assert_eq!(ks, [1, 2, 4]);
        let (at1, at4) = (&combined.pass_at_k[0], &combined.pass_at_k[2]);
        assert!((at1.output_step_return - 0.125).abs() < 1e-12, "{at1:?}");
        assert!((at4.output_step_return - 0.5).abs() < 1e-12 && (at4.output_breakpoint - 0.5).abs() < 1e-12);
        assert!(at4.input_inv_step_call.abs() < 1e-12);
        assert_eq!(combined.results[0].output_step_return.outcome, Pass, "the first sample's results stay");
        assert_eq!(combine_samples(vec![report(&[[Pass, Pass, Pass]]); 3]).pass_at_k.last().unwrap().k, 3);
    }
}
