//! The fast validation engine: a persistent pytest fork server per scratch copy.

use super::{PytestError, Session};
use crate::process::{kill_group, read_lossy, Exit, Limits};
use serde::Deserialize;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The fork server's Python source, shipped inside the binary.
pub const SERVER_SOURCE: &str = include_str!("forkserver.py");

/// How the server runs each request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerMode {
    /// The suite is collected once in the server; a child hot-swaps the patched functions'
    /// code and runs the already-collected tests. Falls back to `Cold` per request when the
    /// edit cannot be hot-swapped.
    Warm,
    /// Each child forgets the project's modules and runs a fresh pytest session.
    Cold,
}

/// Functions whose code a request replaces in place (qualified name, 1-based `def` line).
#[derive(Debug, Clone)]
pub struct Swap {
    pub file: String,
    pub functions: Vec<(String, usize)>,
}

/// One test session to run in a forked child.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// `None` runs every collected test.
    pub nodeids: Option<&'a [String]>,
    pub exit_first: bool,
    pub per_test_timeout: Duration,
    /// Per-test CPU-time limit; zero for none.
    pub per_test_cpu: Duration,
    pub session_timeout: Duration,
    pub swap: Option<Swap>,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum Reply {
    Ready { mode: String, tests: Vec<String>, why: String },
    Started { id: u64, pid: i32 },
    Done { id: u64, status: i32 },
}

/// A running fork server rooted at one scratch copy of the project.
pub struct ForkServer {
    child: Child,
    stdin: ChildStdin,
    replies: Receiver<String>,
    reports: tempfile::TempDir,
    mode: ServerMode,
    why: String,
    tests: Vec<String>,
    next_id: u64,
}

impl ForkServer {
    /// Start a server in `root` (a scratch copy) and wait until it has collected the suite.
    ///
    /// # Errors
    /// When the server cannot start, dies, or does not become ready within `startup_timeout`;
    /// callers then fall back to one pytest process per run.
    pub fn start(
        python: &Path,
        plugin_dir: &Path,
        root: &Path,
        selectors: &[String],
        startup_timeout: Duration,
        sandbox: &crate::sandbox::Sandbox,
    ) -> Result<ForkServer, PytestError> {
        let io = |action: &str| {
            let action = action.to_string();
            move |source| PytestError::Io { action, source }
        };
        let reports = tempfile::Builder::new()
            .prefix("deepdebug-server-")
            .tempdir()
            .map_err(io("create the fork server's directory"))?;
        let script = reports.path().join("deepdebug_forkserver.py");
        std::fs::write(&script, SERVER_SOURCE).map_err(io("write the fork server"))?;
        let (reader, writer) = std::io::pipe().map_err(io("create the reply pipe"))?;
        let writer_fd = writer.as_raw_fd();
        let mut cmd = sandbox
            .local_command(python, root, &[plugin_dir], &[reports.path()])
            .ok_or_else(|| PytestError::ServerUnavailable("the fork server cannot run in a container".into()))?;
        cmd.current_dir(root)
            .arg(&script)
            .args(selectors)
            .env("PYTHONPATH", super::pythonpath(plugin_dir))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONHASHSEED", "0")
            .env("DEEPDEBUG_ROOT", root)
            .env("DEEPDEBUG_COVERAGE", "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let limits = Limits::default();
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setpgid(0, 0) != 0 || libc::dup2(writer_fd, 3) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                crate::process::apply_limits(limits);
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(io("start the fork server"))?;
        drop(writer);
        let stdin = child.stdin.take().expect("stdin is piped");
        let (tx, replies) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(reader).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = ForkServer {
            child,
            stdin,
            replies,
            reports,
            mode: ServerMode::Cold,
            why: String::new(),
            tests: Vec::new(),
            next_id: 0,
        };
        match server.reply(startup_timeout)? {
            Some(Reply::Ready { mode, tests, why }) => {
                server.mode = match mode.as_str() {
                    "warm" => ServerMode::Warm,
                    "cold" => ServerMode::Cold,
                    _ => return Err(PytestError::ServerUnavailable(why)),
                };
                server.tests = tests;
                server.why = why;
                Ok(server)
            }
            _ => Err(PytestError::ServerUnavailable("the fork server did not become ready".into())),
        }
    }

    #[must_use]
    pub fn mode(&self) -> ServerMode {
        self.mode
    }

    /// Why the server is not warm (empty when it is).
    #[must_use]
    pub fn why(&self) -> &str {
        &self.why
    }

    /// Node ids collected by the server (empty in cold mode).
    #[must_use]
    pub fn tests(&self) -> &[String] {
        &self.tests
    }

    fn reply(&self, timeout: Duration) -> Result<Option<Reply>, PytestError> {
        match self.replies.recv_timeout(timeout) {
            Ok(line) => serde_json::from_str(&line)
                .map(Some)
                .map_err(|e| PytestError::ServerUnavailable(format!("bad reply from the fork server: {e}"))),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => {
                Err(PytestError::ServerUnavailable("the fork server exited".into()))
            }
        }
    }

    /// Run one request in a fresh child; the child's process group is killed at the timeout.
    ///
    /// # Errors
    /// When the server died or stopped answering.
    pub fn run(&mut self, request: &Request<'_>) -> Result<Session, PytestError> {
        self.next_id += 1;
        let id = self.next_id;
        let report: PathBuf = self.reports.path().join(format!("report-{id}.jsonl"));
        let message = serde_json::json!({
            "id": id,
            "report": report,
            "nodeids": request.nodeids,
            "exit_first": request.exit_first,
            "timeout": request.per_test_timeout.as_secs_f64(),
            "cpu": request.per_test_cpu.as_secs_f64(),
            "swap": request.swap.as_ref().map(|s| serde_json::json!({"file": s.file, "functions": s.functions})),
        });
        let start = Instant::now();
        writeln!(self.stdin, "{message}")
            .and_then(|()| self.stdin.flush())
            .map_err(|_| PytestError::ServerUnavailable("the fork server closed its input".into()))?;
        let pid = match self.reply(Duration::from_secs(30))? {
            Some(Reply::Started { id: got, pid }) if got == id => pid,
            _ => return Err(PytestError::ServerUnavailable("the fork server did not start a child".into())),
        };
        let mut timed_out = false;
        let status = loop {
            let left = request.session_timeout.saturating_sub(start.elapsed());
            match self.reply(if timed_out { Duration::from_secs(10) } else { left })? {
                Some(Reply::Done { id: got, status }) if got == id => break status,
                Some(_) => {}
                None if !timed_out => {
                    kill_group(pid, libc::SIGKILL);
                    timed_out = true;
                }
                None => return Err(PytestError::ServerUnavailable("a killed child was not reaped".into())),
            }
        };
        kill_group(pid, libc::SIGKILL);
        let exit = if timed_out {
            Exit::Timeout
        } else if libc::WIFEXITED(status) {
            match libc::WEXITSTATUS(status) {
                0 => Exit::Success,
                code => Exit::Failure(code),
            }
        } else {
            Exit::Signalled(libc::WTERMSIG(status))
        };
        let mut session = Session::empty(exit, start.elapsed());
        session.absorb(&read_lossy(&report));
        let _ = std::fs::remove_file(&report);
        Ok(session)
    }
}

impl Drop for ForkServer {
    fn drop(&mut self) {
        let pgid = i32::try_from(self.child.id()).unwrap_or(0);
        kill_group(pgid, libc::SIGKILL);
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pytest::{Pytest, TestOutcome};

    fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    fn request(nodeids: Option<&[String]>, swap: Option<Swap>) -> Request<'_> {
        Request {
            nodeids,
            exit_first: false,
            per_test_timeout: Duration::from_secs(2),
            per_test_cpu: Duration::ZERO,
            session_timeout: Duration::from_secs(20),
            swap,
        }
    }

    const MODULE: &str = "LIMIT = 10\n\ndef clamp(x):\n    if x > LIMIT:\n        return LIMIT\n    return x\n\ndef spin(n):\n    while n > 0:\n        n += 1\n    return n\n";
    const TESTS: &str = "from calc import clamp, spin\n\ndef test_clamp():\n    assert clamp(50) == 20\n\ndef test_small():\n    assert clamp(3) == 3\n\ndef test_spin():\n    assert spin(0) == 0\n";

    #[test]
    fn hot_swapped_and_cold_requests_see_only_their_own_patch() {
        let dir = project(&[("calc.py", MODULE), ("test_calc.py", TESTS)]);
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        let mut server = pytest.fork_server(dir.path(), &[], Duration::from_secs(30)).unwrap();
        assert_eq!(server.mode(), ServerMode::Warm, "{}", server.why());
        assert_eq!(server.tests().len(), 3);
        let clamp = vec!["test_calc.py::test_clamp".to_string()];
        let path = dir.path().join("calc.py");

        // A body edit is hot-swapped.
        std::fs::write(&path, MODULE.replace("        return LIMIT", "        return 20")).unwrap();
        let swap = Swap { file: "calc.py".into(), functions: vec![("clamp".into(), 3)] };
        let s = server.run(&request(Some(&clamp), Some(swap))).unwrap();
        assert_eq!(s.warm, Some(true));
        assert_eq!(s.tests[0].outcome, TestOutcome::Passed);

        // The next child starts from the unpatched server again.
        std::fs::write(&path, MODULE).unwrap();
        let swap = Swap { file: "calc.py".into(), functions: vec![("clamp".into(), 3)] };
        let s = server.run(&request(Some(&clamp), Some(swap))).unwrap();
        assert_eq!(s.tests[0].outcome, TestOutcome::Failed);

        // A module-level edit takes the cold path and still sees the patched file.
        std::fs::write(&path, MODULE.replace("LIMIT = 10", "LIMIT = 20")).unwrap();
        let s = server.run(&request(Some(&clamp), None)).unwrap();
        assert_eq!(s.warm, Some(false));
        assert_eq!(s.tests[0].outcome, TestOutcome::Passed);
        assert_eq!(s.exit_status, Some(0));
    }

    #[test]
    fn a_hanging_child_is_killed_and_the_server_keeps_serving() {
        let dir = project(&[("calc.py", MODULE), ("test_calc.py", TESTS)]);
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        let mut server = pytest.fork_server(dir.path(), &[], Duration::from_secs(30)).unwrap();
        let spin = vec!["test_calc.py::test_spin".to_string()];
        // `spin(0)` returns at once; make it loop forever and give the child no alarm.
        std::fs::write(dir.path().join("calc.py"), MODULE.replace("while n > 0", "while n >= 0")).unwrap();
        let swap = Swap { file: "calc.py".into(), functions: vec![("spin".into(), 8)] };
        let mut req = request(Some(&spin), Some(swap));
        req.per_test_timeout = Duration::ZERO;
        req.session_timeout = Duration::from_millis(700);
        let s = server.run(&req).unwrap();
        assert_eq!(s.exit, Exit::Timeout);
        // The per-test alarm inside the child also works.
        let swap = Swap { file: "calc.py".into(), functions: vec![("spin".into(), 8)] };
        let mut req = request(Some(&spin), Some(swap));
        req.per_test_timeout = Duration::from_millis(300);
        let s = server.run(&req).unwrap();
        assert_eq!(s.tests[0].outcome, TestOutcome::Timeout);
        // And the whole suite still runs afterwards.
        std::fs::write(dir.path().join("calc.py"), MODULE).unwrap();
        let s = server.run(&request(None, None)).unwrap();
        assert_eq!(s.tests.len(), 3);
    }
}
