//! The pdb-like `debug` front end: commands from a reader, over a replay or predictor backend.

use super::grammar::{replay, serialize_action, serialize_locals, Arg, EmitState, Frame};
use super::predictor::{NextStatePredictor, Prompt};
use super::sampler::context_for;
use super::trace::{ExitKind, Limit, Trace};
use super::tree::{Action, Direction, NodeKind, StateTree, Target};
use std::io::{BufRead, Write};

/// A front-end command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Act(Action),
    /// Step backwards (replay: `inv_step_into`; predictor: undo the last step).
    Back,
    Print,
    Where,
    Help,
    Quit,
}

const HELP: &str = "commands: step|s (step_into), next|n (step_over), return|r (step_return), \
break|b LINE-NUMBER|SOURCE (breakpoint: jump to the next state on that line), continue|c, \
back|bk (inv_step_into), rnext (inv_step_over), rcall (inv_step_call), print|p, where|w, help|h, quit|q";

/// Parse one command line. `program_lines` resolves `break N` to the text of line N.
///
/// # Errors
/// Returns a message for unknown commands or bad arguments.
pub fn parse_command(line: &str, program_lines: &[&str]) -> Result<Command, String> {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace).map_or((line, ""), |(w, r)| (w, r.trim()));
    Ok(match word {
        "s" | "step" => Command::Act(Action::StepInto),
        "n" | "next" => Command::Act(Action::StepOver),
        "r" | "return" => Command::Act(Action::StepReturn),
        "c" | "continue" | "cont" => Command::Act(Action::Continue),
        "b" | "break" => {
            if rest.is_empty() {
                return Err("break needs a line number or source text".into());
            }
            let src = match rest.parse::<usize>() {
                Ok(n) => match n.checked_sub(1).and_then(|i| program_lines.get(i)) {
                    Some(text) => (*text).to_string(),
                    None => return Err(format!("no line {n} in the program")),
                },
                Err(_) => rest.to_string(),
            };
            Command::Act(Action::Breakpoint(src))
        }
        "bk" | "back" => Command::Back,
        "rnext" => Command::Act(Action::InvStepOver),
        "rcall" => Command::Act(Action::InvStepCall),
        "p" | "print" => Command::Print,
        "w" | "where" => Command::Where,
        "h" | "help" | "?" => Command::Help,
        "q" | "quit" | "exit" => Command::Quit,
        other => return Err(format!("unknown command {other:?} (try help)")),
    })
}

/// Something the front end can drive.
pub trait DebugBackend {
    /// Render the current state (several lines).
    fn show(&self) -> String;
    /// Render all locals of the current state.
    fn print(&self) -> String;
    /// Render the call stack, innermost last.
    fn stack(&self) -> Result<String, String>;
    /// Take a debugger action.
    ///
    /// # Errors
    /// Returns a message when the action is unavailable here.
    fn act(&mut self, action: &Action) -> Result<(), String>;
    /// Step back.
    ///
    /// # Errors
    /// Returns a message at the start of the trace.
    fn back(&mut self) -> Result<(), String>;
}

/// Position in a replayed trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pos {
    Forward(usize),
    Inverse(usize),
    Exit(ExitKind),
    Entry,
}

/// The real backend: replays a recorded trace exactly, forwards and backwards.
pub struct ReplayBackend {
    forward: StateTree,
    inverse: StateTree,
    pos: Pos,
    /// The uncaught exception, shown at an `error` exit of the whole trace.
    exception: Option<String>,
    /// The recording cap that truncated the trace (the program finished after it).
    truncated: Option<&'static str>,
}

impl ReplayBackend {
    #[must_use]
    pub fn new(trace: &Trace) -> ReplayBackend {
        let scope = trace.whole();
        let forward = StateTree::forward(&scope);
        let pos = if forward.nodes.is_empty() { Pos::Exit(scope.exit) } else { Pos::Forward(0) };
        let truncated = trace.is_truncated().then_some(match trace.limit {
            Some(Limit::Bytes) => "size",
            Some(Limit::Time) => "time",
            Some(Limit::Recursion) => "recursion",
            _ => "event",
        });
        ReplayBackend {
            inverse: StateTree::inverse(&scope),
            forward,
            pos,
            exception: trace.exception.clone(),
            truncated,
        }
    }

    /// Current `(tree, node)`, if at a state.
    fn node(&self) -> Option<(&StateTree, usize)> {
        match self.pos {
            Pos::Forward(i) => Some((&self.forward, i)),
            Pos::Inverse(j) => Some((&self.inverse, j)),
            Pos::Exit(_) | Pos::Entry => None,
        }
    }

    /// The forward node equivalent to the current position. An `inv_line_call` duplicate
    /// stands for its line *after* the calls returned: the last state of its subtree.
    fn forward_node(&self) -> Option<usize> {
        match self.pos {
            Pos::Forward(i) => Some(i),
            Pos::Inverse(j) => {
                let node = &self.inverse.nodes[j];
                Some(if node.kind == NodeKind::InvLineCall {
                    self.forward.subtree_end(node.event) - 1
                } else {
                    node.event
                })
            }
            Pos::Exit(_) | Pos::Entry => None,
        }
    }

    fn go(&mut self, direction: Direction, target: Target) {
        self.pos = match (direction, target) {
            (Direction::Forward, Target::Node(i)) => Pos::Forward(i),
            (Direction::Inverse, Target::Node(j)) => Pos::Inverse(j),
            (_, Target::Exit(e)) => Pos::Exit(e),
            (_, Target::Entry) => Pos::Entry,
        };
    }
}

fn render_locals(locals: &[(String, String)]) -> String {
    serialize_locals(locals)
}

impl DebugBackend for ReplayBackend {
    fn show(&self) -> String {
        match self.pos {
            Pos::Exit(e) => match (self.truncated, &self.exception, e) {
                (Some(cap), ..) => format!(
                    "[truncated] the recording stopped at its {cap} limit here; the program ran on and ended {}",
                    e.as_str()
                ),
                (None, Some(exc), ExitKind::Error) => format!("[exit] error: {exc}"),
                _ => format!("[exit] {}", e.as_str()),
            },
            Pos::Entry => "[entry] start of the trace (step to run forward)".into(),
            Pos::Forward(_) | Pos::Inverse(_) => {
                let Some((tree, i)) = self.node() else { return String::new() };
                let node = &tree.nodes[i];
                let e = tree.event_of(i);
                let mut out =
                    format!("[{}] {}:{} depth={} | {}", kind_name(node.kind), e.func, e.lineno, node.depth, e.src);
                match node.kind {
                    NodeKind::Return | NodeKind::Exception | NodeKind::InvReturn | NodeKind::InvException => {
                        out.push_str(&format!("\n  value: {}", e.value.as_deref().unwrap_or("")));
                    }
                    _ => out.push_str(&format!("\n  locals: {}", render_locals(&e.locals))),
                }
                out
            }
        }
    }

    fn print(&self) -> String {
        match self.node() {
            Some((tree, i)) => format!("  locals: {}", render_locals(&tree.event_of(i).locals)),
            None => "  (no state)".into(),
        }
    }

    fn stack(&self) -> Result<String, String> {
        let Some(mut i) = self.forward_node() else { return Err("no stack: not at a state".into()) };
        let mut frames = Vec::new();
        loop {
            let e = self.forward.event_of(i);
            frames.push(format!("  {}:{} | {}", e.func, e.lineno, e.src.trim()));
            match self.forward.nodes[i].parent {
                Some(p) => i = p,
                None => break,
            }
        }
        frames.reverse();
        Ok(frames.join("\n"))
    }

    fn act(&mut self, action: &Action) -> Result<(), String> {
        match action.direction() {
            Direction::Forward => {
                let start = match self.pos {
                    Pos::Exit(e) => return Err(format!("the program has finished (exit {})", e.as_str())),
                    // From before the first state, any forward action starts the trace.
                    Pos::Entry if !self.forward.nodes.is_empty() => {
                        self.pos = Pos::Forward(0);
                        return Ok(());
                    }
                    _ => self.forward_node().ok_or("no state")?,
                };
                let target = self.forward.apply(start, action).map_err(|e| e.to_string())?;
                self.go(Direction::Forward, target);
            }
            Direction::Inverse => {
                let start = match self.pos {
                    Pos::Entry => return Err("already at the start of the trace".into()),
                    // From the exit, going back reaches the last recorded state.
                    Pos::Exit(_) if !self.inverse.nodes.is_empty() => {
                        self.pos = Pos::Inverse(0);
                        return Ok(());
                    }
                    Pos::Exit(_) => return Err("nothing was recorded".into()),
                    Pos::Inverse(j) => j,
                    Pos::Forward(i) => self.inverse.inverse_position(i).ok_or("no inverse state")?,
                };
                let target = self.inverse.apply(start, action).map_err(|e| e.to_string())?;
                self.go(Direction::Inverse, target);
            }
        }
        Ok(())
    }

    fn back(&mut self) -> Result<(), String> {
        self.act(&Action::InvStepInto)
    }
}

fn kind_name(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Call => "call",
        NodeKind::Line => "line",
        NodeKind::Return => "return",
        NodeKind::Exception => "exception",
        NodeKind::InvCall => "inv_call",
        NodeKind::InvLine => "inv_line",
        NodeKind::InvLineCall => "inv_line_call",
        NodeKind::InvReturn => "inv_return",
        NodeKind::InvException => "inv_exception",
    }
}

/// The neural backend: every next state comes from a [`NextStatePredictor`] given the
/// serialized trajectory so far. Forward only; `back` undoes the last step.
pub struct PredictorBackend<P: NextStatePredictor> {
    predictor: P,
    /// `(prefix text, current frame)` after each step; the last is the current state.
    history: Vec<(String, Frame)>,
}

impl<P: NextStatePredictor> PredictorBackend<P> {
    /// Start at the call of the generated `main` (known without running anything).
    pub fn new(predictor: P, trace_for_context: &Trace) -> PredictorBackend<P> {
        // Only the first (call) frame of a recorded-or-not program is used: `def main():`
        // with no locals, which does not depend on execution.
        let scope = trace_for_context.whole();
        let tree = StateTree::forward(&scope);
        let context = context_for(trace_for_context, Direction::Forward);
        let first = if tree.nodes.is_empty() {
            Frame::Exit { exit: scope.exit }
        } else {
            EmitState::default().frame(&tree, Target::Node(0), true)
        };
        let prefix = replay(&tree, &context, 0, &[]).map(|t| t.prefix(0)).unwrap_or_default();
        PredictorBackend { predictor, history: vec![(prefix, first)] }
    }

    fn current(&self) -> &(String, Frame) {
        // history is never empty: new() pushes one entry and back() keeps one.
        &self.history[self.history.len() - 1]
    }

    /// The current (predicted) frame.
    #[must_use]
    pub fn frame(&self) -> &Frame {
        &self.current().1
    }
}

impl<P: NextStatePredictor> DebugBackend for PredictorBackend<P> {
    fn show(&self) -> String {
        match &self.current().1 {
            Frame::Exit { exit } => format!("[exit] {}", exit.as_str()),
            Frame::Entry => "[entry] start of the trace".into(),
            Frame::State { event, src, arg } => match arg {
                Arg::Locals(l) => format!("[{}] {src}\n  locals: {}", kind_name(*event), render_locals(l)),
                Arg::Value(v) => format!("[{}] {src}\n  value: {v}", kind_name(*event)),
            },
        }
    }

    fn print(&self) -> String {
        match &self.current().1 {
            Frame::State { arg: Arg::Locals(l), .. } => format!("  locals (\"..\" = unchanged): {}", render_locals(l)),
            _ => "  (no locals)".into(),
        }
    }

    fn stack(&self) -> Result<String, String> {
        Err("the neural backend does not track the stack".into())
    }

    fn act(&mut self, action: &Action) -> Result<(), String> {
        if action.direction() == Direction::Inverse {
            return Err("the neural backend runs forward only; use back to undo".into());
        }
        let (prefix, frame) = self.current().clone();
        if frame.is_terminal() {
            return Err("the program has finished".into());
        }
        let next = self.predictor.predict_frame(&Prompt { prefix: &prefix, action }).map_err(|e| e.to_string())?;
        let new_prefix = format!("{prefix}{}{}", serialize_action(action), next.serialize());
        self.history.push((new_prefix, next));
        Ok(())
    }

    fn back(&mut self) -> Result<(), String> {
        if self.history.len() <= 1 {
            return Err("already at the start of the trace".into());
        }
        self.history.pop();
        Ok(())
    }
}

/// Run the command loop until `quit` or end of input. When `echo` is set (non-interactive
/// input), each command is printed after the prompt so the transcript reads like a session.
///
/// # Errors
/// Fails only on I/O errors.
pub fn run(
    backend: &mut dyn DebugBackend,
    program: &str,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    echo: bool,
) -> std::io::Result<()> {
    let lines: Vec<&str> = program.lines().collect();
    writeln!(out, "{}", backend.show())?;
    loop {
        write!(out, "(ddb) ")?;
        out.flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            writeln!(out)?;
            return Ok(());
        }
        if echo {
            writeln!(out, "{}", line.trim_end())?;
        }
        if line.trim().is_empty() {
            continue;
        }
        let result = match parse_command(&line, &lines) {
            Err(msg) => Err(msg),
            Ok(Command::Quit) => return Ok(()),
            Ok(Command::Help) => {
                writeln!(out, "{HELP}")?;
                Ok(())
            }
            Ok(Command::Print) => {
                writeln!(out, "{}", backend.print())?;
                Ok(())
            }
            Ok(Command::Where) => {
                backend.stack().map(|s| writeln!(out, "{s}")).and_then(|r| r.map_err(|e| e.to_string()))
            }
            Ok(Command::Back) => {
                backend.back().map(|()| writeln!(out, "{}", backend.show())).and_then(|r| r.map_err(|e| e.to_string()))
            }
            Ok(Command::Act(action)) => backend
                .act(&action)
                .map(|()| writeln!(out, "{}", backend.show()))
                .and_then(|r| r.map_err(|e| e.to_string())),
        };
        if let Err(msg) = result {
            writeln!(out, "*** {msg}")?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_with_aliases_and_line_numbers() {
        let lines = ["def f(x):", "    return x"];
        assert_eq!(parse_command("s", &lines), Ok(Command::Act(Action::StepInto)));
        assert_eq!(parse_command(" next ", &lines), Ok(Command::Act(Action::StepOver)));
        assert_eq!(parse_command("break 2", &lines), Ok(Command::Act(Action::Breakpoint("    return x".into()))));
        assert_eq!(parse_command("b return x", &lines), Ok(Command::Act(Action::Breakpoint("return x".into()))));
        assert!(parse_command("break 9", &lines).is_err());
        assert!(parse_command("break", &lines).is_err());
        assert!(parse_command("frobnicate", &lines).is_err());
        assert_eq!(parse_command("back", &lines), Ok(Command::Back));
    }

    fn transcript(backend: &mut dyn DebugBackend, program: &str, commands: &str) -> String {
        let mut out = Vec::new();
        run(backend, program, &mut commands.as_bytes(), &mut out, true).expect("in-memory io");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn replay_steps_forward_and_back_exactly() {
        let trace = crate::debugger::fixtures::nested_calls();
        let mut b = ReplayBackend::new(&trace);
        let out = transcript(&mut b, &trace.program, "step\nstep\nnext\nnext\nnext\nstep\nreturn\nback\nback\nrcall\n");
        let states: Vec<&str> = out.lines().filter(|l| l.starts_with('[')).collect();
        let expect = [
            "[call] :12 depth=0 | def main():",
            "[line] :13 depth=0 |     return total([1, -2])",
            "[call] :6 depth=1 | def total(xs):",
            "[line] :7 depth=1 |     t = 0",
            "[line] :8 depth=1 |     for x in xs:",
            "[line] :9 depth=1 |         t += absolute(x)",
            "[call] :1 depth=2 | def absolute(x):",
            "[return] :4 depth=2 |     return x",
            "[inv_line] :4 depth=2 |     return x",
            "[inv_line] :2 depth=2 |     if x < 0:",
            "[inv_call] :1 depth=2 | def absolute(x):",
        ];
        assert_eq!(states, expect, "{out}");
    }

    #[test]
    fn back_from_the_exit_and_past_the_start() {
        let trace = crate::debugger::fixtures::nested_calls();
        let mut b = ReplayBackend::new(&trace);
        let out = transcript(&mut b, &trace.program, "continue\nstep\nback\nrcall\nback\nback\n");
        assert!(out.contains("[exit] normal"), "{out}");
        assert!(out.contains("*** the program has finished"), "{out}");
        assert!(out.contains("[inv_return] :13 depth=0"), "{out}");
        assert!(out.contains("[inv_call] :12 depth=0 | def main():"), "{out}");
        assert!(out.contains("[entry]"), "{out}");
        assert!(out.contains("*** already at the start"), "{out}");
    }

    #[test]
    fn predictor_backend_with_the_oracle_follows_the_trace_and_undoes() {
        let trace = crate::debugger::fixtures::nested_calls();
        let oracle = crate::debugger::predictor::OraclePredictor::new(vec![trace.clone()]);
        let mut b = PredictorBackend::new(oracle, &trace);
        let out =
            transcript(&mut b, &trace.program, "step\nstep\nbreak 10\nnext\nback\nreturn\ncontinue\nstep\nrnext\n");
        let states: Vec<&str> = out.lines().filter(|l| l.starts_with('[')).collect();
        assert_eq!(
            states,
            [
                "[call] def main():",
                "[line]     return total([1, -2])",
                "[call] def total(xs):",
                "[line]     return t",
                "[return]     return t",
                "[line]     return t",
                "[return]     return t",
                "[exit] normal",
            ],
            "{out}"
        );
        assert!(out.contains("locals: {\"xs\": \"[1, -2]\", \"t\": \"3\", \"x\": \"-2\"}"), "{out}");
        assert!(out.contains("*** the program has finished"), "{out}");
        assert!(out.contains("*** the neural backend runs forward only"), "{out}");
    }
}
