//! Interrupting `fix`: exit 130, no process left, no temporary file left, the repository untouched.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use common::cli::deepdebug;
use common::{project, snapshot};
use std::io::Read as _;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const CALC: &str =
    "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return lo\n    return x\n";

/// Slow tests: a run is still validating when it is interrupted.
fn slow_tests() -> String {
    let mut tests = String::from("import time\nfrom calc import clamp\n\n");
    for i in 0..8 {
        tests.push_str(&format!(
            "\ndef test_{i}():\n    time.sleep(0.3)\n    assert clamp({i}, 2, 5) == {}\n",
            i.clamp(2, 5)
        ));
    }
    tests
}

/// Processes whose environment holds `DEEPDEBUG_TEST_TAG=tag`.
fn tagged(tag: &str) -> Vec<u32> {
    let needle = format!("DEEPDEBUG_TEST_TAG={tag}\0");
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let mut environ = Vec::new();
            std::fs::File::open(format!("/proc/{pid}/environ")).and_then(|mut f| f.read_to_end(&mut environ)).is_ok()
                && environ.windows(needle.len()).any(|w| w == needle.as_bytes())
        })
        .collect()
}

/// Whether a scratch copy exists in a run directory below `tmp`.
fn validating(tmp: &Path) -> bool {
    let entries = std::fs::read_dir(tmp).into_iter().flatten().flatten();
    entries.filter(|e| e.file_name().to_string_lossy().starts_with("deepdebug-run-")).any(|run| {
        let inner = std::fs::read_dir(run.path()).into_iter().flatten().flatten();
        inner.into_iter().any(|e| e.file_name().to_string_lossy().starts_with("deepdebug-scratch-"))
    })
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

/// `cond` within `limit`, polling.
fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    cond()
}

#[test]
fn ctrl_c_during_validation_kills_the_tests_removes_the_scratch_copies_and_exits_130() {
    let repo = project(&[("calc.py", CALC), ("tests/test_calc.py", &slow_tests())]);
    let before = snapshot(repo.path());
    let tmp = tempfile::tempdir().unwrap();
    let tag = format!("{}-{:?}", std::process::id(), Instant::now());
    let mut child = deepdebug()
        .args(["fix", "--repo", repo.path().to_str().unwrap(), "--timeout", "120s", "--lm", "none", "--model", "none"])
        .env("TMPDIR", tmp.path())
        .env("DEEPDEBUG_TEST_TAG", &tag)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let busy = eventually(Duration::from_secs(60), || validating(tmp.path()) && tagged(&tag).len() > 1);
    assert!(busy, "the run never started validating: {:?}", entries(tmp.path()));
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(i32::try_from(child.id()).unwrap(), libc::SIGINT) };
    let ended = eventually(Duration::from_secs(10), || child.try_wait().unwrap().is_some());
    assert!(ended, "deepdebug did not stop on SIGINT");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(eventually(Duration::from_secs(5), || tagged(&tag).is_empty()), "left running: {:?}", tagged(&tag));
    assert!(entries(tmp.path()).is_empty(), "left behind: {:?}", entries(tmp.path()));
    assert_eq!(snapshot(repo.path()), before, "the repository changed");
}

#[test]
fn a_finished_run_leaves_no_temporary_files() {
    let tests = "from calc import clamp\n\ndef test_low():\n    assert clamp(0, 2, 5) == 2\n\ndef test_high():\n    assert clamp(9, 2, 5) == 5\n\ndef test_mid():\n    assert clamp(3, 2, 5) == 3\n";
    let repo = project(&[("calc.py", CALC), ("tests/test_calc.py", tests)]);
    let tmp = tempfile::tempdir().unwrap();
    let out = deepdebug()
        .args(["fix", "--repo", repo.path().to_str().unwrap(), "--timeout", "60s", "--lm", "none", "--model", "none"])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("return hi"), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(entries(tmp.path()).is_empty(), "left behind: {:?}", entries(tmp.path()));
}
