//! Recorded execution traces: the on-disk JSON row types and call scoping.

use serde::{Deserialize, Serialize};

/// Version of the trace JSON written by `deepdebug trace` (and by the embedded tracer).
pub const TRACE_FORMAT_VERSION: u32 = 1;

/// Name of the generated entry-point function that wraps the traced call.
pub const ENTRY_FUNCTION: &str = "main";

/// A `sys.settrace` event kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Call,
    Line,
    Return,
    Exception,
}

/// How a traced program (or one call scope of it) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitKind {
    /// Returned normally.
    Normal,
    /// Raised an uncaught exception (or the program did not load).
    Error,
    /// Did not finish within the time limit: treated as an infinite loop.
    Never,
}

impl ExitKind {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ExitKind::Normal => "normal",
            ExitKind::Error => "error",
            ExitKind::Never => "never",
        }
    }
}

/// Which recording limit cut a trace short. With [`ExitKind::Never`] the program did not
/// finish within the time limit (the paper's infinite loop); with any other exit it did
/// finish, after the recording had stopped at the cap: the trace is truncated
/// ([`Trace::is_truncated`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The event cap was reached.
    Events,
    /// The total size of recorded reprs reached its cap.
    Bytes,
    /// The wall-clock budget ran out.
    Time,
    /// Tracing stopped at the bottom of a runaway recursion (Python switches a tracer off
    /// when it overflows the stack), and frames that could run code while unwinding (try,
    /// with, finally) were open: what they did then is unknown.
    Recursion,
}

/// One recorded event. `locals` are `(name, bounded repr)` pairs in frame order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceEvent {
    pub event: EventKind,
    /// Call-stack depth, 0 for the entry point.
    pub depth: usize,
    /// Identifier of the call instance (one per `call` event).
    pub frame: u64,
    pub func: String,
    /// 1-based line in [`Trace::program`].
    pub lineno: u32,
    /// Text of that source line.
    pub src: String,
    pub locals: Vec<(String, String)>,
    /// Return value (return events) or exception (exception events), as a bounded repr.
    pub value: Option<String>,
}

/// A whole recorded trace, as written by `deepdebug trace`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trace {
    pub format_version: u32,
    /// The user code, without the generated entry point.
    pub code: String,
    /// The traced call expression, e.g. `f(1, 2)`.
    pub call: String,
    /// `code` plus the generated `def main(): return CALL` entry point; line numbers refer to it.
    pub program: String,
    pub events: Vec<TraceEvent>,
    pub exit: ExitKind,
    pub limit: Option<Limit>,
    /// Repr of the uncaught exception, if any.
    pub exception: Option<String>,
}

/// Build the traced program: the code followed by a `main` that performs the call.
#[must_use]
pub fn program_for_call(code: &str, call: &str) -> String {
    format!("{}\n\ndef {ENTRY_FUNCTION}():\n    return {call}\n", code.trim_end())
}

/// Events of one call scope with depths rebased to 0, plus how that scope ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// Index of the scope's call event in [`Trace::events`].
    pub call_index: usize,
    pub events: Vec<TraceEvent>,
    pub exit: ExitKind,
}

impl Trace {
    /// A cap stopped the recording while the program ran on, and it then finished: the
    /// events after the cap are missing, so neither the last states nor the exit of the cut
    /// scopes can be shown as if they were recorded.
    #[must_use]
    pub fn is_truncated(&self) -> bool {
        self.limit.is_some() && self.exit != ExitKind::Never
    }

    /// Indices of all call events (candidate trajectory entry points).
    #[must_use]
    pub fn call_indices(&self) -> Vec<usize> {
        self.events.iter().enumerate().filter(|(_, e)| e.event == EventKind::Call).map(|(i, _)| i).collect()
    }

    /// The whole trace as one scope (entry point = first event).
    #[must_use]
    pub fn whole(&self) -> Scope {
        let exit = if self.events.is_empty() { self.exit } else { self.scope_exit(0, self.events.len()) };
        Scope { call_index: 0, events: self.events.clone(), exit }
    }

    /// The events of the call starting at `call_index`, up to and including its return.
    /// Returns `None` if `call_index` is not a call event.
    #[must_use]
    pub fn scope(&self, call_index: usize) -> Option<Scope> {
        let call = self.events.get(call_index)?;
        if call.event != EventKind::Call {
            return None;
        }
        let base = call.depth;
        let mut end = self.events.len();
        for (j, e) in self.events.iter().enumerate().skip(call_index + 1) {
            if e.depth < base {
                end = j;
                break;
            }
            if e.depth == base && e.event == EventKind::Return {
                end = j + 1;
                break;
            }
        }
        let exit = self.scope_exit(call_index, end);
        let events = self.events[call_index..end]
            .iter()
            .map(|e| TraceEvent { depth: e.depth.saturating_sub(base), ..e.clone() })
            .collect();
        Some(Scope { call_index, events, exit })
    }

    /// A scope ends normally if its last event is a return not directly preceded (in the
    /// same frame) by an exception event; an unwinding return means error; a scope cut off
    /// by the end of the trace inherits the trace's exit.
    fn scope_exit(&self, start: usize, end: usize) -> ExitKind {
        if end == self.events.len() && self.limit.is_some() {
            return self.exit;
        }
        let base = self.events[start].depth;
        let last = &self.events[end - 1];
        if last.event != EventKind::Return || last.depth != base {
            return self.exit;
        }
        let previous_in_frame =
            self.events[start..end - 1].iter().rev().find(|e| e.depth == base && e.frame == last.frame);
        match previous_in_frame {
            Some(e) if e.event == EventKind::Exception => ExitKind::Error,
            _ => ExitKind::Normal,
        }
    }
}
