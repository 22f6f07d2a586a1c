//! Backends of the `debug` front end: exact replay of a recorded trace, both ways, or predicted states.

use super::grammar::{replay, serialize_action, Arg, EmitState, Frame};
use super::predictor::{NextStatePredictor, PredictError, Prompt};
use super::sampler::context_for;
use super::trace::{ExitKind, Limit, Trace};
use super::tree::{Action, Direction, NodeKind, StateTree, Target, TreeError};

/// Why a backend could not take a step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    #[error("the program has finished (exit {})", .0.as_str())]
    Finished(ExitKind),
    #[error("already at the start of the trace")]
    AtStart,
    #[error("nothing was recorded")]
    NothingRecorded,
    #[error("not at a state")]
    NoState,
    #[error("the neural backend runs forward only; use back to undo")]
    ForwardOnly,
    /// The action has no target from here (the tree says why).
    #[error(transparent)]
    Tree(#[from] TreeError),
    #[error(transparent)]
    Prediction(#[from] PredictError),
}

/// Something the front end can drive.
pub trait DebugBackend {
    /// What is there before the first and after the last state (the start, the exit, a
    /// truncation); empty at a state, which is shown from [`DebugBackend::location`].
    fn boundary(&self) -> String;
    /// Take a debugger action.
    ///
    /// # Errors
    /// When the action is unavailable here.
    fn act(&mut self, action: &Action) -> Result<(), StepError>;
    /// Step back.
    ///
    /// # Errors
    /// At the start of the trace.
    fn back(&mut self) -> Result<(), StepError>;
    /// The current state (`None` before the first or after the last).
    fn location(&self) -> Option<Location>;
    /// The call stack at the current state, outermost first (the current state last); just
    /// the current state where the backend does not track the stack.
    fn frames(&self) -> Vec<Location> {
        self.location().into_iter().collect()
    }
}

/// One state as the front end shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub kind: NodeKind,
    pub func: String,
    /// 1-based line in the program (0 when unknown).
    pub line: u32,
    pub src: String,
    pub depth: usize,
    /// `(name, repr)`; a predicted delta's unchanged entries are left out.
    pub locals: Vec<(String, String)>,
    /// Return value or exception.
    pub value: Option<String>,
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

impl DebugBackend for ReplayBackend {
    fn boundary(&self) -> String {
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
            Pos::Forward(_) | Pos::Inverse(_) => String::new(), // a state: see `location`
        }
    }

    fn act(&mut self, action: &Action) -> Result<(), StepError> {
        match action.direction() {
            Direction::Forward => {
                let start = match self.pos {
                    Pos::Exit(e) => return Err(StepError::Finished(e)),
                    // From before the first state, any forward action starts the trace.
                    Pos::Entry if !self.forward.nodes.is_empty() => {
                        self.pos = Pos::Forward(0);
                        return Ok(());
                    }
                    _ => self.forward_node().ok_or(StepError::NoState)?,
                };
                let target = self.forward.apply(start, action)?;
                self.go(Direction::Forward, target);
            }
            Direction::Inverse => {
                let start = match self.pos {
                    Pos::Entry => return Err(StepError::AtStart),
                    // From the exit, going back reaches the last recorded state.
                    Pos::Exit(_) if !self.inverse.nodes.is_empty() => {
                        self.pos = Pos::Inverse(0);
                        return Ok(());
                    }
                    Pos::Exit(_) => return Err(StepError::NothingRecorded),
                    Pos::Inverse(j) => j,
                    Pos::Forward(i) => self.inverse.inverse_position(i).ok_or(StepError::NoState)?,
                };
                let target = self.inverse.apply(start, action)?;
                self.go(Direction::Inverse, target);
            }
        }
        Ok(())
    }

    fn back(&mut self) -> Result<(), StepError> {
        self.act(&Action::InvStepInto)
    }

    fn location(&self) -> Option<Location> {
        let (tree, i) = self.node()?;
        Some(location_of(tree, i, tree.nodes[i].kind))
    }

    fn frames(&self) -> Vec<Location> {
        let Some(current) = self.location() else { return Vec::new() };
        let Some(mut i) = self.forward_node() else { return vec![current] };
        let mut frames = vec![current];
        while let Some(parent) = self.forward.nodes[i].parent {
            frames.push(location_of(&self.forward, parent, NodeKind::Line));
            i = parent;
        }
        frames.reverse();
        frames
    }
}

/// The state of node `i` of `tree`, shown as `kind`.
fn location_of(tree: &StateTree, i: usize, kind: NodeKind) -> Location {
    let e = tree.event_of(i);
    Location {
        kind,
        func: e.func.clone(),
        line: e.lineno,
        src: e.src.clone(),
        depth: tree.nodes[i].depth,
        locals: e.locals.clone(),
        value: e.value.clone(),
    }
}

/// The neural backend: every next state comes from a [`NextStatePredictor`] given the
/// serialized trajectory so far. Forward only; `back` undoes the last step.
pub struct PredictorBackend<P: NextStatePredictor> {
    predictor: P,
    /// `(prefix text, current frame)` after each step; the last is the current state.
    history: Vec<(String, Frame)>,
    /// The program's lines (to find a predicted state's line number).
    lines: Vec<String>,
    /// After each step of `history`: the open calls (function, full locals), innermost last,
    /// rebuilt from the predicted deltas.
    calls: Vec<Vec<OpenCall>>,
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
        let lines = trace_for_context.program.lines().map(str::to_string).collect();
        let calls = vec![open_calls(&[], None, &first)];
        PredictorBackend { predictor, history: vec![(prefix, first)], lines, calls }
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
    fn boundary(&self) -> String {
        match &self.current().1 {
            Frame::Exit { exit } => format!("[exit] {}", exit.as_str()),
            Frame::Entry => "[entry] start of the trace".into(),
            Frame::State { .. } => String::new(), // a state: see `location`
        }
    }

    fn act(&mut self, action: &Action) -> Result<(), StepError> {
        if action.direction() == Direction::Inverse {
            return Err(StepError::ForwardOnly);
        }
        let (prefix, frame) = self.current().clone();
        if let Frame::Exit { exit } = frame {
            return Err(StepError::Finished(exit));
        }
        if frame == Frame::Entry {
            return Err(StepError::NoState);
        }
        let next = self.predictor.predict_frame(&Prompt { prefix: &prefix, action })?;
        let new_prefix = format!("{prefix}{}{}", serialize_action(action), next.serialize());
        let calls = open_calls(self.calls.last().map_or(&[][..], Vec::as_slice), Some(&frame), &next);
        self.calls.push(calls);
        self.history.push((new_prefix, next));
        Ok(())
    }

    fn back(&mut self) -> Result<(), StepError> {
        if self.history.len() <= 1 {
            return Err(StepError::AtStart);
        }
        self.history.pop();
        self.calls.pop();
        Ok(())
    }

    fn location(&self) -> Option<Location> {
        let Frame::State { event, src, arg } = &self.current().1 else { return None };
        let value = match arg {
            Arg::Locals(_) => None,
            Arg::Value(v) => Some(v.clone()),
        };
        let calls = self.calls.last().map_or(&[][..], Vec::as_slice);
        // A return's call is already closed in `calls`: it is the one just popped.
        let (func, locals) = calls.last().cloned().unwrap_or_default();
        let line =
            self.lines.iter().position(|l| l.trim() == src.trim()).map_or(0, |i| u32::try_from(i + 1).unwrap_or(0));
        let depth = calls.len().saturating_sub(1);
        Some(Location { kind: *event, func, line, src: src.clone(), depth, locals, value })
    }
}

/// A call whose return has not been shown yet: its function and full locals.
type OpenCall = (String, Vec<(String, String)>);

/// The open calls after `frame`, from those before it: a call opens one (named by its `def`
/// line), a line updates the innermost one's locals from the delta, a return closes it after
/// it has been shown (it stays open in the state that shows the return).
fn open_calls(before: &[OpenCall], previous: Option<&Frame>, frame: &Frame) -> Vec<OpenCall> {
    let mut calls = before.to_vec();
    // The return the previous state showed has closed its call now.
    if matches!(previous, Some(Frame::State { event: NodeKind::Return, .. })) {
        calls.pop();
    }
    let Frame::State { event, src, arg } = frame else { return calls };
    match event {
        NodeKind::Call => {
            let name = src.trim().trim_start_matches("async ").strip_prefix("def ").unwrap_or("");
            let name = name.split(['(', ':']).next().unwrap_or("").trim().to_string();
            let locals = match arg {
                Arg::Locals(l) => l.iter().filter(|(k, _)| k != "..").cloned().collect(),
                Arg::Value(_) => Vec::new(),
            };
            calls.push((name, locals));
        }
        _ => {
            if let (Some(top), Arg::Locals(pairs)) = (calls.last_mut(), arg) {
                let delta = pairs.first().is_some_and(|(k, _)| k == "..");
                if !delta {
                    top.1.clear();
                }
                for (name, value) in pairs.iter().filter(|(k, _)| k != "..") {
                    match top.1.iter_mut().find(|(n, _)| n == name) {
                        Some(slot) => slot.1.clone_from(value),
                        None => top.1.push((name.clone(), value.clone())),
                    }
                }
            }
        }
    }
    calls
}
