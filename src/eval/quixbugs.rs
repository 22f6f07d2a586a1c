//! `eval quixbugs`: run `fix` on every program of a QuixBugs-layout tree and classify each result.

use super::equivalence::{self, CompareConfig};
use crate::pytest::default_python;
use crate::repair::defaults::Sources;
use crate::repair::fix::{fix, FixOptions, FixStatus};
use crate::repair::learn::priors::Priors;
use crate::repair::search::SourceKind;
use crate::sandbox::{DockerConfig, SandboxKind};
use crate::text::clip;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Version of `results.json`.
pub const RESULTS_FORMAT_VERSION: u32 = 1;

const BUGGY: &str = "python_programs";
const CORRECT: &str = "correct_python_programs";
const TESTS: &str = "python_testcases";
const JSON: &str = "json_testcases";

/// Options of an evaluation run.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// Root of the QuixBugs-layout tree (only read).
    pub root: PathBuf,
    /// `fix` budget per program.
    pub timeout: Duration,
    /// Per-test limit of the baseline run.
    pub test_timeout: Duration,
    pub python: Option<PathBuf>,
    /// Programs evaluated at the same time.
    pub jobs: usize,
    /// Validation workers inside each `fix`.
    pub workers: usize,
    /// Extra generated inputs per program.
    pub generated_inputs: usize,
    pub per_call_timeout: Duration,
    pub seed: u64,
    /// Operator priors passed to `fix`.
    pub priors: Priors,
    /// `fix`'s candidate sources and ranking (`SourceChoice::default()` resolved: as `fix`
    /// runs by default).
    pub sources: Sources,
    /// Sandbox of every test run `fix` makes.
    pub sandbox: SandboxKind,
    pub docker: DockerConfig,
    /// Where each program's full `fix` report goes, as `<name>.json` (`None`: not written).
    pub reports: Option<PathBuf>,
}

/// Why an evaluation could not start.
#[derive(Debug, thiserror::Error)]
pub enum QuixbugsError {
    #[error("{} is not a QuixBugs-layout directory (missing {}/)", .0.display(), .1)]
    NotQuixbugs(PathBuf, &'static str),
    #[error("unknown program `{0}` (no {BUGGY}/{0}.py with a {TESTS}/test_{0}.py)")]
    UnknownProgram(String),
    #[error("failed to read {}: {}", .0.display(), .1)]
    Io(PathBuf, std::io::Error),
}

/// The classification of one program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProgramStatus {
    /// A plausible patch that behaves like the correct program.
    Genuine,
    /// A patch that passes the tests but differs from (or could not be checked against) the
    /// correct program.
    PlausibleOnly,
    /// No candidate passed the tests.
    NotFixed,
    /// The program could not be evaluated (broken tests, missing files, infrastructure).
    Error,
}

impl ProgramStatus {
    pub const ALL: [ProgramStatus; 4] =
        [ProgramStatus::Genuine, ProgramStatus::PlausibleOnly, ProgramStatus::NotFixed, ProgramStatus::Error];

    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            ProgramStatus::Genuine => "genuine",
            ProgramStatus::PlausibleOnly => "plausible-only",
            ProgramStatus::NotFixed => "not fixed",
            ProgramStatus::Error => "error",
        }
    }
}

/// The chosen patch of a program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatchInfo {
    pub file: String,
    pub line: usize,
    /// The source that produced the patch (`operators`, `templates`, `language-model`,
    /// `patcher`, `combinations`).
    #[serde(default)]
    pub source: String,
    /// The operator, or the source's own name (`template`, `language-model`, `neural`, ...).
    pub operator: String,
    pub description: String,
}

/// How a plausible patch was checked against the correct program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckMethod {
    /// Outputs compared on test and generated inputs.
    Inputs,
    /// No JSON cases: normalized ASTs compared.
    Ast,
}

/// The behaviour check of a plausible patch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckInfo {
    pub method: CheckMethod,
    pub test_inputs: usize,
    pub generated_inputs: usize,
    pub discarded_inputs: usize,
    pub seconds: f64,
}

/// One program's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgramResult {
    pub name: String,
    pub status: ProgramStatus,
    /// Wall time of `fix` plus the behaviour check.
    pub seconds: f64,
    pub fix_seconds: f64,
    pub candidates_generated: usize,
    pub candidates_tried: usize,
    pub patch: Option<PatchInfo>,
    pub diff: Option<String>,
    pub check: Option<CheckInfo>,
    pub reason: String,
}

/// Counts per status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub programs: usize,
    pub genuine: usize,
    pub plausible_only: usize,
    pub not_fixed: usize,
    pub error: usize,
}

impl Totals {
    #[must_use]
    pub fn of(results: &[ProgramResult]) -> Totals {
        let count = |s: ProgramStatus| results.iter().filter(|r| r.status == s).count();
        Totals {
            programs: results.len(),
            genuine: count(ProgramStatus::Genuine),
            plausible_only: count(ProgramStatus::PlausibleOnly),
            not_fixed: count(ProgramStatus::NotFixed),
            error: count(ProgramStatus::Error),
        }
    }

    #[must_use]
    pub fn get(&self, status: ProgramStatus) -> usize {
        match status {
            ProgramStatus::Genuine => self.genuine,
            ProgramStatus::PlausibleOnly => self.plausible_only,
            ProgramStatus::NotFixed => self.not_fixed,
            ProgramStatus::Error => self.error,
        }
    }
}

/// `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalResults {
    pub format_version: u32,
    pub tool: String,
    pub path: String,
    pub timeout_seconds: f64,
    pub seed: u64,
    pub seconds: f64,
    pub totals: Totals,
    pub programs: Vec<ProgramResult>,
}

/// The programs of a QuixBugs-layout tree: every `python_programs/NAME.py` with a
/// `python_testcases/test_NAME.py`, sorted (helpers such as `node.py` have no test).
///
/// # Errors
/// When the directory lacks the layout's folders.
pub fn discover(root: &Path) -> Result<Vec<String>, QuixbugsError> {
    for dir in [BUGGY, CORRECT, TESTS] {
        if !root.join(dir).is_dir() {
            return Err(QuixbugsError::NotQuixbugs(root.to_path_buf(), dir));
        }
    }
    let entries = std::fs::read_dir(root.join(BUGGY)).map_err(|e| QuixbugsError::Io(root.join(BUGGY), e))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_suffix(".py")).map(str::to_string))
        .filter(|name| root.join(TESTS).join(format!("test_{name}.py")).is_file())
        .collect();
    names.sort();
    Ok(names)
}

/// Resolve `--programs`: every given name must be a discovered program.
///
/// # Errors
/// On an unknown name.
pub fn select(all: &[String], wanted: &[String]) -> Result<Vec<String>, QuixbugsError> {
    if wanted.is_empty() {
        return Ok(all.to_vec());
    }
    wanted
        .iter()
        .map(|w| if all.contains(w) { Ok(w.clone()) } else { Err(QuixbugsError::UnknownProgram(w.clone())) })
        .collect()
}

/// Evaluate `programs` (`jobs` at a time); `on_done` is called as each one finishes.
#[must_use]
pub fn evaluate(options: &EvalOptions, programs: &[String], on_done: &(dyn Fn(&ProgramResult) + Sync)) -> EvalResults {
    let start = Instant::now();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<ProgramResult>>> = Mutex::new(vec![None; programs.len()]);
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.clamp(1, programs.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(name) = programs.get(i) else { break };
                let result = evaluate_program(options, name);
                on_done(&result);
                if let Ok(mut slots) = results.lock() {
                    slots[i] = Some(result);
                }
            });
        }
    });
    let programs: Vec<ProgramResult> = results.into_inner().unwrap_or_default().into_iter().flatten().collect();
    EvalResults {
        format_version: RESULTS_FORMAT_VERSION,
        tool: format!("deepdebug {}", env!("CARGO_PKG_VERSION")),
        path: options.root.display().to_string(),
        timeout_seconds: options.timeout.as_secs_f64(),
        seed: options.seed,
        seconds: start.elapsed().as_secs_f64(),
        totals: Totals::of(&programs),
        programs,
    }
}

fn error_result(name: &str, reason: String, seconds: f64) -> ProgramResult {
    ProgramResult {
        name: name.to_string(),
        status: ProgramStatus::Error,
        seconds,
        fix_seconds: 0.0,
        candidates_generated: 0,
        candidates_tried: 0,
        patch: None,
        diff: None,
        check: None,
        reason,
    }
}

/// Run `fix` on one program in a scratch copy (without the correct programs), then classify it.
#[must_use]
pub fn evaluate_program(options: &EvalOptions, name: &str) -> ProgramResult {
    let start = Instant::now();
    let correct_file = options.root.join(CORRECT).join(format!("{name}.py"));
    if !correct_file.is_file() {
        return error_result(name, format!("no {CORRECT}/{name}.py to compare with"), 0.0);
    }
    let scratch = match tempfile::Builder::new().prefix("deepdebug-quixbugs-").tempdir() {
        Ok(dir) => dir,
        Err(err) => return error_result(name, format!("cannot create a scratch directory: {err}"), 0.0),
    };
    if let Err(err) = prepare_fix_tree(&options.root, scratch.path(), name) {
        return error_result(name, format!("cannot copy the program's files: {err}"), 0.0);
    }
    let python = options.python.clone().unwrap_or_else(|| default_python(&options.root));
    let fix_options = FixOptions {
        selectors: vec![format!("{TESTS}/test_{name}.py")],
        tests_only: true,
        python: Some(python.clone()),
        jobs: options.workers.max(1),
        baseline_test_timeout: options.test_timeout,
        priors: options.priors.clone(),
        sandbox: options.sandbox,
        docker: options.docker.clone(),
        ..FixOptions::new(scratch.path().to_path_buf(), options.timeout, options.sources.clone())
    };
    let outcome = match fix(&fix_options, &|_| {}) {
        Ok(outcome) => outcome,
        Err(err) => {
            let reason = clip(&err.to_string().replace('\n', " "), 400);
            return error_result(name, reason, start.elapsed().as_secs_f64());
        }
    };
    if let Some(dir) = &options.reports {
        write_fix_report(dir, name, &outcome);
    }
    let mut result = ProgramResult {
        name: name.to_string(),
        status: ProgramStatus::NotFixed,
        seconds: 0.0,
        fix_seconds: outcome.elapsed.as_secs_f64(),
        candidates_generated: outcome.candidates.len(),
        candidates_tried: outcome.validated.len(),
        patch: None,
        diff: outcome.best_candidate().and(outcome.diff.clone()),
        check: None,
        reason: String::new(),
    };
    match (outcome.status, outcome.best_candidate()) {
        (FixStatus::NothingToFix, _) => {
            result.status = ProgramStatus::Error;
            result.reason = "every test already passes on the buggy program: nothing to fix".into();
        }
        (_, None) => {
            result.reason = format!(
                "no plausible patch: {} of {} candidates validated ({} failing tests)",
                result.candidates_tried,
                result.candidates_generated,
                outcome.failing.len()
            );
        }
        (_, Some(best)) => {
            result.patch = Some(PatchInfo {
                file: best.patch.file.clone(),
                line: best.line,
                source: SourceKind::of(best.source).name().to_string(),
                operator: best.source.name().to_string(),
                description: best.description.clone(),
            });
            let patched = (best.patch.file.clone(), best.patched_text.clone());
            let (status, reason, check) = classify(options, &python, scratch.path(), name, &patched);
            result.status = status;
            result.reason = reason;
            result.check = check;
        }
    }
    result.seconds = start.elapsed().as_secs_f64();
    result
}

/// Best effort: a report that cannot be written loses a diagnosis, not the evaluation.
fn write_fix_report(dir: &Path, name: &str, outcome: &crate::repair::fix::FixOutcome) {
    let report = crate::report::FixReport::new(outcome, name);
    if let Ok(text) = serde_json::to_string_pretty(&report) {
        let _ =
            std::fs::create_dir_all(dir).and_then(|()| std::fs::write(dir.join(format!("{name}.json")), text + "\n"));
    }
}

/// Compare the patched program with the correct one: on inputs when JSON cases exist, else by AST.
fn classify(
    options: &EvalOptions,
    python: &Path,
    scratch: &Path,
    name: &str,
    (file, text): &(String, String),
) -> (ProgramStatus, String, Option<CheckInfo>) {
    let start = Instant::now();
    let prepared = std::fs::write(scratch.join(file), text)
        .and_then(|()| copy_dir(&options.root.join(CORRECT), &scratch.join(CORRECT)));
    if let Err(err) = prepared {
        return (ProgramStatus::Error, format!("cannot prepare the behaviour check: {err}"), None);
    }
    let json_file = options.root.join(JSON).join(format!("{name}.json"));
    let Some(tests) = load_json_cases(&json_file) else {
        let patched = scratch.join(BUGGY).join(format!("{name}.py"));
        let check = |method| CheckInfo {
            method,
            test_inputs: 0,
            generated_inputs: 0,
            discarded_inputs: 0,
            seconds: start.elapsed().as_secs_f64(),
        };
        return match equivalence::ast_equal(python, &patched, &scratch.join(CORRECT).join(format!("{name}.py"))) {
            Ok(true) => (
                ProgramStatus::Genuine,
                "no JSON cases; the patched program's AST equals the correct program's".into(),
                Some(check(CheckMethod::Ast)),
            ),
            Ok(false) => (
                ProgramStatus::PlausibleOnly,
                "unverified: passes the tests, but there are no JSON cases and its AST differs from the correct program's".into(),
                Some(check(CheckMethod::Ast)),
            ),
            Err(err) => (ProgramStatus::PlausibleOnly, format!("unverified: {err}"), None),
        };
    };
    let config = CompareConfig {
        python: python.to_path_buf(),
        per_call_timeout: options.per_call_timeout,
        generated: options.generated_inputs,
        seed: options.seed,
    };
    match equivalence::compare_on_inputs(scratch, name, &tests, &config) {
        Ok(cmp) => {
            let check = CheckInfo {
                method: CheckMethod::Inputs,
                test_inputs: cmp.test_inputs,
                generated_inputs: cmp.generated_inputs,
                discarded_inputs: cmp.discarded,
                seconds: start.elapsed().as_secs_f64(),
            };
            match cmp.difference {
                None => (
                    ProgramStatus::Genuine,
                    format!(
                        "same behaviour as the correct program on {} test and {} generated inputs",
                        cmp.test_inputs, cmp.generated_inputs
                    ),
                    Some(check),
                ),
                Some(d) => (
                    ProgramStatus::PlausibleOnly,
                    format!(
                        "passes the tests but differs from the correct program on {} input {}: patched {}, correct {}",
                        if d.from_tests { "test" } else { "generated" },
                        clip(&d.input, 200),
                        d.patched.describe(),
                        d.correct.describe()
                    ),
                    Some(check),
                ),
            }
        }
        Err(err) => (ProgramStatus::PlausibleOnly, format!("unverified: {err}"), None),
    }
}

/// The argument lists of a JSON-lines test file (`[args, expected]` per line; a non-list `args`
/// is one argument). `None` when the file is missing or holds no usable case.
#[must_use]
pub fn load_json_cases(path: &Path) -> Option<Vec<Vec<Value>>> {
    let text = std::fs::read_to_string(path).ok()?;
    let cases: Vec<Vec<Value>> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|row| match row {
            Value::Array(mut pair) if pair.len() == 2 => match pair.swap_remove(0) {
                Value::Array(args) => Some(args),
                other => Some(vec![other]),
            },
            _ => None,
        })
        .collect();
    if cases.is_empty() {
        None
    } else {
        Some(cases)
    }
}

/// The scratch project `fix` sees: root-level files (conftest.py, pytest.ini, ...), all of
/// `python_programs/`, the helpers and this program's test in `python_testcases/`, and this
/// program's JSON cases. The correct programs are left out.
fn prepare_fix_tree(root: &Path, dest: &Path, name: &str) -> std::io::Result<()> {
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            std::fs::copy(entry.path(), dest.join(entry.file_name()))?;
        }
    }
    copy_dir(&root.join(BUGGY), &dest.join(BUGGY))?;
    let test_name = format!("test_{name}.py");
    std::fs::create_dir_all(dest.join(TESTS))?;
    for entry in std::fs::read_dir(root.join(TESTS))? {
        let entry = entry?;
        let file_name = entry.file_name();
        let Some(file) = file_name.to_str() else { continue };
        let is_other_test = file.starts_with("test_") && file != test_name;
        if entry.file_type()?.is_file() && !is_other_test {
            std::fs::copy(entry.path(), dest.join(TESTS).join(file))?;
        }
    }
    let json = root.join(JSON).join(format!("{name}.json"));
    if json.is_file() {
        std::fs::create_dir_all(dest.join(JSON))?;
        std::fs::copy(&json, dest.join(JSON).join(format!("{name}.json")))?;
    }
    Ok(())
}

/// Copy a directory tree, skipping caches.
fn copy_dir(src: &Path, dest: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dest)?;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let name = entry.file_name();
        if kind.is_dir() && name != "__pycache__" && name != ".pytest_cache" {
            copy_dir(&entry.path(), &dest.join(&name))?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), dest.join(&name))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_cases_wrap_single_arguments_and_skip_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        std::fs::write(&path, "[[1, [2]], 3]\n\nnot json\n[5, 25]\n[[], 0]\n").unwrap();
        let cases = load_json_cases(&path).unwrap();
        assert_eq!(cases, vec![vec![serde_json::json!(1), serde_json::json!([2])], vec![serde_json::json!(5)], vec![]]);
        assert!(load_json_cases(&dir.path().join("missing.json")).is_none());
    }

    #[test]
    fn discovery_needs_a_test_file_and_the_layout() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(discover(dir.path()), Err(QuixbugsError::NotQuixbugs(_, _))));
        for d in [BUGGY, CORRECT, TESTS] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        std::fs::write(dir.path().join(BUGGY).join("b.py"), "").unwrap();
        std::fs::write(dir.path().join(BUGGY).join("a.py"), "").unwrap();
        std::fs::write(dir.path().join(BUGGY).join("node.py"), "").unwrap();
        std::fs::write(dir.path().join(TESTS).join("test_a.py"), "").unwrap();
        std::fs::write(dir.path().join(TESTS).join("test_b.py"), "").unwrap();
        let all = discover(dir.path()).unwrap();
        assert_eq!(all, vec!["a".to_string(), "b".to_string()]);
        assert_eq!(select(&all, &["b".into()]).unwrap(), vec!["b".to_string()]);
        assert!(matches!(select(&all, &["node".into()]), Err(QuixbugsError::UnknownProgram(_))));
    }
}
