//! The neural backend's timeline: states predicted one `step_into` at a time from the source alone.

use super::timeline::{Event, Exit, Timeline, Variable};
use crate::debugger::grammar::{Arg, Frame, UNCHANGED};
use crate::debugger::predictor::NextStatePredictor;
use crate::debugger::session::{DebugBackend, PredictorBackend};
use crate::debugger::trace::{ExitKind, Trace};
use crate::debugger::tree::{Action, NodeKind};

/// Predict up to `max_steps` states of `trace`'s call with `predictor` (the trace gives only
/// the entry frame, which does not depend on execution) and lay them out as a timeline in
/// `file` (the program the user launched).
pub fn predict_timeline<P: NextStatePredictor>(predictor: P, trace: &Trace, file: &str, max_steps: usize) -> Timeline {
    let mut timeline = predict_states(predictor, trace, file, max_steps);
    // The generated entry point (`main`, calling the user's call) is not the user's code.
    timeline.events.retain(|e| e.depth > 0);
    for event in &mut timeline.events {
        event.depth -= 1;
    }
    timeline
}

fn predict_states<P: NextStatePredictor>(predictor: P, trace: &Trace, file: &str, max_steps: usize) -> Timeline {
    let mut backend = PredictorBackend::new(predictor, trace);
    let mut layout =
        Layout { lines: trace.program.lines().map(str::trim).map(str::to_string).collect(), ..Layout::default() };
    let mut timeline = Timeline::default();
    for _ in 0..max_steps {
        match backend.frame().clone() {
            Frame::State { event, src, arg } => timeline.events.push(layout.event(event, &src, arg, file)),
            Frame::Exit { exit } => {
                timeline.exit = match exit {
                    ExitKind::Normal => Exit::Code(0),
                    ExitKind::Error => Exit::Exception { message: "(predicted)".into() },
                    ExitKind::Never => Exit::Truncated { limit: "predicted infinite loop".into() },
                };
                return timeline;
            }
            Frame::Entry => break,
        }
        if let Err(err) = backend.act(&Action::StepInto) {
            timeline.exit = Exit::Truncated { limit: format!("prediction failed: {err}") };
            return timeline;
        }
    }
    timeline.exit = Exit::Truncated { limit: format!("{max_steps} predicted steps") };
    timeline
}

/// A call whose return has not been predicted yet.
struct OpenCall {
    frame: u64,
    /// The last line predicted in it.
    line: u32,
    locals: Vec<(String, String)>,
    func: String,
}

/// Turns predicted frames into events: call depths, line numbers, full locals.
#[derive(Default)]
struct Layout {
    /// The program's lines, trimmed.
    lines: Vec<String>,
    /// The open calls, innermost last.
    stack: Vec<OpenCall>,
    next_frame: u64,
}

impl Layout {
    fn event(&mut self, kind: NodeKind, src: &str, arg: Arg, file: &str) -> Event {
        if kind == NodeKind::Call {
            self.next_frame += 1;
            let name = src.trim().trim_start_matches("async ").strip_prefix("def ").unwrap_or("?");
            let name = name.split(['(', ':']).next().unwrap_or("?").trim().to_string();
            self.stack.push(OpenCall { frame: self.next_frame, line: 0, locals: Vec::new(), func: name });
        }
        let depth = self.stack.len().saturating_sub(1);
        let line = self.line_of(src);
        let (value, locals) = match arg {
            Arg::Locals(pairs) => (None, self.merge(pairs)),
            Arg::Value(v) => (Some(v), self.stack.last().map(|f| f.locals.clone()).unwrap_or_default()),
        };
        let (frame, func) = self.stack.last().map_or((0, String::new()), |f| (f.frame, f.func.clone()));
        if let Some(top) = self.stack.last_mut() {
            top.line = line;
        }
        let event = match kind {
            NodeKind::Call => "call",
            NodeKind::Return => "return",
            NodeKind::Exception => "exception",
            _ => "line",
        };
        if kind == NodeKind::Return {
            self.stack.pop();
        }
        let locals = locals
            .into_iter()
            .map(|(name, value)| Variable { name, value, type_name: String::new(), children: Vec::new() })
            .collect();
        Event { event: event.into(), frame, depth, func, file: file.into(), line, locals, value }
    }

    /// The line `src` is on: the first match at or after the current call's last line, else
    /// the first anywhere (0 when none).
    fn line_of(&self, src: &str) -> u32 {
        let src = src.trim();
        let from = self.stack.last().map_or(0, |f| f.line as usize);
        let found =
            (from.saturating_sub(1)..self.lines.len()).chain(0..self.lines.len()).find(|&i| self.lines[i] == src);
        found.map_or(0, |i| u32::try_from(i + 1).unwrap_or(0))
    }

    /// Full locals from a delta (a leading `..` marker keeps what was not mentioned).
    fn merge(&mut self, pairs: Vec<(String, String)>) -> Vec<(String, String)> {
        let Some(top) = self.stack.last_mut() else { return pairs };
        let delta = pairs.first().is_some_and(|(k, v)| k == UNCHANGED.0 && v == UNCHANGED.1);
        if delta {
            for (name, value) in pairs.into_iter().skip(1) {
                match top.locals.iter_mut().find(|(n, _)| *n == name) {
                    Some(slot) => slot.1 = value,
                    None => top.locals.push((name, value)),
                }
            }
        } else {
            top.locals = pairs;
        }
        top.locals.clone()
    }
}
