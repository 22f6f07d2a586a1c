//! A cgroup per sandboxed process tree: a pids and a memory limit that root cannot shed, and a way to kill every process in it.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const ROOT: &str = "/sys/fs/cgroup";

/// Limits of one process tree.
#[derive(Debug, Clone, Copy)]
pub struct CgroupLimits {
    /// Most processes and threads at once (`pids.max`).
    pub pids: u32,
    /// Memory of the whole tree, tmpfs pages included (`memory.max` / `memory.limit_in_bytes`).
    pub memory_bytes: u64,
}

impl Default for CgroupLimits {
    fn default() -> Self {
        CgroupLimits { pids: 512, memory_bytes: 4 << 30 }
    }
}

/// A cgroup made for one process tree (two under cgroup v1: `pids` and `memory`). Dropping it
/// kills whatever still runs in it and removes it.
#[derive(Debug)]
pub struct Cgroup {
    dirs: Vec<PathBuf>,
    /// `cgroup.procs` of each directory, for [`Cgroup::enter`] between fork and exec.
    procs: Vec<CString>,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl Cgroup {
    /// Make a cgroup with `limits` beside or below ours, where the host lets us (root, or a
    /// delegated cgroup v2 subtree). `None` when it cannot, or when the pids limit cannot be set.
    #[must_use]
    pub fn create(limits: CgroupLimits) -> Option<Cgroup> {
        let name =
            format!("deepdebug-{}-{}-{}", pid_namespace(), std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let (pids, memory) = if Path::new(ROOT).join("cgroup.controllers").is_file() {
            let dir = unified_dir(&name)?;
            (dir.clone(), Some(dir))
        } else {
            (v1_dir("pids", &name)?, v1_dir("memory", &name))
        };
        let mut dirs = vec![pids.clone()];
        dirs.extend(memory.clone().filter(|m| *m != pids));
        let cgroup = Cgroup { procs: dirs.iter().filter_map(|d| c_path(&d.join("cgroup.procs"))).collect(), dirs };
        std::fs::write(pids.join("pids.max"), limits.pids.to_string()).ok()?;
        if let Some(memory) = memory {
            let bytes = limits.memory_bytes.to_string();
            // v2, then v1; swap (where accounted) is limited to nothing beyond the memory limit.
            let _ = std::fs::write(memory.join("memory.max"), &bytes)
                .or_else(|_| std::fs::write(memory.join("memory.limit_in_bytes"), &bytes));
            let _ = std::fs::write(memory.join("memory.swap.max"), "0");
            let _ = std::fs::write(memory.join("memory.memsw.limit_in_bytes"), &bytes);
        }
        Some(cgroup)
    }

    /// What a `pre_exec` hook needs to move the new process into this cgroup.
    #[must_use]
    pub fn entry(&self) -> Entry {
        Entry(self.procs.clone())
    }

    /// Pids of the processes in this cgroup now.
    #[must_use]
    pub fn pids(&self) -> Vec<i32> {
        let text = std::fs::read_to_string(self.dirs[0].join("cgroup.procs")).unwrap_or_default();
        text.lines().filter_map(|l| l.trim().parse().ok()).collect()
    }

    /// SIGKILL every process in the cgroup until none is left (or 2 s have passed).
    pub fn kill_all(&self) {
        let start = Instant::now();
        loop {
            let pids = self.pids();
            if pids.is_empty() || start.elapsed() > Duration::from_secs(2) {
                return;
            }
            for pid in pids {
                // SAFETY: plain syscall; the pid is in our cgroup right now.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        self.kill_all();
        for dir in &self.dirs {
            // The last processes may take a moment to leave after SIGKILL.
            for _ in 0..100 {
                if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// The `cgroup.procs` files of a [`Cgroup`], for a `pre_exec` hook.
#[derive(Debug, Clone)]
pub struct Entry(Vec<CString>);

impl Entry {
    /// Move the calling process into the cgroup. Only async-signal-safe calls: meant for a
    /// `pre_exec` hook. Best effort: a failure leaves the process where it was.
    pub fn enter(&self) {
        for path in &self.0 {
            // SAFETY: open/write/close with a valid C string and buffer.
            unsafe {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    libc::write(fd, b"0".as_ptr().cast(), 1);
                    libc::close(fd);
                }
            }
        }
    }
}

/// Whether this host lets deepdebug make limited cgroups (for tests and `sandbox check`).
#[must_use]
pub fn available() -> bool {
    Cgroup::create(CgroupLimits::default()).is_some()
}

/// Our cgroup in hierarchy `controller` (`""` for the unified one), from `/proc/self/cgroup`.
fn own_path(controller: &str) -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = if controller.is_empty() {
            controllers.is_empty()
        } else {
            controllers.split(',').any(|c| c == controller)
        };
        matches.then(|| PathBuf::from(path.trim_start_matches('/')))
    })
}

/// cgroup v2: a child of ours, else a sibling (a cgroup with processes cannot hand controllers
/// to children unless it is the root). The directory must offer `pids.max`.
fn unified_dir(name: &str) -> Option<PathBuf> {
    let own = Path::new(ROOT).join(own_path("")?);
    let mut bases = vec![own.clone()];
    bases.extend(own.parent().filter(|p| p.starts_with(ROOT)).map(Path::to_path_buf));
    bases.into_iter().find_map(|base| {
        sweep(&base);
        let dir = base.join(name);
        std::fs::create_dir(&dir).ok()?;
        if dir.join("pids.max").is_file() {
            Some(dir)
        } else {
            let _ = std::fs::remove_dir(&dir);
            None
        }
    })
}

/// cgroup v1: a child of ours in the `controller` hierarchy.
fn v1_dir(controller: &str, name: &str) -> Option<PathBuf> {
    let base = Path::new(ROOT).join(controller).join(own_path(controller)?);
    sweep(&base);
    let dir = base.join(name);
    std::fs::create_dir(&dir).ok().map(|()| dir)
}

/// Remove the cgroups in `base` left by a deepdebug of our pid namespace that was killed (its
/// pid is gone), with whatever still runs in them. Others' cgroups are never touched.
fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else { return };
    let prefix = format!("deepdebug-{}-", pid_namespace());
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name.to_str().and_then(|n| n.strip_prefix(&prefix)).and_then(|n| n.split('-').next()) else {
            continue;
        };
        if owner.parse::<u32>().is_ok() && !Path::new("/proc").join(owner).exists() {
            drop(Cgroup { procs: Vec::new(), dirs: vec![entry.path()] });
        }
    }
}

/// The inode of our pid namespace (pids name processes only within it).
fn pid_namespace() -> u64 {
    std::fs::metadata("/proc/self/ns/pid").map_or(0, |m| std::os::unix::fs::MetadataExt::ino(&m))
}

fn c_path(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn cgroups_of_a_killed_deepdebug_are_swept_and_others_kept() {
        let Some(probe) = Cgroup::create(CgroupLimits::default()) else {
            eprintln!("no cgroup can be made here: nothing to test");
            return;
        };
        let base = probe.dirs[0].parent().unwrap().to_path_buf();
        drop(probe);
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let dead = gone.id();
        gone.wait().unwrap();
        let stale = base.join(format!("deepdebug-{}-{dead}-0", pid_namespace()));
        let alive = base.join(format!("deepdebug-{}-{}-999", pid_namespace(), std::process::id()));
        let foreign = base.join(format!("deepdebug-1-{dead}-0"));
        for dir in [&stale, &alive, &foreign] {
            std::fs::create_dir(dir).unwrap();
        }
        let _fresh = Cgroup::create(CgroupLimits::default()).unwrap();
        let left = (stale.exists(), alive.exists(), foreign.exists());
        for dir in [&stale, &alive, &foreign] {
            let _ = std::fs::remove_dir(dir);
        }
        assert_eq!(left, (false, true, true), "(stale, ours, another namespace's) still there");
    }

    #[test]
    fn a_cgroup_limits_processes_and_its_leftovers_are_killed_on_drop() {
        let Some(cgroup) = Cgroup::create(CgroupLimits { pids: 20, memory_bytes: 1 << 30 }) else {
            eprintln!("no cgroup can be made here: nothing to test");
            return;
        };
        let entry = cgroup.entry();
        let mut cmd = std::process::Command::new("sh");
        // 40 background sleeps: the pids limit refuses some of them.
        cmd.args(["-c", "for i in $(seq 40); do sleep 30 & done 2>/dev/null; wait"]);
        // SAFETY: only open/write/close between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                entry.enter();
                Ok(())
            });
        }
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_millis(500));
        let inside = cgroup.pids();
        assert!(inside.len() > 1 && inside.len() <= 20, "{} processes in the cgroup", inside.len());
        drop(cgroup);
        let status = child.wait().unwrap();
        assert!(!status.success());
    }
}
