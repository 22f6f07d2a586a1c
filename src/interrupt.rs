//! Interruption (Ctrl-C, SIGTERM, SIGHUP): a run keeps its temporary files in one directory, which is removed, with the process groups it started, when it is stopped.
//!
//! [`RunDir::begin`] makes `deepdebug-run-<pid>-XXXXXX` in the system's temporary directory
//! and points `tempfile`'s default there, so every scratch copy, server directory and capture
//! file of the run lands inside it (the process environment, which tests see, is unchanged).
//! On a signal the handler kills the [`track`]ed process groups, removes the directory and
//! exits with [`INTERRUPTED_EXIT`]; a normal end removes it when the `RunDir` drops. Run
//! directories left by a process that no longer exists (killed with SIGKILL) are removed the
//! next time a run begins.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The exit status after an interruption.
pub const INTERRUPTED_EXIT: i32 = crate::exit_code::ExitCode::Interrupted as i32;

/// The prefix of a run directory's name; the owner's pid follows.
const PREFIX: &str = "deepdebug-run-";

/// Process groups started by this process and not yet reaped.
static GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Why a run directory could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum InterruptError {
    #[error("cannot create a run directory in {dir}: {source}")]
    Create { dir: PathBuf, source: std::io::Error },
    #[error("cannot install the interrupt handler: {0}")]
    Handler(#[from] ctrlc::Error),
}

/// The run's temporary directory; removed on drop and on interruption.
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    /// Create the run directory in `std::env::temp_dir()`, make it `tempfile`'s default,
    /// remove stale ones and install the signal handler. Call once, at start-up.
    ///
    /// # Errors
    /// When the directory cannot be made or the handler cannot be installed.
    pub fn begin() -> Result<RunDir, InterruptError> {
        let base = std::env::temp_dir();
        remove_stale(&base);
        let dir = tempfile::Builder::new()
            .prefix(&format!("{PREFIX}{}-", std::process::id()))
            .tempdir_in(&base)
            .map_err(|source| InterruptError::Create { dir: base.clone(), source })?
            .keep();
        // Only the first call takes effect; a later run dir would not be the default.
        let _ = tempfile::env::override_temp_dir(&dir);
        let handler_dir = dir.clone();
        ctrlc::set_handler(move || on_signal(&handler_dir))?;
        Ok(RunDir { path: dir })
    }

    /// Where the run's temporary files go.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Tries at removing the run directory on a signal, and the pause between two.
const REMOVE_TRIES: usize = 20;
const REMOVE_PAUSE: std::time::Duration = std::time::Duration::from_millis(25);

/// Kill the tracked groups, remove the run directory, say so and exit. The run's other
/// threads go on until the exit (a scratch copy being made, a child started but not yet
/// tracked), so a removal that meets new files kills and tries again.
fn on_signal(dir: &Path) {
    for _ in 0..REMOVE_TRIES {
        kill_tracked();
        if std::fs::remove_dir_all(dir).is_ok() || !dir.exists() {
            break;
        }
        std::thread::sleep(REMOVE_PAUSE);
    }
    eprintln!("deepdebug: interrupted; its processes were stopped and its temporary files removed");
    std::process::exit(INTERRUPTED_EXIT);
}

/// SIGKILL every tracked process group.
fn kill_tracked() {
    let groups = GROUPS.lock().map(|g| g.iter().copied().collect::<Vec<_>>()).unwrap_or_default();
    for pgid in groups {
        kill_group(pgid, libc::SIGKILL);
    }
}

/// Send `signal` to every process in group `pgid`.
pub fn kill_group(pgid: i32, signal: i32) {
    if pgid > 1 {
        // SAFETY: plain syscall; a stale group id only yields ESRCH.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

/// A process group killed if the run is interrupted, until this guard drops.
#[derive(Debug)]
pub struct Tracked(i32);

/// Track the process group `pgid` (a child that called `setpgid(0, 0)`).
pub fn track(pgid: i32) -> Tracked {
    if let Ok(mut groups) = GROUPS.lock() {
        groups.insert(pgid);
    }
    Tracked(pgid)
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if let Ok(mut groups) = GROUPS.lock() {
            groups.remove(&self.0);
        }
    }
}

/// Remove run directories in `base` whose owner process no longer exists.
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = owner(&name.to_string_lossy()) else { continue };
        if !alive(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The pid in a run directory's name (`deepdebug-run-<pid>-XXXXXX`).
fn owner(name: &str) -> Option<i32> {
    name.strip_prefix(PREFIX)?.split('-').next()?.parse().ok().filter(|&pid| pid > 0)
}

/// Whether a process with this pid exists (EPERM: it exists, but is someone else's).
fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let sent = unsafe { libc::kill(pid, 0) };
    sent == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_directory_names_its_owner() {
        assert_eq!(owner("deepdebug-run-4242-aB3xYz"), Some(4242));
        assert_eq!(owner("deepdebug-run-x-aB3xYz"), None);
        assert_eq!(owner("deepdebug-scratch-aB3xYz"), None);
        assert_eq!(owner("deepdebug-run-0-a"), None);
    }

    #[test]
    fn stale_run_directories_go_and_live_ones_stay() {
        let base = tempfile::tempdir().unwrap();
        // A pid above the kernel's maximum (4,194,304) never exists.
        let stale = base.path().join("deepdebug-run-99999999-abc");
        let live = base.path().join(format!("deepdebug-run-{}-abc", std::process::id()));
        let other = base.path().join("deepdebug-scratch-abc");
        for dir in [&stale, &live, &other] {
            std::fs::create_dir_all(dir.join("inner")).unwrap();
        }
        remove_stale(base.path());
        assert!(!stale.exists());
        assert!(live.exists() && other.exists());
    }

    #[test]
    fn tracked_groups_are_forgotten_when_their_guard_drops() {
        let guard = track(-77);
        assert!(GROUPS.lock().unwrap().contains(&-77));
        drop(guard);
        assert!(!GROUPS.lock().unwrap().contains(&-77));
    }
}
