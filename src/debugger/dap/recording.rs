//! Recording a whole Python program run for the DAP server: events, structured locals, output, exit.

use super::timeline::{Event, Exit, Output, Timeline};
use crate::debugger::record::RecordError;
use crate::io_error::io_err;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The recorder's Python source, shipped inside the binary (after the value reprs it shares
/// with the other embedded scripts).
const RECORDER: &str = concat!(include_str!("../../python_shared/values.py"), include_str!("script.py"));

/// What and how to record.
#[derive(Debug, Clone)]
pub struct ScriptSpec {
    pub python: PathBuf,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Wall-clock limit; a program still running then is recorded as truncated.
    pub timeout: Duration,
    pub max_events: usize,
    pub max_bytes: usize,
}

impl ScriptSpec {
    /// Defaults for `program`: run in its own directory, 30 s, 200,000 events, 256 MB.
    #[must_use]
    pub fn new(program: &Path) -> ScriptSpec {
        let cwd = program.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
        ScriptSpec {
            python: PathBuf::from("python3"),
            program: program.to_path_buf(),
            args: Vec::new(),
            cwd,
            timeout: Duration::from_secs(30),
            max_events: 200_000,
            max_bytes: 256 << 20,
        }
    }
}

/// One line of the recorder's output.
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Line {
    Event(Event),
    Output(Output),
    End { exit: String, code: Option<i32>, limit: Option<String>, exception: Option<String> },
}

/// Run `spec.program` under the recorder and read what it recorded.
///
/// # Errors
/// When the program file is missing or Python cannot be started.
pub fn record_script(spec: &ScriptSpec) -> Result<Timeline, RecordError> {
    let program = std::fs::canonicalize(&spec.program).map_err(io_err(format!("find {}", spec.program.display())))?;
    let dir = tempfile::tempdir().map_err(io_err("create a temporary directory"))?;
    let recorder = dir.path().join("deepdebug_script.py");
    std::fs::write(&recorder, RECORDER).map_err(io_err("write the recorder"))?;
    let out_path = dir.path().join("run.jsonl");
    let config = serde_json::json!({
        "program": program, "args": spec.args, "cwd": spec.cwd, "out_path": out_path,
        "max_events": spec.max_events, "max_bytes": spec.max_bytes,
        "timeout_s": spec.timeout.as_secs_f64(), "max_repr": 300, "max_items": 50,
    });
    let config_path = dir.path().join("config.json");
    std::fs::write(&config_path, config.to_string()).map_err(io_err("write the recorder's configuration"))?;
    let mut command = Command::new(&spec.python);
    command.arg(&recorder).arg(&config_path).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(io_err(format!("start {}", spec.python.display())))?;
    let deadline = Instant::now() + spec.timeout + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = child.try_wait().map_err(io_err("wait for python"))? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: plain syscall on the group the child leads (setsid above).
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.wait();
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    Ok(parse(&text, status.map(|s| std::os::unix::process::ExitStatusExt::signal(&s))))
}

/// The timeline the recorder's lines describe; `signal` is what killed the process, if anything.
fn parse(text: &str, signal: Option<Option<i32>>) -> Timeline {
    let mut timeline = Timeline::default();
    let mut exit = None;
    for line in text.lines() {
        match serde_json::from_str::<Line>(line) {
            Ok(Line::Event(event)) => timeline.events.push(event),
            Ok(Line::Output(output)) => timeline.outputs.push(output),
            Ok(Line::End { exit: how, code, limit, exception }) => {
                exit = Some(match how.as_str() {
                    "truncated" => Exit::Truncated { limit: limit.unwrap_or_default() },
                    "exception" => Exit::Exception { message: exception.unwrap_or_default() },
                    "os_exit" => Exit::OsExit { code: code.unwrap_or(0) },
                    _ => Exit::Code(code.unwrap_or(0)),
                });
            }
            Err(_) => break, // a line cut short by a kill
        }
    }
    timeline.exit = exit.unwrap_or(match signal {
        Some(Some(signal)) => Exit::Signal(signal),
        Some(None) => Exit::Code(1),
        None => Exit::Truncated { limit: "time".into() },
    });
    timeline
}
