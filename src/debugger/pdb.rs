//! The pdb-like `debug` front end: persistent and conditional breakpoints, continue both ways, expressions, listing, frames, displays.

use super::dap::evaluate::{Evaluator, Value};
use super::dap::timeline::Variable;
use super::session::{DebugBackend, Location, StepError};
use super::tree::{Action, NodeKind};
use std::io::{BufRead, Write};
use std::path::Path;

const HELP: &str = "\
Stepping:     s(tep)  n(ext)  r(eturn)  unt(il)  c(ont(inue))
Backwards:    back|bk (inv_step_into)  rnext (inv_step_over)  rcall (inv_step_call)  rc|rcontinue
Breakpoints:  b(reak) [LINE[, COND]]  tbreak LINE[, COND]  cl(ear) [N...]  disable N...  enable N...
              jump LINE|SOURCE (the paper's breakpoint action: to the next state on that line)
Inspecting:   p EXPR  pp EXPR  a(rgs)  retval|rv  display [EXPR]  undisplay [EXPR]
              l(ist)  ll|longlist  w(here)|bt  u(p)  d(own)
Other:        h(elp)  q(uit)   (an empty line repeats the last command)";

/// Steps `continue` and `until` take at most before they give up.
const MAX_STEPS: usize = 200_000;

/// Why a command did nothing; the command loop prints it as `*** {error}`.
#[derive(Debug, thiserror::Error)]
enum PdbError {
    #[error(transparent)]
    Step(#[from] StepError),
    #[error("unknown command {0:?} (try help)")]
    UnknownCommand(String),
    #[error("give a line number or source text")]
    NoLineOrSource,
    #[error("no line {0} in the program")]
    NoSuchLine(usize),
    #[error("{0:?} is not a line number")]
    NotALineNumber(String),
    #[error("give breakpoint numbers")]
    NoBreakpointNumbers,
    #[error("no state")]
    NoState,
    #[error("not at a return")]
    NotAtReturn,
    #[error("Oldest frame")]
    OldestFrame,
    #[error("Newest frame")]
    NewestFrame,
    /// The expression raised this (or could not be evaluated).
    #[error("{0}")]
    Evaluation(String),
}

#[derive(Debug, Clone)]
struct Breakpoint {
    number: usize,
    line: u32,
    condition: Option<String>,
    temporary: bool,
    enabled: bool,
    hits: usize,
}

/// The front end's state around a backend.
pub struct Pdb<'a> {
    backend: &'a mut dyn DebugBackend,
    lines: Vec<String>,
    file: String,
    breakpoints: Vec<Breakpoint>,
    next_number: usize,
    displays: Vec<(String, Option<String>)>,
    /// Frames up from the current state (`up`/`down`).
    frame_offset: usize,
    evaluator: Evaluator,
}

/// Run the command loop until `quit` or end of input; `file` names the program in locations;
/// `python` evaluates expressions and breakpoint conditions.
/// When `echo` is set (non-interactive input), each command is printed after the prompt so the
/// transcript reads like a session.
///
/// # Errors
/// Fails only on I/O errors.
pub fn run(
    backend: &mut dyn DebugBackend,
    program: &str,
    file: &str,
    python: &Path,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    echo: bool,
) -> std::io::Result<()> {
    let mut pdb = Pdb {
        backend,
        lines: program.lines().map(str::to_string).collect(),
        file: file.to_string(),
        breakpoints: Vec::new(),
        next_number: 1,
        displays: Vec::new(),
        frame_offset: 0,
        evaluator: Evaluator::new(python),
    };
    writeln!(out, "{}", pdb.describe())?;
    let mut last = String::new();
    loop {
        write!(out, "(Pdb) ")?;
        out.flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            writeln!(out)?;
            return Ok(());
        }
        if echo {
            writeln!(out, "{}", line.trim_end())?;
        }
        let command = if line.trim().is_empty() { last.clone() } else { line.trim().to_string() };
        if command.is_empty() {
            continue;
        }
        last.clone_from(&command);
        match pdb.command(&command) {
            Ok(Some(text)) => writeln!(out, "{text}")?,
            Ok(None) => return Ok(()),
            Err(message) => writeln!(out, "*** {message}")?,
        }
    }
}

impl Pdb<'_> {
    /// Run one command: its output, `None` to quit, or an error message.
    fn command(&mut self, line: &str) -> Result<Option<String>, PdbError> {
        let (word, rest) = line.split_once(char::is_whitespace).map_or((line, ""), |(w, r)| (w, r.trim()));
        match word {
            "s" | "step" => self.act(&Action::StepInto),
            "n" | "next" => self.act(&Action::StepOver),
            "r" | "return" => self.act(&Action::StepReturn),
            "back" | "bk" => {
                self.backend.back()?;
                Ok(Some(self.stopped()))
            }
            "rnext" => self.act(&Action::InvStepOver),
            "rcall" => self.act(&Action::InvStepCall),
            "c" | "cont" | "continue" => self.continue_forward().map(|t| Some(t.unwrap_or_else(|| self.stopped()))),
            "rc" | "rcontinue" => self.continue_backward().map(|()| Some(self.stopped())),
            "unt" | "until" => self.until().map(|()| Some(self.stopped())),
            "jump" | "j" => {
                let source = self.source_of(rest)?;
                self.act(&Action::Breakpoint(source))
            }
            "b" | "break" if rest.is_empty() => Ok(Some(self.list_breakpoints())),
            "b" | "break" => self.add_breakpoint(rest, false).map(Some),
            "tbreak" => self.add_breakpoint(rest, true).map(Some),
            "cl" | "clear" => Ok(Some(self.clear(rest))),
            "disable" | "enable" => self.enable(rest, word == "enable").map(Some),
            "p" | "pp" | "print" => self.print(rest).map(Some),
            "a" | "args" => Ok(Some(self.args())),
            "retval" | "rv" => self.retval().map(Some),
            "display" => Ok(Some(self.display(rest))),
            "undisplay" => {
                self.displays.retain(|(e, _)| !rest.is_empty() && e != rest);
                Ok(Some(String::new()))
            }
            "l" | "list" => Ok(Some(self.list(false))),
            "ll" | "longlist" => Ok(Some(self.list(true))),
            "w" | "where" | "bt" => Ok(Some(self.where_())),
            "u" | "up" => self.up_down(1).map(Some),
            "d" | "down" => self.up_down(-1).map(Some),
            "h" | "help" | "?" => Ok(Some(HELP.to_string())),
            "q" | "quit" | "exit" => Ok(None),
            other => Err(PdbError::UnknownCommand(other.to_string())),
        }
    }

    /// Take a paper action, then show where it led.
    fn act(&mut self, action: &Action) -> Result<Option<String>, PdbError> {
        self.backend.act(action)?;
        Ok(Some(self.stopped()))
    }

    /// The location, then the displays whose value changed.
    fn stopped(&mut self) -> String {
        self.frame_offset = 0;
        let mut text = self.describe();
        if self.backend.location().is_none() {
            return text;
        }
        for line in self.refresh_displays() {
            text.push('\n');
            text.push_str(&line);
        }
        text
    }

    /// The current state in pdb's format (`--Call--`, `> FILE(LINE)FUNC()`, `-> SOURCE`).
    fn describe(&self) -> String {
        match self.backend.location() {
            Some(loc) => self.format(&loc),
            None => self.backend.boundary(),
        }
    }

    fn format(&self, loc: &Location) -> String {
        let func = if loc.func.is_empty() { "<module>" } else { &loc.func };
        let head = format!("> {}({}){func}()", self.file, loc.line);
        let src = format!("-> {}", loc.src.trim());
        let value = loc.value.as_deref().unwrap_or("None");
        match loc.kind {
            NodeKind::Call => format!("--Call--\n{head}\n{src}"),
            NodeKind::Return => format!("--Return--\n{head}->{value}\n{src}"),
            NodeKind::Exception => format!("{value}\n{head}\n{src}"),
            NodeKind::InvCall => format!("--Call-- (back)\n{head}\n{src}"),
            NodeKind::InvReturn => format!("--Return-- (back)\n{head}->{value}\n{src}"),
            NodeKind::InvException => format!("{value} (back)\n{head}\n{src}"),
            NodeKind::Line | NodeKind::InvLine | NodeKind::InvLineCall => format!("{head}\n{src}"),
        }
    }

    /// A `break`/`jump` argument as source text: a line number's text, or the text itself.
    fn source_of(&self, arg: &str) -> Result<String, PdbError> {
        if arg.is_empty() {
            return Err(PdbError::NoLineOrSource);
        }
        match arg.parse::<usize>() {
            Ok(n) => self.lines.get(n.wrapping_sub(1)).cloned().ok_or(PdbError::NoSuchLine(n)),
            Err(_) => Ok(arg.to_string()),
        }
    }

    fn add_breakpoint(&mut self, arg: &str, temporary: bool) -> Result<String, PdbError> {
        let (where_, condition) = arg.split_once(',').map_or((arg, None), |(w, c)| (w.trim(), Some(c.trim())));
        let line = where_.parse::<u32>().map_err(|_| PdbError::NotALineNumber(where_.to_string()))?;
        if line == 0 || line as usize > self.lines.len() {
            return Err(PdbError::NoSuchLine(line as usize));
        }
        let number = self.next_number;
        self.next_number += 1;
        let condition = condition.filter(|c| !c.is_empty()).map(str::to_string);
        self.breakpoints.push(Breakpoint { number, line, condition, temporary, enabled: true, hits: 0 });
        let kind = if temporary { "Temporary breakpoint" } else { "Breakpoint" };
        Ok(format!("{kind} {number} at {}:{line}", self.file))
    }

    fn list_breakpoints(&self) -> String {
        if self.breakpoints.is_empty() {
            return "No breakpoints".into();
        }
        let mut text = String::from("Num Type         Disp Enb   Where");
        for b in &self.breakpoints {
            let disp = if b.temporary { "del " } else { "keep" };
            let enabled = if b.enabled { "yes" } else { "no " };
            text.push_str(&format!("\n{:<3} breakpoint   {disp} {enabled}   at {}:{}", b.number, self.file, b.line));
            if let Some(c) = &b.condition {
                text.push_str(&format!("\n\tstop only if {c}"));
            }
            if b.hits > 0 {
                text.push_str(&format!(
                    "\n\tbreakpoint already hit {} time{}",
                    b.hits,
                    if b.hits == 1 { "" } else { "s" }
                ));
            }
        }
        text
    }

    fn clear(&mut self, arg: &str) -> String {
        if arg.is_empty() {
            self.breakpoints.clear();
            return "Deleted all breakpoints".into();
        }
        let numbers: Vec<usize> = arg.split_whitespace().filter_map(|n| n.parse().ok()).collect();
        self.breakpoints.retain(|b| !numbers.contains(&b.number));
        numbers.iter().map(|n| format!("Deleted breakpoint {n}")).collect::<Vec<_>>().join("\n")
    }

    fn enable(&mut self, arg: &str, enabled: bool) -> Result<String, PdbError> {
        let numbers: Vec<usize> = arg.split_whitespace().filter_map(|n| n.parse().ok()).collect();
        if numbers.is_empty() {
            return Err(PdbError::NoBreakpointNumbers);
        }
        let mut text = Vec::new();
        for b in self.breakpoints.iter_mut().filter(|b| numbers.contains(&b.number)) {
            b.enabled = enabled;
            text.push(format!("{} breakpoint {}", if enabled { "Enabled" } else { "Disabled" }, b.number));
        }
        Ok(text.join("\n"))
    }

    /// The enabled breakpoint the current state stops at (its condition holding), if any.
    fn hit(&mut self) -> Option<usize> {
        let loc = self.backend.location()?;
        let stops = matches!(loc.kind, NodeKind::Line | NodeKind::InvLine | NodeKind::InvLineCall);
        if !stops {
            return None;
        }
        let candidates: Vec<(usize, Option<String>)> = self
            .breakpoints
            .iter()
            .filter(|b| b.enabled && b.line == loc.line)
            .map(|b| (b.number, b.condition.clone()))
            .collect();
        let locals = variables(&loc.locals);
        candidates
            .into_iter()
            .find(|(_, condition)| condition.as_ref().is_none_or(|c| self.evaluator.condition(c, &locals).0))
            .map(|(number, _)| number)
    }

    /// Count a hit and drop a temporary breakpoint.
    fn take_hit(&mut self, number: usize) {
        if let Some(b) = self.breakpoints.iter_mut().find(|b| b.number == number) {
            b.hits += 1;
        }
        self.breakpoints.retain(|b| !(b.number == number && b.temporary));
    }

    /// Step forwards to the next breakpoint (without any: the paper's `continue`, to the exit).
    /// Returns a message to show instead of the location when it gave up.
    fn continue_forward(&mut self) -> Result<Option<String>, PdbError> {
        if !self.breakpoints.iter().any(|b| b.enabled) {
            return Ok(self.backend.act(&Action::Continue).map(|()| None)?);
        }
        for _ in 0..MAX_STEPS {
            if self.backend.act(&Action::StepInto).is_err() || self.backend.location().is_none() {
                return Ok(None);
            }
            if let Some(number) = self.hit() {
                self.take_hit(number);
                return Ok(None);
            }
        }
        Ok(Some(format!("*** no breakpoint within {MAX_STEPS} steps\n{}", self.stopped())))
    }

    /// Step backwards to the previous breakpoint, or to the start.
    fn continue_backward(&mut self) -> Result<(), PdbError> {
        for _ in 0..MAX_STEPS {
            if self.backend.back().is_err() || self.backend.location().is_none() {
                return Ok(());
            }
            if let Some(number) = self.hit() {
                self.take_hit(number);
                return Ok(());
            }
        }
        Ok(())
    }

    /// Step over until a line greater than the current one in this frame, or its return.
    fn until(&mut self) -> Result<(), PdbError> {
        let Some(start) = self.backend.location() else { return Err(StepError::NoState.into()) };
        for _ in 0..MAX_STEPS {
            self.backend.act(&Action::StepOver)?;
            let Some(loc) = self.backend.location() else { return Ok(()) };
            let returned = loc.kind == NodeKind::Return && loc.depth == start.depth;
            if loc.depth < start.depth || returned || (loc.depth == start.depth && loc.line > start.line) {
                return Ok(());
            }
        }
        Ok(())
    }

    /// The frame `up`/`down` selected (the current state when none).
    fn selected(&self) -> Option<Location> {
        let frames = self.backend.frames();
        frames.len().checked_sub(1 + self.frame_offset).and_then(|i| frames.get(i).cloned())
    }

    fn print(&mut self, expression: &str) -> Result<String, PdbError> {
        if expression.is_empty() {
            let loc = self.selected().ok_or(PdbError::NoState)?;
            return Ok(loc.locals.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join("\n"));
        }
        let loc = self.selected().ok_or(PdbError::NoState)?;
        if let Some((_, v)) = loc.locals.iter().find(|(k, _)| k == expression) {
            return Ok(v.clone());
        }
        match self.evaluator.evaluate(expression, &variables(&loc.locals)) {
            Value::Ok { value, .. } => Ok(value),
            Value::Error(error) => Err(PdbError::Evaluation(error)),
        }
    }

    fn args(&self) -> String {
        let Some(current) = self.selected() else { return String::new() };
        self.params_of(&current)
            .iter()
            .filter_map(|p| current.locals.iter().find(|(k, _)| k == p).map(|(k, v)| format!("{k} = {v}")))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Parameter names of the function whose state `loc` is, read off its `def` line.
    fn params_of(&self, loc: &Location) -> Vec<String> {
        let def = (1..=loc.line as usize)
            .rev()
            .filter_map(|n| self.lines.get(n - 1))
            .find(|l| l.trim_start().starts_with("def ") || l.trim_start().starts_with("async def "));
        let Some(def) = def else { return Vec::new() };
        let inside = def.split_once('(').and_then(|(_, r)| r.rsplit_once(')')).map_or("", |(a, _)| a);
        inside
            .split(',')
            .map(|p| p.split([':', '=']).next().unwrap_or("").trim().trim_start_matches('*').to_string())
            .filter(|p| !p.is_empty() && p != "/")
            .collect()
    }

    fn retval(&self) -> Result<String, PdbError> {
        match self.backend.location() {
            Some(loc) if matches!(loc.kind, NodeKind::Return | NodeKind::InvReturn) => {
                Ok(loc.value.unwrap_or_else(|| "None".into()))
            }
            _ => Err(PdbError::NotAtReturn),
        }
    }

    fn display(&mut self, expression: &str) -> String {
        if expression.is_empty() {
            let shown: Vec<String> = self.displays.iter().map(|(e, _)| e.clone()).collect();
            return format!("Currently displaying:\n{}", shown.join("\n"));
        }
        let value = self.print(expression).unwrap_or_else(|e| format!("** {e} **"));
        self.displays.retain(|(e, _)| e != expression);
        self.displays.push((expression.to_string(), Some(value.clone())));
        format!("display {expression}: {value}")
    }

    /// The displays whose value changed since they were last shown.
    fn refresh_displays(&mut self) -> Vec<String> {
        let mut shown = Vec::new();
        for i in 0..self.displays.len() {
            let expression = self.displays[i].0.clone();
            let value = self.print(&expression).unwrap_or_else(|e| format!("** {e} **"));
            let old = self.displays[i].1.replace(value.clone());
            if old.as_ref() != Some(&value) {
                let was = old.map(|o| format!("  [old: {o}]")).unwrap_or_default();
                shown.push(format!("display {expression}: {value}{was}"));
            }
        }
        shown
    }

    /// Eleven lines around the selected state (`ll`: its whole function), `->` marking it and
    /// `B` the breakpoints.
    fn list(&self, whole_function: bool) -> String {
        let Some(loc) = self.selected() else { return "*** no state".into() };
        let current = loc.line as usize;
        let (first, last) = if whole_function {
            self.function_span(current)
        } else {
            (current.saturating_sub(5).max(1), (current + 5).min(self.lines.len()))
        };
        (first..=last)
            .filter_map(|n| self.lines.get(n - 1).map(|text| (n, text)))
            .map(|(n, text)| {
                let mark = if self.breakpoints.iter().any(|b| b.line as usize == n) { "B" } else { " " };
                let arrow = if n == current { "->" } else { "  " };
                format!("{n:>4} {mark}{arrow}\t{text}")
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The lines of the function holding line `at`: its `def` to its last indented line.
    fn function_span(&self, at: usize) -> (usize, usize) {
        let indent = |s: &str| s.len() - s.trim_start().len();
        let def = (1..=at)
            .rev()
            .find(|&n| self.lines.get(n - 1).is_some_and(|l| l.trim_start().starts_with("def ")))
            .unwrap_or(1);
        let base = self.lines.get(def - 1).map_or(0, |l| indent(l));
        let mut end = def;
        for n in def + 1..=self.lines.len() {
            let text = &self.lines[n - 1];
            if text.trim().is_empty() {
                continue;
            }
            if indent(text) <= base {
                break;
            }
            end = n;
        }
        (def, end)
    }

    fn where_(&self) -> String {
        let frames = self.backend.frames();
        let selected = frames.len().saturating_sub(1 + self.frame_offset);
        frames
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let func = if f.func.is_empty() { "<module>" } else { &f.func };
                let mark = if i == selected { ">" } else { " " };
                format!("{mark} {}({}){func}()\n-> {}", self.file, f.line, f.src.trim())
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn up_down(&mut self, by: isize) -> Result<String, PdbError> {
        let depth = self.backend.frames().len();
        let offset = self.frame_offset.checked_add_signed(by).filter(|&o| o < depth.max(1));
        match offset {
            Some(o) => {
                self.frame_offset = o;
                let loc = self.selected().ok_or(PdbError::NoState)?;
                let func = if loc.func.is_empty() { "<module>" } else { &loc.func };
                Ok(format!("> {}({}){func}()\n-> {}", self.file, loc.line, loc.src.trim()))
            }
            None if by > 0 => Err(PdbError::OldestFrame),
            None => Err(PdbError::NewestFrame),
        }
    }
}

/// `(name, repr)` pairs as evaluator variables.
fn variables(locals: &[(String, String)]) -> Vec<Variable> {
    locals
        .iter()
        .map(|(name, value)| Variable {
            name: name.clone(),
            value: value.clone(),
            type_name: String::new(),
            children: Vec::new(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debugger::session::{PredictorBackend, ReplayBackend};

    fn transcript(backend: &mut dyn DebugBackend, program: &str, commands: &str) -> String {
        let mut out = Vec::new();
        run(backend, program, "prog.py", Path::new("python3"), &mut commands.as_bytes(), &mut out, true)
            .expect("in-memory io");
        String::from_utf8(out).expect("utf-8")
    }

    /// The state headers of a transcript: event markers and locations.
    fn heads(out: &str) -> Vec<&str> {
        out.lines().filter(|l| l.starts_with("--") || l.starts_with("> ") || l.starts_with('[')).collect()
    }

    #[test]
    fn the_papers_actions_replay_exactly_forwards_and_backwards() {
        let trace = crate::debugger::fixtures::nested_calls();
        let mut b = ReplayBackend::new(&trace);
        let out = transcript(&mut b, &trace.program, "step\nstep\nnext\nnext\nnext\nstep\nreturn\nback\nback\nrcall\n");
        let expected = [
            "--Call--",
            "> prog.py(12)<module>()",
            "> prog.py(13)<module>()",
            "--Call--",
            "> prog.py(6)<module>()",
            "> prog.py(7)<module>()",
            "> prog.py(8)<module>()",
            "> prog.py(9)<module>()",
            "--Call--",
            "> prog.py(1)<module>()",
            "--Return--",
            "> prog.py(4)<module>()->1",
            "> prog.py(4)<module>()",
            "> prog.py(2)<module>()",
            "--Call-- (back)",
            "> prog.py(1)<module>()",
        ];
        assert_eq!(heads(&out), expected, "{out}");
    }

    #[test]
    fn continue_stops_at_breakpoints_both_ways_and_the_oracle_agrees() {
        let trace = crate::debugger::fixtures::nested_calls();
        let commands = "b 3\nc\np x\nc\nb 9, x < 0\nrc\np x\nrc\nc\nc\nc\n";
        let mut replay = ReplayBackend::new(&trace);
        let out = transcript(&mut replay, &trace.program, commands);
        let values: Vec<&str> = out.lines().filter(|l| *l == "-2" || *l == "1").collect();
        assert_eq!(values, ["-2", "-2"], "{out}");
        assert!(out.contains("(Pdb) c\n[exit] normal"), "{out}");
        assert!(out.contains("(Pdb) rc\n> prog.py(9)<module>()\n-> t += absolute(x)"), "{out}");
        let oracle = crate::debugger::predictor::OraclePredictor::new(vec![trace.clone()]);
        let mut predicted = PredictorBackend::new(oracle, &trace);
        let forward = transcript(&mut predicted, &trace.program, "b 3\nc\np x\nc\n");
        assert!(forward.contains("> prog.py(3)absolute()\n-> return -x\n(Pdb) p x\n-2\n"), "{forward}");
        assert!(forward.ends_with("(Pdb) c\n[exit] normal\n(Pdb) \n"), "{forward}");
    }
}
