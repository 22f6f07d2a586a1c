//! Run pytest with the embedded deepdebug plugin and read its JSON-lines report.

pub mod server;

use crate::io_error::io_err;
use crate::process::{self, Exit, Limits};
use crate::sandbox::{Job, Sandbox, SandboxError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The pytest plugin, shipped inside the binary and written to a temp dir at run time (after
/// the value reprs it shares with the other embedded scripts).
pub const PLUGIN_SOURCE: &str = concat!(include_str!("../python_shared/values.py"), include_str!("plugin.py"));
const PLUGIN_MODULE: &str = "deepdebug_plugin";

/// Errors that stop a pytest run from producing a report at all.
#[derive(Debug, thiserror::Error)]
pub enum PytestError {
    #[error("python interpreter `{0}` was not found or cannot run")]
    PythonMissing(String),
    #[error("pytest is not installed for `{python}` (install it with `{python} -m pip install pytest`)")]
    PytestMissing { python: String },
    #[error("python interpreter `{python}` did not answer within {seconds}s (a heavily loaded machine, or a hanging sitecustomize)")]
    PythonUnresponsive { python: String, seconds: u64 },
    #[error("the fork server is unavailable: {0}")]
    ServerUnavailable(String),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(transparent)]
    Io(#[from] crate::io_error::IoError),
}

/// Outcome of one test, merged over its setup, call and teardown phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestOutcome {
    Passed,
    Failed,
    /// Failed in setup or teardown (fixture error).
    Error,
    Skipped,
    /// Interrupted by the per-test timeout.
    Timeout,
}

impl TestOutcome {
    /// Passed or skipped: nothing to repair here.
    #[must_use]
    pub fn is_ok(self) -> bool {
        matches!(self, TestOutcome::Passed | TestOutcome::Skipped)
    }
}

/// One traceback frame, with locals for frames in the project.
#[derive(Debug, Clone, Deserialize)]
pub struct Frame {
    pub file: String,
    pub line: usize,
    pub function: String,
    pub in_project: bool,
    #[serde(default)]
    pub locals: BTreeMap<String, String>,
}

/// Why a test failed.
#[derive(Debug, Clone, Deserialize)]
pub struct Failure {
    pub when: String,
    /// The exception's type name (`DeepdebugTimeout` / `DeepdebugCpuTimeout` for the limits).
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    pub frames: Vec<Frame>,
    /// Which of the plugin's limits stopped the test (`None`: it failed on its own).
    #[serde(default)]
    pub limit: Option<TestLimit>,
}

/// A per-test limit the plugin enforces (its `DeepdebugTimeout` / `DeepdebugCpuTimeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestLimit {
    /// The wall-clock limit.
    Wall,
    /// The CPU-time limit.
    Cpu,
}

/// A project function called while a line of the test function ran (value flow).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct FlowCall {
    /// 1-based line of the test function that was running.
    pub line: usize,
    /// Path of the called function's file, relative to the project root.
    pub file: String,
    /// The called function's name (`co_name`).
    pub function: String,
    /// Its code's first line (`co_firstlineno`: the first decorator's line when decorated).
    pub first_line: usize,
    /// Frames from the test function down to it: 1 for a direct callee.
    pub depth: usize,
}

/// For a failing test run with coverage: the project functions each line of the test called.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Flow {
    /// The test function's line when it returned or raised (`None` when it never ran).
    pub last_line: Option<usize>,
    /// Shallowest first.
    pub calls: Vec<FlowCall>,
}

/// The report for one test.
#[derive(Debug, Clone, Deserialize)]
pub struct TestResult {
    pub nodeid: String,
    pub outcome: TestOutcome,
    pub duration: f64,
    /// CPU time of the test's process (seconds) while it ran.
    #[serde(default)]
    pub cpu: f64,
    pub failure: Option<Failure>,
    /// Lines executed, by path relative to the project root (present with coverage on).
    #[serde(default)]
    pub coverage: BTreeMap<String, Vec<usize>>,
    /// Value flow of a failing test (present with coverage on).
    #[serde(default)]
    pub flow: Option<Flow>,
    /// Type names each watched function returned while the test ran (see [`RunSpec::watch`]).
    #[serde(default)]
    pub returns: BTreeMap<String, Vec<String>>,
    /// Per watched function, the repr of what it returned per repr of its arguments (argument
    /// lists whose repr is long or holds an address are left out).
    #[serde(default)]
    pub values: BTreeMap<String, BTreeMap<String, String>>,
}

/// A file or module pytest could not collect (often a syntax or import error).
#[derive(Debug, Clone, Deserialize)]
pub struct CollectError {
    pub nodeid: String,
    pub message: String,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum Record {
    Test(Box<TestResult>),
    CollectError(CollectError),
    SessionFinish {
        exitstatus: i32,
    },
    /// Lines executed while collecting (imports), with coverage on.
    CollectCoverage {
        coverage: BTreeMap<String, Vec<usize>>,
    },
    /// Written by fork-server children: `warm` (hot-swapped) or `cold` (fresh session), and
    /// for a cold one why it was not hot-swapped.
    EnginePath {
        path: String,
        #[serde(default)]
        why: Option<String>,
    },
}

/// Everything one pytest session reported.
#[derive(Debug, Clone)]
pub struct Session {
    pub tests: Vec<TestResult>,
    pub collect_errors: Vec<CollectError>,
    /// pytest's own exit status, when the session finished normally.
    pub exit_status: Option<i32>,
    /// How the process ended (timeouts are enforced on the whole process group).
    pub exit: Exit,
    pub elapsed: Duration,
    /// The tail of pytest's console output, for error messages.
    pub output_tail: String,
    /// For fork-server sessions: whether the child hot-swapped code (`true`) or re-collected.
    pub warm: Option<bool>,
    /// For a fork-server session run cold: the server's name for why (`forkserver.py`).
    pub cold_why: Option<String>,
    /// Lines executed at collection time (module imports), with coverage on.
    pub collect_coverage: BTreeMap<String, Vec<usize>>,
}

impl Session {
    pub(crate) fn empty(exit: Exit, elapsed: Duration) -> Session {
        Session {
            tests: Vec::new(),
            collect_errors: Vec::new(),
            exit_status: None,
            exit,
            elapsed,
            output_tail: String::new(),
            warm: None,
            cold_why: None,
            collect_coverage: BTreeMap::new(),
        }
    }

    /// Add the records of a JSON-lines report. A line cut short by a kill is dropped.
    pub(crate) fn absorb(&mut self, report: &str) {
        for line in report.lines() {
            match serde_json::from_str::<Record>(line) {
                Ok(Record::Test(t)) => self.tests.push(*t),
                Ok(Record::CollectError(e)) => self.collect_errors.push(e),
                Ok(Record::SessionFinish { exitstatus }) => self.exit_status = Some(exitstatus),
                Ok(Record::EnginePath { path, why }) => {
                    self.warm = Some(path == "warm");
                    self.cold_why = why.filter(|_| path != "warm");
                }
                Ok(Record::CollectCoverage { coverage }) => self.collect_coverage = coverage,
                Err(_) => {}
            }
        }
    }

    /// Tests that did not pass (failed, errored or timed out).
    pub fn failing(&self) -> impl Iterator<Item = &TestResult> {
        self.tests.iter().filter(|t| !t.outcome.is_ok())
    }

    #[must_use]
    pub fn test(&self, nodeid: &str) -> Option<&TestResult> {
        self.tests.iter().find(|t| t.nodeid == nodeid)
    }
}

/// One test session: which tests, and under which limits. Both engines run it, a pytest
/// process through [`RunSpec`] and a fork server's child through [`server::Request`] (which
/// serializes it as the server reads it); "no limit" is `None` in both.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TestRun<'a> {
    /// Node ids or paths to pass to pytest; `None` runs the whole suite (every test a fork
    /// server collected), as does an empty list in a pytest process.
    #[serde(rename = "nodeids")]
    pub tests: Option<&'a [String]>,
    /// Stop at the first failure (`-x`).
    pub exit_first: bool,
    /// Per-test wall-clock limit enforced inside pytest.
    #[serde(rename = "timeout", serialize_with = "serialize_limit")]
    pub per_test_timeout: Option<Duration>,
    /// Per-test CPU-time limit enforced inside pytest (busy loops are caught after this much
    /// CPU, whatever the machine's load).
    #[serde(rename = "cpu", serialize_with = "serialize_limit")]
    pub per_test_cpu: Option<Duration>,
    /// Limit for the whole session (a pytest process's group, a fork server's child).
    #[serde(rename = "deadline", serialize_with = "serialize_seconds")]
    pub session_timeout: Duration,
}

impl<'a> TestRun<'a> {
    /// `tests` (`None`: the whole suite) without per-test limits, not stopping at a failure.
    #[must_use]
    pub fn new(tests: Option<&'a [String]>, session_timeout: Duration) -> TestRun<'a> {
        TestRun { tests, exit_first: false, per_test_timeout: None, per_test_cpu: None, session_timeout }
    }

    /// The node ids or paths a pytest process is given (none: the whole suite).
    fn selectors(&self) -> &'a [String] {
        self.tests.unwrap_or(&[])
    }
}

fn serialize_limit<S: serde::Serializer>(limit: &Option<Duration>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(limit_seconds(*limit))
}

fn serialize_seconds<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64())
}

/// A [`TestRun`] as one pytest process in a project directory.
#[derive(Debug, Clone, Copy)]
pub struct RunSpec<'a> {
    /// Project directory (pytest's working directory and coverage root).
    pub root: &'a Path,
    pub coverage: bool,
    pub run: TestRun<'a>,
    /// Node ids pytest leaves out (`--deselect`): tests known to fail or hang at baseline in
    /// the files a guard run names.
    pub deselect: &'a [String],
    /// Functions (`path.py:LINE`, LINE its code's first line) whose return types each test
    /// records in [`TestResult::returns`].
    pub watch: &'a [String],
}

/// The hash seed of every pytest process: the caller's `PYTHONHASHSEED` when it is set to a
/// number, else 0 (runs that repeat; `random` would make outcomes differ from run to run).
#[must_use]
pub fn hash_seed() -> String {
    std::env::var("PYTHONHASHSEED")
        .ok()
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or_else(|| "0".to_string())
}

/// The environment every pytest process gets (sessions and fork servers): the plugin on the
/// path, no bytecode files, a fixed hash seed ([`hash_seed`]), the coverage root and switch.
pub(crate) fn session_env(plugin_dir: &Path, root: &Path, coverage: bool) -> Vec<(String, OsString)> {
    vec![
        ("PYTHONPATH".into(), pythonpath(plugin_dir)),
        ("PYTHONDONTWRITEBYTECODE".into(), "1".into()),
        ("PYTHONHASHSEED".into(), hash_seed().into()),
        ("DEEPDEBUG_ROOT".into(), root.as_os_str().to_owned()),
        ("DEEPDEBUG_COVERAGE".into(), if coverage { "1" } else { "0" }.into()),
    ]
}

impl<'a> RunSpec<'a> {
    /// The whole suite with coverage and a per-test wall-clock limit: a baseline run.
    #[must_use]
    pub fn baseline(root: &'a Path, per_test_timeout: Duration, session_timeout: Duration) -> RunSpec<'a> {
        let run = TestRun { per_test_timeout: Some(per_test_timeout), ..TestRun::new(None, session_timeout) };
        RunSpec { root, coverage: true, run, deselect: &[], watch: &[] }
    }

    /// The same run of `selectors` only (node ids or paths; empty: the whole suite).
    #[must_use]
    pub fn of(mut self, selectors: &'a [String]) -> RunSpec<'a> {
        self.run.tests = Some(selectors);
        self
    }
}

/// A Python interpreter with pytest and the deepdebug plugin available, in a sandbox.
pub struct Pytest {
    python: PathBuf,
    plugin_dir: tempfile::TempDir,
    /// The user's checkout (absolute), readable in the sandbox for its virtualenv's paths.
    origin: Option<PathBuf>,
    limits: Limits,
    sandbox: Arc<Sandbox>,
}

impl Pytest {
    /// Check that `python` runs and can import pytest, and install the plugin in a temp dir.
    /// Sessions run without a sandbox (rlimits and process groups only).
    ///
    /// # Errors
    /// [`PytestError::PythonMissing`] or [`PytestError::PytestMissing`] when the environment is unusable.
    pub fn new(python: &Path) -> Result<Pytest, PytestError> {
        Pytest::with_sandbox(python, Arc::new(Sandbox::none()))
    }

    /// Like [`Pytest::new`], with every session (the probe included) run in `sandbox`. In a
    /// container, a host interpreter path is replaced by the image's `python3`.
    ///
    /// # Errors
    /// As [`Pytest::new`]; [`PytestError::Sandbox`] when the container cannot run.
    pub fn with_sandbox(python: &Path, sandbox: Arc<Sandbox>) -> Result<Pytest, PytestError> {
        Pytest::in_dir(python, sandbox, None)
    }

    /// [`Pytest::with_sandbox`], probing the interpreter in `dir` (the project) when given: a
    /// version manager's shim (`.../shims/python3`) picks the interpreter by directory. A shim
    /// is then replaced by the interpreter it chose, so that later sessions do not pay for the
    /// shim (about 0.15 s per process with pyenv).
    ///
    /// # Errors
    /// As [`Pytest::with_sandbox`].
    pub fn in_dir(python: &Path, sandbox: Arc<Sandbox>, dir: Option<&Path>) -> Result<Pytest, PytestError> {
        let python = if sandbox.is_container() { crate::sandbox::docker::image_python(python) } else { python };
        let plugin_dir = tempfile::Builder::new()
            .prefix("deepdebug-plugin-")
            .tempdir()
            .map_err(io_err("create the plugin directory"))?;
        std::fs::write(plugin_dir.path().join(format!("{PLUGIN_MODULE}.py")), PLUGIN_SOURCE)
            .map_err(io_err("write the pytest plugin"))?;
        let origin = dir.map(crate::sandbox::absolute);
        if let Some(origin) = &origin {
            // The plugin moves imports that an editable install points into the checkout to
            // the scratch copy (see `_follow_the_copy` in plugin.py).
            std::fs::write(plugin_dir.path().join("deepdebug_origin"), origin.as_os_str().as_encoded_bytes())
                .map_err(io_err("write the plugin's origin file"))?;
        }
        let display = python.display().to_string();
        let mut probe = Job {
            program: python,
            args: vec!["-c".into(), PROBE.into()],
            source: dir.unwrap_or(plugin_dir.path()),
            read_only: Vec::new(),
            writable: Vec::new(),
            env: Vec::new(),
            timeout: Duration::from_secs(60),
            limits: Limits::default(),
            capture_dir: plugin_dir.path(),
        };
        // A loaded machine may start an interpreter slowly: one more, longer try before
        // saying anything about it, and never that pytest is missing.
        let mut attempt = sandbox.run(&probe);
        if attempt.as_ref().is_ok_and(|out| out.exit.is_timeout()) {
            probe.timeout = PROBE_RETRY_TIMEOUT;
            attempt = sandbox.run(&probe);
        }
        let out = match attempt {
            Ok(out) if out.exit.is_timeout() => {
                return Err(PytestError::PythonUnresponsive { python: display, seconds: PROBE_RETRY_TIMEOUT.as_secs() })
            }
            Ok(out) => out,
            Err(err) if sandbox.is_container() && !matches!(err, SandboxError::ProgramNotFound { .. }) => {
                return Err(err.into())
            }
            Err(_) => return Err(PytestError::PythonMissing(display)),
        };
        match out.exit {
            Exit::Success => {}
            Exit::Failure(PROBE_NO_PYTEST) => return Err(PytestError::PytestMissing { python: display }),
            _ => return Err(PytestError::PythonMissing(display)),
        }
        let chosen = PathBuf::from(out.stdout.lines().last().unwrap_or_default().trim());
        let python = if dir.is_some()
            && !sandbox.is_container()
            && is_shim(python)
            && chosen.is_absolute()
            && chosen.is_file()
        {
            chosen
        } else {
            python.to_path_buf()
        };
        Ok(Pytest { python, plugin_dir, origin, limits: Limits::default(), sandbox })
    }

    /// The sandbox sessions run in.
    #[must_use]
    pub fn sandbox(&self) -> &Arc<Sandbox> {
        &self.sandbox
    }

    #[must_use]
    pub fn python(&self) -> &Path {
        &self.python
    }

    /// Start a fork server for the project copy at `root` (see [`server::ForkServer`]): a
    /// local process, or one long-lived container under Docker.
    ///
    /// # Errors
    /// When the server cannot start or become ready; run sessions with [`Pytest::run`] instead.
    pub fn fork_server(
        &self,
        root: &Path,
        selectors: &[String],
        startup_timeout: Duration,
    ) -> Result<server::ForkServer, PytestError> {
        server::ForkServer::start(
            &self.python,
            self.plugin_dir.path(),
            root,
            selectors,
            startup_timeout,
            &self.sandbox,
            self.origin.as_deref(),
        )
    }

    /// Start a fork server for `root` without waiting for it to collect the suite (see
    /// [`server::ForkServer::wait_ready`]).
    ///
    /// # Errors
    /// When the server process (or container) cannot be started.
    pub fn spawn_fork_server(&self, root: &Path, selectors: &[String]) -> Result<server::ForkServer, PytestError> {
        server::ForkServer::spawn(
            &self.python,
            self.plugin_dir.path(),
            root,
            selectors,
            &self.sandbox,
            self.origin.as_deref(),
        )
    }

    /// Run one pytest session. A session that crashes, hangs or collects nothing still returns
    /// what was reported before it stopped.
    ///
    /// # Errors
    /// Only when the process cannot be started or the report file cannot be created.
    pub fn run(&self, spec: &RunSpec<'_>) -> Result<Session, PytestError> {
        // The report goes to a directory of its own: the only one a container may write.
        let run_dir = tempfile::Builder::new()
            .prefix("deepdebug-run-")
            .tempdir()
            .map_err(io_err("create the report directory"))?;
        let report = run_dir.path().join("report.jsonl");
        let mut args: Vec<OsString> = ["-m", "pytest", "-p", PLUGIN_MODULE, "-p", "no:cacheprovider", "-q"]
            .into_iter()
            .chain(["--tb=no", "--no-header", "-rN", "-W", "ignore::DeprecationWarning"])
            .chain(TOLERANT_ARGS)
            .map(OsString::from)
            .collect();
        if spec.run.exit_first {
            args.push("-x".into());
        }
        for id in spec.deselect {
            args.push("--deselect".into());
            args.push(id.into());
        }
        args.extend(spec.run.selectors().iter().map(OsString::from));
        let mut env = session_env(self.plugin_dir.path(), spec.root, spec.coverage);
        env.extend([
            ("DEEPDEBUG_REPORT".into(), report.clone().into_os_string()),
            ("DEEPDEBUG_TEST_TIMEOUT".into(), limit_seconds(spec.run.per_test_timeout).to_string().into()),
            ("DEEPDEBUG_TEST_CPU".into(), limit_seconds(spec.run.per_test_cpu).to_string().into()),
        ]);
        if !spec.watch.is_empty() {
            env.push(("DEEPDEBUG_WATCH".into(), spec.watch.join(",").into()));
        }
        let job = Job {
            program: &self.python,
            args,
            source: spec.root,
            // The checkout too: its virtualenv may point there (see `_follow_the_copy`).
            read_only: [Some(self.plugin_dir.path()), self.origin.as_deref()].into_iter().flatten().collect(),
            // Sessions run in scratch copies: tests may write beside themselves, as they would
            // in the user's checkout.
            writable: vec![run_dir.path(), spec.root],
            env,
            timeout: spec.run.session_timeout,
            limits: self.limits,
            capture_dir: run_dir.path(),
        };
        let out = match self.sandbox.run(&job) {
            Ok(out) => out,
            Err(SandboxError::Io(e)) => return Err(PytestError::Io(e)),
            Err(err) => return Err(err.into()),
        };
        let mut session = Session::empty(out.exit, out.elapsed);
        session.output_tail = tail(&format!("{}{}", out.stdout, out.stderr), 3000);
        session.absorb(&process::read_lossy(&report));
        Ok(session)
    }
}

/// Arguments every session gets (the fork server's too): a module that cannot be collected
/// does not stop the rest of the suite (pytest would run nothing), and a project's own `-x` or
/// `--maxfail` in `addopts` does not end a baseline at its first failure (our `-x` comes after).
pub(crate) const TOLERANT_ARGS: [&str; 2] = ["--continue-on-collection-errors", "--maxfail=0"];

/// The second, longer try of the interpreter probe (the first allows 60 s).
const PROBE_RETRY_TIMEOUT: Duration = Duration::from_secs(180);

/// Exit status of [`PROBE`] when the interpreter has no pytest.
const PROBE_NO_PYTEST: i32 = 3;

/// Checks an interpreter: prints its executable, or exits with [`PROBE_NO_PYTEST`].
const PROBE: &str =
    "import sys\ntry:\n    import pytest\nexcept ModuleNotFoundError:\n    sys.exit(3)\nprint(sys.executable)\n";

/// A per-test limit as the plugin reads it, by either engine: seconds, `0` for none.
pub(crate) fn limit_seconds(limit: Option<Duration>) -> f64 {
    limit.map_or(0.0, |t| t.as_secs_f64())
}

/// `PYTHONPATH` with the plugin directory first.
fn pythonpath(plugin_dir: &Path) -> std::ffi::OsString {
    let mut path = plugin_dir.as_os_str().to_owned();
    if let Some(existing) = std::env::var_os("PYTHONPATH") {
        path.push(":");
        path.push(existing);
    }
    path
}

fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}

/// A pytest runner for the project at `root`, running in a `kind` sandbox: `python` if given,
/// else the project's virtualenv (the image's python3 inside a container). Also returns the
/// sandbox's warning for the user, if any.
///
/// # Errors
/// When the sandbox cannot be set up or Python/pytest are unusable.
pub fn for_project(
    root: &Path,
    python: Option<&Path>,
    kind: crate::sandbox::SandboxKind,
    docker: &crate::sandbox::DockerConfig,
) -> Result<(Pytest, Option<String>), PytestError> {
    let sandbox = crate::sandbox::Sandbox::new(kind, docker)?;
    let warning = sandbox.warning().map(str::to_string);
    // A host virtualenv does not exist in a container: the image's python3 runs there.
    let python = match (python, sandbox.is_container()) {
        (Some(python), _) => python.to_path_buf(),
        (None, true) => PathBuf::from(crate::sandbox::docker::IMAGE_PYTHON),
        (None, false) => default_python(root),
    };
    Ok((Pytest::in_dir(&python, std::sync::Arc::new(sandbox), Some(root))?, warning))
}

/// Whether `python` (a path, or a name looked up on `PATH`) is a version manager's shim
/// (pyenv, asdf, ...): a script in a `shims` directory that picks an interpreter per directory.
fn is_shim(python: &Path) -> bool {
    let found = if python.components().count() > 1 {
        Some(python.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path).map(|dir| dir.join(python)).find(|candidate| candidate.is_file())
        })
    };
    found.is_some_and(|path| path.parent().and_then(Path::file_name).is_some_and(|name| name == "shims"))
}

/// The Python interpreter to use for `root`: its virtualenv when it has one, else `python3`.
#[must_use]
pub fn default_python(root: &Path) -> PathBuf {
    for venv in [".venv", "venv", "env"] {
        let candidate = root.join(venv).join("bin").join("python");
        if candidate.is_file() {
            return candidate;
        }
    }
    PathBuf::from("python3")
}

/// pytest's own complaint about its command line (`pytest: error: unrecognized arguments: …`),
/// found in its console output.
pub fn usage_error(tail: &str) -> Option<String> {
    let line = tail.lines().find(|l| {
        l.contains("error: ") && (l.contains("arguments") || l.contains("argument ") || l.contains("usage"))
    })?;
    let message = line.split_once("error: ").map_or(line, |(_, m)| m).trim();
    Some(message.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole suite without coverage, under a wall-clock limit of 5 s and `cpu` per test.
    fn cpu_limited(root: &Path, cpu: Duration) -> RunSpec<'_> {
        let mut spec = RunSpec::baseline(root, Duration::from_secs(5), Duration::from_secs(60));
        spec.coverage = false;
        spec.run.per_test_cpu = Some(cpu);
        spec
    }

    #[test]
    fn pytests_complaint_about_unknown_options_is_found_in_its_output() {
        let tail = "ERROR: usage: pytest [options] [file_or_dir] [file_or_dir] [...]\npytest: error: unrecognized arguments: --cov=semver\n  inifile: /tmp/x/setup.cfg\n  rootdir: /tmp/x\n";
        assert_eq!(usage_error(tail).as_deref(), Some("unrecognized arguments: --cov=semver"));
        assert_eq!(usage_error("no tests ran in 0.01s\n"), None);
        assert_eq!(usage_error("E   AssertionError: error: bad value\n"), None);
    }

    #[test]
    fn after_one_hang_later_tests_get_a_shorter_limit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("test_hang.py"),
            "import pytest, time\n\ndef test_quick():\n    assert True\n\n@pytest.mark.parametrize('n', range(4))\ndef test_spin(n):\n    while True:\n        pass\n",
        )
        .unwrap();
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        let session =
            pytest.run(&RunSpec::baseline(dir.path(), Duration::from_secs(3), Duration::from_secs(60))).unwrap();
        let hung: Vec<&TestResult> = session.tests.iter().filter(|t| t.outcome == TestOutcome::Timeout).collect();
        assert_eq!(hung.len(), 4, "{:?}", session.tests);
        assert!(hung[0].duration >= 2.9, "{}", hung[0].duration);
        for t in &hung[1..] {
            assert!(t.duration < 1.5, "{}: {}", t.nodeid, t.duration);
        }
        assert_eq!(session.test("test_hang.py::test_quick").unwrap().outcome, TestOutcome::Passed);
    }

    #[test]
    fn a_shim_is_resolved_to_the_interpreter_it_picks_and_other_wrappers_are_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        for folder in ["shims", "bin"] {
            let script = dir.path().join(folder).join("python3");
            std::fs::create_dir_all(script.parent().unwrap()).unwrap();
            std::fs::write(&script, "#!/bin/sh\nexec python3 \"$@\"\n").unwrap();
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let sandbox = || Arc::new(Sandbox::none());
        let shim = dir.path().join("shims/python3");
        let resolved = Pytest::in_dir(&shim, sandbox(), Some(dir.path())).unwrap();
        assert_ne!(resolved.python(), shim.as_path());
        assert!(resolved.python().is_absolute() && resolved.python().is_file(), "{}", resolved.python().display());
        // Without a project directory, or for a wrapper that is not a shim, the path stays.
        assert_eq!(Pytest::in_dir(&shim, sandbox(), None).unwrap().python(), shim.as_path());
        let wrapper = dir.path().join("bin/python3");
        assert_eq!(Pytest::in_dir(&wrapper, sandbox(), Some(dir.path())).unwrap().python(), wrapper.as_path());
    }

    #[test]
    fn a_test_stopped_inside_a_loop_keeps_its_frames() {
        // A signal can land on an instruction without a line number (tb_lineno is None):
        // the record must still parse, with the frame's line.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("grow.py"),
            "def grow(xs):\n    out = []\n    for x in xs:\n        if x > 0:\n            xs.append(x)\n    return out\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("test_grow.py"),
            "from grow import grow\n\ndef test_grow():\n    assert grow([0, 3, 7]) == [3, 7]\n",
        )
        .unwrap();
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        for _ in 0..3 {
            let session = pytest.run(&cpu_limited(dir.path(), Duration::from_millis(50))).unwrap();
            let grow =
                session.test("test_grow.py::test_grow").unwrap_or_else(|| panic!("no record: {}", session.output_tail));
            assert_eq!(grow.outcome, TestOutcome::Timeout);
            let frames = &grow.failure.as_ref().unwrap().frames;
            let inner = frames.iter().find(|f| f.function == "grow").unwrap();
            assert!((3..=5).contains(&inner.line), "{frames:?}");
        }
    }

    #[test]
    fn the_cpu_limit_stops_busy_loops_but_not_tests_that_wait() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("test_cpu.py"),
            "import time\n\ndef test_spin():\n    while True:\n        pass\n\ndef test_sleep():\n    time.sleep(0.4)\n\ndef test_quick():\n    assert sum(range(1000)) > 0\n",
        )
        .unwrap();
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        let session = pytest.run(&cpu_limited(dir.path(), Duration::from_millis(100))).unwrap();
        let spin = session.test("test_cpu.py::test_spin").unwrap();
        assert_eq!(spin.outcome, TestOutcome::Timeout, "{:?}", session.tests);
        assert_eq!(spin.failure.as_ref().and_then(|f| f.limit), Some(TestLimit::Cpu), "{spin:?}");
        // Caught after about 0.1 s of CPU, long before the 5 s wall-clock limit.
        assert!(spin.duration < 2.0, "{}", spin.duration);
        // The limit counts the CPU of the whole test protocol (setup included); the call
        // phase alone may show a little less.
        assert!(spin.cpu >= 0.05, "{}", spin.cpu);
        let sleep = session.test("test_cpu.py::test_sleep").unwrap();
        assert_eq!(sleep.outcome, TestOutcome::Passed, "sleeping uses no CPU: {sleep:?}");
        assert!(sleep.duration >= 0.4 && sleep.cpu < 0.1, "{sleep:?}");
        assert_eq!(session.test("test_cpu.py::test_quick").unwrap().outcome, TestOutcome::Passed);
    }

    #[test]
    fn failing_tests_record_the_project_functions_each_test_line_called() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("shop")).unwrap();
        std::fs::write(dir.path().join("shop/__init__.py"), "").unwrap();
        std::fs::write(
            dir.path().join("shop/cart.py"),
            "from shop.pricing import discount\n\nclass Cart:\n    def __init__(self):\n        self.items = []\n\n    def add(self, price):\n        self.items.append(price)\n        return self\n\n    @property\n    def total(self):\n        gross = sum(p for p in self.items)\n        return gross - discount(gross)\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("shop/pricing.py"), "def discount(amount):\n    return amount // 5\n").unwrap();
        std::fs::write(
            dir.path().join("test_cart.py"),
            "import pytest\nfrom shop.cart import Cart\n\n@pytest.mark.parametrize('price', [100, 0])\ndef test_total(price):\n    cart = Cart().add(price)\n    assert cart.total == price - price // 10\n",
        )
        .unwrap();
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        let session =
            pytest.run(&RunSpec::baseline(dir.path(), Duration::from_secs(5), Duration::from_secs(60))).unwrap();
        let passing = session.test("test_cart.py::test_total[0]").unwrap_or_else(|| panic!("{}", session.output_tail));
        assert!(passing.outcome.is_ok() && passing.flow.is_none(), "{passing:?}");
        let failing = session.test("test_cart.py::test_total[100]").unwrap();
        let flow = failing.flow.as_ref().expect("a failing test records its flow");
        assert_eq!(flow.last_line, Some(7));
        let calls: Vec<(usize, &str, &str, usize, usize)> =
            flow.calls.iter().map(|c| (c.line, c.file.as_str(), c.function.as_str(), c.first_line, c.depth)).collect();
        for expected in [
            (6, "shop/cart.py", "__init__", 4, 1),
            (6, "shop/cart.py", "add", 7, 1),
            (7, "shop/cart.py", "total", 11, 1),
            (7, "shop/pricing.py", "discount", 1, 2),
        ] {
            assert!(calls.contains(&expected), "{expected:?} not in {calls:#?}");
        }
        assert!(calls.iter().all(|c| !c.1.starts_with("test_")), "{calls:#?}");
    }
}
