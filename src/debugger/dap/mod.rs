//! `deepdebug dap`: a Debug Adapter Protocol server over a recorded (or predicted) run, with reverse execution.

pub mod evaluate;
pub mod predicted;
pub mod protocol;
pub mod recording;
pub mod timeline;

use evaluate::{Evaluator, Value};
use protocol::{Message, Outgoing};
use serde_json::{json, Value as Json};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use timeline::{Position, Timeline, Variable};

/// Why a request fails: the response's `message`.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("{0} is not supported")]
    Unsupported(String),
    /// A required argument is missing (the request's own words say which).
    #[error("{0}")]
    MissingArgument(&'static str),
    #[error("unknown backend {0:?} (real or neural)")]
    UnknownBackend(String),
    #[error("no program is running")]
    NotRunning,
    #[error("no such frame")]
    NoSuchFrame,
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Record(#[from] crate::debugger::record::RecordError),
    #[error(transparent)]
    Model(#[from] crate::debugger::neural::NeuralError),
    /// The expression raised (or could not be evaluated): the evaluator's words.
    #[error("{0}")]
    Evaluate(String),
}

/// A breakpoint as the client set it.
#[derive(Debug, Clone)]
struct Breakpoint {
    line: u32,
    condition: Option<String>,
}

/// A launched program: its timeline and where the debugger stands in it.
struct Run {
    timeline: Timeline,
    at: Position,
    /// Output is sent up to this many events (it only ever grows: stepping back does not
    /// send it again).
    shown: usize,
    stop_on_entry: bool,
    /// Variable references handed out since the last stop (reference = index + 1).
    references: Vec<Vec<Variable>>,
}

/// The server: reads requests, writes responses and events.
pub struct Server<W: Write> {
    out: Outgoing<W>,
    python: PathBuf,
    run: Option<Run>,
    /// Breakpoints by canonical file path.
    breakpoints: HashMap<String, Vec<Breakpoint>>,
    evaluator: Evaluator,
}

/// Why the debugger stopped.
#[derive(Debug, Clone, Copy)]
enum Stop {
    Entry,
    Step,
    Breakpoint,
}

impl<W: Write> Server<W> {
    pub fn new(out: W, python: &Path) -> Server<W> {
        Server {
            out: Outgoing::new(out),
            python: python.to_path_buf(),
            run: None,
            breakpoints: HashMap::new(),
            evaluator: Evaluator::new(python),
        }
    }

    /// Serve until `disconnect` or the end of input.
    ///
    /// # Errors
    /// Only on I/O errors or malformed framing.
    pub fn serve(&mut self, input: &mut dyn BufRead) -> std::io::Result<()> {
        while let Some(message) = protocol::read_message(input)? {
            let Message { seq, command, arguments } = message;
            if !self.handle(seq, &command, &arguments)? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// One request; false after `disconnect`.
    fn handle(&mut self, seq: i64, command: &str, args: &Json) -> std::io::Result<bool> {
        let result = match command {
            "initialize" => Ok(capabilities()),
            "launch" => self.launch(args),
            "setBreakpoints" => Ok(self.set_breakpoints(args)),
            "configurationDone" => return self.configuration_done(seq).map(|()| true),
            "threads" => Ok(json!({"threads": [{"id": 1, "name": "MainThread"}]})),
            "stackTrace" => Ok(self.stack_trace()),
            "scopes" => self.scopes(args),
            "variables" => Ok(self.variables(args)),
            "evaluate" => self.evaluate(args),
            "continue" | "next" | "stepIn" | "stepOut" | "stepBack" | "reverseContinue" => {
                return self.move_to(seq, command).map(|()| true);
            }
            "disconnect" | "terminate" => {
                self.out.respond(seq, command, Ok(json!({})))?;
                return Ok(false);
            }
            _ => Err(RequestError::Unsupported(command.to_string())),
        };
        self.out.respond(seq, command, result)?;
        if command == "launch" && self.run.is_some() {
            self.out.event("initialized", json!({}))?;
        }
        Ok(true)
    }

    fn launch(&mut self, args: &Json) -> Result<Json, RequestError> {
        let program =
            args["program"].as_str().ok_or(RequestError::MissingArgument("launch needs `program`, a Python file"))?;
        let program = PathBuf::from(program);
        let timeline = match args["backend"].as_str().unwrap_or("real") {
            "real" => self.record(&program, args)?,
            "neural" => self.predict(&program, args)?,
            other => return Err(RequestError::UnknownBackend(other.to_string())),
        };
        let at = timeline.start();
        let stop_on_entry = args["stopOnEntry"].as_bool().unwrap_or(false);
        self.run = Some(Run { timeline, at, shown: 0, stop_on_entry, references: Vec::new() });
        Ok(json!({}))
    }

    fn record(&self, program: &Path, args: &Json) -> Result<Timeline, RequestError> {
        let mut spec = recording::ScriptSpec::new(program);
        spec.python.clone_from(&self.python);
        if let Some(list) = args["args"].as_array() {
            spec.args = list.iter().filter_map(|a| a.as_str().map(str::to_string)).collect();
        }
        if let Some(cwd) = args["cwd"].as_str() {
            spec.cwd = PathBuf::from(cwd);
        }
        Ok(recording::record_script(&spec)?)
    }

    /// The neural backend: states predicted from the source of `program` for the call in
    /// `call`, by the model in `model` (or, without one, the oracle that replays a recording).
    fn predict(&self, program: &Path, args: &Json) -> Result<Timeline, RequestError> {
        use crate::debugger::{neural::NeuralPredictor, predictor::OraclePredictor, record};
        let call = args["call"]
            .as_str()
            .ok_or(RequestError::MissingArgument("the neural backend needs `call`, e.g. \"f(1, 2)\""))?;
        let code = std::fs::read_to_string(program)
            .map_err(|source| RequestError::Read { path: program.to_path_buf(), source })?;
        let limits = record::RecordLimits { python: self.python.clone(), ..record::RecordLimits::standard() };
        let trace = record::record_call(&code, call, &limits)?;
        let file = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
        let file = file.to_string_lossy();
        let steps = args["maxSteps"].as_u64().and_then(|n| usize::try_from(n).ok()).unwrap_or(500);
        Ok(match args["model"].as_str() {
            Some(dir) => {
                let model = NeuralPredictor::load(Path::new(dir), false)?;
                predicted::predict_timeline(model, &trace, &file, steps)
            }
            None => predicted::predict_timeline(OraclePredictor::new(vec![trace.clone()]), &trace, &file, steps),
        })
    }

    fn set_breakpoints(&mut self, args: &Json) -> Json {
        let path = args["source"]["path"].as_str().unwrap_or_default();
        let key = canonical(path);
        let wanted: Vec<Breakpoint> = args["breakpoints"]
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(|b| {
                        let line = u32::try_from(b["line"].as_u64()?).ok()?;
                        let condition = b["condition"].as_str().filter(|c| !c.trim().is_empty()).map(str::to_string);
                        Some(Breakpoint { line, condition })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let executed = |line: u32| {
            self.run.as_ref().is_none_or(|run| run.timeline.events.iter().any(|e| e.file == key && e.line == line))
        };
        let answers: Vec<Json> = wanted
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let verified = executed(b.line);
                let mut answer = json!({"id": i + 1, "verified": verified, "line": b.line});
                if !verified {
                    answer["message"] = json!("this line never runs in the recorded run");
                }
                answer
            })
            .collect();
        self.breakpoints.insert(key, wanted);
        json!({"breakpoints": answers})
    }

    fn configuration_done(&mut self, seq: i64) -> std::io::Result<()> {
        self.out.respond(seq, "configurationDone", Ok(json!({})))?;
        let Some(run) = &self.run else { return Ok(()) };
        if run.stop_on_entry || run.at == Position::End {
            return self.arrive(run.at, Stop::Entry);
        }
        // Run from the start to the first breakpoint (the first line may be one).
        let start = run.at;
        let first = match start {
            Position::At(i) if self.hits(i) => start,
            _ => self.continue_from(start),
        };
        self.arrive(first, Stop::Breakpoint)
    }

    fn continue_from(&mut self, at: Position) -> Position {
        let Server { run, breakpoints, evaluator, out, .. } = self;
        let Some(run) = run else { return Position::End };
        let events = &run.timeline.events;
        run.timeline.continue_to(at, |i| hits(&events[i], breakpoints, evaluator, out))
    }

    fn reverse_continue_from(&mut self, at: Position) -> Option<usize> {
        let Server { run, breakpoints, evaluator, out, .. } = self;
        let run = run.as_ref()?;
        let events = &run.timeline.events;
        run.timeline.reverse_continue_to(at, |i| hits(&events[i], breakpoints, evaluator, out))
    }

    /// Whether event `i` is at a breakpoint whose condition holds.
    fn hits(&mut self, i: usize) -> bool {
        let Server { run, breakpoints, evaluator, out, .. } = self;
        run.as_ref().is_some_and(|run| hits(&run.timeline.events[i], breakpoints, evaluator, out))
    }

    fn move_to(&mut self, seq: i64, command: &str) -> std::io::Result<()> {
        let Some(run) = &self.run else {
            return self.out.respond(seq, command, Err(RequestError::NotRunning));
        };
        let at = run.at;
        let t = &run.timeline;
        let (target, stop) = match command {
            "next" => (t.next(at), Stop::Step),
            "stepIn" => (t.step_in(at), Stop::Step),
            "stepOut" => (t.step_out(at), Stop::Step),
            "stepBack" => (t.step_back(at).map_or(t.start(), Position::At), Stop::Step),
            "reverseContinue" => match self.reverse_continue_from(at) {
                Some(i) => (Position::At(i), Stop::Breakpoint),
                None => (self.run.as_ref().map_or(Position::End, |r| r.timeline.start()), Stop::Entry),
            },
            _ => (self.continue_from(at), Stop::Breakpoint),
        };
        let body = if command == "continue" { json!({"allThreadsContinued": true}) } else { json!({}) };
        self.out.respond(seq, command, Ok(body))?;
        self.arrive(target, stop)
    }

    /// Stand at `target`: send the output written up to it, then `stopped` (or, past the
    /// end, `exited` and `terminated`).
    fn arrive(&mut self, target: Position, stop: Stop) -> std::io::Result<()> {
        let Some(run) = &mut self.run else { return Ok(()) };
        run.at = target;
        run.references.clear();
        let upto = match target {
            Position::At(i) => Some(i + 1),
            Position::End => None,
        };
        let outputs: Vec<(String, String)> =
            run.timeline.output_between(run.shown, upto).map(|o| (o.category.clone(), o.text.clone())).collect();
        run.shown = run.shown.max(upto.unwrap_or(usize::MAX));
        let exit = run.timeline.exit.clone();
        for (category, text) in outputs {
            self.out.event("output", json!({"category": category, "output": text}))?;
        }
        match target {
            Position::At(_) => {
                let reason = match stop {
                    Stop::Entry => "entry",
                    Stop::Step => "step",
                    Stop::Breakpoint => "breakpoint",
                };
                self.out.event("stopped", json!({"reason": reason, "threadId": 1, "allThreadsStopped": true}))
            }
            Position::End => {
                self.out.event("output", json!({"category": "console", "output": format!("{}\n", exit.describe())}))?;
                self.out.event("exited", json!({"exitCode": exit.code()}))?;
                self.out.event("terminated", json!({}))
            }
        }
    }

    fn stack_trace(&mut self) -> Json {
        let Some(run) = &self.run else { return json!({"stackFrames": [], "totalFrames": 0}) };
        let Position::At(at) = run.at else { return json!({"stackFrames": [], "totalFrames": 0}) };
        let frames: Vec<Json> = run
            .timeline
            .stack(at)
            .iter()
            .map(|f| {
                let e = &run.timeline.events[f.event];
                let name = Path::new(&e.file).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                json!({"id": f.event + 1, "name": e.func, "line": e.line, "column": 1,
                       "source": {"name": name, "path": e.file}})
            })
            .collect();
        json!({"totalFrames": frames.len(), "stackFrames": frames})
    }

    /// The locals of the event a frame id names.
    fn frame_locals(&self, frame_id: &Json) -> Option<Vec<Variable>> {
        let run = self.run.as_ref()?;
        let event = usize::try_from(frame_id.as_u64()?).ok()?.checked_sub(1)?;
        run.timeline.events.get(event).map(|e| e.locals.clone())
    }

    fn scopes(&mut self, args: &Json) -> Result<Json, RequestError> {
        let locals = self.frame_locals(&args["frameId"]).ok_or(RequestError::NoSuchFrame)?;
        let reference = self.reference(locals);
        Ok(json!({"scopes": [{"name": "Locals", "variablesReference": reference, "expensive": false}]}))
    }

    /// A variables reference for `variables` (valid until the next stop).
    fn reference(&mut self, variables: Vec<Variable>) -> usize {
        let Some(run) = &mut self.run else { return 0 };
        run.references.push(variables);
        run.references.len()
    }

    fn variables(&mut self, args: &Json) -> Json {
        let index = args["variablesReference"].as_u64().and_then(|r| usize::try_from(r).ok()).unwrap_or(0);
        let list = self
            .run
            .as_ref()
            .and_then(|run| index.checked_sub(1).and_then(|i| run.references.get(i)))
            .cloned()
            .unwrap_or_default();
        let variables: Vec<Json> = list
            .into_iter()
            .map(|v| {
                let children = if v.children.is_empty() { 0 } else { self.reference(v.children) };
                json!({"name": v.name, "value": v.value, "type": v.type_name, "variablesReference": children})
            })
            .collect();
        json!({"variables": variables})
    }

    fn evaluate(&mut self, args: &Json) -> Result<Json, RequestError> {
        let expression = args["expression"]
            .as_str()
            .ok_or(RequestError::MissingArgument("evaluate needs an expression"))?
            .trim()
            .to_string();
        let locals = match args.get("frameId") {
            Some(id) if !id.is_null() => self.frame_locals(id).ok_or(RequestError::NoSuchFrame)?,
            _ => self.current_locals(),
        };
        if let Some(v) = locals.iter().find(|v| v.name == expression).cloned() {
            let children = if v.children.is_empty() { 0 } else { self.reference(v.children) };
            return Ok(json!({"result": v.value, "type": v.type_name, "variablesReference": children}));
        }
        match self.evaluator.evaluate(&expression, &locals) {
            Value::Ok { value, type_name } => Ok(json!({"result": value, "type": type_name, "variablesReference": 0})),
            Value::Error(error) => Err(RequestError::Evaluate(error)),
        }
    }

    fn current_locals(&self) -> Vec<Variable> {
        match self.run.as_ref().map(|r| r.at) {
            Some(Position::At(i)) => self.run.as_ref().map(|r| r.timeline.events[i].locals.clone()).unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

/// Whether `event` is at a breakpoint whose condition holds (a condition that fails counts
/// as true, and the error goes to the debug console).
fn hits<W: Write>(
    event: &timeline::Event,
    breakpoints: &HashMap<String, Vec<Breakpoint>>,
    evaluator: &mut Evaluator,
    out: &mut Outgoing<W>,
) -> bool {
    let Some(b) = breakpoints.get(&event.file).and_then(|list| list.iter().find(|b| b.line == event.line)) else {
        return false;
    };
    let Some(condition) = &b.condition else { return true };
    let (holds, error) = evaluator.condition(condition, &event.locals);
    if let Some(error) = error {
        let text = format!("breakpoint condition `{condition}`: {error}\n");
        let _ = out.event("output", json!({"category": "console", "output": text}));
    }
    holds
}

/// What the server supports, as `initialize` answers.
fn capabilities() -> Json {
    json!({
        "supportsConfigurationDoneRequest": true,
        "supportsStepBack": true,
        "supportsConditionalBreakpoints": true,
        "supportsEvaluateForHovers": true,
        "supportsTerminateRequest": true,
    })
}

/// A path as breakpoints are keyed: canonical when it exists.
fn canonical(path: &str) -> String {
    std::fs::canonicalize(path).map_or_else(|_| path.to_string(), |p| p.to_string_lossy().into_owned())
}
