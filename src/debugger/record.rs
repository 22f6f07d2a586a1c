//! Runs Python in a sandboxed child process: the embedded tracer, and pass/fail checks.

use super::trace::{program_for_call, ExitKind, Limit, Trace, TraceEvent, ENTRY_FUNCTION, TRACE_FORMAT_VERSION};
use crate::io_error::io_err;
use serde::Deserialize;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The tracer, after the value reprs it shares with the other embedded scripts.
const TRACER_PY: &str = concat!(include_str!("../python_shared/values.py"), include_str!("tracer.py"));

/// Errors from running Python.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Io(#[from] crate::io_error::IoError),
    #[error("the tracer wrote no output (status {status}): {stderr}")]
    NoOutput { status: String, stderr: String },
    #[error("the tracer wrote invalid JSON: {0}")]
    BadOutput(#[from] serde_json::Error),
}

/// Resource limits for one traced call.
#[derive(Debug, Clone)]
pub struct RecordLimits {
    /// Python interpreter to run.
    pub python: PathBuf,
    /// Hard wall-clock limit; the tracer stops itself (exit `never`) a little earlier.
    pub timeout: Duration,
    /// Event cap (exit `never` when reached).
    pub max_events: usize,
    /// Cap on the total size of recorded reprs.
    pub max_bytes: usize,
    /// Longest repr kept for one value (longer ones end in `...`).
    pub max_repr: usize,
    /// Most container items shown in one repr.
    pub max_items: usize,
    /// Address-space limit for the child.
    pub memory_bytes: u64,
    /// Where the child runs (`None`: a plain child process with rlimits, as before sandboxes).
    pub sandbox: Option<std::sync::Arc<crate::sandbox::Sandbox>>,
}

impl RecordLimits {
    /// Limits suited to small functions (CruxEval-sized).
    #[must_use]
    pub fn standard() -> RecordLimits {
        RecordLimits {
            python: PathBuf::from("python3"),
            timeout: Duration::from_secs(10),
            max_events: 10_000,
            max_bytes: 8 << 20,
            max_repr: 300,
            max_items: 100,
            memory_bytes: 2 << 30,
            sandbox: None,
        }
    }
}

/// What the tracer writes.
#[derive(Deserialize)]
struct TracerOutput {
    format_version: u32,
    events: Vec<TraceEvent>,
    exit: ExitKind,
    limit: Option<Limit>,
    exception: Option<String>,
}

/// Outcome of a sandboxed child process.
#[derive(Debug, Clone)]
pub struct ChildOutcome {
    pub success: bool,
    pub timed_out: bool,
    pub status: String,
    /// The signal that killed the child, if one did (not our timeout).
    pub signal: Option<i32>,
    pub stderr: String,
}

/// Record the call expression `call` (e.g. `f(1, 2)`) against `code`.
///
/// # Errors
/// Fails only on infrastructure problems; errors and infinite loops in the traced
/// program are data (`exit` = `error` / `never`).
pub fn record_call(code: &str, call: &str, limits: &RecordLimits) -> Result<Trace, RecordError> {
    let dir = tempfile::tempdir().map_err(io_err("create a temporary directory"))?;
    let program = program_for_call(code, call);
    let program_path = dir.path().join("program.py");
    let tracer_path = dir.path().join("tracer.py");
    let out_path = dir.path().join("trace.json");
    let config_path = dir.path().join("config.json");
    fs::write(&program_path, &program).map_err(io_err("write program.py"))?;
    fs::write(&tracer_path, TRACER_PY).map_err(io_err("write tracer.py"))?;
    // The tracer stops itself before the hard kill so that it can still write: a fifth of
    // the budget, at least a second when that leaves it half.
    let total = limits.timeout.as_secs_f64();
    let soft = (total - (total * 0.2).max(1.0)).max(total * 0.5);
    let config = serde_json::json!({
        "program_path": program_path,
        "out_path": out_path,
        "max_events": limits.max_events,
        "max_bytes": limits.max_bytes,
        "soft_timeout_s": soft,
        "max_repr": limits.max_repr,
        "max_items": limits.max_items,
        "entry": ENTRY_FUNCTION,
    });
    fs::write(&config_path, config.to_string()).map_err(io_err("write config.json"))?;
    let outcome = run_python(dir.path(), &tracer_path, &[config_path.as_os_str()], limits)?;
    let text = match fs::read_to_string(&out_path) {
        Ok(text) => text,
        // Stuck in code that never reaches the tracer (e.g. a long builtin call).
        Err(_) if outcome.timed_out => return Ok(unwritten(code, call, program, ExitKind::Never, None)),
        // Killed by a signal it sent itself (or got) before the tracer could write.
        Err(_) if outcome.signal.is_some() => {
            let killed = outcome.signal.map(|n| format!("killed by signal {n}"));
            return Ok(unwritten(code, call, program, ExitKind::Error, killed));
        }
        Err(_) => return Err(RecordError::NoOutput { status: outcome.status, stderr: outcome.stderr }),
    };
    let out: TracerOutput = serde_json::from_str(&text)?;
    debug_assert_eq!(out.format_version, TRACE_FORMAT_VERSION);
    Ok(Trace {
        format_version: TRACE_FORMAT_VERSION,
        code: code.to_string(),
        call: call.to_string(),
        program,
        events: out.events,
        exit: out.exit,
        limit: out.limit,
        exception: out.exception,
    })
}

/// The trace of a run the tracer could not write: no events, how it ended (a hang is `never`
/// at the time limit).
fn unwritten(code: &str, call: &str, program: String, exit: ExitKind, exception: Option<String>) -> Trace {
    Trace {
        format_version: TRACE_FORMAT_VERSION,
        code: code.to_string(),
        call: call.to_string(),
        program,
        events: Vec::new(),
        exit,
        limit: (exit == ExitKind::Never).then_some(Limit::Time),
        exception,
    }
}

/// Run `python script args…` in `dir` with its own process group, rlimits and a wall-clock
/// timeout that kills the whole group. Stdout is discarded; stderr goes to a file.
///
/// # Errors
/// Fails if the child cannot be started or waited for.
pub fn run_python(
    dir: &Path,
    script: &Path,
    args: &[&OsStr],
    limits: &RecordLimits,
) -> Result<ChildOutcome, RecordError> {
    if let Some(sandbox) = &limits.sandbox {
        return run_in_sandbox(sandbox, dir, script, args, limits);
    }
    let stderr_path = dir.join("stderr.txt");
    let stderr_file = fs::File::create(&stderr_path).map_err(io_err("create stderr.txt"))?;
    let mut command = Command::new(&limits.python);
    command
        .arg(script)
        .args(args)
        .current_dir(dir)
        .env("PYTHONHASHSEED", "0")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr_file);
    let memory = limits.memory_bytes;
    let cpu = limits.timeout.as_secs() + 1;
    // SAFETY: only async-signal-safe libc calls between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(move || {
            libc::setsid();
            let mem = libc::rlimit { rlim_cur: memory, rlim_max: memory };
            libc::setrlimit(libc::RLIMIT_AS, &mem);
            let cpu = libc::rlimit { rlim_cur: cpu, rlim_max: cpu + 1 };
            libc::setrlimit(libc::RLIMIT_CPU, &cpu);
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(io_err(format!("start {}", limits.python.display())))?;
    let deadline = Instant::now() + limits.timeout;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait().map_err(io_err("wait for python"))? {
            Some(status) => break status,
            None if Instant::now() >= deadline => {
                timed_out = true;
                kill_group(&child);
                break child.wait().map_err(io_err("wait for python"))?;
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    // Grandchildren may outlive the child; the group goes with it.
    kill_group(&child);
    let mut stderr = fs::read_to_string(&stderr_path).unwrap_or_default();
    if stderr.len() > 4000 {
        let cut = stderr.len() - 4000;
        let cut = (cut..stderr.len()).find(|&i| stderr.is_char_boundary(i)).unwrap_or(cut);
        stderr = stderr[cut..].to_string();
    }
    let signal = if timed_out { None } else { std::os::unix::process::ExitStatusExt::signal(&status) };
    Ok(ChildOutcome { success: status.success() && !timed_out, timed_out, status: status.to_string(), signal, stderr })
}

/// [`run_python`] through a [`crate::sandbox::Sandbox`]: `dir` is the only writable directory.
fn run_in_sandbox(
    sandbox: &crate::sandbox::Sandbox,
    dir: &Path,
    script: &Path,
    args: &[&OsStr],
    limits: &RecordLimits,
) -> Result<ChildOutcome, RecordError> {
    let python =
        if sandbox.is_container() { crate::sandbox::docker::image_python(&limits.python) } else { &limits.python };
    let mut argv = vec![script.as_os_str().to_owned()];
    argv.extend(args.iter().map(|a| a.to_os_string()));
    let job = crate::sandbox::Job {
        program: python,
        args: argv,
        source: dir,
        read_only: Vec::new(),
        writable: vec![dir],
        env: vec![("PYTHONHASHSEED".into(), "0".into()), ("PYTHONDONTWRITEBYTECODE".into(), "1".into())],
        timeout: limits.timeout,
        limits: crate::process::Limits {
            memory_bytes: Some(limits.memory_bytes),
            cpu_seconds: Some(limits.timeout.as_secs() + 1),
            file_bytes: Some(1 << 30),
        },
        capture_dir: dir,
    };
    let out = sandbox.run(&job).map_err(|e| {
        io_err(format!("run {} in the sandbox", python.display()))(std::io::Error::other(e.to_string()))
    })?;
    let mut stderr = out.stderr;
    if stderr.len() > 4000 {
        let cut = stderr.len() - 4000;
        let cut = (cut..stderr.len()).find(|&i| stderr.is_char_boundary(i)).unwrap_or(cut);
        stderr = stderr[cut..].to_string();
    }
    let signal = match out.exit {
        crate::process::Exit::Signalled(n) => Some(n),
        _ => None,
    };
    Ok(ChildOutcome {
        success: out.exit.is_success(),
        timed_out: out.exit.is_timeout(),
        status: format!("{:?}", out.exit),
        signal,
        stderr,
    })
}

fn kill_group(child: &Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: plain syscall; the group id equals the child's pid after setsid.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}
