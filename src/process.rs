//! Run a child process in its own process group, with rlimits and a timeout that kills the whole group.

use std::fs::File;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How a child process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Exit status 0.
    Success,
    /// A non-zero exit status.
    Failure(i32),
    /// Killed by a signal that we did not send.
    Signalled(i32),
    /// Ran past its time limit; its process group was terminated.
    Timeout,
}

impl Exit {
    #[must_use]
    pub fn is_success(self) -> bool {
        self == Exit::Success
    }
    #[must_use]
    pub fn is_timeout(self) -> bool {
        self == Exit::Timeout
    }
    /// The exit status, when the process exited by itself.
    #[must_use]
    pub fn code(self) -> Option<i32> {
        match self {
            Exit::Success => Some(0),
            Exit::Failure(code) => Some(code),
            Exit::Signalled(_) | Exit::Timeout => None,
        }
    }
}

/// Resource limits applied to the child (and inherited by its children).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Address-space limit in bytes (RLIMIT_AS); `None` leaves it unchanged.
    pub memory_bytes: Option<u64>,
    /// CPU seconds (RLIMIT_CPU); `None` leaves it unchanged.
    pub cpu_seconds: Option<u64>,
    /// Largest file the child may write (RLIMIT_FSIZE).
    pub file_bytes: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { memory_bytes: Some(4 << 30), cpu_seconds: None, file_bytes: Some(1 << 30) }
    }
}

/// The result of [`run`]: exit, wall time and captured output.
#[derive(Debug, Clone)]
pub struct Output {
    pub exit: Exit,
    pub elapsed: Duration,
    pub stdout: String,
    pub stderr: String,
}

/// Grace period between SIGTERM and SIGKILL when a process group is stopped.
const GRACE: Duration = Duration::from_millis(300);

/// Run `command` to completion or until `timeout`, capturing output through files in `scratch`
/// (pipes could fill up and deadlock a child that prints a lot).
///
/// The child gets its own process group; whatever it leaves running is killed when it ends.
///
/// # Errors
/// When the child cannot be started or the capture files cannot be created.
pub fn run(command: &mut Command, timeout: Duration, limits: Limits, scratch: &Path) -> std::io::Result<Output> {
    let out_file = tempfile::NamedTempFile::new_in(scratch)?;
    let err_file = tempfile::NamedTempFile::new_in(scratch)?;
    command.stdin(Stdio::null()).stdout(out_file.reopen()?).stderr(err_file.reopen()?);
    // SAFETY: only async-signal-safe libc calls between fork and exec.
    unsafe {
        command.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            apply_limits(limits);
            Ok(())
        });
    }
    let start = Instant::now();
    let mut child = command.spawn()?;
    let pgid = i32::try_from(child.id()).unwrap_or(i32::MAX);
    let _tracked = crate::interrupt::track(pgid);
    let mut poll = Duration::from_millis(1);
    let exit = loop {
        if let Some(status) = child.try_wait()? {
            break match (status.code(), status.signal()) {
                (Some(0), _) => Exit::Success,
                (Some(code), _) => Exit::Failure(code),
                (None, Some(sig)) => Exit::Signalled(sig),
                (None, None) => Exit::Failure(-1),
            };
        }
        if start.elapsed() >= timeout {
            kill_group(pgid, libc::SIGTERM);
            let term_at = Instant::now();
            while term_at.elapsed() < GRACE && child.try_wait()?.is_none() {
                sleep(Duration::from_millis(10));
            }
            kill_group(pgid, libc::SIGKILL);
            child.wait()?;
            break Exit::Timeout;
        }
        sleep(poll);
        poll = (poll * 2).min(Duration::from_millis(20));
    };
    let elapsed = start.elapsed();
    // Reap anything the child left behind in its group (daemons, stuck grandchildren).
    kill_group(pgid, libc::SIGKILL);
    Ok(Output { exit, elapsed, stdout: read_lossy(out_file.path()), stderr: read_lossy(err_file.path()) })
}

/// Apply `limits` to the calling process (call between fork and exec).
pub fn apply_limits(limits: Limits) {
    set_limit(libc::RLIMIT_AS, limits.memory_bytes);
    set_limit(libc::RLIMIT_CPU, limits.cpu_seconds);
    set_limit(libc::RLIMIT_FSIZE, limits.file_bytes);
    set_limit(libc::RLIMIT_CORE, Some(0));
}

fn set_limit(resource: libc::__rlimit_resource_t, value: Option<u64>) {
    if let Some(value) = value {
        let limit = libc::rlimit { rlim_cur: value, rlim_max: value };
        // SAFETY: setrlimit with a valid pointer is async-signal-safe.
        unsafe {
            libc::setrlimit(resource, &raw const limit);
        }
    }
}

/// Send `signal` to every process in group `pgid` (defined beside the interrupt handler, which
/// kills the tracked groups with it; this module tracks the groups it starts there).
pub use crate::interrupt::kill_group;

/// Read a file as text, replacing invalid UTF-8, capped at 1 MiB.
#[must_use]
pub fn read_lossy(path: &Path) -> String {
    let mut bytes = Vec::new();
    if let Ok(file) = File::open(path) {
        let _ = file.take(1 << 20).read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout: Duration) -> Output {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script);
        run(&mut cmd, timeout, Limits::default(), dir.path()).unwrap()
    }

    #[test]
    fn exit_status_and_output_are_captured() {
        let out = sh("echo hello; echo oops >&2; exit 3", Duration::from_secs(10));
        assert_eq!(out.exit, Exit::Failure(3));
        assert_eq!(out.stdout.trim(), "hello");
        assert_eq!(out.stderr.trim(), "oops");
    }

    #[test]
    fn a_hanging_child_and_its_grandchildren_are_killed_at_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("alive");
        let script = format!("(sleep 1.5; touch {}) & sleep 30", marker.display());
        let out = sh(&script, Duration::from_millis(300));
        assert!(out.exit.is_timeout());
        assert!(out.elapsed < Duration::from_secs(5));
        sleep(Duration::from_millis(2000));
        assert!(!marker.exists(), "grandchild survived the group kill");
    }
}
