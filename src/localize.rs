//! Fault localization: spectrum-based (Ochiai, DStar) fused with the failing tests' stack
//! traces, the exceptions they raise in project code and the value flow into their failing
//! assertions.
//!
//! Lines where a failing test raised in project code (and the call sites just outside) form a
//! tier of their own, above every other line. Every line also takes a share of its function's
//! value: the crash weight of the function that raised, or the value flow of a function called
//! by the failing statement of a test.

use crate::project::Project;
use crate::pytest::{Failure, Flow, Frame, Session, TestResult};
use crate::python::{functions, FunctionDef};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The type of exception a failing test raised in project code (what steers repair operators).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CrashKind {
    /// A name that is not defined (`name 'x' is not defined`).
    NameError,
    /// A local variable read before it was assigned.
    UnboundLocalError,
    /// A missing attribute (`'Foo' object has no attribute 'bar'`).
    AttributeError,
    TypeError,
    KeyError,
    IndexError,
    ValueError,
    ZeroDivisionError,
    /// Any other exception: an `assert` of the project, a custom exception, ...
    Other,
}

impl CrashKind {
    /// The kind of an exception type name (`pkg.errors.NameError` counts as `NameError`).
    #[must_use]
    pub fn of(type_name: &str) -> CrashKind {
        match type_name.rsplit('.').next().unwrap_or(type_name) {
            "NameError" => CrashKind::NameError,
            "UnboundLocalError" => CrashKind::UnboundLocalError,
            "AttributeError" => CrashKind::AttributeError,
            "TypeError" => CrashKind::TypeError,
            "KeyError" => CrashKind::KeyError,
            "IndexError" => CrashKind::IndexError,
            "ValueError" => CrashKind::ValueError,
            "ZeroDivisionError" => CrashKind::ZeroDivisionError,
            _ => CrashKind::Other,
        }
    }
}

/// An exception a failing test raised in project code, as seen from one suspicious line.
#[derive(Debug, Clone, PartialEq)]
pub struct Crash {
    pub kind: CrashKind,
    /// The exception's type name as pytest reported it.
    pub type_name: String,
    pub message: String,
    /// True at the line that raised (the innermost project frame); false at the call sites
    /// further out and at the condition guarding a `raise`.
    pub raised_here: bool,
}

impl Crash {
    /// The name the exception is about: the undefined name of a `NameError` or
    /// `UnboundLocalError`, the missing attribute of an `AttributeError`.
    #[must_use]
    pub fn missing_name(&self) -> Option<&str> {
        let mut quoted = self.message.split('\'').skip(1).step_by(2).filter(|q| is_identifier(q));
        match self.kind {
            CrashKind::NameError | CrashKind::UnboundLocalError => quoted.next(),
            CrashKind::AttributeError => quoted.last(),
            _ => None,
        }
    }
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_') && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// A line of a repair target with its suspiciousness.
#[derive(Debug, Clone, PartialEq)]
pub struct SuspiciousLine {
    pub file: String,
    /// 1-based.
    pub line: usize,
    /// Fused score in 0..=1.
    pub score: f64,
    pub ochiai: f64,
    pub dstar: f64,
    /// Stack-trace score: 1 for the innermost project frame of a failing test, decaying outwards.
    pub stack: f64,
    /// The value of the enclosing function in 0..=1: its value flow into failing assertions,
    /// or the crash weight of a function that raised.
    pub flow: f64,
    /// What a failing test raised here, when this line raised it or is a call site just
    /// outside (the crash tier: these lines rank above all others).
    pub crash: Option<Crash>,
}

/// A function ranked by the best score of its lines.
#[derive(Debug, Clone, PartialEq)]
pub struct SuspiciousFunction {
    pub file: String,
    pub qualname: String,
    pub start_line: usize,
    pub end_line: usize,
    pub score: f64,
    /// Value flow into failing assertions or crash weight, in 0..=1 (see [`SuspiciousLine::flow`]).
    pub flow: f64,
}

/// Ranked lines and functions, most suspicious first.
#[derive(Debug, Clone, Default)]
pub struct Localization {
    pub lines: Vec<SuspiciousLine>,
    pub functions: Vec<SuspiciousFunction>,
}

impl Localization {
    /// Without the lines and functions that `exclude` forbids editing (a line inside an
    /// excluded function, or in an excluded file).
    pub fn retain_editable(&mut self, project: &Project, exclude: &crate::exclude::Exclude) {
        if exclude.is_empty() {
            return;
        }
        self.functions.retain(|f| !exclude.function(&f.file, &f.qualname));
        let mut spans: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
        self.lines.retain(|line| {
            let excluded =
                spans.entry(line.file.clone()).or_insert_with(|| excluded_spans(project, &line.file, exclude));
            !exclude.file(&line.file) && !excluded.iter().any(|&(a, b)| (a..=b).contains(&line.line))
        });
    }
}

/// Line spans of the definitions of `rel` that `exclude` names.
fn excluded_spans(project: &Project, rel: &str, exclude: &crate::exclude::Exclude) -> Vec<(usize, usize)> {
    project.file(rel).map_or_else(Vec::new, |file| {
        crate::python::functions(&file.parsed)
            .into_iter()
            .filter(|def| exclude.function(rel, &def.qualname))
            .map(|def| (def.start_line, def.end_line))
            .collect()
    })
}

const SBFL_WEIGHT: f64 = 0.65;
const STACK_DECAY: f64 = 0.8;
/// Crash-tier lines score above this, every other line at most this.
const CRASH_FLOOR: f64 = 0.7;
/// Project frames of a crash, from the innermost, that enter the crash tier.
const CRASH_FRAMES: usize = 3;
/// The condition guarding a `raise` shares this much of the raising line's crash weight.
const GUARD_SHARE: f64 = 0.9;
/// Share of a line's score that comes from its function's value (flow or crash).
const FUNCTION_WEIGHT: f64 = 0.35;
/// Value flow of a function called by the failing statement: decay per call level below it,
/// down to a floor.
const FLOW_DEPTH_DECAY: f64 = 0.9;
const FLOW_DEPTH_FLOOR: f64 = 0.6;
/// Value flow of a function called by an earlier line of the test (setup), decaying with each
/// line further back.
const FLOW_EARLIER: f64 = 0.3;
const FLOW_EARLIER_DECAY: f64 = 0.7;

type LineKey = (String, usize);
/// A function by file and first line.
type FnKey = (String, usize);

/// Whether a pytest node id names a doctest (`pkg/mod.py::pkg.mod.func`: a dotted name where
/// a test function or class would be).
#[must_use]
pub fn is_doctest(nodeid: &str) -> bool {
    nodeid.split("::").nth(1).is_some_and(|name| name.split('[').next().unwrap_or(name).contains('.'))
}

/// The files that hold `baseline`'s collected tests: test files whatever their names (pytest's
/// `python_files` may collect `check_*.py`), never a place for the fix. Doctests
/// (`--doctest-modules`) leave their module project code.
#[must_use]
pub fn test_files(baseline: &Session) -> BTreeSet<&str> {
    baseline.tests.iter().filter(|t| !is_doctest(&t.nodeid)).filter_map(|t| t.nodeid.split("::").next()).collect()
}

/// Rank the lines of `project`'s repair targets by how likely they hold the bug that makes
/// `baseline`'s failing tests fail.
#[must_use]
pub fn localize(project: &Project, baseline: &Session) -> Localization {
    let test_files = test_files(baseline);
    let targets: BTreeSet<&str> =
        project.repair_targets().map(|f| f.rel.as_str()).filter(|rel| !test_files.contains(rel)).collect();
    let defs = Defs::of(project);
    let spectrum = Spectrum::of(baseline, &targets);
    let stack = stack_scores(baseline, &targets);
    let crashes = crash_sites(project, baseline, &targets);
    let values = function_values(baseline, &targets, &defs, &crashes);
    let sbfl = spectrum.scores();
    let max_dstar = sbfl.values().map(|s| s.1).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let keys: BTreeSet<&LineKey> = sbfl.keys().chain(stack.keys()).chain(crashes.keys()).collect();
    let tiers = Tiers {
        any_crash: !crashes.is_empty(),
        function_weight: if values.is_empty() { 0.0 } else { FUNCTION_WEIGHT },
    };
    let mut lines: Vec<SuspiciousLine> = keys
        .into_iter()
        .map(|key| {
            let (ochiai, dstar) = sbfl.get(key).copied().unwrap_or((0.0, 0.0));
            let st = stack.get(key).copied().unwrap_or(0.0);
            let fused = if spectrum.have_coverage {
                SBFL_WEIGHT * (0.5 * ochiai + 0.5 * dstar / max_dstar) + (1.0 - SBFL_WEIGHT) * st
            } else {
                st
            };
            let def = defs.innermost(&key.0, key.1);
            let flow = def.and_then(|d| values.get(&(key.0.clone(), d.start_line))).copied().unwrap_or(0.0);
            let is_def_line = def.is_some_and(|d| d.start_line == key.1);
            let site = crashes.get(key);
            SuspiciousLine {
                file: key.0.clone(),
                line: key.1,
                score: tiers.score(fused, flow, is_def_line, site.map(|s| s.weight)),
                ochiai,
                dstar,
                stack: st,
                flow,
                crash: site.map(|s| s.crash.clone()),
            }
        })
        .filter(|l| l.score > 0.0)
        .collect();
    lines.sort_by(|a, b| {
        b.score.total_cmp(&a.score).then_with(|| a.file.cmp(&b.file)).then_with(|| a.line.cmp(&b.line))
    });
    let functions = rank_functions(&defs, &lines, &values);
    Localization { lines, functions }
}

/// How a line's parts make its score.
struct Tiers {
    any_crash: bool,
    function_weight: f64,
}

impl Tiers {
    fn score(&self, fused: f64, flow: f64, is_def_line: bool, crash_weight: Option<f64>) -> f64 {
        if let Some(weight) = crash_weight {
            return CRASH_FLOOR + (1.0 - CRASH_FLOOR) * weight;
        }
        let mut score = (1.0 - self.function_weight) * fused + self.function_weight * flow;
        // Definition lines (`def f(...):`) are covered by every call; keep them but after body lines.
        if is_def_line {
            score *= 0.5;
        }
        if self.any_crash {
            score *= CRASH_FLOOR;
        }
        score
    }
}

/// The repair targets' function definitions, by file.
struct Defs {
    by_file: BTreeMap<String, Vec<FunctionDef>>,
}

impl Defs {
    fn of(project: &Project) -> Defs {
        Defs { by_file: project.repair_targets().map(|f| (f.rel.clone(), functions(&f.parsed))).collect() }
    }

    /// The innermost function of `file` whose definition holds 1-based `line`.
    fn innermost(&self, file: &str, line: usize) -> Option<&FunctionDef> {
        self.by_file.get(file)?.iter().filter(|d| d.contains_line(line)).max_by_key(|d| d.start_line)
    }
}

/// Per line: how many failing (ef) and passing (ep) tests executed it.
struct Spectrum {
    counts: HashMap<LineKey, (f64, f64)>,
    failed: f64,
    /// Whether any failing test recorded coverage of a repair target.
    have_coverage: bool,
}

impl Spectrum {
    fn of(baseline: &Session, targets: &BTreeSet<&str>) -> Spectrum {
        let mut counts: HashMap<LineKey, (f64, f64)> = HashMap::new();
        let mut have_coverage = false;
        for test in &baseline.tests {
            let failed = !test.outcome.is_ok();
            for (file, lines) in test.coverage.iter().filter(|(file, _)| targets.contains(file.as_str())) {
                have_coverage |= failed;
                for &line in lines {
                    let entry = counts.entry((file.clone(), line)).or_default();
                    if failed {
                        entry.0 += 1.0;
                    } else {
                        entry.1 += 1.0;
                    }
                }
            }
        }
        Spectrum { counts, failed: baseline.failing().count() as f64, have_coverage }
    }

    /// (Ochiai, DStar) of every line a failing test executed.
    fn scores(&self) -> BTreeMap<LineKey, (f64, f64)> {
        self.counts
            .iter()
            .filter(|(_, &(ef, _))| ef > 0.0)
            .map(|(key, &(ef, ep))| {
                let ochiai = ef / (self.failed * (ef + ep)).sqrt();
                let dstar = ef * ef / (ep + (self.failed - ef) + 0.5);
                (key.clone(), (ochiai, dstar))
            })
            .collect()
    }
}

/// 1 for the innermost project frame of each failing test, decaying outwards.
fn stack_scores(baseline: &Session, targets: &BTreeSet<&str>) -> HashMap<LineKey, f64> {
    let mut stack: HashMap<LineKey, f64> = HashMap::new();
    for failure in baseline.failing().filter_map(|t| t.failure.as_ref()) {
        let mut weight = 1.0;
        for frame in failure.frames.iter().rev().filter(|f| f.in_project && targets.contains(f.file.as_str())) {
            let slot = stack.entry((frame.file.clone(), frame.line)).or_default();
            *slot = slot.max(weight);
            weight *= STACK_DECAY;
        }
    }
    stack
}

/// The innermost project frames of a failure that raised in a repair target (innermost
/// first), or `None` for the test's own failures (its assertions, its helpers) and timeouts.
fn crash_frames<'f>(failure: &'f Failure, targets: &BTreeSet<&str>) -> Option<Vec<&'f Frame>> {
    if failure.kind.starts_with("Deepdebug") {
        return None;
    }
    let innermost = failure.frames.iter().rev().find(|f| f.in_project)?;
    if !targets.contains(innermost.file.as_str()) {
        return None;
    }
    let frames = failure.frames.iter().rev().filter(|f| f.in_project && targets.contains(f.file.as_str()));
    Some(frames.take(CRASH_FRAMES).collect())
}

/// A line of the crash tier.
struct CrashSite {
    /// In 0..=1: 1 for a line that raised in every crashing test.
    weight: f64,
    crash: Crash,
}

/// The crash tier: the raising line of each failing test that raised in project code, the
/// condition guarding it when it is a `raise`, and the call sites just outside.
fn crash_sites(project: &Project, baseline: &Session, targets: &BTreeSet<&str>) -> HashMap<LineKey, CrashSite> {
    let crashing: Vec<(&Failure, Vec<&Frame>)> = baseline
        .failing()
        .filter_map(|t| t.failure.as_ref())
        .filter_map(|failure| Some((failure, crash_frames(failure, targets)?)))
        .collect();
    // Per line: best weight, crashing tests through it, the crash of the best.
    let mut hits: HashMap<LineKey, (f64, usize, Crash)> = HashMap::new();
    for (failure, frames) in &crashing {
        let mut seen = HashSet::new();
        let mut note = |key: LineKey, weight: f64, raised_here: bool| {
            if !seen.insert(key.clone()) {
                return;
            }
            let crash = Crash {
                kind: CrashKind::of(&failure.kind),
                type_name: failure.kind.clone(),
                message: failure.message.clone(),
                raised_here,
            };
            let hit = hits.entry(key).or_insert((0.0, 0, crash.clone()));
            hit.1 += 1;
            if weight > hit.0 {
                (hit.0, hit.2) = (weight, crash);
            }
        };
        for (depth, frame) in frames.iter().enumerate() {
            let weight = STACK_DECAY.powi(i32::try_from(depth).unwrap_or(i32::MAX));
            note((frame.file.clone(), frame.line), weight, depth == 0);
            let guard = || project.file(&frame.file).and_then(|f| raise_guard(f.parsed.text(), frame.line));
            if let Some(guard) = (depth == 0).then(guard).flatten() {
                note((frame.file.clone(), guard), weight * GUARD_SHARE, false);
            }
        }
    }
    let crashing = crashing.len() as f64;
    hits.into_iter()
        .map(|(key, (weight, count, crash))| {
            let share = count as f64 / crashing;
            (key, CrashSite { weight: weight * (0.5 + 0.5 * share), crash })
        })
        .collect()
}

/// When 1-based `line` of `text` is a `raise` statement directly under an `if`/`elif`, that
/// condition's line: the bug is more often the condition than the `raise`.
fn raise_guard(text: &str, line: usize) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let raising = lines.get(line.checked_sub(1)?)?;
    let body = raising.trim_start();
    if !(body == "raise" || body.starts_with("raise ") || body.starts_with("raise(")) {
        return None;
    }
    let indent = raising.len() - body.len();
    let (at, opener) = lines[..line - 1].iter().enumerate().rev().find(|(_, l)| {
        let t = l.trim_start();
        !t.is_empty() && !t.starts_with('#') && l.len() - t.len() < indent
    })?;
    let opener = opener.trim_start();
    (opener.starts_with("if ") || opener.starts_with("elif ") || opener.starts_with("if(")).then_some(at + 1)
}

/// Each function's value in 0..=1: the larger of its value flow into the failing tests'
/// failing statements and the crash weight of its lines.
fn function_values(
    baseline: &Session,
    targets: &BTreeSet<&str>,
    defs: &Defs,
    crashes: &HashMap<LineKey, CrashSite>,
) -> HashMap<FnKey, f64> {
    let mut values = flow_values(baseline, targets, defs);
    for (key, site) in crashes {
        if let Some(def) = defs.innermost(&key.0, key.1) {
            let value = values.entry((key.0.clone(), def.start_line)).or_default();
            *value = value.max(site.weight);
        }
    }
    values
}

/// Value flow, averaged over the failing tests that recorded it.
fn flow_values(baseline: &Session, targets: &BTreeSet<&str>, defs: &Defs) -> HashMap<FnKey, f64> {
    let mut totals: HashMap<FnKey, f64> = HashMap::new();
    let mut tests = 0.0;
    for test in baseline.failing() {
        let Some(flow) = &test.flow else { continue };
        tests += 1.0;
        for (key, value) in test_flow(test, flow, targets, defs) {
            *totals.entry(key).or_default() += value;
        }
    }
    totals.values_mut().for_each(|v| *v /= tests);
    totals
}

/// One failing test's value flow: 1 for the functions its failing statement called directly,
/// decaying with call depth; less for those called by earlier lines of the test.
fn test_flow(test: &TestResult, flow: &Flow, targets: &BTreeSet<&str>, defs: &Defs) -> HashMap<FnKey, f64> {
    let mut out: HashMap<FnKey, f64> = HashMap::new();
    let Some((first, last)) = failing_statement(test, flow, targets) else { return out };
    let mut earlier: Vec<usize> = flow.calls.iter().map(|c| c.line).filter(|&l| l < first).collect();
    earlier.sort_unstable_by(|a, b| b.cmp(a));
    earlier.dedup();
    for call in flow.calls.iter().filter(|c| targets.contains(c.file.as_str())) {
        let Some(def) = defs.innermost(&call.file, call.first_line) else { continue };
        let at = if call.line < first {
            let back = earlier.iter().position(|&l| l == call.line).unwrap_or(0);
            FLOW_EARLIER * FLOW_EARLIER_DECAY.powi(i32::try_from(back).unwrap_or(i32::MAX))
        } else if call.line <= last {
            1.0
        } else {
            FLOW_EARLIER
        };
        let levels = i32::try_from(call.depth.saturating_sub(1)).unwrap_or(i32::MAX);
        let value = at * FLOW_DEPTH_DECAY.powi(levels).max(FLOW_DEPTH_FLOOR);
        let slot = out.entry((call.file.clone(), def.start_line)).or_default();
        *slot = slot.max(value);
    }
    out
}

/// The 1-based line range of the test function's failing statement: from the line its
/// traceback names to the last line it ran (a statement can span lines).
fn failing_statement(test: &TestResult, flow: &Flow, targets: &BTreeSet<&str>) -> Option<(usize, usize)> {
    let traced = test
        .failure
        .as_ref()
        .and_then(|f| f.frames.first())
        .filter(|frame| frame.in_project && !targets.contains(frame.file.as_str()))
        .map(|frame| frame.line);
    match (traced, flow.last_line) {
        (Some(a), Some(b)) => Some((a.min(b), a.max(b))),
        (a, b) => a.or(b).map(|line| (line, line)),
    }
}

/// Functions by the best score of their lines; innermost first among equals.
fn rank_functions(defs: &Defs, lines: &[SuspiciousLine], values: &HashMap<FnKey, f64>) -> Vec<SuspiciousFunction> {
    let mut out = Vec::new();
    for (file, file_defs) in &defs.by_file {
        for def in file_defs {
            let in_def = lines.iter().filter(|l| &l.file == file && def.contains_line(l.line));
            let best = in_def.map(|l| l.score).fold(0.0, f64::max);
            if best > 0.0 {
                out.push(SuspiciousFunction {
                    file: file.clone(),
                    qualname: def.qualname.clone(),
                    start_line: def.start_line,
                    end_line: def.end_line,
                    score: best,
                    flow: values.get(&(file.clone(), def.start_line)).copied().unwrap_or(0.0),
                });
            }
        }
    }
    out.sort_by(|a, b| {
        b.score.total_cmp(&a.score).then_with(|| (a.end_line - a.start_line).cmp(&(b.end_line - b.start_line)))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::Exit;
    use crate::pytest::{FlowCall, TestOutcome};

    #[test]
    fn doctest_node_ids_are_told_from_test_functions() {
        assert!(is_doctest("textkit/words.py::textkit.words.longest"));
        assert!(is_doctest("README.txt::README.txt"));
        assert!(!is_doctest("tests/test_a.py::TestX::test_y"));
        assert!(!is_doctest("tests/test_a.py::test_y[1.5]"));
        assert!(!is_doctest("tests/test_a.py"));
    }
    use std::time::Duration;

    fn project(files: &[(&str, &str)]) -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let project = Project::load(dir.path()).unwrap();
        (dir, project)
    }

    fn test(nodeid: &str, outcome: TestOutcome, coverage: &[(&str, &[usize])]) -> TestResult {
        TestResult {
            nodeid: nodeid.to_string(),
            outcome,
            duration: 0.01,
            cpu: 0.01,
            failure: None,
            coverage: coverage.iter().map(|(file, lines)| ((*file).to_string(), lines.to_vec())).collect(),
            flow: None,
            returns: std::collections::BTreeMap::new(),
            values: std::collections::BTreeMap::new(),
        }
    }

    /// A failure with in-project frames given outermost first, as (file, line, function).
    fn failure(kind: &str, message: &str, frames: &[(&str, usize, &str)]) -> Failure {
        Failure {
            when: "call".to_string(),
            kind: kind.to_string(),
            message: message.to_string(),
            limit: (kind == "DeepdebugTimeout").then_some(crate::pytest::TestLimit::Wall),
            frames: frames
                .iter()
                .map(|(file, line, function)| Frame {
                    file: (*file).to_string(),
                    line: *line,
                    function: (*function).to_string(),
                    in_project: true,
                    locals: BTreeMap::new(),
                })
                .collect(),
        }
    }

    fn session(tests: Vec<TestResult>) -> Session {
        let mut session = Session::empty(Exit::Failure(1), Duration::ZERO);
        session.tests = tests;
        session
    }

    fn call(line: usize, file: &str, function: &str, first_line: usize, depth: usize) -> FlowCall {
        FlowCall { line, file: file.to_string(), function: function.to_string(), first_line, depth }
    }

    fn function_rank(localization: &Localization, qualname: &str) -> Option<usize> {
        localization.functions.iter().position(|f| f.qualname == qualname)
    }

    const API: &str = "from app.util import normalize\n\ndef handle(request):\n    cleaned = normalize(request)\n    return cleaned\n";
    const UTIL: &str = "def normalize(text):\n    words = text.split()\n    joined = ' '.join(words)\n    return joined.lower() + suffix\n\ndef double_big(x):\n    if x > 3:\n        return x * 2\n    return x\n";

    /// One test crashes with a NameError two project calls below it; four others fail
    /// assertions in code that spectrum-based scores prefer.
    fn crash_among_assertion_failures() -> Session {
        let mut crashing = test(
            "tests/test_api.py::test_handle",
            TestOutcome::Failed,
            &[("app/api.py", &[3, 4]), ("app/util.py", &[1, 2, 3, 4])],
        );
        crashing.failure = Some(failure(
            "NameError",
            "name 'suffix' is not defined",
            &[("tests/test_api.py", 4, "test_handle"), ("app/api.py", 4, "handle"), ("app/util.py", 4, "normalize")],
        ));
        let mut tests = vec![crashing];
        for n in 4..8 {
            let mut t = test(
                &format!("tests/test_util.py::test_double[{n}]"),
                TestOutcome::Failed,
                &[("app/util.py", &[6, 7, 8])],
            );
            t.failure = Some(failure("AssertionError", "assert 8 == 9", &[("tests/test_util.py", 5, "test_double")]));
            tests.push(t);
        }
        tests.push(test("tests/test_util.py::test_small", TestOutcome::Passed, &[("app/util.py", &[6, 7, 9])]));
        session(tests)
    }

    #[test]
    fn a_crash_in_a_helper_called_from_a_function_ranks_its_raising_line_first() {
        let (_dir, project) = project(&[("app/__init__.py", ""), ("app/api.py", API), ("app/util.py", UTIL)]);
        let localization = localize(&project, &crash_among_assertion_failures());
        let first = &localization.lines[0];
        assert_eq!((first.file.as_str(), first.line), ("app/util.py", 4), "{:#?}", localization.lines);
        let crash = first.crash.as_ref().expect("the raising line carries its crash");
        assert_eq!((crash.kind, crash.raised_here, crash.missing_name()), (CrashKind::NameError, true, Some("suffix")));
        // The call site one frame out comes next; both are above every spectrum-only line.
        let second = &localization.lines[1];
        assert_eq!((second.file.as_str(), second.line), ("app/api.py", 4));
        assert!(!second.crash.as_ref().unwrap().raised_here);
        let best_sbfl = localization.lines.iter().filter(|l| l.crash.is_none()).map(|l| l.ochiai).fold(0.0, f64::max);
        let doubled = localization.lines.iter().find(|l| l.file == "app/util.py" && l.line == 8).unwrap();
        assert!(doubled.ochiai >= best_sbfl && doubled.ochiai > first.ochiai, "SBFL alone prefers line 8");
        assert!(doubled.score < second.score);
        assert_eq!(function_rank(&localization, "normalize"), Some(0), "{:#?}", localization.functions);
    }

    #[test]
    fn the_condition_guarding_a_raise_joins_the_crash_tier() {
        let source = "def check(age):\n    if age < 0 or age > 150:\n        raise ValueError('bad age')\n    return age\n\ndef register(person):\n    age = person['age']\n    name = person['name'].title()\n    return name, check(age)\n";
        let (_dir, project) = project(&[("people.py", source)]);
        let mut t =
            test("test_people.py::test_register", TestOutcome::Failed, &[("people.py", &[1, 2, 3, 6, 7, 8, 9])]);
        t.failure = Some(failure(
            "ValueError",
            "bad age",
            &[("test_people.py", 3, "test_register"), ("people.py", 9, "register"), ("people.py", 3, "check")],
        ));
        let passing = test("test_people.py::test_check", TestOutcome::Passed, &[("people.py", &[1, 2, 4])]);
        let localization = localize(&project, &session(vec![t, passing]));
        let top: Vec<usize> = localization.lines.iter().take(3).map(|l| l.line).collect();
        assert_eq!(top, [3, 2, 9], "{:#?}", localization.lines);
        assert_eq!(localization.lines[1].crash.as_ref().map(|c| c.kind), Some(CrashKind::ValueError));
        assert_eq!(function_rank(&localization, "check"), Some(0));
    }

    const CART: &str = "from shop.pricing import discount\n\nclass Cart:\n    def __init__(self):\n        self.items = []\n\n    def add(self, price, qty):\n        self.items.append((price, qty))\n        return self\n\n    def total(self):\n        gross = sum(p * q for p, q in self.items)\n        return gross - discount(gross)\n";
    const PRICING: &str = "def discount(amount):\n    if amount >= 100:\n        return amount // 5\n    return 0\n\ndef describe(amount):\n    return f'{amount:.2f}'\n";

    /// `test_total` is parametrized over three cases that all fail their assertion (line 7 of
    /// the test, after a setup line 6); `discount` computes the wrong value, but a passing test
    /// also runs its buggy line while the cart's helpers run in failing tests only.
    fn parametrized_assertion_failures(with_flow: bool) -> Session {
        let mut tests = Vec::new();
        for case in ["200-180", "300-270", "500-450"] {
            let mut t = test(
                &format!("tests/test_cart.py::test_total[{case}]"),
                TestOutcome::Failed,
                &[("shop/cart.py", &[4, 5, 7, 8, 9, 11, 12, 13]), ("shop/pricing.py", &[1, 2, 3])],
            );
            t.failure =
                Some(failure("AssertionError", "assert 160 == 180", &[("tests/test_cart.py", 7, "test_total")]));
            t.flow = with_flow.then(|| Flow {
                last_line: Some(7),
                calls: vec![
                    call(6, "shop/cart.py", "__init__", 4, 1),
                    call(6, "shop/cart.py", "add", 7, 1),
                    call(7, "shop/cart.py", "total", 11, 1),
                    call(7, "shop/cart.py", "<genexpr>", 12, 2),
                    call(7, "shop/pricing.py", "discount", 1, 2),
                ],
            });
            tests.push(t);
        }
        tests.push(test(
            "tests/test_pricing.py::test_discount",
            TestOutcome::Passed,
            &[("shop/pricing.py", &[1, 2, 3])],
        ));
        tests.push(test("tests/test_pricing.py::test_none", TestOutcome::Passed, &[("shop/pricing.py", &[1, 2, 4])]));
        session(tests)
    }

    #[test]
    fn a_parametrized_assertion_failure_across_two_modules_ranks_the_function_computing_the_value_in_the_top_3() {
        let (_dir, project) =
            project(&[("shop/__init__.py", ""), ("shop/cart.py", CART), ("shop/pricing.py", PRICING)]);
        let without = localize(&project, &parametrized_assertion_failures(false));
        assert!(
            function_rank(&without, "discount").unwrap() >= 3,
            "spectrum alone prefers the cart's helpers: {:#?}",
            without.functions
        );
        let with = localize(&project, &parametrized_assertion_failures(true));
        let rank = function_rank(&with, "discount").unwrap();
        assert!(rank < 3, "{:#?}", with.functions);
        assert_eq!(function_rank(&with, "Cart.total"), Some(0), "{:#?}", with.functions);
        assert!(with.lines.iter().all(|l| l.crash.is_none()), "the test's own assertion is no crash");
        let buggy = with.lines.iter().position(|l| l.file == "shop/pricing.py" && l.line == 3).unwrap();
        let setup = with.lines.iter().position(|l| l.file == "shop/cart.py" && l.line == 8).unwrap();
        assert!(buggy < setup, "{:#?}", with.lines);
    }

    #[test]
    fn timeouts_and_failures_raised_in_test_code_are_no_crashes() {
        let (_dir, project) = project(&[("app/__init__.py", ""), ("app/api.py", API), ("app/util.py", UTIL)]);
        let mut hang = test("tests/test_api.py::test_hang", TestOutcome::Timeout, &[("app/util.py", &[6, 7, 8])]);
        hang.failure = Some(failure(
            "DeepdebugTimeout",
            "test exceeded 1.0s",
            &[("tests/test_api.py", 3, "test_hang"), ("app/util.py", 8, "double_big")],
        ));
        let mut helper = test("tests/test_api.py::test_helper", TestOutcome::Failed, &[("app/util.py", &[1, 2])]);
        helper.failure = Some(failure(
            "KeyError",
            "'x'",
            &[
                ("tests/test_api.py", 9, "test_helper"),
                ("app/util.py", 2, "normalize"),
                ("tests/test_api.py", 20, "callback"),
            ],
        ));
        let localization = localize(&project, &session(vec![hang, helper]));
        assert!(localization.lines.iter().all(|l| l.crash.is_none()), "{:#?}", localization.lines);
        let mut top: Vec<usize> = localization.lines.iter().take(2).map(|l| l.line).collect();
        top.sort_unstable();
        assert_eq!(top, [2, 8], "the stack still counts: {:#?}", localization.lines);
    }

    #[test]
    fn crash_kinds_and_missing_names_are_read_from_the_exception() {
        let crash = |type_name: &str, message: &str| Crash {
            kind: CrashKind::of(type_name),
            type_name: type_name.to_string(),
            message: message.to_string(),
            raised_here: true,
        };
        assert_eq!(crash("NameError", "name 'totl' is not defined").missing_name(), Some("totl"));
        assert_eq!(
            crash("UnboundLocalError", "cannot access local variable 'n' where it is not associated with a value")
                .missing_name(),
            Some("n")
        );
        assert_eq!(crash("AttributeError", "'Cart' object has no attribute 'itms'").missing_name(), Some("itms"));
        assert_eq!(crash("KeyError", "'x'").missing_name(), None);
        assert_eq!(CrashKind::of("builtins.IndexError"), CrashKind::IndexError);
        assert_eq!(CrashKind::of("JSONDecodeError"), CrashKind::Other);
    }
}
