//! Behavioural false-positive control: what a patched function returns on the tests' inputs (kinds of value, results per argument list) against what the buggy function returned.

use crate::project::Project;
use crate::pytest::{Pytest, RunSpec, Session, TestRun};
use crate::repair::candidate::Candidate;
use crate::repair::validate::{scratch_copy, LabError};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

/// Tests run to learn what a function returns (the failing ones first).
const MAX_TESTS: usize = 40;
/// The longest a check's pytest session may take.
const MAX_SESSION: Duration = Duration::from_secs(20);
/// Per-test limit of the run of the buggy function.
const BUGGY_PER_TEST: Duration = Duration::from_secs(2);

/// The function a candidate edits, as the plugin's `DEEPDEBUG_WATCH` names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Watched {
    /// `path.py:LINE`, LINE the code's first line (its first decorator's).
    pub key: String,
    pub file: String,
    /// Its 1-based lines, decorators included.
    pub lines: std::ops::RangeInclusive<usize>,
}

impl Watched {
    /// The innermost function around `candidate`'s edit (none for module-level code).
    #[must_use]
    pub fn of(project: &Project, candidate: &Candidate) -> Option<Watched> {
        let file = project.file(&candidate.patch.file)?;
        let def = crate::python::functions(&file.parsed)
            .into_iter()
            .filter(|d| d.contains_line(candidate.line))
            .min_by_key(|d| d.end_line - d.start_line)?;
        Some(Watched {
            key: format!("{}:{}", file.rel, def.start_line),
            file: file.rel.clone(),
            lines: def.start_line..=def.end_line,
        })
    }

    /// The tests whose inputs reach the function: `failing`, then the baseline's passing tests
    /// whose coverage enters it.
    #[must_use]
    pub fn tests(&self, baseline: &Session, failing: &[String]) -> Vec<String> {
        let reaching =
            baseline.tests.iter().filter(|t| t.outcome.is_ok()).filter(|t| {
                t.coverage.get(&self.file).is_some_and(|lines| lines.iter().any(|l| self.lines.contains(l)))
            });
        let mut tests: Vec<String> = failing.to_vec();
        tests.extend(reaching.map(|t| t.nodeid.clone()).filter(|id| !failing.contains(id)));
        tests.truncate(MAX_TESTS);
        tests
    }
}

/// The kind of value a type name stands for: numbers are one kind (`//` → `/` turns an int
/// into a float and may be the fix), every other type its own.
fn kind(type_name: &str) -> &str {
    match type_name {
        "int" | "float" | "complex" | "Decimal" | "Fraction" | "float64" | "int64" => "number",
        other => other,
    }
}

/// The kinds of value the watched function returned over `session`'s tests.
#[must_use]
pub fn returned(session: &Session, key: &str) -> BTreeSet<String> {
    (session.tests.iter())
        .flat_map(|t| t.returns.get(key).into_iter().flatten())
        .map(|name| kind(name).to_string())
        .collect()
}

/// Kinds of plain values: a function that returned only these is a function of values.
const SCALARS: [&str; 3] = ["bool", "number", "str"];

/// What a patched function returns that the buggy one never did on the same tests, where that
/// degrades it: `None` or a boolean from a function that returned only plain values (booleans,
/// numbers, strings), a list where it returned only tuples or the other way round.
/// Calibrated on the repair suite's hidden tests: a materialized iterable (`list(filter(..))`,
/// `sorted(keys)`) or a caller's sentinel object from a lookup (a cache miss) is how genuine
/// fixes look, so neither is new in this sense; nor is anything from a function that returned only
/// `None` (a fix may well start returning values) or was never seen returning.
#[must_use]
pub fn new_kinds(before: &BTreeSet<String>, after: &BTreeSet<String>) -> Vec<String> {
    let scalar = |k: &String| SCALARS.contains(&k.as_str());
    let of_values = !before.is_empty() && before.iter().all(scalar);
    let swapped = |k: &String| match k.as_str() {
        "list" => before.iter().all(|b| b == "tuple"),
        "tuple" => before.iter().all(|b| b == "list"),
        _ => false,
    };
    let degrades = |k: &String| (of_values && (k == "NoneType" || k == "bool")) || (!before.is_empty() && swapped(k));
    after.difference(before).filter(|k| degrades(k)).cloned().collect()
}

/// What the watched function returned per argument list over `session`'s tests (the first
/// value seen for each).
#[must_use]
pub fn values(session: &Session, key: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for calls in session.tests.iter().filter_map(|t| t.values.get(key)) {
        for (args, value) in calls {
            out.entry(args.clone()).or_insert_with(|| value.clone());
        }
    }
    out
}

/// Argument lists on which both functions returned, and how many of them got another value.
#[must_use]
pub fn changed_values(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> (usize, usize) {
    let common = before.iter().filter_map(|(args, value)| after.get(args).map(|v| v != value));
    common.fold((0, 0), |(n, changed), differs| (n + 1, changed + usize::from(differs)))
}

/// Lines of project code the failing tests ran, over all files (`failing` in `session`).
#[must_use]
pub fn lines_run(session: &Session, failing: &[String]) -> usize {
    let mut lines: BTreeSet<(&str, usize)> = BTreeSet::new();
    for test in session.tests.iter().filter(|t| failing.contains(&t.nodeid)) {
        for (file, covered) in &test.coverage {
            lines.extend(covered.iter().map(|&l| (file.as_str(), l)));
        }
    }
    lines.len()
}

/// Fewer lines than this run by the failing tests at baseline: too little code to tell a
/// skipped part from a shorter path.
const MIN_LINES_RUN: usize = 20;

/// What a patched function did differently from the buggy one on the tests' inputs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// Kinds of value it returned that the buggy one never did (see [`new_kinds`]).
    pub new_kinds: Vec<String>,
    /// Argument lists on which both returned, and those with another result.
    pub compared: usize,
    pub changed: usize,
    /// Lines of project code the failing tests ran at baseline and with the patch (`None`:
    /// not measured).
    pub lines_run: Option<(usize, usize)>,
}

impl Findings {
    /// The failing tests pass because most of the code they ran no longer runs: with the patch
    /// they run under half the lines they ran at baseline (a fix makes a test that failed run
    /// about as much code, or more: it gets past the failure).
    #[must_use]
    pub fn skips_code(&self) -> bool {
        self.lines_run.is_some_and(|(before, after)| before >= MIN_LINES_RUN && after * 2 < before)
    }

    /// For a patch whose failing tests all timed out at baseline: it changes what is computed
    /// (some call that the buggy function finished gets another result) rather than how fast.
    #[must_use]
    pub fn changes_results(&self) -> bool {
        self.changed > 0
    }
}

/// What one function did in one session.
#[derive(Debug, Clone)]
struct Observed {
    kinds: BTreeSet<String>,
    values: BTreeMap<String, String>,
    /// Lines the failing tests ran (patched runs only: they record coverage).
    lines_run: usize,
}

/// Runs the watched tests on the buggy project and on patched copies, remembering what the
/// buggy functions returned.
pub struct ReturnCheck<'a> {
    pytest: &'a Pytest,
    root: &'a Path,
    per_test: Duration,
    before: HashMap<String, Option<Observed>>,
}

/// The tests a behaviour check runs, and what they ran at baseline.
#[derive(Debug, Clone, Copy)]
pub struct Checked<'a> {
    /// The tests that reach the edited function.
    pub reaching: &'a [String],
    /// The originally failing tests among them.
    pub failing: &'a [String],
    /// The baseline session (with coverage): what the failing tests ran before.
    pub baseline: &'a Session,
}

impl<'a> ReturnCheck<'a> {
    #[must_use]
    pub fn new(pytest: &'a Pytest, root: &'a Path, per_test: Duration) -> ReturnCheck<'a> {
        ReturnCheck { pytest, root, per_test, before: HashMap::new() }
    }

    /// What `candidate`'s function does differently on the tests from the buggy one (nothing
    /// when there was no time to tell before `deadline`).
    ///
    /// # Errors
    /// When a scratch copy cannot be made or pytest cannot run.
    pub fn check(
        &mut self,
        candidate: &Candidate,
        watched: &Watched,
        tests: &Checked<'_>,
        deadline: Instant,
    ) -> Result<Findings, LabError> {
        let Checked { reaching, failing, baseline } = *tests;
        if reaching.is_empty() {
            return Ok(Findings::default());
        }
        if !self.before.contains_key(&watched.key) {
            let before = self.run(None, watched, (reaching, failing), deadline)?;
            self.before.insert(watched.key.clone(), before);
        }
        let Some(Some(before)) = self.before.get(&watched.key).cloned() else { return Ok(Findings::default()) };
        let Some(after) = self.run(Some(candidate), watched, (reaching, failing), deadline)? else {
            return Ok(Findings::default());
        };
        let (compared, changed) = changed_values(&before.values, &after.values);
        let lines_run = Some((lines_run(baseline, failing), after.lines_run));
        Ok(Findings { new_kinds: new_kinds(&before.kinds, &after.kinds), compared, changed, lines_run })
    }

    /// What the function did in a scratch copy (patched with `candidate`, if any); `None` when
    /// the session did not finish in time.
    fn run(
        &self,
        candidate: Option<&Candidate>,
        watched: &Watched,
        (tests, failing): (&[String], &[String]),
        deadline: Instant,
    ) -> Result<Option<Observed>, LabError> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left < Duration::from_secs(1) {
            return Ok(None);
        }
        let dir = scratch_copy(self.root, "deepdebug-returns-")?;
        if let Some(c) = candidate {
            std::fs::write(dir.path().join(&c.patch.file), &c.patched_text).map_err(LabError::Write)?;
        }
        // The buggy run only records: a test that hangs there says enough in a moment.
        let per_test = if candidate.is_none() { self.per_test.min(BUGGY_PER_TEST) } else { self.per_test };
        let run = TestRun { per_test_timeout: Some(per_test), ..TestRun::new(Some(tests), left.min(MAX_SESSION)) };
        let watch = [watched.key.clone()];
        // The patched run records coverage: what the failing tests still run.
        let spec = RunSpec { root: dir.path(), coverage: candidate.is_some(), run, deselect: &[], watch: &watch };
        let session = self.pytest.run(&spec)?;
        Ok((!session.exit.is_timeout()).then(|| Observed {
            kinds: returned(&session, &watched.key),
            values: values(&session, &watched.key),
            lines_run: lines_run(&session, failing),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| kind(n).to_string()).collect()
    }

    #[test]
    fn none_from_a_function_of_booleans_and_a_list_for_a_tuple_are_new() {
        assert_eq!(new_kinds(&set(&["bool"]), &set(&["bool", "NoneType"])), ["NoneType"]);
        assert_eq!(new_kinds(&set(&["tuple"]), &set(&["list"])), ["list"]);
        assert!(new_kinds(&set(&["bool"]), &set(&["bool"])).is_empty());
        assert!(new_kinds(&set(&["int", "NoneType"]), &set(&["int"])).is_empty(), "fewer kinds is fine");
    }

    #[test]
    fn numbers_are_one_kind_and_a_function_that_returned_only_none_may_start_returning() {
        assert!(new_kinds(&set(&["int"]), &set(&["float"])).is_empty(), "`//` → `/`");
        assert!(new_kinds(&set(&["NoneType"]), &set(&["bool"])).is_empty());
        assert!(new_kinds(&BTreeSet::new(), &set(&["bool"])).is_empty(), "never seen returning: no evidence");
        assert_eq!(new_kinds(&set(&["int"]), &set(&["bool"])), ["bool"], "a count became a truth value");
    }

    #[test]
    fn a_materialized_iterable_and_none_from_a_function_of_objects_are_how_fixes_look() {
        assert!(new_kinds(&set(&["filter"]), &set(&["list"])).is_empty(), "list(filter(..))");
        assert!(new_kinds(&set(&["dict_keys"]), &set(&["list"])).is_empty(), "sorted(d.keys())");
        assert!(new_kinds(&set(&["number", "str"]), &set(&["number", "object"])).is_empty(), "a miss's sentinel");
        assert!(new_kinds(&set(&["dict"]), &set(&["dict", "NoneType"])).is_empty(), "None from a function of objects");
        assert!(new_kinds(&set(&["tuple", "NoneType"]), &set(&["list"])).is_empty(), "not only tuples");
        assert_eq!(new_kinds(&set(&["str", "bool"]), &set(&["NoneType"])), ["NoneType"]);
        assert!(new_kinds(&set(&["str"]), &set(&["int"])).is_empty(), "int(text): a parse");
    }

    #[test]
    fn the_session_kinds_come_from_every_tests_record_of_the_key() {
        let test = |nodeid: &str, returns: serde_json::Value| -> crate::pytest::TestResult {
            serde_json::from_value(serde_json::json!({
                "nodeid": nodeid, "outcome": "passed", "duration": 0.0, "failure": null, "returns": returns
            }))
            .unwrap()
        };
        let mut session = Session::empty(crate::process::Exit::Success, Duration::ZERO);
        session.tests = vec![
            test("t.py::a", serde_json::json!({"m.py:3": ["int", "NoneType"], "m.py:9": ["str"]})),
            test("t.py::b", serde_json::json!({"m.py:3": ["float"]})),
        ];
        assert_eq!(returned(&session, "m.py:3"), set(&["number", "NoneType"]));
        assert!(returned(&session, "m.py:1").is_empty());
    }

    #[test]
    fn results_are_compared_on_the_argument_lists_both_functions_finished() {
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(a, v)| ((*a).to_string(), (*v).to_string())).collect()
        };
        let before = map(&[("(1,)", "1"), ("(2,)", "2"), ("(3,)", "3")]);
        assert_eq!(changed_values(&before, &map(&[("(2,)", "2"), ("(40,)", "9")])), (1, 0));
        assert_eq!(changed_values(&before, &map(&[("(2,)", "2"), ("(3,)", "4")])), (2, 1));
        assert_eq!(changed_values(&before, &BTreeMap::new()), (0, 0));
        assert!(!Findings::default().changes_results());
    }

    /// A candidate replacing `old` by `new` in `file` of `project`.
    fn candidate(project: &Project, file: &str, old: &str, new: &str) -> Candidate {
        use crate::patch::{Edit, Patch};
        let text = project.file(file).unwrap().parsed.text().to_string();
        let start = text.find(old).unwrap();
        let patch = Patch::single(file, Edit::replacement(start..start + old.len(), new));
        Candidate {
            id: crate::repair::candidate::CandidateId(0),
            patched_text: patch.apply(&text),
            patch,
            source: crate::repair::candidate::Provenance::LanguageModel,
            line: text[..start].matches('\n').count() + 1,
            description: String::new(),
            score: 1.0,
            edit_size: 1,
            deleted_calls: 0,
            focus: None,
        }
    }

    /// A project of `files` in a temporary directory, loaded, with the machine's pytest.
    fn python_project(files: &[(&str, &str)]) -> (tempfile::TempDir, Project, Pytest) {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let project = Project::load(dir.path()).unwrap();
        (dir, project, Pytest::new(Path::new("python3")).unwrap())
    }

    #[test]
    fn a_patch_that_returns_none_from_a_function_of_booleans_is_caught_on_the_tests_inputs() {
        let (dir, project, pytest) = python_project(&[
            (
                "shop.py",
                "import functools\n\n\n@functools.lru_cache(maxsize=None)\ndef discounted(total):\n    if total > 100:\n        return True\n    return True\n\n\ndef label(total):\n    return 'sale' if discounted(total) else 'full'\n",
            ),
            (
                "test_shop.py",
                "from shop import discounted, label\n\n\ndef test_big():\n    assert discounted(150)\n\n\ndef test_small():\n    assert not discounted(50)\n\n\ndef test_label():\n    assert label(200) == 'sale'\n",
            ),
        ]);
        let mut check = ReturnCheck::new(&pytest, dir.path(), Duration::from_secs(10));
        let deadline = Instant::now() + Duration::from_secs(120);
        let tests: Vec<String> =
            ["test_shop.py::test_small", "test_shop.py::test_big", "test_shop.py::test_label"].map(String::from).into();

        let last = "    return True\n\n\ndef label";
        let none = candidate(&project, "shop.py", last, "    return None\n\n\ndef label");
        let watched = Watched::of(&project, &none).expect("the edit is inside `discounted`");
        assert_eq!(watched.key, "shop.py:4", "the decorator's line, as co_firstlineno");
        let baseline =
            pytest.run(&RunSpec::baseline(dir.path(), Duration::from_secs(10), Duration::from_secs(60))).unwrap();
        let on = Checked { reaching: tests.as_slice(), failing: &tests[..1], baseline: &baseline };
        assert_eq!(check.check(&none, &watched, &on, deadline).unwrap().new_kinds, ["NoneType"]);

        let fixed = candidate(&project, "shop.py", last, "    return False\n\n\ndef label");
        assert!(check.check(&fixed, &watched, &on, deadline).unwrap().new_kinds.is_empty(), "False is a boolean too");
        assert!(Watched::of(&project, &candidate(&project, "shop.py", "import functools", "import os")).is_none());
    }

    #[test]
    fn a_patch_that_speeds_up_a_slow_test_by_computing_other_results_is_told_from_one_that_does_not() {
        let (dir, project, pytest) = python_project(&[
            ("stairs.py", "def ways(n):\n    if n <= 1:\n        return 1\n    return ways(n - 1) + ways(n - 2)\n"),
            ("test_stairs.py", "from stairs import ways\n\n\ndef test_many():\n    assert ways(70) > 10 ** 14\n"),
        ]);
        let mut check = ReturnCheck::new(&pytest, dir.path(), Duration::from_secs(5));
        let deadline = Instant::now() + Duration::from_secs(120);
        let tests = vec!["test_stairs.py::test_many".to_string()];
        let old = "    return ways(n - 1) + ways(n - 2)\n";
        let empty = Session::empty(crate::process::Exit::Success, Duration::ZERO);
        let on = Checked { reaching: tests.as_slice(), failing: tests.as_slice(), baseline: &empty };

        // Fast and wrong: the small calls the buggy function finished now return other values.
        let wrong = candidate(&project, "stairs.py", old, "    return ways(n - 1) * 2\n");
        let watched = Watched::of(&project, &wrong).unwrap();
        let findings = check.check(&wrong, &watched, &on, deadline).unwrap();
        assert!(findings.changes_results() && findings.compared > 10, "{findings:?}");

        // Fast and right (memoized): every call both finished returns what it did.
        let def = "def ways(n):";
        let right = candidate(&project, "stairs.py", def, "@__import__('functools').lru_cache(None)\ndef ways(n):");
        let findings = check.check(&right, &watched, &on, deadline).unwrap();
        assert!(!findings.changes_results() && findings.compared > 10, "{findings:?}");
    }

    /// A checker of every line of every file under a directory, and a failing test of the whole.
    const LINTER: &str = "import os\n\n\ndef check_line(line):\n    problems = []\n    if line.endswith(' '):\n        problems.append('trailing space')\n    if '\\t' in line:\n        problems.append('tab')\n    if len(line) > 20:\n        problems.append('long')\n    return problems\n\n\ndef check_file(path):\n    found = []\n    with open(path) as f:\n        for number, line in enumerate(f, 1):\n            line = line.rstrip('\\n')\n            for problem in check_line(line):\n                found.append((number, problem))\n    return found\n\n\ndef check_dir(root):\n    found = {}\n    for name in sorted(os.listdir(root)):\n        path = os.path.join(root, name)\n        if os.path.isdir(path):\n            found.update(check_dir(path))\n        else:\n            found[name] = check_file(path)\n    return found\n\n\ndef count(root):\n    total = 0\n    for problems in check_dir(root).values():\n        total += len(problems)\n    return total\n";

    #[test]
    fn a_patch_that_makes_the_failing_test_skip_the_code_it_tested_is_caught() {
        let test = "import os\nfrom lint import count\n\nHERE = os.path.dirname(__file__)\n\n\ndef test_count():\n    assert count(os.path.join(HERE, 'data')) == 2\n";
        let (dir, project, pytest) = python_project(&[("lint.py", LINTER), ("test_lint.py", test)]);
        std::fs::create_dir_all(dir.path().join("data/sub")).unwrap();
        std::fs::write(dir.path().join("data/a.txt"), "ok\nwith a tab\there\n").unwrap();
        std::fs::write(dir.path().join("data/sub/b.txt"), "a line that is far too long\nfine \n").unwrap();
        let baseline =
            pytest.run(&RunSpec::baseline(dir.path(), Duration::from_secs(10), Duration::from_secs(60))).unwrap();
        let failing = vec!["test_lint.py::test_count".to_string()];
        assert!(baseline.test(&failing[0]).is_some_and(|t| !t.outcome.is_ok()), "4 problems, not 2");
        let mut check = ReturnCheck::new(&pytest, dir.path(), Duration::from_secs(10));
        let deadline = Instant::now() + Duration::from_secs(120);
        let on = Checked { reaching: failing.as_slice(), failing: failing.as_slice(), baseline: &baseline };

        // Skipping subdirectories counts 2 (and tests almost nothing): skipped code.
        let from = "            found.update(check_dir(path))\n";
        let skip = candidate(&project, "lint.py", from, "            continue\n");
        let watched = Watched::of(&project, &skip).unwrap();
        let findings = check.check(&skip, &watched, &on, deadline).unwrap();
        assert!(!findings.skips_code(), "the subdirectory's file was a third of the lines: {findings:?}");
        // Checking nothing at all: the test no longer runs the checker.
        let from = "        problems.append('long')\n    return problems\n";
        let nothing =
            candidate(&project, "lint.py", from, "        problems.append('long')\n    return problems[:0]\n");
        let from = "    for problems in check_dir(root).values():\n        total += len(problems)\n    return total\n";
        let evade = candidate(&project, "lint.py", from, "    return 2\n");
        let watched = Watched::of(&project, &evade).unwrap();
        let findings = check.check(&evade, &watched, &on, deadline).unwrap();
        assert!(findings.skips_code(), "{findings:?}");
        let watched = Watched::of(&project, &nothing).unwrap();
        let findings = check.check(&nothing, &watched, &on, deadline).unwrap();
        assert!(!findings.skips_code(), "the same code runs, with another result: {findings:?}");
    }
}
