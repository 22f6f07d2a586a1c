//! Integration tests of the sandboxes: the real Docker engine (image built by `.ci/run`) and bubblewrap.

mod common;
use common::project;

use deepdebug::process::{Exit, Limits};
use deepdebug::pytest::server::Request;
use deepdebug::pytest::{Pytest, RunSpec, TestOutcome};
use deepdebug::sandbox::check::{self_test, Verdict};
use deepdebug::sandbox::docker::IMAGE_PYTHON;
use deepdebug::sandbox::{DockerConfig, Job, Sandbox, SandboxKind};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The Docker sandbox, or `None` when `DEEPDEBUG_SKIP_DOCKER=1`. A missing engine or image
/// fails the test: CI builds the image before `cargo test`.
fn docker() -> Option<Sandbox> {
    if std::env::var("DEEPDEBUG_SKIP_DOCKER").is_ok_and(|v| v == "1") {
        eprintln!("DEEPDEBUG_SKIP_DOCKER=1: skipping a Docker test");
        return None;
    }
    match Sandbox::new(SandboxKind::Docker, &DockerConfig::default()) {
        Ok(sandbox) => Some(sandbox),
        Err(err) => panic!(
            "{err}\nThe Docker tests need the engine and the image: run `cargo run -- sandbox build --if-missing` \
             (as .ci/run does), or set DEEPDEBUG_SKIP_DOCKER=1 to skip them"
        ),
    }
}


fn python_job<'a>(python: &'a Path, script: &str, source: &'a Path, writable: Vec<&'a Path>, timeout: Duration) -> Job<'a> {
    Job {
        program: python,
        args: vec!["-c".into(), script.into()],
        source,
        read_only: Vec::new(),
        writable,
        env: vec![("GREETING".into(), "hello".into())],
        timeout,
        limits: Limits::default(),
        capture_dir: source,
    }
}

#[test]
fn docker_self_test_passes_every_check() {
    let Some(sandbox) = docker() else { return };
    let checks = self_test(&sandbox, Path::new(IMAGE_PYTHON)).unwrap();
    for check in &checks {
        assert_eq!(check.verdict, Verdict::Passed, "{}: {}", check.name, check.detail);
    }
    let names: Vec<&str> = checks.iter().map(|c| c.name).collect();
    for expected in ["network blocked", "memory limit", "pids limit", "hang killed", "non-root", "containers removed"] {
        assert!(names.contains(&expected), "missing check {expected}: {names:?}");
    }
}

#[test]
fn docker_runs_in_parallel_write_only_the_scratch_and_leave_nothing_behind() {
    let Some(sandbox) = docker() else { return };
    let source = project(&[("data.txt", "42\n")]);
    let outputs: Vec<tempfile::TempDir> = (0..6).map(|_| tempfile::tempdir().unwrap()).collect();
    let python = Path::new(IMAGE_PYTHON);
    std::thread::scope(|scope| {
        for (i, out_dir) in outputs.iter().enumerate() {
            let sandbox = &sandbox;
            let source = source.path();
            scope.spawn(move || {
                let script = format!(
                    "import os\nvalue = open('data.txt').read().strip()\nopen(os.path.join({:?}, 'result'), 'w').write(value + ' {i}')\nprint(os.environ['GREETING'], os.getuid())",
                    out_dir.path().display().to_string()
                );
                let out = sandbox.run(&python_job(python, &script, source, vec![out_dir.path()], Duration::from_secs(60))).unwrap();
                assert_eq!(out.exit, Exit::Success, "{}", out.stderr);
                assert_eq!(out.stdout.trim(), "hello 1000");
                assert_eq!(std::fs::read_to_string(out_dir.path().join("result")).unwrap(), format!("42 {i}"));
            });
        }
    });
    let left = sandbox.docker().unwrap().leftover_containers().unwrap();
    assert!(left.is_empty(), "containers left behind: {left:?}");
}

#[test]
fn docker_kills_a_hang_at_the_timeout_and_removes_the_container() {
    let Some(sandbox) = docker() else { return };
    let dir = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let out = sandbox
        .run(&python_job(Path::new(IMAGE_PYTHON), "import time\nprint('up', flush=True)\ntime.sleep(600)", dir.path(), Vec::new(), Duration::from_secs(1)))
        .unwrap();
    assert_eq!(out.exit, Exit::Timeout);
    assert!(start.elapsed() < Duration::from_secs(15), "took {:?}", start.elapsed());
    assert_eq!(out.stdout.trim(), "up", "output before the kill comes back");
    assert!(sandbox.docker().unwrap().leftover_containers().unwrap().is_empty());
}

const CALC: &str = "def double(x):\n    return x * 2\n";
const CALC_TESTS: &str = r#"
import socket
from calc import double

def test_double():
    assert double(2) == 4

def test_broken():
    assert double(3) == 7

def test_network():
    socket.create_connection(("1.1.1.1", 53), timeout=2).close()
"#;

#[test]
fn pytest_sessions_in_docker_report_back_without_network() {
    let Some(sandbox) = docker() else { return };
    let dir = project(&[("calc.py", CALC), ("test_calc.py", CALC_TESTS)]);
    // A host interpreter path is replaced by the image's.
    let pytest = Pytest::with_sandbox(Path::new("/root/.pyenv/shims/python3"), Arc::new(sandbox)).unwrap();
    assert_eq!(pytest.python(), Path::new(IMAGE_PYTHON));
    let session = pytest
        .run(&RunSpec {
            root: dir.path(),
            selectors: &[],
            coverage: true,
            per_test_timeout: Some(Duration::from_secs(10)),
            per_test_cpu: None,
            session_timeout: Duration::from_secs(60),
            exit_first: false,
        })
        .unwrap();
    let outcome = |id: &str| session.test(id).map(|t| t.outcome);
    assert_eq!(outcome("test_calc.py::test_double"), Some(TestOutcome::Passed), "{}", session.output_tail);
    assert_eq!(outcome("test_calc.py::test_broken"), Some(TestOutcome::Failed));
    assert_eq!(outcome("test_calc.py::test_network"), Some(TestOutcome::Failed), "the network is reachable");
    assert!(session.test("test_calc.py::test_double").unwrap().coverage.contains_key("calc.py"));
    // The fork engine is refused in containers (the lab falls back to one session per run).
    assert!(pytest.fork_server(dir.path(), &[], Duration::from_secs(10)).is_err());
}

#[test]
fn fix_with_docker_sandbox_repairs_the_bug() {
    if docker().is_none() {
        return;
    }
    let dir = project(&[
        ("grades.py", "def passed(score, minimum=50):\n    return score > minimum\n"),
        ("test_grades.py", "from grades import passed\n\ndef test_at():\n    assert passed(50)\n\ndef test_low():\n    assert not passed(3)\n"),
    ]);
    let out = Command::new(env!("CARGO_BIN_EXE_deepdebug"))
        .args(["fix", "--sandbox", "docker", "--timeout", "120s", "--repo"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("+    return score >= minimum"));
    assert!(stderr.contains("fork engine is disabled under --sandbox docker"), "{stderr}");
}

#[test]
fn missing_image_is_a_clear_error() {
    if docker().is_none() {
        return;
    }
    let config = DockerConfig { image: "deepdebug-no-such-image:never".into(), ..DockerConfig::default() };
    let err = Sandbox::new(SandboxKind::Docker, &config).unwrap_err().to_string();
    assert!(err.contains("deepdebug sandbox build"), "{err}");
}

/// Whether bubblewrap is installed (CI installs it; then it must be used).
fn bwrap_installed() -> bool {
    deepdebug::sandbox::local::find_in_path("bwrap").is_some()
}

#[test]
fn local_sandbox_uses_bubblewrap_or_warns() {
    let sandbox = Sandbox::new(SandboxKind::Local, &DockerConfig::default()).unwrap();
    if bwrap_installed() {
        assert_eq!(sandbox.backend_name(), "bwrap", "{:?}", sandbox.warning());
        assert!(sandbox.warning().is_none());
    } else {
        assert_eq!(sandbox.backend_name(), "rlimits");
        assert!(sandbox.warning().unwrap().contains("bubblewrap is unavailable"));
    }
    let checks = self_test(&sandbox, Path::new("python3")).unwrap();
    for check in &checks {
        assert_ne!(check.verdict, Verdict::Failed, "{}: {}", check.name, check.detail);
    }
    let verdict = |name: &str| checks.iter().find(|c| c.name == name).unwrap().verdict;
    assert_eq!(verdict("hang killed"), Verdict::Passed);
    assert_eq!(verdict("memory limit"), Verdict::Passed);
    if bwrap_installed() {
        assert_eq!(verdict("network blocked"), Verdict::Passed);
        assert_eq!(verdict("system read-only"), Verdict::Passed);
    }
}

#[test]
fn fork_server_runs_inside_bubblewrap_without_network() {
    if !bwrap_installed() {
        eprintln!("bwrap is not installed: nothing to test here");
        return;
    }
    let sandbox = Arc::new(Sandbox::new(SandboxKind::Local, &DockerConfig::default()).unwrap());
    let dir = project(&[("calc.py", CALC), ("test_calc.py", CALC_TESTS)]);
    let pytest = Pytest::with_sandbox(Path::new("python3"), sandbox).unwrap();
    let mut server = pytest.fork_server(dir.path(), &[], Duration::from_secs(60)).unwrap();
    let request = Request {
        nodeids: None,
        exit_first: false,
        per_test_timeout: Duration::from_secs(10),
        per_test_cpu: Duration::ZERO,
        session_timeout: Duration::from_secs(60),
        swap: None,
    };
    let session = server.run(&request).unwrap();
    let outcome = |id: &str| session.test(id).map(|t| t.outcome);
    assert_eq!(outcome("test_calc.py::test_double"), Some(TestOutcome::Passed));
    assert_eq!(outcome("test_calc.py::test_network"), Some(TestOutcome::Failed), "the network is reachable");
}

#[test]
fn sandbox_check_cli_reports_the_local_backend() {
    let out = Command::new(env!("CARGO_BIN_EXE_deepdebug")).args(["sandbox", "check", "--sandbox", "local"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("hang killed"), "{stdout}");
    let backend = if bwrap_installed() { "sandbox: local (bwrap)" } else { "sandbox: local (rlimits)" };
    assert!(stdout.contains(backend), "{stdout}");
}

#[test]
fn unknown_sandbox_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_deepdebug")).args(["fix", "--sandbox", "vm"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
