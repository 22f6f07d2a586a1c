//! The regression guard: the baseline-passing tests a plausible patch must keep passing, learned beside the search and shrunk to the time left, never a reason to stop.

use crate::pytest::{CollectError, Pytest, RunSpec, Session, TestOutcome, TestRun};
use crate::repair::candidate::Candidate;
use crate::repair::validate::{CandidateOutcome, LabConfig, LabError};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// One baseline-passing test of the guard.
#[derive(Debug, Clone)]
struct GuardTest {
    nodeid: String,
    duration: f64,
}

/// A test file whose tests all ran at baseline: run by path, its bad tests deselected.
#[derive(Debug, Clone, Default)]
struct GuardFile {
    passing: Vec<GuardTest>,
    /// Tests of the file that failed, errored or hung at baseline (not judged, not run).
    bad: Vec<String>,
}

/// What was left out of the guard, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// Modules or directories pytest could not collect at baseline: node id and the first line
    /// of the reason.
    pub uncollectable: Vec<(String, String)>,
    /// Tests that failed or errored at baseline (outside the failing tests being fixed).
    pub failing: usize,
    /// Tests that hung at baseline (past the per-test limit).
    pub timed_out: usize,
    /// Tests the baseline did not reach within its time box (counted by the files it cut).
    pub not_run_files: usize,
    /// Whether the run of the rest of the suite stopped at its time box.
    pub cut: bool,
}

/// The regression guard learned from one or more baseline sessions.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    files: BTreeMap<String, GuardFile>,
    /// Node ids of the modules that could not be collected at baseline (tolerated later).
    broken: BTreeSet<String>,
    pub left_out: LeftOut,
}

/// The file part of a pytest node id (`tests/test_a.py::T::t[1]` → `tests/test_a.py`).
#[must_use]
pub fn file_of(nodeid: &str) -> &str {
    nodeid.split("::").next().unwrap_or(nodeid)
}

/// The first line that says why a module could not be collected: pytest's `E   ` line when
/// there is one, else the message's last line.
#[must_use]
pub fn reason_of(message: &str) -> String {
    let line = message.lines().find_map(|l| l.trim_start().strip_prefix("E ")).map(str::trim);
    line.unwrap_or_else(|| crate::text::last_line(message)).chars().take(160).collect()
}

impl Guard {
    /// Add a baseline `session`'s tests: its passing tests (but `failing`, the tests being
    /// fixed) guard, its other tests are left out. `cut`: the session stopped at its time
    /// box, so the file it was running is incomplete and left out whole.
    pub fn absorb(&mut self, session: &Session, failing: &[String]) {
        let cut = session.exit.is_timeout() || session.exit_status.is_none();
        let last_file = session.tests.last().map(|t| file_of(&t.nodeid).to_string());
        for test in &session.tests {
            let file = file_of(&test.nodeid);
            if cut && last_file.as_deref() == Some(file) {
                continue;
            }
            let entry = self.files.entry(file.to_string()).or_default();
            if entry.passing.iter().any(|t| t.nodeid == test.nodeid) || entry.bad.contains(&test.nodeid) {
                continue;
            }
            if failing.contains(&test.nodeid) {
                continue;
            }
            match test.outcome {
                TestOutcome::Passed | TestOutcome::Skipped => {
                    entry.passing.push(GuardTest { nodeid: test.nodeid.clone(), duration: test.duration });
                }
                TestOutcome::Timeout => {
                    self.left_out.timed_out += 1;
                    entry.bad.push(test.nodeid.clone());
                }
                TestOutcome::Failed | TestOutcome::Error => {
                    self.left_out.failing += 1;
                    entry.bad.push(test.nodeid.clone());
                }
            }
        }
        if cut {
            self.left_out.cut = true;
            self.left_out.not_run_files += usize::from(last_file.is_some());
        }
        self.absorb_collect_errors(&session.collect_errors);
    }

    fn absorb_collect_errors(&mut self, errors: &[CollectError]) {
        for error in errors {
            if self.broken.insert(error.nodeid.clone()) {
                let name = if error.nodeid.is_empty() { "<session>".to_string() } else { error.nodeid.clone() };
                self.left_out.uncollectable.push((name, reason_of(&error.message)));
            }
        }
    }

    /// Baseline-passing tests in the guard.
    #[must_use]
    pub fn tests(&self) -> usize {
        self.files.values().map(|f| f.passing.len()).sum()
    }

    /// Seconds the guard's tests took at baseline.
    #[must_use]
    pub fn seconds(&self) -> f64 {
        self.files.values().flat_map(|f| &f.passing).map(|t| t.duration).sum()
    }

    /// Whether `nodeid` could not be collected at baseline.
    #[must_use]
    pub fn was_broken(&self, nodeid: &str) -> bool {
        self.broken.contains(nodeid)
    }

    /// One warning per kind of what was left out, naming the modules that could not be
    /// collected (file and first line of the reason).
    #[must_use]
    pub fn warnings(&self) -> Vec<String> {
        let left = &self.left_out;
        let mut warnings = Vec::new();
        if !left.uncollectable.is_empty() {
            let names: Vec<String> = left.uncollectable.iter().take(5).map(|(n, r)| format!("{n} ({r})")).collect();
            let more = left.uncollectable.len().saturating_sub(5);
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            warnings.push(format!(
                "{} test module(s) could not be collected and are left out of the regression guard: {}{more}",
                left.uncollectable.len(),
                names.join("; ")
            ));
        }
        if left.failing + left.timed_out > 0 {
            warnings.push(format!(
                "{} test(s) already failed and {} hung before any change: they are left out of the regression guard",
                left.failing, left.timed_out
            ));
        }
        if left.cut {
            warnings.push(
                "the rest of the suite did not finish within its share of --timeout: the tests it did not reach are left out of the regression guard".to_string(),
            );
        }
        warnings
    }

    /// The part of the guard that one run can afford in `seconds` (after start-up): the files
    /// of the failing tests first, then test files that import the edited module (`imports`),
    /// then the quickest files.
    #[must_use]
    pub fn plan(&self, failing: &[String], seconds: f64, imports: &dyn Fn(&str) -> bool) -> GuardPlan {
        let rank = |file: &str| -> u8 {
            if failing.iter().any(|t| file_of(t) == file) {
                0
            } else if imports(file) {
                1
            } else {
                2
            }
        };
        let cost = |f: &GuardFile| f.passing.iter().map(|t| t.duration).sum::<f64>();
        let mut files: Vec<(&String, &GuardFile)> = self.files.iter().collect();
        files.sort_by(|a, b| rank(a.0).cmp(&rank(b.0)).then(cost(a.1).total_cmp(&cost(b.1))));
        let mut plan = GuardPlan { failing: failing.to_vec(), broken: self.broken.clone(), ..GuardPlan::default() };
        let mut spent = 0.0;
        for (name, file) in files {
            let essential = rank(name) == 0;
            if !essential && spent + cost(file) > seconds {
                plan.dropped += file.passing.len();
                continue;
            }
            spent += cost(file);
            plan.add(name, file);
        }
        for test in failing {
            let file = file_of(test).to_string();
            if !plan.paths.contains(&file) {
                plan.paths.push(file);
            }
        }
        plan.finish();
        plan
    }
}

/// What a confirmation run gives pytest and what it must see pass.
#[derive(Debug, Clone, Default)]
pub struct GuardPlan {
    /// Test files, run by path.
    pub paths: Vec<String>,
    /// Node ids left out of the run (`--deselect`, by prefix): failed or hung at baseline.
    pub deselect: Vec<String>,
    /// Baseline-passing tests that must still pass.
    pub expected: BTreeSet<String>,
    /// The failing tests being fixed: they must pass.
    pub failing: Vec<String>,
    /// Modules that could not be collected at baseline.
    pub broken: BTreeSet<String>,
    /// Guard tests left out for lack of time.
    pub dropped: usize,
    /// Seconds the slowest guard test took at baseline (sets the confirmation's per-test limit).
    pub slowest: f64,
    /// Seconds the guard's tests took at baseline.
    pub seconds: f64,
}

impl GuardPlan {
    fn add(&mut self, name: &str, file: &GuardFile) {
        self.paths.push(name.to_string());
        for test in &file.passing {
            self.slowest = self.slowest.max(test.duration);
            self.seconds += test.duration;
        }
        self.expected.extend(file.passing.iter().map(|t| t.nodeid.clone()));
        self.deselect.extend(file.bad.iter().cloned());
    }

    /// `--deselect` works by prefix: a deselection that would also drop a failing test is not
    /// made (the test runs, unjudged), and guard tests it drops are no longer expected.
    fn finish(&mut self) {
        let failing = &self.failing;
        self.deselect.retain(|d| !failing.iter().any(|f| f.starts_with(d.as_str())));
        let deselect = &self.deselect;
        self.expected.retain(|t| !deselect.iter().any(|d| t.starts_with(d.as_str())));
        for test in &self.failing {
            self.expected.remove(test);
        }
    }

    /// Baseline-passing tests this plan checks.
    #[must_use]
    pub fn guard_tests(&self) -> usize {
        self.expected.len()
    }

    /// Whether a confirmation `session` of this plan shows a failure: failing or missing tests
    /// (the ones being fixed or the guard's), or a module that no longer collects.
    #[must_use]
    pub fn failures(&self, session: &Session) -> Option<Vec<String>> {
        let judged = |id: &String| self.expected.contains(id) || self.failing.contains(id);
        let failing: Vec<String> = session.failing().map(|t| t.nodeid.clone()).filter(judged).collect();
        let ran: BTreeSet<&str> = session.tests.iter().map(|t| t.nodeid.as_str()).collect();
        let missing = self.expected.iter().chain(&self.failing).any(|id| !ran.contains(id.as_str()));
        let new_errors = session.collect_errors.iter().any(|e| !self.broken.contains(&e.nodeid));
        (!failing.is_empty() || missing || new_errors).then_some(failing)
    }

    /// The pytest session of one confirmation run in `root`.
    #[must_use]
    pub fn spec<'a>(&'a self, root: &'a Path, run: TestRun<'a>) -> RunSpec<'a> {
        RunSpec {
            root,
            coverage: false,
            run: TestRun { tests: Some(&self.paths), ..run },
            deselect: &self.deselect,
            watch: &[],
        }
    }
}

/// What guarded a run's patch, for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GuardSummary {
    /// Baseline-passing tests the guard learned (the failing tests being fixed excluded).
    pub known: usize,
    /// Of those, the tests that checked the reported patch (`None`: no patch was confirmed).
    pub checked: Option<usize>,
    pub left_out: LeftOut,
}

impl GuardSummary {
    #[must_use]
    pub fn new(guard: &Guard, checked: Option<usize>) -> GuardSummary {
        GuardSummary { known: guard.tests(), checked, left_out: guard.left_out.clone() }
    }

    /// Only the failing tests checked (or would check) the patch.
    #[must_use]
    pub fn thin(&self) -> bool {
        self.checked.unwrap_or(self.known) == 0
    }
}

/// A guard learned in the background: set once, waited for with a deadline.
#[derive(Default)]
pub struct PendingGuard {
    guard: Mutex<Option<Guard>>,
    ready: Condvar,
}

impl PendingGuard {
    /// A guard known from the start (the baseline ran the whole suite, or `--tests-only`).
    #[must_use]
    pub fn ready(guard: Guard) -> PendingGuard {
        PendingGuard { guard: Mutex::new(Some(guard)), ready: Condvar::new() }
    }

    pub fn set(&self, guard: Guard) {
        *self.guard.lock().expect("guard lock") = Some(guard);
        self.ready.notify_all();
    }

    /// The guard if it is known now.
    #[must_use]
    pub fn get(&self) -> Option<Guard> {
        self.guard.lock().expect("guard lock").clone()
    }

    /// The guard, waiting for it until `deadline` at the latest.
    #[must_use]
    pub fn wait(&self, deadline: Instant) -> Option<Guard> {
        let mut guard = self.guard.lock().expect("guard lock");
        while guard.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            guard = self.ready.wait_timeout(guard, left).expect("guard lock").0;
        }
        guard.clone()
    }
}

/// How the rest of the suite is run beside the search.
#[derive(Debug, Clone)]
pub struct RestOfSuite<'a> {
    /// The files the focused baseline already ran (deselected here, by path).
    pub focus_files: &'a [String],
    /// The failing tests being fixed.
    pub failing: &'a [String],
    pub per_test: Duration,
    /// The time box of the whole run.
    pub time_box: Duration,
}

/// Run the project's own discovery (`testpaths`, `python_files`) without the focus files, in
/// a scratch copy, time-boxed and under a per-test limit, and add what it finds to `guard`.
///
/// # Errors
/// When the scratch copy cannot be made or pytest cannot start.
pub fn run_rest(pytest: &Pytest, root: &Path, rest: &RestOfSuite<'_>, mut guard: Guard) -> Result<Guard, LabError> {
    let scratch = crate::repair::validate::scratch_copy(root, "deepdebug-guard-")?;
    let run = TestRun { per_test_timeout: Some(rest.per_test), ..TestRun::new(None, rest.time_box) };
    let spec = RunSpec { root: scratch.path(), coverage: false, run, deselect: rest.focus_files, watch: &[] };
    let session = pytest.run(&spec)?;
    guard.absorb(&session, rest.failing);
    Ok(guard)
}

/// What the confirmation runs of a plausible patch concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confirmation {
    /// Every run passed; `runs` is fewer than asked when the deadline left no time for more.
    Confirmed { runs: usize },
    /// A run failed or hung: the candidate's new outcome.
    Rejected(CandidateOutcome),
    /// The deadline came before one run could finish.
    OutOfTime,
}

/// Re-run the failing tests and the regression guard (`plan`) up to `runs` times in a fresh
/// scratch copy with one pytest process per run (no fork server, no test selection): the check
/// a patch must pass before it is reported. No run goes past `deadline`; a later run starts
/// only if the one before would fit.
///
/// # Errors
/// When the scratch copy cannot be made or pytest cannot start.
pub fn confirm(
    pytest: &Pytest,
    config: &LabConfig<'_>,
    plan: &GuardPlan,
    candidate: &Candidate,
    runs: usize,
    deadline: Instant,
) -> Result<Confirmation, LabError> {
    let dir = crate::repair::validate::scratch_copy(config.root, "deepdebug-confirm-")?;
    std::fs::write(dir.path().join(&candidate.patch.file), &candidate.patched_text).map_err(LabError::Write)?;
    let limit = config.timeouts.session(plan.guard_tests() + plan.failing.len()) * 2
        + Duration::from_secs_f64(plan.seconds * 2.0);
    // Guard tests may be slower than the focus's, which set `per_test`.
    let per_test = config.timeouts.per_test.max(Duration::from_secs_f64(4.0 * plan.slowest + 0.2));
    let mut last_run: Option<Duration> = None;
    for done in 0..runs {
        let left = deadline.saturating_duration_since(Instant::now());
        if last_run.is_some_and(|d| d.mul_f64(1.2) > left) {
            return Ok(Confirmation::Confirmed { runs: done });
        }
        let run = TestRun {
            // Lenient: a loaded machine must not turn a correct patch into a timeout.
            per_test_timeout: Some(per_test.max(Duration::from_secs(2))),
            ..TestRun::new(None, limit.min(left))
        };
        let session = pytest.run(&plan.spec(dir.path(), run))?;
        if session.exit.is_timeout() {
            return Ok(match (left < limit, done) {
                (true, 0) => Confirmation::OutOfTime,
                (true, _) => Confirmation::Confirmed { runs: done },
                (false, _) => Confirmation::Rejected(CandidateOutcome::Timeout),
            });
        }
        last_run = Some(session.elapsed);
        if let Some(failing) = plan.failures(&session) {
            return Ok(Confirmation::Rejected(CandidateOutcome::Unconfirmed { failing }));
        }
    }
    Ok(Confirmation::Confirmed { runs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::Exit;
    use crate::pytest::TestResult;

    fn result(nodeid: &str, outcome: TestOutcome, duration: f64) -> TestResult {
        serde_json::from_value(serde_json::json!({
            "nodeid": nodeid,
            "outcome": match outcome {
                TestOutcome::Passed => "passed",
                TestOutcome::Failed => "failed",
                TestOutcome::Error => "error",
                TestOutcome::Skipped => "skipped",
                TestOutcome::Timeout => "timeout",
            },
            "duration": duration,
            "failure": null,
        }))
        .unwrap()
    }

    fn session(tests: Vec<TestResult>, finished: bool) -> Session {
        let exit = if finished { Exit::Success } else { Exit::Timeout };
        let mut session = Session::empty(exit, Duration::from_secs(1));
        session.tests = tests;
        session.exit_status = finished.then_some(1);
        session
    }

    #[test]
    fn passing_tests_guard_bad_ones_are_deselected_and_a_cut_file_is_left_out_whole() {
        let mut guard = Guard::default();
        let s = session(
            vec![
                result("tests/test_a.py::test_fix_me", TestOutcome::Failed, 0.1),
                result("tests/test_a.py::test_ok", TestOutcome::Passed, 0.1),
                result("tests/test_a.py::test_net", TestOutcome::Timeout, 2.0),
                result("tests/test_b.py::test_old", TestOutcome::Error, 0.1),
                result("tests/test_b.py::test_old_but_fine", TestOutcome::Passed, 0.1),
                result("tests/test_c.py::test_slow", TestOutcome::Passed, 3.0),
            ],
            false,
        );
        guard.absorb(&s, &["tests/test_a.py::test_fix_me".to_string()]);
        assert_eq!(guard.tests(), 2, "test_c.py was cut: {guard:?}");
        assert_eq!((guard.left_out.failing, guard.left_out.timed_out, guard.left_out.not_run_files), (1, 1, 1));
        let failing = vec!["tests/test_a.py::test_fix_me".to_string()];
        let plan = guard.plan(&failing, 100.0, &|_| false);
        assert_eq!(plan.paths, ["tests/test_a.py", "tests/test_b.py"]);
        // `test_old` is a prefix of `test_old_but_fine`: that guard test is not expected.
        assert_eq!(plan.deselect, ["tests/test_a.py::test_net", "tests/test_b.py::test_old"]);
        assert_eq!(plan.expected.iter().collect::<Vec<_>>(), ["tests/test_a.py::test_ok"]);
    }

    #[test]
    fn a_guard_larger_than_the_time_left_keeps_the_failing_tests_files_and_importers_first() {
        let mut guard = Guard::default();
        let s = session(
            vec![
                result("t/test_x.py::test_fails", TestOutcome::Failed, 0.1),
                result("t/test_x.py::test_same_file", TestOutcome::Passed, 0.5),
                result("t/test_importer.py::test_i", TestOutcome::Passed, 1.0),
                result("t/test_other.py::test_o", TestOutcome::Passed, 0.5),
            ],
            true,
        );
        let failing = vec!["t/test_x.py::test_fails".to_string()];
        guard.absorb(&s, &failing);
        let plan = guard.plan(&failing, 1.6, &|f| f == "t/test_importer.py");
        assert_eq!(plan.paths, ["t/test_x.py", "t/test_importer.py"]);
        assert_eq!(plan.dropped, 1);
        assert_eq!(plan.guard_tests(), 2);
    }

    #[test]
    fn confirmation_fails_on_a_broken_guard_test_a_missing_one_or_a_new_collection_error() {
        let mut guard = Guard::default();
        let failing = vec!["t/test_x.py::test_fails".to_string()];
        let mut base = session(
            vec![
                result("t/test_x.py::test_fails", TestOutcome::Failed, 0.1),
                result("t/test_x.py::test_ok", TestOutcome::Passed, 0.1),
            ],
            true,
        );
        base.collect_errors.push(CollectError { nodeid: "t/broken".into(), message: "E   ImportError: no".into() });
        guard.absorb(&base, &failing);
        assert_eq!(guard.left_out.uncollectable, [("t/broken".to_string(), "ImportError: no".to_string())]);
        let plan = guard.plan(&failing, 10.0, &|_| false);
        let good = session(
            vec![
                result("t/test_x.py::test_fails", TestOutcome::Passed, 0.1),
                result("t/test_x.py::test_ok", TestOutcome::Passed, 0.1),
            ],
            true,
        );
        let mut with_old_error = good.clone();
        with_old_error.collect_errors = base.collect_errors.clone();
        assert_eq!(plan.failures(&with_old_error), None);
        let broke = session(
            vec![
                result("t/test_x.py::test_fails", TestOutcome::Passed, 0.1),
                result("t/test_x.py::test_ok", TestOutcome::Failed, 0.1),
            ],
            true,
        );
        assert_eq!(plan.failures(&broke), Some(vec!["t/test_x.py::test_ok".to_string()]));
        let missing = session(vec![result("t/test_x.py::test_fails", TestOutcome::Passed, 0.1)], true);
        assert!(plan.failures(&missing).is_some());
        let mut new_error = good;
        new_error.collect_errors.push(CollectError { nodeid: "t/test_y.py".into(), message: "E   SyntaxError".into() });
        assert!(plan.failures(&new_error).is_some());
    }
}
