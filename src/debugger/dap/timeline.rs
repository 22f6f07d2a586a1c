//! A recorded (or predicted) run as a timeline of events, navigated forwards and backwards.

use serde::Deserialize;

/// One `sys.settrace` event of the program's own code.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Event {
    /// `call`, `line`, `return` or `exception`.
    pub event: String,
    /// The call instance (one per `call` event).
    pub frame: u64,
    /// Call depth, 0 for the module.
    pub depth: usize,
    pub func: String,
    pub file: String,
    pub line: u32,
    pub locals: Vec<Variable>,
    /// Return value or exception, as a repr.
    #[serde(default)]
    pub value: Option<String>,
}

impl Event {
    fn is_line(&self) -> bool {
        self.event == "line"
    }
}

/// A local variable: its repr, type and (for containers and objects) its children.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Variable {
    pub name: String,
    pub value: String,
    #[serde(rename = "type")]
    pub type_name: String,
    #[serde(default)]
    pub children: Vec<Variable>,
}

/// Text the program wrote, after `after` events.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Output {
    pub after: usize,
    pub category: String,
    pub text: String,
}

/// How the program ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// It finished, or called `sys.exit`, with this code.
    Code(i32),
    /// An uncaught exception (exit code 1).
    Exception { message: String },
    /// `os._exit(code)`.
    OsExit { code: i32 },
    /// A signal killed it.
    Signal(i32),
    /// A recording limit (`events`, `bytes`, `time`) was hit while it was still running.
    Truncated { limit: String },
}

impl Exit {
    /// The process exit code a shell would see (128 + signal for a signal; 0 when truncated).
    #[must_use]
    pub fn code(&self) -> i32 {
        match self {
            Exit::Code(code) | Exit::OsExit { code } => *code,
            Exit::Exception { .. } => 1,
            Exit::Signal(signal) => 128 + signal,
            Exit::Truncated { .. } => 0,
        }
    }

    /// A line for the debug console.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Exit::Code(code) => format!("the program exited with code {code}"),
            Exit::Exception { message } => format!("the program raised {message}"),
            Exit::OsExit { code } => format!("the program called os._exit({code})"),
            Exit::Signal(signal) => format!("the program was killed by signal {signal}"),
            Exit::Truncated { limit } => {
                format!("the recording stopped at its {limit} limit; the program was still running")
            }
        }
    }
}

impl Default for Exit {
    fn default() -> Exit {
        Exit::Code(0)
    }
}

/// Where the debugger stands: at an event (a line) or past the end of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    At(usize),
    End,
}

/// A run: its events in order, what it wrote, how it ended.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    pub events: Vec<Event>,
    pub outputs: Vec<Output>,
    pub exit: Exit,
}

/// One frame of the call stack at a position: the event that shows it (the current one for the
/// innermost frame, the calling line for the others).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackFrame {
    pub event: usize,
}

impl Timeline {
    /// The first line event.
    #[must_use]
    pub fn start(&self) -> Position {
        self.next_line(0, |_| true)
    }

    fn next_line(&self, from: usize, keep: impl Fn(&Event) -> bool) -> Position {
        (from..self.events.len())
            .find(|&i| self.events[i].is_line() && keep(&self.events[i]))
            .map_or(Position::End, Position::At)
    }

    fn previous_line(&self, before: usize, keep: impl Fn(&Event) -> bool) -> Option<usize> {
        (0..before.min(self.events.len())).rev().find(|&i| self.events[i].is_line() && keep(&self.events[i]))
    }

    fn depth(&self, at: Position) -> usize {
        match at {
            Position::At(i) => self.events[i].depth,
            Position::End => 0,
        }
    }

    /// Step into: the next line anywhere.
    #[must_use]
    pub fn step_in(&self, at: Position) -> Position {
        match at {
            Position::At(i) => self.next_line(i + 1, |_| true),
            Position::End => Position::End,
        }
    }

    /// Step over: the next line of this frame or a caller.
    #[must_use]
    pub fn next(&self, at: Position) -> Position {
        let depth = self.depth(at);
        match at {
            Position::At(i) => self.next_line(i + 1, |e| e.depth <= depth),
            Position::End => Position::End,
        }
    }

    /// Step out: the next line of a caller.
    #[must_use]
    pub fn step_out(&self, at: Position) -> Position {
        let depth = self.depth(at);
        match at {
            Position::At(i) => self.next_line(i + 1, |e| e.depth < depth),
            Position::End => Position::End,
        }
    }

    /// Step back: the previous line of this frame or a caller (from the end: the last line of
    /// the module); `None` at the first line.
    #[must_use]
    pub fn step_back(&self, at: Position) -> Option<usize> {
        let depth = self.depth(at);
        match at {
            Position::At(i) => self.previous_line(i, |e| e.depth <= depth),
            Position::End => self
                .previous_line(self.events.len(), |e| e.depth == 0)
                .or_else(|| self.previous_line(self.events.len(), |_| true)),
        }
    }

    /// The next line after `at` for which `hit` holds (a breakpoint), or the end.
    pub fn continue_to(&self, at: Position, mut hit: impl FnMut(usize) -> bool) -> Position {
        let from = match at {
            Position::At(i) => i + 1,
            Position::End => return Position::End,
        };
        (from..self.events.len()).find(|&i| self.events[i].is_line() && hit(i)).map_or(Position::End, Position::At)
    }

    /// The last line before `at` for which `hit` holds, if any.
    pub fn reverse_continue_to(&self, at: Position, mut hit: impl FnMut(usize) -> bool) -> Option<usize> {
        let before = match at {
            Position::At(i) => i,
            Position::End => self.events.len(),
        };
        (0..before).rev().find(|&i| self.events[i].is_line() && hit(i))
    }

    /// The call stack at event `at`, innermost first.
    #[must_use]
    pub fn stack(&self, at: usize) -> Vec<StackFrame> {
        let mut frames = vec![StackFrame { event: at }];
        let mut depth = self.events[at].depth;
        let mut i = at;
        while depth > 0 {
            depth -= 1;
            match (0..i).rev().find(|&j| self.events[j].depth == depth) {
                Some(j) => {
                    frames.push(StackFrame { event: j });
                    i = j;
                }
                None => break,
            }
        }
        frames
    }

    /// What the program wrote after `from` events and up to `to` events (to the end: `None`).
    pub fn output_between(&self, from: usize, to: Option<usize>) -> impl Iterator<Item = &Output> {
        self.outputs.iter().filter(move |o| o.after >= from && to.is_none_or(|to| o.after < to))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(event: &str, depth: usize, func: &str, line: u32) -> Event {
        Event {
            event: event.into(),
            frame: depth as u64,
            depth,
            func: func.into(),
            file: "prog.py".into(),
            line,
            locals: Vec::new(),
            value: None,
        }
    }

    /// `x = f(1)` at lines 4–5 of a module calling `f` (lines 1–2).
    fn timeline() -> Timeline {
        Timeline {
            events: vec![
                event("call", 0, "<module>", 1),
                event("line", 0, "<module>", 1),
                event("line", 0, "<module>", 4),
                event("call", 1, "f", 1),
                event("line", 1, "f", 2),
                event("return", 1, "f", 2),
                event("line", 0, "<module>", 5),
                event("return", 0, "<module>", 5),
            ],
            outputs: vec![Output { after: 5, category: "stdout".into(), text: "hi\n".into() }],
            exit: Exit::Code(0),
        }
    }

    #[test]
    fn stepping_over_into_and_out_of_a_call_and_back() {
        let t = timeline();
        let start = t.start();
        assert_eq!(start, Position::At(1));
        let call_line = t.next(start);
        assert_eq!(call_line, Position::At(2));
        assert_eq!(t.next(call_line), Position::At(6), "step over skips the callee");
        let inside = t.step_in(call_line);
        assert_eq!(inside, Position::At(4));
        assert_eq!(t.step_out(inside), Position::At(6));
        assert_eq!(t.next(Position::At(6)), Position::End);
        assert_eq!(t.step_back(Position::At(6)), Some(2), "step back skips the callee too");
        assert_eq!(t.step_back(inside), Some(2), "from a callee to its calling line");
        assert_eq!(t.step_back(Position::End), Some(6));
        assert_eq!(t.step_back(start), None);
    }

    #[test]
    fn the_stack_shows_the_calling_line_and_breakpoints_are_found_both_ways() {
        let t = timeline();
        let stack: Vec<usize> = t.stack(4).iter().map(|f| f.event).collect();
        assert_eq!(stack, [4, 2]);
        let events = &t.events;
        let at_line = |line: u32| move |i: usize| events[i].line == line;
        assert_eq!(t.continue_to(t.start(), at_line(2)), Position::At(4));
        assert_eq!(t.continue_to(Position::At(4), at_line(2)), Position::End);
        assert_eq!(t.reverse_continue_to(Position::End, at_line(4)), Some(2));
        assert_eq!(t.output_between(0, Some(5)).count(), 0);
        assert_eq!(t.output_between(0, Some(6)).count(), 1);
    }
}
