//! Running the real `deepdebug` binary from integration tests.
#![allow(dead_code)] // each test crate uses its own subset

use std::io::Write;
use std::process::{Command, Output, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_deepdebug");

/// Run the binary with `args`, feeding `stdin`.
pub fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start deepdebug");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write stdin");
    child.wait_with_output().expect("wait for deepdebug")
}

/// Stdout of a run that must succeed.
pub fn stdout_ok(args: &[&str], stdin: &str) -> String {
    let out = run(args, stdin);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{args:?} failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// A run that must fail with `message` on stderr.
pub fn fails_with(args: &[&str], message: &str) {
    let out = run(args, "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(stderr.contains(message), "{args:?}: expected {message:?} in {stderr}");
}

/// A command for the binary, to add arguments to.
pub fn deepdebug() -> Command {
    Command::new(BIN)
}

/// A finished run's stdout, lossily decoded.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A finished run's stderr, lossily decoded.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
