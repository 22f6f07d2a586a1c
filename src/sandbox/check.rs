//! `sandbox check`: the isolation self-test (network, memory, pids, hangs, leftovers, privileges).

use super::{Job, Sandbox, SandboxError};
use crate::io_error::io_err;
use crate::process::{Exit, Limits, Output};
use std::path::Path;
use std::time::{Duration, Instant};

/// The result of one isolation check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    Failed,
    /// The backend does not promise this property (e.g. a pids limit without containers).
    NotApplicable,
}

/// One line of the self-test.
#[derive(Debug, Clone)]
pub struct Check {
    pub name: &'static str,
    pub verdict: Verdict,
    pub detail: String,
}

const NETWORK: &str = r#"
import socket
names = sorted(n for _, n in socket.if_nameindex())
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3).close()
    print("connected", names)
except OSError as e:
    print("blocked" if names in ([], ["lo"]) else "interfaces", names, e)
"#;

const MEMORY: &str = r#"
import sys
n = int(sys.argv[1])
block = b"x" * n
print("allocated", len(block))
"#;

const PIDS: &str = r#"
import sys, threading, time
started = 0
try:
    for _ in range(int(sys.argv[1])):
        t = threading.Thread(target=time.sleep, args=(3,), daemon=True)
        t.start()
        started += 1
    print("started", started)
except (RuntimeError, OSError) as e:
    print("refused after", started, e)
"#;

const HANG: &str = r#"
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", sys.argv[1]])
time.sleep(600)
"#;

const PRIVILEGES: &str = r#"
import os
print("uid", os.getuid())
for path in ("source-probe", "/usr/deepdebug-probe"):
    try:
        open(path, "w").close()
        os.remove(path)
        print("wrote", path)
    except OSError as e:
        print("refused", path, e.errno)
"#;

/// Run the self-test with `python` (a path inside the sandbox).
///
/// # Errors
/// When a check cannot even be started (e.g. the engine is gone).
pub fn self_test(sandbox: &Sandbox, python: &Path) -> Result<Vec<Check>, SandboxError> {
    let dir = tempfile::Builder::new().prefix("deepdebug-check-").tempdir().map_err(io_err("create a temp dir"))?;
    let run = |script: &str, args: &[&str], timeout: Duration, limits: Limits| -> Result<Output, SandboxError> {
        let mut argv = vec!["-c".into(), script.into()];
        argv.extend(args.iter().map(Into::into));
        sandbox.run(&Job {
            program: python,
            args: argv,
            source: dir.path(),
            read_only: Vec::new(),
            writable: Vec::new(),
            env: Vec::new(),
            timeout,
            limits,
            capture_dir: dir.path(),
        })
    };
    let container = sandbox.docker();
    let mut checks = Vec::new();

    let out = run(NETWORK, &[], Duration::from_secs(30), Limits::default())?;
    let isolated = matches!(sandbox.backend_name(), "docker" | "bwrap");
    let blocked = out.stdout.starts_with("blocked");
    checks.push(Check {
        name: "network blocked",
        verdict: match (blocked, isolated) {
            (true, _) => Verdict::Passed,
            (false, true) => Verdict::Failed,
            (false, false) => Verdict::NotApplicable,
        },
        detail: first_line(&out),
    });

    // Twice the limit: the allocation must fail (MemoryError) or the process must be killed.
    let limits = Limits::default();
    let limit = match container {
        Some(d) => {
            u64::try_from(d.config().memory_bytes).unwrap_or(u64::MAX).min(limits.memory_bytes.unwrap_or(u64::MAX))
        }
        None => limits.memory_bytes.unwrap_or(4 << 30),
    };
    let out = run(MEMORY, &[&(limit * 2).to_string()], Duration::from_secs(60), limits)?;
    let refused = !out.stdout.contains("allocated");
    checks.push(Check {
        name: "memory limit",
        verdict: if refused { Verdict::Passed } else { Verdict::Failed },
        detail: format!("{} MiB requested: {:?} {}", (limit * 2) >> 20, out.exit, first_line(&out)),
    });

    // Containers have a pids limit; local sandboxes where the host lets us make a cgroup.
    let pids = match container {
        Some(d) => Some(u64::try_from(d.config().pids).unwrap_or(256)),
        None => sandbox.cgroup().map(|_| u64::from(super::cgroup::CgroupLimits::default().pids)),
    };
    if let Some(pids) = pids {
        let out = run(PIDS, &[&(pids + 64).to_string()], Duration::from_secs(60), Limits::default())?;
        checks.push(Check {
            name: "pids limit",
            verdict: if out.stdout.starts_with("refused") { Verdict::Passed } else { Verdict::Failed },
            detail: first_line(&out),
        });
    } else {
        checks.push(Check {
            name: "pids limit",
            verdict: Verdict::NotApplicable,
            detail: "containers or a cgroup only".into(),
        });
    }

    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let token = format!("deepdebug-hang-{}-{nanos}", std::process::id());
    let start = Instant::now();
    let out = run(HANG, &[&token], Duration::from_secs(2), Limits::default())?;
    let quick = start.elapsed() < Duration::from_secs(20);
    std::thread::sleep(Duration::from_millis(300));
    let survivors = processes_with(&token);
    checks.push(Check {
        name: "hang killed",
        verdict: if out.exit == Exit::Timeout && quick && survivors == 0 { Verdict::Passed } else { Verdict::Failed },
        detail: format!(
            "{:?} after {:.1}s, {survivors} surviving process(es)",
            out.exit,
            start.elapsed().as_secs_f64()
        ),
    });

    let out = run(PRIVILEGES, &[], Duration::from_secs(30), Limits::default())?;
    let uid_ok = !out.stdout.contains("uid 0\n");
    let system_ro = out.stdout.contains("refused /usr/deepdebug-probe");
    let source_ro = out.stdout.contains("refused source-probe");
    checks.push(Check {
        name: "non-root",
        verdict: match (uid_ok, container.is_some()) {
            (true, _) => Verdict::Passed,
            (false, true) => Verdict::Failed,
            (false, false) => Verdict::NotApplicable,
        },
        detail: out.stdout.lines().next().unwrap_or_default().to_string(),
    });
    checks.push(Check {
        name: "system read-only",
        verdict: match (system_ro, isolated) {
            (true, _) => Verdict::Passed,
            (false, true) => Verdict::Failed,
            (false, false) => Verdict::NotApplicable,
        },
        detail: out.stdout.lines().find(|l| l.contains("/usr/")).unwrap_or_default().to_string(),
    });
    checks.push(Check {
        name: "source read-only",
        verdict: match (source_ro, container.is_some()) {
            (true, true) => Verdict::Passed,
            (false, true) => Verdict::Failed,
            (_, false) => Verdict::NotApplicable,
        },
        detail: out.stdout.lines().find(|l| l.contains("source-probe")).unwrap_or_default().to_string(),
    });

    if let Some(d) = container {
        let left = d.leftover_containers()?;
        checks.push(Check {
            name: "containers removed",
            verdict: if left.is_empty() { Verdict::Passed } else { Verdict::Failed },
            detail: if left.is_empty() { "none left".into() } else { left.join(", ") },
        });
    }
    Ok(checks)
}

fn first_line(out: &Output) -> String {
    let text = if out.stdout.trim().is_empty() { &out.stderr } else { &out.stdout };
    crate::text::last_line(text).chars().take(200).collect()
}

/// Host processes whose command line contains `token` (what a killed sandbox left running).
#[must_use]
pub fn processes_with(token: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
        .filter(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(token)))
        .count()
}
