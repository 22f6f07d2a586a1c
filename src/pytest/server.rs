//! The fast validation engine: a persistent pytest fork server per scratch copy (local or in one container).

use super::{PytestError, Session, TestRun};
use crate::io_error::io_err;
use crate::process::{kill_group, read_lossy, Exit, Limits};
use crate::sandbox::docker::{AttachedContainer, DockerSandbox};
use crate::sandbox::Job;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

mod batch;
pub use batch::BatchItem;

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
#[derive(Debug, Clone, Serialize)]
pub struct Swap {
    pub file: String,
    pub functions: Vec<(String, usize)>,
    /// The module-level statements that hold the functions, as (1-based first line, text):
    /// the child compiles these instead of the whole patched file. `None`: the whole file.
    pub source: Option<(usize, String)>,
}

/// One test session to run in a forked child: the [`TestRun`], and what the child swaps in;
/// serialized as the server reads it.
#[derive(Debug, Clone, Serialize)]
pub struct Request<'a> {
    #[serde(flatten)]
    pub run: TestRun<'a>,
    pub swap: Option<Swap>,
    /// Failures carry their frames with locals (off when only outcomes matter).
    pub frames: bool,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum Reply {
    Ready {
        mode: ReadyMode,
        tests: Vec<String>,
        why: String,
        /// The server can check for state left behind between the requests of a batch.
        #[serde(default)]
        batch: bool,
    },
    Started {
        id: u64,
        pid: i32,
    },
    Done {
        id: u64,
        status: i32,
        /// The server killed the child at the request's deadline.
        #[serde(default)]
        timed_out: bool,
    },
    /// One request of a batch (`ran`: false when the batch's child left it to a single run).
    Item {
        id: u64,
        index: usize,
        status: i32,
        timed_out: bool,
        ran: bool,
    },
}

/// The mode a `ready` reply announces.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ReadyMode {
    Warm,
    Cold,
    /// The server cannot run requests (no `os.fork`); its `why` says so.
    Unavailable,
}

/// How long past a request's deadline the host waits before it stops the child itself (the
/// server enforces the deadline; this only catches a server that stopped answering).
const BACKSTOP_GRACE: Duration = Duration::from_secs(5);

/// How requests reach the server and its replies come back.
enum Transport {
    /// A child process of ours (maybe inside bubblewrap): the pids in its replies are host
    /// pids, so the host can kill a child's process group itself.
    /// Dropping `_cgroup` kills whatever still runs in it.
    /// `_tracked` has the server's group killed if the run is interrupted.
    Local {
        child: Child,
        stdin: ChildStdin,
        _cgroup: Option<crate::sandbox::cgroup::Cgroup>,
        _tracked: crate::interrupt::Tracked,
    },
    /// A container attached to our pipes. The pids in its replies belong to the container's
    /// pid namespace: never signal them from the host (they may name unrelated processes
    /// here). The only backstop is removing the whole container.
    Container(Box<AttachedContainer>),
}

impl Transport {
    fn send(&mut self, line: &str) -> std::io::Result<()> {
        match self {
            Transport::Local { stdin, .. } => writeln!(stdin, "{line}").and_then(|()| stdin.flush()),
            Transport::Container(container) => container.write_line(line),
        }
    }

    /// Why the server is gone, with what it said on stderr when we have it.
    fn exited(&self) -> String {
        match self {
            Transport::Local { .. } => "the fork server exited".into(),
            Transport::Container(container) => match container.stderr_tail().trim() {
                "" => "the fork server's container exited".into(),
                tail => format!("the fork server's container exited: {}", tail.lines().last().unwrap_or(tail)),
            },
        }
    }
}

/// A running fork server rooted at one scratch copy of the project.
pub struct ForkServer {
    transport: Transport,
    replies: Receiver<String>,
    reports: tempfile::TempDir,
    /// The server has collected the suite and said so.
    ready: bool,
    mode: ServerMode,
    why: String,
    tests: Vec<String>,
    /// Batches are checked for state left behind between requests ([`ForkServer::run_batch`]).
    batches: bool,
    next_id: u64,
    /// Set when the server can no longer be used (its container was removed by the backstop).
    gone: Option<String>,
}

impl ForkServer {
    /// Start a server in `root` (a scratch copy) and wait until it has collected the suite:
    /// a local child process, or under Docker one long-lived container (removed on drop).
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
        origin: Option<&Path>,
    ) -> Result<ForkServer, PytestError> {
        let mut server = ForkServer::spawn(python, plugin_dir, root, selectors, sandbox, origin)?;
        server.wait_ready(startup_timeout)?;
        Ok(server)
    }

    /// Start a server without waiting for it: it imports pytest and collects the suite while
    /// the caller does other work (see [`ForkServer::wait_ready`]). `origin`, the user's
    /// checkout that `root` copies, is readable inside the sandbox: an editable install in its
    /// virtualenv names paths there (the plugin then imports their copies from `root`).
    ///
    /// # Errors
    /// When the server process (or container) cannot be started.
    pub fn spawn(
        python: &Path,
        plugin_dir: &Path,
        root: &Path,
        selectors: &[String],
        sandbox: &crate::sandbox::Sandbox,
        origin: Option<&Path>,
    ) -> Result<ForkServer, PytestError> {
        let reports = tempfile::Builder::new()
            .prefix("deepdebug-server-")
            .tempdir()
            .map_err(io_err("create the fork server's directory"))?;
        let script = reports.path().join("deepdebug_forkserver.py");
        std::fs::write(&script, SERVER_SOURCE).map_err(io_err("write the fork server"))?;
        let launch = Launch { python, plugin_dir, origin, root, selectors, script: &script, reports: reports.path() };
        let (transport, replies) = match sandbox.docker() {
            Some(docker) => start_container(docker, &launch)?,
            None => start_local(&launch, sandbox)?,
        };
        Ok(ForkServer {
            transport,
            replies,
            reports,
            ready: false,
            mode: ServerMode::Cold,
            why: String::new(),
            tests: Vec::new(),
            batches: false,
            next_id: 0,
            gone: None,
        })
    }

    /// Whether the server has said it is ready.
    #[must_use]
    pub fn is_ready(&self) -> bool {
        self.ready
    }

    /// Wait until the server has collected the suite (at once when it already has).
    ///
    /// # Errors
    /// When the server dies or does not become ready within `timeout`.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<(), PytestError> {
        if self.ready {
            return Ok(());
        }
        match self.reply(timeout)? {
            Some(Reply::Ready { mode, tests, why, batch }) => {
                self.mode = match mode {
                    ReadyMode::Warm => ServerMode::Warm,
                    ReadyMode::Cold => ServerMode::Cold,
                    ReadyMode::Unavailable => return Err(PytestError::ServerUnavailable(why)),
                };
                self.tests = tests;
                self.why = why;
                self.batches = batch && self.mode == ServerMode::Warm;
                self.ready = true;
                Ok(())
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

    /// Whether batches of requests share a child ([`ForkServer::run_batch`]); without, a batch
    /// still works, one child per request.
    #[must_use]
    pub fn batches(&self) -> bool {
        self.batches
    }

    /// Whether the server runs in a container.
    #[must_use]
    pub fn in_container(&self) -> bool {
        matches!(self.transport, Transport::Container(_))
    }

    fn reply(&self, timeout: Duration) -> Result<Option<Reply>, PytestError> {
        match self.replies.recv_timeout(timeout) {
            Ok(line) => serde_json::from_str(&line)
                .map(Some)
                .map_err(|e| PytestError::ServerUnavailable(format!("bad reply from the fork server: {e}"))),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(PytestError::ServerUnavailable(self.transport.exited())),
        }
    }

    /// Run one request in a fresh child. The server kills the child's process group at the
    /// session timeout; should it not answer shortly after, the host kills the child's group
    /// (local server) or removes the container (the server is gone then).
    ///
    /// # Errors
    /// When the server died or stopped answering.
    pub fn run(&mut self, request: &Request<'_>) -> Result<Session, PytestError> {
        let id = self.next_request()?;
        let report: PathBuf = self.reports.path().join(format!("report-{id}.jsonl"));
        let mut message = request.to_json(&report);
        message["id"] = id.into();
        let start = Instant::now();
        self.transport
            .send(&message.to_string())
            .map_err(|_| PytestError::ServerUnavailable("the fork server closed its input".into()))?;
        let backstop = request.run.session_timeout + BACKSTOP_GRACE;
        let pid = match self.reply(backstop)? {
            Some(Reply::Started { id: got, pid }) if got == id => pid,
            _ => {
                self.abandon("the fork server did not start a child");
                return Err(PytestError::ServerUnavailable("the fork server did not start a child".into()));
            }
        };
        let mut killed = false;
        let (status, timed_out) = loop {
            let left = backstop.saturating_sub(start.elapsed());
            match self.reply(if killed { Duration::from_secs(10) } else { left })? {
                Some(Reply::Done { id: got, status, timed_out }) if got == id => break (status, timed_out || killed),
                Some(_) => {}
                None if !killed => match &mut self.transport {
                    Transport::Local { .. } => {
                        kill_group(pid, libc::SIGKILL);
                        killed = true;
                    }
                    Transport::Container(_) => {
                        self.abandon("the fork server ignored a deadline");
                        let _ = std::fs::remove_file(&report);
                        return Ok(Session::empty(Exit::Timeout, start.elapsed()));
                    }
                },
                None => return Err(PytestError::ServerUnavailable("a killed child was not reaped".into())),
            }
        };
        if let Transport::Local { .. } = self.transport {
            // The server did this too; a host pid, so the host may do it as well.
            kill_group(pid, libc::SIGKILL);
        }
        Ok(session_from(&report, exit_of(status, timed_out), start.elapsed()))
    }
}

impl Request<'_> {
    /// The request as the server reads it (without its id), its report going to `report`.
    fn to_json(&self, report: &Path) -> serde_json::Value {
        let mut message = serde_json::to_value(self).expect("a request serializes");
        message["report"] = serde_json::json!(report);
        message
    }
}

/// How a child ended, from its wait status.
fn exit_of(status: i32, timed_out: bool) -> Exit {
    if timed_out {
        Exit::Timeout
    } else if libc::WIFEXITED(status) {
        match libc::WEXITSTATUS(status) {
            0 => Exit::Success,
            code => Exit::Failure(code),
        }
    } else {
        Exit::Signalled(libc::WTERMSIG(status))
    }
}

/// The session a child's report file describes (the file is removed).
fn session_from(report: &Path, exit: Exit, elapsed: Duration) -> Session {
    let mut session = Session::empty(exit, elapsed);
    session.absorb(&read_lossy(report));
    let _ = std::fs::remove_file(report);
    session
}

impl ForkServer {
    /// The id of a new request, when the server can take one.
    fn next_request(&mut self) -> Result<u64, PytestError> {
        if let Some(why) = &self.gone {
            return Err(PytestError::ServerUnavailable(why.clone()));
        }
        if !self.ready {
            return Err(PytestError::ServerUnavailable("the fork server is not ready yet".into()));
        }
        self.next_id += 1;
        Ok(self.next_id)
    }

    /// Stop using a server that does not answer: a container is removed at once (with every
    /// child in it), a local server when it is dropped.
    fn abandon(&mut self, why: &str) {
        if let Transport::Container(container) = &mut self.transport {
            let _ = container.remove();
            self.gone = Some(format!("{why}; its container was removed"));
        } else {
            self.gone = Some(why.to_string());
        }
    }
}

/// The environment of a fork server (`proto_fd`: where its replies go).
fn server_env(plugin_dir: &Path, root: &Path, proto_fd: u8) -> Vec<(String, OsString)> {
    let mut env = super::session_env(plugin_dir, root, false);
    env.push(("DEEPDEBUG_PROTO_FD".into(), proto_fd.to_string().into()));
    env
}

/// What starting a server takes, locally or in a container.
#[derive(Clone, Copy)]
struct Launch<'a> {
    python: &'a Path,
    /// Holds the deepdebug plugin (importable by the server).
    plugin_dir: &'a Path,
    /// The user's checkout, read-only in the sandbox.
    origin: Option<&'a Path>,
    /// The project's scratch copy: the server's working directory.
    root: &'a Path,
    /// pytest arguments selecting the suite.
    selectors: &'a [String],
    /// The server script, inside `reports`.
    script: &'a Path,
    /// The server's own writable directory (script and per-request reports).
    reports: &'a Path,
}

/// The server as a local child process, replies on its fd 3.
fn start_local(
    launch: &Launch<'_>,
    sandbox: &crate::sandbox::Sandbox,
) -> Result<(Transport, Receiver<String>), PytestError> {
    let Launch { python, plugin_dir, origin, root, selectors, script, reports } = *launch;
    let (reader, writer) = std::io::pipe().map_err(io_err("create the reply pipe"))?;
    let writer_fd = writer.as_raw_fd();
    let mut cmd = sandbox
        .local_command(python, root, &[Some(plugin_dir), origin].into_iter().flatten().collect::<Vec<_>>(), &[reports])
        .ok_or_else(|| PytestError::ServerUnavailable("the sandbox cannot run a local fork server".into()))?;
    cmd.current_dir(root)
        .arg(script)
        .args(selectors)
        .envs(server_env(plugin_dir, root, 3))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let limits = Limits::default();
    // The server, its children and anything they leave behind share one pids/memory limit.
    let cgroup = sandbox.cgroup();
    let entry = cgroup.as_ref().map(crate::sandbox::cgroup::Cgroup::entry);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 || libc::dup2(writer_fd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            crate::process::apply_limits(limits);
            if let Some(entry) = &entry {
                entry.enter();
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(io_err("start the fork server"))?;
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
    let tracked = crate::interrupt::track(i32::try_from(child.id()).unwrap_or(0));
    Ok((Transport::Local { child, stdin, _cgroup: cgroup, _tracked: tracked }, replies))
}

/// The server in one long-lived container (the image's interpreter), replies on its stdout.
fn start_container(
    docker: &std::sync::Arc<DockerSandbox>,
    launch: &Launch<'_>,
) -> Result<(Transport, Receiver<String>), PytestError> {
    let Launch { python, plugin_dir, origin, root, selectors, script, reports } = *launch;
    let mut args: Vec<OsString> = vec![script.as_os_str().to_owned()];
    args.extend(selectors.iter().map(OsString::from));
    let job = Job {
        program: crate::sandbox::docker::image_python(python),
        args,
        source: root,
        read_only: [Some(plugin_dir), origin].into_iter().flatten().collect(),
        writable: vec![reports, root],
        env: server_env(plugin_dir, root, 1),
        timeout: Duration::MAX,
        limits: Limits::default(),
        capture_dir: reports,
    };
    let mut container = docker.attach(&job)?;
    let replies = container.take_lines().expect("the lines are taken once");
    Ok((Transport::Container(Box::new(container)), replies))
}

impl Drop for ForkServer {
    fn drop(&mut self) {
        match &mut self.transport {
            Transport::Local { child, .. } => {
                let pgid = i32::try_from(child.id()).unwrap_or(0);
                kill_group(pgid, libc::SIGKILL);
                let _ = child.wait();
            }
            // Removing the container kills the server and every child.
            Transport::Container(container) => {
                let _ = container.remove();
            }
        }
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
        let run = TestRun {
            per_test_timeout: Some(Duration::from_secs(2)),
            ..TestRun::new(nodeids, Duration::from_secs(20))
        };
        Request { run, swap, frames: true }
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
        let swap = Swap { file: "calc.py".into(), functions: vec![("clamp".into(), 3)], source: None };
        let s = server.run(&request(Some(&clamp), Some(swap))).unwrap();
        assert_eq!(s.warm, Some(true));
        assert_eq!(s.tests[0].outcome, TestOutcome::Passed);

        // The next child starts from the unpatched server again.
        std::fs::write(&path, MODULE).unwrap();
        let swap = Swap { file: "calc.py".into(), functions: vec![("clamp".into(), 3)], source: None };
        let s = server.run(&request(Some(&clamp), Some(swap))).unwrap();
        assert_eq!(s.tests[0].outcome, TestOutcome::Failed);

        // A module-level edit takes the cold path and still sees the patched file.
        std::fs::write(&path, MODULE.replace("LIMIT = 10", "LIMIT = 20")).unwrap();
        let s = server.run(&request(Some(&clamp), None)).unwrap();
        assert_eq!(s.warm, Some(false));
        assert_eq!(s.cold_why.as_deref(), Some("no-swap"), "the host sent no swap");
        assert_eq!(s.tests[0].outcome, TestOutcome::Passed);
        assert_eq!(s.exit_status, Some(0));
    }

    #[test]
    fn a_child_compiles_only_the_statements_it_is_sent_in_their_class_and_under_the_modules_future_flags() {
        // Without the module's `from __future__ import annotations` the inner def fails on
        // its unknown annotation; without its class, `self.__scale` is not name-mangled.
        let module = "from __future__ import annotations\n\nclass Box:\n    __scale = 2\n\n    def grow(self, x):\n        def double(y: Missing) -> int:\n            return y * self.__scale\n        return double(x) + 1\n";
        let tests = "from box import Box\n\ndef test_grow():\n    assert Box().grow(3) == 6\n";
        let dir = project(&[("box.py", module), ("test_box.py", tests)]);
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        let mut server = pytest.fork_server(dir.path(), &[], Duration::from_secs(30)).unwrap();
        let grow = vec!["test_box.py::test_grow".to_string()];
        let patched = module.replace("double(x) + 1", "double(x)");
        let class = patched.split_inclusive('\n').skip(2).collect::<String>();
        let swap = |source: &str| Swap {
            file: "box.py".into(),
            functions: vec![("Box.grow".into(), 6)],
            source: Some((3, source.to_string())),
        };
        std::fs::write(dir.path().join("box.py"), &patched).unwrap();
        let s = server.run(&request(Some(&grow), Some(swap(&class)))).unwrap();
        assert_eq!(s.warm, Some(true));
        assert_eq!(s.tests[0].outcome, TestOutcome::Passed, "{:?}", s.tests[0].failure);
        // The statements sent are what runs, not the file on disk.
        std::fs::write(dir.path().join("box.py"), module).unwrap();
        let s = server.run(&request(Some(&grow), Some(swap(&class)))).unwrap();
        assert_eq!(s.tests[0].outcome, TestOutcome::Passed, "{:?}", s.tests[0].failure);
        let unpatched = module.split_inclusive('\n').skip(2).collect::<String>();
        let s = server.run(&request(Some(&grow), Some(swap(&unpatched)))).unwrap();
        assert_eq!(s.tests[0].outcome, TestOutcome::Failed);
    }

    /// The swap `fix` sends for `module` (the file `file`) with `needle` replaced by `with`:
    /// the edited functions and the source its focus compiles.
    fn patched_swap(file: &str, module: &str, needle: &str, with: &str) -> Swap {
        use crate::patch::{Edit, Patch};
        use crate::python::Parsed;
        let at = module.find(needle).unwrap();
        let patch = Patch::single(file, Edit::replacement(at..at + needle.len(), with));
        let patched = patch.apply(module);
        let focus =
            crate::repair::candidate::focus(&patch, &Parsed::new(module), &Parsed::new(patched.as_str())).unwrap();
        Swap { file: file.into(), functions: focus.functions.clone(), source: Some(focus.swap_source(&patched)) }
    }

    #[test]
    fn a_method_swapped_from_its_chunk_keeps_name_mangling_super_and_the_modules_future_flags() {
        let module = "from __future__ import annotations\n\nclass Base:\n    def grow(self, x):\n        return x\n\nclass Box(Base):\n    __scale = 2\n\n    def other(self):\n        return 0\n\n    def grow(self, x):\n        def double(y: Missing) -> int:\n            return y * self.__scale\n        return super().grow(double(x)) + 1\n";
        let tests = "from box import Box\n\ndef test_grow():\n    assert Box().grow(3) == 6\n";
        let dir = project(&[("box.py", module), ("test_box.py", tests)]);
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        let mut server = pytest.fork_server(dir.path(), &[], Duration::from_secs(30)).unwrap();
        // A deletion at the very end of the body.
        let swap = patched_swap("box.py", module, " + 1", "");
        let (first, source) = swap.source.clone().unwrap();
        assert_eq!(first, 12, "{source}");
        assert!(source.starts_with("class Box:\n    def grow") && !source.contains("other"), "{source}");
        let grow = vec!["test_box.py::test_grow".to_string()];
        let s = server.run(&request(Some(&grow), Some(swap))).unwrap();
        assert_eq!(s.warm, Some(true));
        assert_eq!(s.tests[0].outcome, TestOutcome::Passed, "{:?}", s.tests[0].failure);
    }

    #[test]
    fn class_and_static_methods_properties_private_and_wrapped_or_cached_functions_are_hot_swapped() {
        let module = "import functools\n\ndef logged(f):\n    @functools.wraps(f)\n    def wrapper(*a, **k):\n        return f(*a, **k)\n    return wrapper\n\nclass Shape:\n    def __init__(self, side):\n        self.side = side\n\n    @classmethod\n    def unit(cls):\n        return cls(2)\n\n    @staticmethod\n    def double(x):\n        return x * 3\n\n    @property\n    def area(self):\n        return self.side * self.side + 1\n\n    @area.setter\n    def area(self, value):\n        self.side = value ** 0.5\n\n    @logged\n    def grow(self, n):\n        return self.side + n + 1\n\n    def __half(self):\n        return self.side / 3\n\n    def half(self):\n        return self.__half()\n\n@functools.lru_cache(maxsize=None)\ndef cube(x):\n    return x * x\n";
        let tests = "from shape import Shape, cube\n\ndef test_unit():\n    assert Shape.unit().side == 1\n\ndef test_double():\n    assert Shape.double(2) == 4\n\ndef test_area():\n    assert Shape(3).area == 9\n\ndef test_grow():\n    assert Shape(1).grow(1) == 2\n\ndef test_cube():\n    assert cube(2) == 8\n\ndef test_half():\n    assert Shape(4).half() == 2\n";
        let dir = project(&[("shape.py", module), ("test_shape.py", tests)]);
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        let mut server = pytest.fork_server(dir.path(), &[], Duration::from_secs(30)).unwrap();
        for (needle, fixed, test) in [
            ("cls(2)", "cls(1)", "test_unit"),
            ("x * 3", "x * 2", "test_double"),
            ("self.side + 1", "self.side", "test_area"),
            ("n + 1", "n", "test_grow"),
            ("return x * x", "return x * x * x", "test_cube"),
            ("self.side / 3", "self.side / 2", "test_half"),
        ] {
            let swap = patched_swap("shape.py", module, needle, fixed);
            let nodeid = vec![format!("test_shape.py::{test}")];
            let s = server.run(&request(Some(&nodeid), Some(swap))).unwrap();
            assert_eq!((s.warm, s.cold_why.as_deref()), (Some(true), None), "{test}");
            assert_eq!(s.tests[0].outcome, TestOutcome::Passed, "{test}: {:?}", s.tests[0].failure);
        }
    }

    #[test]
    fn a_failure_whose_exception_cannot_be_printed_is_still_a_failed_test() {
        // A patch that breaks an exception class's `__str__`: the test fails, and its record
        // must say so (a fresh pytest process reports it as failed too).
        let module = "class Invalid(Exception):\n    def __str__(self):\n        return 'bad: ' + self.args[0]\n\ndef check(x):\n    raise Invalid(x)\n";
        let tests = "from errors import check\n\ndef test_check():\n    check(1)\n";
        let dir = project(&[("errors.py", module), ("test_errors.py", tests)]);
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        let mut server = pytest.fork_server(dir.path(), &[], Duration::from_secs(30)).unwrap();
        let test = vec!["test_errors.py::test_check".to_string()];
        let swap = patched_swap("errors.py", module, "'bad: ' + self.args[0]", "'bad: ' - self.args[0]");
        let s = server.run(&request(Some(&test), Some(swap))).unwrap();
        assert_eq!(s.warm, Some(true));
        assert_eq!(s.tests.len(), 1, "the test left no record: {}", s.output_tail);
        assert_eq!(s.tests[0].outcome, TestOutcome::Failed);
    }

    #[test]
    fn failure_frames_are_left_out_unless_asked_for_and_a_swap_only_cpython_rejects_runs_cold() {
        let dir = project(&[("calc.py", MODULE), ("test_calc.py", TESTS)]);
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        let mut server = pytest.fork_server(dir.path(), &[], Duration::from_secs(30)).unwrap();
        let clamp = vec!["test_calc.py::test_clamp".to_string()];
        let swap = || Some(Swap { file: "calc.py".into(), functions: vec![("clamp".into(), 3)], source: None });
        let with = server.run(&request(Some(&clamp), swap())).unwrap();
        let failure = with.tests[0].failure.as_ref().unwrap();
        assert!(failure.frames.iter().any(|f| f.function == "test_clamp"), "{failure:?}");
        let without = server.run(&Request { frames: false, ..request(Some(&clamp), swap()) }).unwrap();
        assert_eq!(without.warm, Some(true));
        let failure = without.tests[0].failure.as_ref().unwrap();
        assert_eq!(without.tests[0].outcome, TestOutcome::Failed);
        assert!(failure.frames.is_empty() && failure.message.contains("assert"), "{failure:?}");
        // A patched file only CPython rejects cannot be compiled for a hot swap: the child
        // reports the import error a fresh session would meet, without starting one.
        std::fs::write(dir.path().join("calc.py"), MODULE.replace("    return x\n", "    return x\nnonlocal y\n"))
            .unwrap();
        let bad = server.run(&request(Some(&clamp), swap())).unwrap();
        assert_eq!(bad.warm, Some(true));
        assert!(bad.collect_errors[0].message.contains("SyntaxError"), "{:?}", bad.collect_errors);
        assert!(bad.tests.is_empty(), "{:?}", bad.tests);
    }

    #[test]
    fn the_warm_up_runs_no_project_hook_in_the_server() {
        // A conftest hook on every test: the server must not run it while warming up, or its
        // effects would be inherited by every child.
        let conftest = "import os\n\ndef pytest_runtest_setup(item):\n    with open(os.environ['HOOK_LOG'], 'a') as f:\n        f.write(item.name + '\\n')\n";
        let dir = project(&[("calc.py", MODULE), ("test_calc.py", TESTS), ("conftest.py", conftest)]);
        let log = dir.path().join("hook.log");
        std::env::set_var("HOOK_LOG", &log);
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        let mut server = pytest.fork_server(dir.path(), &[], Duration::from_secs(30)).unwrap();
        let small = vec!["test_calc.py::test_small".to_string()];
        let s = server.run(&request(Some(&small), None)).unwrap();
        assert_eq!(s.tests[0].outcome, TestOutcome::Passed);
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "test_small\n");
    }

    #[test]
    fn a_hanging_child_is_killed_and_the_server_keeps_serving() {
        let dir = project(&[("calc.py", MODULE), ("test_calc.py", TESTS)]);
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        let mut server = pytest.fork_server(dir.path(), &[], Duration::from_secs(30)).unwrap();
        let spin = vec!["test_calc.py::test_spin".to_string()];
        // `spin(0)` returns at once; make it loop forever and give the child no alarm.
        std::fs::write(dir.path().join("calc.py"), MODULE.replace("while n > 0", "while n >= 0")).unwrap();
        let swap = Swap { file: "calc.py".into(), functions: vec![("spin".into(), 8)], source: None };
        let mut req = request(Some(&spin), Some(swap));
        req.run.per_test_timeout = None;
        req.run.session_timeout = Duration::from_millis(700);
        let s = server.run(&req).unwrap();
        assert_eq!(s.exit, Exit::Timeout);
        // The per-test alarm inside the child also works.
        let swap = Swap { file: "calc.py".into(), functions: vec![("spin".into(), 8)], source: None };
        let mut req = request(Some(&spin), Some(swap));
        req.run.per_test_timeout = Some(Duration::from_millis(300));
        let s = server.run(&req).unwrap();
        assert_eq!(s.tests[0].outcome, TestOutcome::Timeout);
        // And the whole suite still runs afterwards.
        std::fs::write(dir.path().join("calc.py"), MODULE).unwrap();
        let s = server.run(&request(None, None)).unwrap();
        assert_eq!(s.tests.len(), 3);
    }

    /// Whether `pid` is gone or a zombie (killed, not yet reaped by its new parent).
    fn dead(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
        }
    }

    #[test]
    fn the_server_kills_a_hung_child_and_its_grandchildren_at_the_deadline() {
        const HANG: &str = "import os, subprocess, time\n\ndef test_hang():\n    p = subprocess.Popen(['sleep', '300'])\n    with open('grandchild.pid', 'w') as f:\n        f.write(str(p.pid))\n    time.sleep(300)\n\ndef test_quick():\n    assert True\n";
        let dir = project(&[("test_hang.py", HANG)]);
        let pid_file = dir.path().join("grandchild.pid");
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        let mut server = pytest.fork_server(dir.path(), &[], Duration::from_secs(30)).unwrap();
        let hang = vec!["test_hang.py::test_hang".to_string()];
        let mut req = request(Some(&hang), None);
        req.run.per_test_timeout = None;
        req.run.session_timeout = Duration::from_millis(1500);
        let start = Instant::now();
        let s = server.run(&req).unwrap();
        assert_eq!(s.exit, Exit::Timeout);
        // The server's deadline, not the host's backstop (the deadline + 5 s).
        assert!(start.elapsed() < Duration::from_millis(1500) + BACKSTOP_GRACE / 2, "{:?}", start.elapsed());
        let grandchild: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        let waited = Instant::now();
        while !dead(grandchild) && waited.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(dead(grandchild), "the grandchild {grandchild} survived");
        let quick = vec!["test_hang.py::test_quick".to_string()];
        let s = server.run(&request(Some(&quick), None)).unwrap();
        assert_eq!(s.tests[0].outcome, TestOutcome::Passed);
    }

    fn wait_dead(pid: i32) -> bool {
        let waited = Instant::now();
        while !dead(pid) && waited.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        dead(pid)
    }

    #[test]
    fn a_finished_child_answers_before_its_exit_its_strays_die_and_the_spare_leaves_with_the_server() {
        const TESTS: &str = "import os, subprocess\n\ndef test_stray():\n    p = subprocess.Popen(['sleep', '300'])\n    with open('stray.pid', 'w') as f:\n        f.write(str(p.pid))\n\ndef test_crash():\n    os._exit(3)\n";
        let dir = project(&[("test_strays.py", TESTS)]);
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        let mut server = pytest.fork_server(dir.path(), &[], Duration::from_secs(30)).unwrap();
        // The child says it has finished just before it exits; a process it left behind is
        // killed before the answer goes.
        let stray = vec!["test_strays.py::test_stray".to_string()];
        let s = server.run(&request(Some(&stray), None)).unwrap();
        assert_eq!((s.exit, s.tests[0].outcome), (Exit::Success, TestOutcome::Passed));
        let pid: i32 = std::fs::read_to_string(dir.path().join("stray.pid")).unwrap().trim().parse().unwrap();
        assert!(wait_dead(pid), "the stray {pid} survived");
        // The next request's child is forked already, waiting for it.
        let Transport::Local { child, .. } = &server.transport else { unreachable!("a local server") };
        let server_pid = i32::try_from(child.id()).unwrap();
        // The last child may still be exiting: the spare is the one child asleep on its pipe.
        let spare = || {
            let waited = Instant::now();
            loop {
                let children =
                    std::fs::read_to_string(format!("/proc/{server_pid}/task/{server_pid}/children")).unwrap();
                let waiting: Vec<i32> = children
                    .split_whitespace()
                    .map(|p| p.parse().unwrap())
                    .filter(|p| {
                        std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|stat| {
                            stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('S'))
                        })
                    })
                    .collect();
                if waiting.len() == 1 && children.split_whitespace().count() == 1 {
                    return waiting[0];
                }
                assert!(waited.elapsed() < Duration::from_secs(5), "no single spare child: {children}");
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        // Killed from outside while it waits, it is replaced. A child that ends without saying
        // it has finished is answered with its own wait status.
        // SAFETY: plain kill(2) on our grandchild, which is not reaped while its parent runs.
        let killed = spare();
        unsafe { libc::kill(killed, libc::SIGKILL) };
        assert!(wait_dead(killed));
        let crash = vec!["test_strays.py::test_crash".to_string()];
        let s = server.run(&request(Some(&crash), None)).unwrap();
        assert_eq!(s.exit, Exit::Failure(3));
        // The spare leaves with the server.
        let last = spare();
        drop(server);
        assert!(wait_dead(last), "the spare child {last} survived its server");
        assert!(wait_dead(server_pid));
    }

    #[test]
    fn a_stray_that_left_the_childs_process_group_is_killed_after_the_request() {
        // `start_new_session`: the stray escapes the group kill; re-parented to the server (a
        // subreaper) when the child exits, it is killed before the next request.
        const TESTS: &str = "import subprocess\n\ndef test_escape():\n    p = subprocess.Popen(['sleep', '300'], start_new_session=True)\n    with open('stray.pid', 'w') as f:\n        f.write(str(p.pid))\n";
        let dir = project(&[("test_escape.py", TESTS)]);
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        let mut server = pytest.fork_server(dir.path(), &[], Duration::from_secs(30)).unwrap();
        let s = server.run(&request(None, None)).unwrap();
        assert_eq!(s.tests[0].outcome, TestOutcome::Passed);
        let pid: i32 = std::fs::read_to_string(dir.path().join("stray.pid")).unwrap().trim().parse().unwrap();
        assert!(wait_dead(pid), "the stray {pid} outlived its request");
    }

    #[test]
    fn only_the_requests_child_can_say_it_has_finished() {
        // A test forks and its copy returns at once, running the rest of pytest's protocol
        // and reaching the child's exit code first: it must not end the request early.
        const TESTS: &str = "import os, time\n\ndef test_forks():\n    if os.fork() == 0:\n        return\n    time.sleep(0.5)\n    assert False, 'the real child'\n";
        let dir = project(&[("test_forks.py", TESTS)]);
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        let mut server = pytest.fork_server(dir.path(), &[], Duration::from_secs(30)).unwrap();
        let forks = vec!["test_forks.py::test_forks".to_string()];
        let s = server.run(&request(Some(&forks), None)).unwrap();
        let outcomes: Vec<TestOutcome> = s.tests.iter().map(|t| t.outcome).collect();
        assert!(outcomes.contains(&TestOutcome::Failed), "{:?}", s.tests);
        assert!(s.elapsed >= Duration::from_millis(500), "{:?}", s.elapsed);
    }

    #[test]
    fn a_container_server_that_stops_answering_is_removed_by_the_backstop() {
        if std::env::var("DEEPDEBUG_SKIP_DOCKER").is_ok_and(|v| v == "1") {
            return;
        }
        let config = crate::sandbox::DockerConfig::default();
        let sandbox = std::sync::Arc::new(
            crate::sandbox::Sandbox::new(crate::sandbox::SandboxKind::Docker, &config)
                .expect("the Docker engine and image (or DEEPDEBUG_SKIP_DOCKER=1)"),
        );
        let tests = format!("{TESTS}\ndef test_slow():\n    import time\n    time.sleep(3)\n");
        let dir = project(&[("calc.py", MODULE), ("test_calc.py", &tests)]);
        let pytest = Pytest::with_sandbox(Path::new("python3"), std::sync::Arc::clone(&sandbox)).unwrap();
        let docker = sandbox.docker().unwrap();
        let name = |server: &ForkServer| match &server.transport {
            Transport::Container(container) => container.name().to_string(),
            Transport::Local { .. } => panic!("not in a container"),
        };
        let pause = |name: &str| docker.block_on(docker.client().pause_container(name)).unwrap();

        // Frozen while a child runs: the server cannot enforce the deadline; the host removes
        // the container at the backstop and reports a timeout.
        let mut server = pytest.fork_server(dir.path(), &[], Duration::from_secs(60)).unwrap();
        let frozen = name(&server);
        let slow = vec!["test_calc.py::test_slow".to_string()];
        let mut req = request(Some(&slow), None);
        req.run.per_test_timeout = None;
        req.run.session_timeout = Duration::from_secs(1);
        let start = Instant::now();
        let s = std::thread::scope(|scope| {
            scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(400));
                pause(&frozen);
            });
            server.run(&req).unwrap()
        });
        assert_eq!(s.exit, Exit::Timeout);
        assert!(start.elapsed() >= BACKSTOP_GRACE, "{:?}", start.elapsed());
        assert!(docker.leftover_containers().unwrap().is_empty(), "the container was removed");
        let small = vec!["test_calc.py::test_small".to_string()];
        let err = server.run(&request(Some(&small), None)).unwrap_err();
        assert!(err.to_string().contains("container was removed"), "{err}");

        // Frozen before a request: no child starts.
        let mut server = pytest.fork_server(dir.path(), &[], Duration::from_secs(60)).unwrap();
        pause(&name(&server));
        let mut req = request(Some(&small), None);
        req.run.session_timeout = Duration::from_millis(500);
        let start = Instant::now();
        let err = server.run(&req).unwrap_err();
        assert!(err.to_string().contains("did not start a child"), "{err}");
        assert!(start.elapsed() < Duration::from_millis(500) + BACKSTOP_GRACE * 2, "{:?}", start.elapsed());
        assert!(docker.leftover_containers().unwrap().is_empty(), "the container was removed");
        let err = server.run(&request(Some(&small), None)).unwrap_err();
        assert!(err.to_string().contains("container was removed"), "{err}");
    }
}
