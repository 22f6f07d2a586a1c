//! Sandboxes for test runs: Docker containers (bollard), bubblewrap or rlimits locally, or none.

pub mod cgroup;
pub mod check;
pub mod docker;
pub mod image;
pub mod local;

use crate::io_error::io_err;
use crate::process::{Limits, Output};
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// Where test runs happen (`--sandbox`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxKind {
    /// One container per run: no network, memory/pids/CPU limits, non-root, read-only source.
    Docker,
    /// bubblewrap with the network unshared when available, else rlimits + process groups.
    #[default]
    Local,
    /// Plain child processes (rlimits + process groups), no warning.
    None,
}

impl SandboxKind {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            SandboxKind::Docker => "docker",
            SandboxKind::Local => "local",
            SandboxKind::None => "none",
        }
    }
}

impl std::str::FromStr for SandboxKind {
    type Err = SandboxError;
    fn from_str(text: &str) -> Result<SandboxKind, SandboxError> {
        match text {
            "docker" => Ok(SandboxKind::Docker),
            "local" => Ok(SandboxKind::Local),
            "none" => Ok(SandboxKind::None),
            other => Err(SandboxError::UnknownKind(other.to_string())),
        }
    }
}

/// Errors of the sandbox layer (never of the program run inside).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("unknown sandbox `{0}` (use docker, local or none)")]
    UnknownKind(String),
    #[error("the Docker engine is unreachable: {0}")]
    DockerUnavailable(String),
    #[error("the sandbox image `{0}` is missing: build it with `deepdebug sandbox build --tag {0}`")]
    ImageMissing(String),
    #[error("Docker request failed while trying to {action}: {message}")]
    Docker { action: String, message: String },
    /// The container runtime found no such program (Docker's `executable file not found`).
    #[error("Docker request failed while trying to {action}: {message}")]
    ProgramNotFound { action: String, message: String },
    #[error(transparent)]
    Io(#[from] crate::io_error::IoError),
    #[error("building the image failed: {0}")]
    Build(String),
}

/// Settings of the Docker backend.
#[derive(Debug, Clone)]
pub struct DockerConfig {
    pub image: String,
    /// Memory limit of a container (swap included).
    pub memory_bytes: i64,
    /// Most processes/threads in a container.
    pub pids: i64,
    /// CPU share of a container, in CPUs.
    pub cpus: f64,
}

/// The image `deepdebug sandbox build` makes and `--sandbox docker` runs.
pub const DEFAULT_IMAGE: &str = "deepdebug-python:latest";

impl Default for DockerConfig {
    fn default() -> Self {
        DockerConfig { image: DEFAULT_IMAGE.to_string(), memory_bytes: 2 << 30, pids: 256, cpus: 1.0 }
    }
}

/// One command to run in the sandbox. Paths are the same inside and outside: Docker mounts
/// each directory at its host path, bubblewrap binds it in place.
#[derive(Debug, Clone)]
pub struct Job<'a> {
    /// The program (resolved inside the sandbox: for Docker, a path in the image).
    pub program: &'a Path,
    pub args: Vec<OsString>,
    /// Working directory: the project copy. Read-only in containers; a writable throwaway
    /// copy locally (tests may write next to themselves).
    pub source: &'a Path,
    /// Extra directories the command reads (e.g. the pytest plugin).
    pub read_only: Vec<&'a Path>,
    /// Directories the command writes its results to (e.g. the report).
    pub writable: Vec<&'a Path>,
    pub env: Vec<(String, OsString)>,
    pub timeout: Duration,
    /// Local rlimits (memory is also the container's limit when it is smaller).
    pub limits: Limits,
    /// Host directory for the local backends' output capture files.
    pub capture_dir: &'a Path,
}

enum Backend {
    None,
    Bwrap(local::Bwrap),
    Rlimits,
    Docker(Arc<docker::DockerSandbox>),
}

/// A resolved sandbox: which backend runs commands, and what the user should be told.
pub struct Sandbox {
    kind: SandboxKind,
    backend: Backend,
    warning: Option<String>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox").field("kind", &self.kind).field("backend", &self.backend_name()).finish()
    }
}

impl Sandbox {
    /// Resolve `kind`: probe bubblewrap for `Local`, connect to the engine and check the image
    /// for `Docker`.
    ///
    /// # Errors
    /// For `Docker`, when the engine is unreachable or the image is missing.
    pub fn new(kind: SandboxKind, docker: &DockerConfig) -> Result<Sandbox, SandboxError> {
        let (backend, warning) = match kind {
            SandboxKind::None => (Backend::None, None),
            SandboxKind::Local => match local::Bwrap::probe() {
                Ok(bwrap) => (Backend::Bwrap(bwrap), None),
                Err(why) => (
                    Backend::Rlimits,
                    Some(format!(
                        "bubblewrap is unavailable ({why}): tests run with rlimits and process groups \
                         only, with network access (install bubblewrap or use --sandbox docker)"
                    )),
                ),
            },
            SandboxKind::Docker => (Backend::Docker(Arc::new(docker::DockerSandbox::connect(docker.clone())?)), None),
        };
        Ok(Sandbox { kind, backend, warning })
    }

    /// No isolation beyond rlimits and process groups (what `Pytest::new` uses by default).
    #[must_use]
    pub fn none() -> Sandbox {
        Sandbox { kind: SandboxKind::None, backend: Backend::None, warning: None }
    }

    #[must_use]
    pub fn kind(&self) -> SandboxKind {
        self.kind
    }

    /// `none`, `bwrap`, `rlimits` or `docker`.
    #[must_use]
    pub fn backend_name(&self) -> &'static str {
        match self.backend {
            Backend::None => "none",
            Backend::Bwrap(_) => "bwrap",
            Backend::Rlimits => "rlimits",
            Backend::Docker(_) => "docker",
        }
    }

    /// A warning for the user when the sandbox is weaker than asked for.
    #[must_use]
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// True when commands run in containers (host interpreters and pids are not visible).
    #[must_use]
    pub fn is_container(&self) -> bool {
        matches!(self.backend, Backend::Docker(_))
    }

    /// The Docker backend, when this sandbox uses one.
    #[must_use]
    pub fn docker(&self) -> Option<&Arc<docker::DockerSandbox>> {
        match &self.backend {
            Backend::Docker(d) => Some(d),
            _ => None,
        }
    }

    /// A local command for `program` that runs inside this sandbox, for long-lived processes the
    /// caller drives itself (the fork server). Pids stay those of the host, so the caller can
    /// signal process groups. `None` for Docker: use [`docker::DockerSandbox::attach`] (pids
    /// there belong to the container's namespace and must never be signalled from the host).
    #[must_use]
    pub fn local_command(
        &self,
        program: &Path,
        source: &Path,
        read_only: &[&Path],
        writable: &[&Path],
    ) -> Option<Command> {
        match &self.backend {
            Backend::None | Backend::Rlimits => Some(Command::new(program)),
            Backend::Bwrap(bwrap) => Some(bwrap.command(program, source, read_only, writable, false)),
            Backend::Docker(_) => None,
        }
    }

    /// Run `job` to completion or its timeout; the sandbox (process group or container) is
    /// gone when this returns.
    ///
    /// # Errors
    /// When the command cannot be started (not when it fails).
    pub fn run(&self, job: &Job<'_>) -> Result<Output, SandboxError> {
        match &self.backend {
            Backend::None | Backend::Rlimits => self.run_local(Command::new(job.program), job),
            Backend::Bwrap(bwrap) => {
                self.run_local(bwrap.command(job.program, job.source, &job.read_only, &job.writable, true), job)
            }
            Backend::Docker(docker) => docker.run(job),
        }
    }

    /// Run `job` through `cmd` (the program, maybe wrapped in bwrap) as a local process, in a
    /// cgroup of its own where one can be made: whatever it leaves running is killed with it.
    fn run_local(&self, mut cmd: Command, job: &Job<'_>) -> Result<Output, SandboxError> {
        cmd.args(&job.args).current_dir(job.source);
        cmd.envs(job.env.iter().map(|(k, v)| (k, v)));
        let cgroup = self.cgroup();
        if let Some(entry) = cgroup.as_ref().map(cgroup::Cgroup::entry) {
            // SAFETY: `enter` only opens, writes and closes a file.
            unsafe {
                cmd.pre_exec(move || {
                    entry.enter();
                    Ok(())
                });
            }
        }
        Ok(crate::process::run(&mut cmd, job.timeout, job.limits, job.capture_dir)
            .map_err(io_err(format!("start {}", job.program.display())))?)
    }

    /// A fresh cgroup with the pids and memory limits for one local process tree, where the
    /// host lets us make one (root, or a delegated cgroup v2 subtree). `None` without a local
    /// sandbox (`none`, Docker: the container has its own limits).
    #[must_use]
    pub fn cgroup(&self) -> Option<cgroup::Cgroup> {
        match self.backend {
            Backend::Bwrap(_) | Backend::Rlimits => cgroup::Cgroup::create(cgroup::CgroupLimits::default()),
            Backend::None | Backend::Docker(_) => None,
        }
    }
}

/// `path` made absolute against the current directory (mount points must be absolute).
pub(crate) fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map_or_else(|_| path.to_path_buf(), |d| d.join(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_print() {
        for kind in [SandboxKind::Docker, SandboxKind::Local, SandboxKind::None] {
            assert_eq!(kind.name().parse::<SandboxKind>().unwrap(), kind);
        }
        assert!("vm".parse::<SandboxKind>().is_err());
        assert_eq!(SandboxKind::default(), SandboxKind::Local);
    }

    #[test]
    fn the_none_sandbox_runs_plain_processes_with_their_environment() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::none();
        let out = sandbox
            .run(&Job {
                program: Path::new("sh"),
                args: vec!["-c".into(), "echo $GREETING; pwd".into()],
                source: dir.path(),
                read_only: Vec::new(),
                writable: Vec::new(),
                env: vec![("GREETING".into(), "hi".into())],
                timeout: Duration::from_secs(10),
                limits: Limits::default(),
                capture_dir: dir.path(),
            })
            .unwrap();
        assert!(out.exit.is_success());
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(lines[0], "hi");
        assert_eq!(Path::new(lines[1]).canonicalize().unwrap(), dir.path().canonicalize().unwrap());
    }
}
