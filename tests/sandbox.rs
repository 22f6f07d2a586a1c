//! Integration tests of the sandboxes: the real Docker engine (image built by `.ci/run`) and bubblewrap.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;
use common::project;

use deepdebug::process::{Exit, Limits};
use deepdebug::pytest::server::{Request, ServerMode, Swap};
use deepdebug::pytest::{Pytest, RunSpec, TestOutcome, TestRun};
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

/// `deepdebug fix --sandbox docker --timeout 120s EXTRA --repo DIR`, started with stdout and
/// stderr made by `stdio`.
fn spawn_fix_in_docker(dir: &Path, extra: &[&str], stdio: fn() -> std::process::Stdio) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_deepdebug"))
        .args(["fix", "--sandbox", "docker", "--timeout", "120s"])
        .args(extra)
        .arg("--repo")
        .arg(dir)
        .stdout(stdio())
        .stderr(stdio())
        .spawn()
        .unwrap()
}

fn python_job<'a>(
    python: &'a Path,
    script: &str,
    source: &'a Path,
    writable: Vec<&'a Path>,
    timeout: Duration,
) -> Job<'a> {
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
        .run(&python_job(
            Path::new(IMAGE_PYTHON),
            "import time\nprint('up', flush=True)\ntime.sleep(600)",
            dir.path(),
            Vec::new(),
            Duration::from_secs(1),
        ))
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

def test_writes_beside_itself():
    import pathlib
    out = pathlib.Path(__file__).with_name("out.txt")
    out.write_text("ok")
    assert out.read_text() == "ok"
"#;

#[test]
fn pytest_sessions_in_docker_report_back_without_network() {
    let Some(sandbox) = docker() else { return };
    let dir = project(&[("calc.py", CALC), ("test_calc.py", CALC_TESTS)]);
    // A host interpreter path is replaced by the image's.
    let pytest = Pytest::with_sandbox(Path::new("/root/.pyenv/shims/python3"), Arc::new(sandbox)).unwrap();
    assert_eq!(pytest.python(), Path::new(IMAGE_PYTHON));
    let session = pytest.run(&RunSpec::baseline(dir.path(), Duration::from_secs(10), Duration::from_secs(60))).unwrap();
    let outcome = |id: &str| session.test(id).map(|t| t.outcome);
    assert_eq!(outcome("test_calc.py::test_double"), Some(TestOutcome::Passed), "{}", session.output_tail);
    assert_eq!(outcome("test_calc.py::test_broken"), Some(TestOutcome::Failed));
    assert_eq!(outcome("test_calc.py::test_network"), Some(TestOutcome::Failed), "the network is reachable");
    // The session's directory (a scratch copy in real runs) is writable, as in a checkout.
    assert_eq!(
        outcome("test_calc.py::test_writes_beside_itself"),
        Some(TestOutcome::Passed),
        "{}",
        session.output_tail
    );
    assert!(session.test("test_calc.py::test_double").unwrap().coverage.contains_key("calc.py"));
}

const CLAMP: &str = "LIMIT = 10\n\ndef clamp(x):\n    if x > LIMIT:\n        return LIMIT\n    return x\n\ndef spin(n):\n    while n > 0:\n        n += 1\n    return n\n";
const CLAMP_TESTS: &str = r#"
import os, socket, subprocess
from calc import clamp, spin

def test_clamp():
    assert clamp(50) == 20

def test_small():
    assert clamp(3) == 3

def test_spin():
    assert spin(0) == 0

def test_network():
    socket.create_connection(("1.1.1.1", 53), timeout=2).close()

def test_who():
    assert os.getuid() == 1000 and os.getpid() != 1

def test_orphan():
    subprocess.Popen(["sleep", "300"])

def test_orphan_hangs():
    subprocess.Popen(["sleep", "300"])
    while True:
        pass

def test_no_strays():
    others = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = open("/proc/%s/stat" % pid).read()
        except OSError:
            continue
        name, state = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2]
        if name == "sleep" or state == "Z":
            others.append((pid, name, state))
    assert others == []
"#;

fn server_request(nodeids: Option<&[String]>, swap: Option<Swap>) -> Request<'_> {
    let run =
        TestRun { per_test_timeout: Some(Duration::from_secs(10)), ..TestRun::new(nodeids, Duration::from_secs(60)) };
    Request { run, swap, frames: true }
}

#[test]
fn fork_server_in_docker_answers_warm_requests_kills_hangs_and_leaves_nothing_behind() {
    let Some(sandbox) = docker() else { return };
    let sandbox = Arc::new(sandbox);
    let dir = project(&[("calc.py", CLAMP), ("test_calc.py", CLAMP_TESTS)]);
    let pytest = Pytest::with_sandbox(Path::new(IMAGE_PYTHON), Arc::clone(&sandbox)).unwrap();
    let started = Instant::now();
    let mut server = pytest.fork_server(dir.path(), &[], Duration::from_secs(60)).unwrap();
    eprintln!("fork server in a container ready in {:?}", started.elapsed());
    assert!(server.in_container());
    assert_eq!(server.mode(), ServerMode::Warm, "{}", server.why());
    assert_eq!(server.tests().len(), 8);
    let docker = sandbox.docker().unwrap();
    assert_eq!(docker.leftover_containers().unwrap().len(), 1, "one container per server");

    // No network, uid 1000, children are not the container's init.
    let some: Vec<String> =
        ["test_small", "test_clamp", "test_network", "test_who"].iter().map(|t| format!("test_calc.py::{t}")).collect();
    let s = server.run(&server_request(Some(&some), None)).unwrap();
    let outcome = |s: &deepdebug::pytest::Session, id: &str| s.test(id).map(|t| t.outcome);
    assert_eq!(outcome(&s, "test_calc.py::test_small"), Some(TestOutcome::Passed), "{s:?}");
    assert_eq!(outcome(&s, "test_calc.py::test_clamp"), Some(TestOutcome::Failed));
    assert_eq!(outcome(&s, "test_calc.py::test_network"), Some(TestOutcome::Failed), "the network is reachable");
    assert_eq!(outcome(&s, "test_calc.py::test_who"), Some(TestOutcome::Passed));

    // Hot-swapped requests see only their own patch, written on the host.
    let clamp = vec!["test_calc.py::test_clamp".to_string()];
    let path = dir.path().join("calc.py");
    let swap = || Some(Swap { file: "calc.py".into(), functions: vec![("clamp".into(), 3)], source: None });
    let mut warm = Vec::new();
    for round in 0..10 {
        let patched = round % 2 == 0;
        let text = if patched { CLAMP.replace("        return LIMIT", "        return 20") } else { CLAMP.to_string() };
        std::fs::write(&path, text).unwrap();
        let s = server.run(&server_request(Some(&clamp), swap())).unwrap();
        assert_eq!(s.warm, Some(true));
        let expected = if patched { TestOutcome::Passed } else { TestOutcome::Failed };
        assert_eq!(s.tests[0].outcome, expected, "round {round}");
        warm.push(s.elapsed);
    }
    warm.sort();
    eprintln!("warm requests in a container: median {:?}, max {:?}", warm[warm.len() / 2], warm[warm.len() - 1]);
    assert!(warm[warm.len() / 2] < Duration::from_millis(500), "{warm:?}");

    // A hang with no per-test alarm: the server kills the child at the deadline (well before
    // the host's backstop, which would remove the container) and keeps serving.
    std::fs::write(&path, CLAMP.replace("while n > 0", "while n >= 0")).unwrap();
    let spin = vec!["test_calc.py::test_spin".to_string()];
    let spin_swap = Some(Swap { file: "calc.py".into(), functions: vec![("spin".into(), 8)], source: None });
    let orphan_hangs = vec!["test_calc.py::test_orphan_hangs".to_string()];
    let orphan = vec!["test_calc.py::test_orphan".to_string()];
    let strays = vec!["test_calc.py::test_no_strays".to_string()];
    for (tests, swap) in [(&spin, spin_swap), (&orphan_hangs, None)] {
        let mut req = server_request(Some(tests), swap);
        req.run.per_test_timeout = None;
        req.run.session_timeout = Duration::from_millis(1000);
        let start = Instant::now();
        let s = server.run(&req).unwrap();
        assert_eq!(s.exit, Exit::Timeout, "{tests:?}");
        // Not a speed measurement: the session limit (1 s) is enforced, with slack for a
        // loaded machine (a hung session would run until the server's backstop).
        assert!(start.elapsed() < Duration::from_secs(3), "{:?}", start.elapsed());
    }
    std::fs::write(&path, CLAMP).unwrap();
    // Grandchildren (`sleep`) die with a hung child, or after a child that passed, and the
    // server (pid 1 there) reaps them.
    for tests in [&orphan_hangs, &orphan] {
        if tests == &orphan {
            let s = server.run(&server_request(Some(tests), None)).unwrap();
            assert_eq!(s.tests[0].outcome, TestOutcome::Passed);
        }
        let s = server.run(&server_request(Some(&strays), None)).unwrap();
        assert_eq!(s.tests[0].outcome, TestOutcome::Passed, "{:?}", s.tests[0].failure);
    }
    assert_eq!(docker.leftover_containers().unwrap().len(), 1);

    drop(server);
    let left = docker.leftover_containers().unwrap();
    assert!(left.is_empty(), "containers left behind: {left:?}");
}

#[test]
fn fix_with_docker_sandbox_repairs_the_bug_with_the_fork_engine() {
    let Some(sandbox) = docker() else { return };
    let dir = project(&[
        ("grades.py", "def passed(score, minimum=50):\n    if score < 0:\n        return False\n    return score > minimum\n"),
        ("test_grades.py", "from grades import passed\n\ndef test_at():\n    assert passed(50)\n\ndef test_low():\n    assert not passed(3)\n\ndef test_negative():\n    assert not passed(-1)\n"),
    ]);
    let child = spawn_fix_in_docker(dir.path(), &["--json"], std::process::Stdio::piped);
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["status"], "fixed", "{report}");
    assert!(report["patch"]["diff"].as_str().unwrap().contains("+    return score >= minimum"), "{report}");
    // No fallback: every worker validated through its fork server's container.
    let warnings = report["warnings"].to_string();
    assert!(!warnings.contains("fork") && !warnings.contains("one container per"), "{warnings}");
    let mut seconds: Vec<f64> =
        report["tried"].as_array().unwrap().iter().map(|t| t["seconds"].as_f64().unwrap()).collect();
    seconds.sort_by(f64::total_cmp);
    let median = seconds[seconds.len() / 2];
    eprintln!("{} candidates validated in Docker, median {median:.3} s each", seconds.len());
    // A container per session costs 0.5 s and more; a forked child in a warm container, ms.
    assert!(median < 0.3, "{seconds:?}");
    let left = sandbox.docker().unwrap().containers_of_process(pid).unwrap();
    assert!(left.is_empty(), "containers left behind: {left:?}");
}

#[test]
fn a_killed_fix_leaves_no_fork_server_container_behind() {
    let Some(sandbox) = docker() else { return };
    let docker = sandbox.docker().unwrap();
    // Slow tests and a bug no candidate fixes keep the lab (where only the two fork-server
    // containers run) busy.
    let dir = project(&[
        ("grades.py", "import time\n\ndef passed(score, minimum=50):\n    time.sleep(1)\n    return score > minimum\n"),
        ("test_grades.py", "from grades import passed\n\ndef test_at():\n    assert passed(50) == 'yes'\n\ndef test_low():\n    assert not passed(3)\n"),
    ]);
    let mut child = spawn_fix_in_docker(dir.path(), &["--jobs", "2"], std::process::Stdio::null);
    let pid = child.id();
    let start = Instant::now();
    // The two fork servers start with the baseline (three containers), which takes 2 s and
    // more: wait until the baseline's container is gone and only the servers are left. (A
    // session container of a fix killed mid-session is removed by the next connection.)
    let mut seen_baseline = false;
    loop {
        let running = docker.containers_of_process(pid).unwrap().len();
        seen_baseline |= running >= 3;
        if seen_baseline && running == 2 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "the fork servers never started");
        assert!(child.try_wait().unwrap().is_none(), "fix ended before its fork servers were seen");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Started and serving (a container killed between its creation and start stays behind
    // as `Created`, until the next connection).
    std::thread::sleep(Duration::from_secs(3));
    assert!(child.try_wait().unwrap().is_none(), "fix ended too early");
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = Instant::now();
    // Their stdin closes with the dead connection: the servers exit and the engine removes them.
    let mut left = docker.containers_of_process(pid).unwrap();
    while !left.is_empty() && killed.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(200));
        left = docker.containers_of_process(pid).unwrap();
    }
    assert!(left.is_empty(), "containers left behind by a killed fix: {left:?}");
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
    let request = server_request(None, None);
    let session = server.run(&request).unwrap();
    let outcome = |id: &str| session.test(id).map(|t| t.outcome);
    assert_eq!(outcome("test_calc.py::test_double"), Some(TestOutcome::Passed));
    assert_eq!(outcome("test_calc.py::test_network"), Some(TestOutcome::Failed), "the network is reachable");
    // The session's directory (a scratch copy in real runs) is writable, as in a checkout.
    assert_eq!(
        outcome("test_calc.py::test_writes_beside_itself"),
        Some(TestOutcome::Passed),
        "{}",
        session.output_tail
    );
}

#[test]
fn sandbox_check_cli_reports_the_local_backend() {
    let out = Command::new(env!("CARGO_BIN_EXE_deepdebug"))
        .args(["sandbox", "check", "--sandbox", "local"])
        .output()
        .unwrap();
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

#[test]
fn the_next_connection_removes_what_a_killed_fix_left_in_the_engine() {
    let Some(sandbox) = docker() else { return };
    let docker = sandbox.docker().unwrap();
    // A baseline that takes 30 s: its one-shot session container outlives a fix killed now.
    let dir = project(&[
        ("slow.py", "import time\n\ndef double(x):\n    time.sleep(30)\n    return x + x\n"),
        ("test_slow.py", "from slow import double\n\ndef test_double():\n    assert double(2) == 5\n"),
    ]);
    let mut child = spawn_fix_in_docker(dir.path(), &[], std::process::Stdio::null);
    let pid = child.id();
    let start = Instant::now();
    while docker.containers_of_process(pid).unwrap().is_empty() {
        assert!(start.elapsed() < Duration::from_secs(60), "fix never made a container");
        assert!(child.try_wait().unwrap().is_none(), "fix ended before making a container");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    child.kill().unwrap();
    child.wait().unwrap();
    // The session container was still running when its creator died; a new connection (any
    // later deepdebug run with the Docker sandbox) sees that its owner is gone and removes it.
    // A create the fix had sent just before it died may still be under way in the engine and
    // land after one connection's sweep: the next connection's sweep removes it, so a few
    // connections a second apart must leave nothing.
    let mut left = Vec::new();
    for _ in 0..5 {
        let again = Sandbox::new(SandboxKind::Docker, &DockerConfig::default()).unwrap();
        left = again.docker().unwrap().containers_of_process(pid).unwrap();
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    assert!(left.is_empty(), "containers of the killed fix left behind: {left:?}");
    assert!(start.elapsed() < Duration::from_secs(30), "the baseline's container ended by itself first");
}
