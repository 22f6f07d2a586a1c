//! The local sandbox: bubblewrap with the network unshared, the system read-only and scratch writable.

use crate::process::{self, Limits};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A working `bwrap` binary.
#[derive(Debug, Clone)]
pub struct Bwrap {
    path: PathBuf,
}

/// Why bubblewrap cannot isolate tests here.
#[derive(Debug, thiserror::Error)]
pub enum BwrapError {
    #[error("`bwrap` is not installed")]
    NotInstalled,
    #[error("no temp dir: {0}")]
    TempDir(std::io::Error),
    /// It ran and failed (no user namespaces, typically): its stderr.
    #[error("`bwrap` fails here: {0}")]
    Fails(String),
    #[error("`bwrap` cannot start: {0}")]
    Start(std::io::Error),
}

impl Bwrap {
    /// Find `bwrap` on `PATH` and check that it can create the namespaces we use here
    /// (it cannot in containers without user namespaces).
    ///
    /// # Errors
    /// [`BwrapError`] when bubblewrap is missing or does not work.
    pub fn probe() -> Result<Bwrap, BwrapError> {
        let path = find_in_path("bwrap").ok_or(BwrapError::NotInstalled)?;
        let bwrap = Bwrap { path };
        let dir = tempfile::tempdir().map_err(BwrapError::TempDir)?;
        let mut cmd = bwrap.command(Path::new("true"), dir.path(), &[], &[], true);
        match process::run(&mut cmd, Duration::from_secs(10), Limits::default(), dir.path()) {
            Ok(out) if out.exit.is_success() => Ok(bwrap),
            Ok(out) => Err(BwrapError::Fails(out.stderr.trim().to_string())),
            Err(e) => Err(BwrapError::Start(e)),
        }
    }

    /// `bwrap … -- program`: network, IPC and UTS unshared (and pids with `pid_namespace`),
    /// the whole file system read-only, a fresh `/tmp`, `source` and `writable` writable,
    /// `read_only` bound read-only (they may lie under `/tmp`). Dies with its parent.
    #[must_use]
    pub fn command(
        &self,
        program: &Path,
        source: &Path,
        read_only: &[&Path],
        writable: &[&Path],
        pid_namespace: bool,
    ) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.args(["--die-with-parent", "--unshare-net", "--unshare-ipc", "--unshare-uts"]);
        cmd.args(["--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm"]);
        if pid_namespace {
            cmd.args(["--unshare-pid", "--proc", "/proc"]);
        }
        // An interpreter under /tmp (a virtualenv made there) would vanish under the fresh /tmp.
        let program_root =
            program.parent().and_then(Path::parent).filter(|_| program.is_absolute() && program.starts_with("/tmp"));
        for dir in read_only.iter().copied().chain(program_root) {
            let dir = super::absolute(dir);
            cmd.arg("--ro-bind").arg(&dir).arg(&dir);
        }
        for dir in std::iter::once(&source).chain(writable) {
            let dir = super::absolute(dir);
            cmd.arg("--bind").arg(&dir).arg(&dir);
        }
        cmd.arg("--chdir").arg(super::absolute(source)).arg("--").arg(program);
        cmd
    }
}

/// The first executable named `name` on `PATH`.
#[must_use]
pub fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.is_file())
}
