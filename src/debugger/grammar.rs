//! The paper's token grammar: frames, actions, delta-encoded locals, serializer and parser.

use super::trace::ExitKind;
use super::tree::{Action, Direction, NodeKind, StateTree, Target};
use serde::{Deserialize, Serialize};

pub const BEGIN_OF_TEXT: &str = "<|begin_of_text|>";
pub const CONTEXT_START: &str = "<|trace_context_start|>";
pub const FRAME_SEP: &str = "<|frame_sep|>";
pub const ACTION_SEP: &str = "<|action_sep|>";
pub const SRC_SEP: &str = "<|src_sep|>";
pub const ARG_SEP: &str = "<|arg_sep|>";
pub const TRACE_END: &str = "<|trace_end|>";
pub const END_OF_TEXT: &str = "<|end_of_text|>";
/// Marker for omitted, unchanged locals in a delta-encoded dict.
pub const UNCHANGED: (&str, &str) = ("..", "..");

/// Errors from parsing grammar text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrammarError {
    #[error("unknown special token <|{0}|>")]
    UnknownToken(String),
    #[error("expected {expected} at {at:?}")]
    Expected { expected: &'static str, at: String },
    #[error("invalid JSON in {what}: {text:?}")]
    Json { what: &'static str, text: String },
}

/// The payload after `<|arg_sep|>`: a locals dict or a (return/exception) value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
pub enum Arg {
    /// `(name, repr)` pairs; may contain the [`UNCHANGED`] marker.
    Locals(Vec<(String, String)>),
    Value(String),
}

/// One state as the model sees it, or an end-of-trajectory marker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "frame", rename_all = "snake_case")]
pub enum Frame {
    State {
        event: NodeKind,
        src: String,
        arg: Arg,
    },
    Exit {
        exit: ExitKind,
    },
    /// Inverse execution reached the entry (`<|inv_exit_entry|>`).
    Entry,
}

fn event_token(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Call => "<|call_sep|>",
        NodeKind::Line => "<|line_sep|>",
        NodeKind::Return => "<|return_sep|>",
        NodeKind::Exception => "<|exception_sep|>",
        NodeKind::InvCall => "<|inv_call_sep|>",
        NodeKind::InvLine => "<|inv_line_sep|>",
        NodeKind::InvLineCall => "<|inv_line_call_sep|>",
        NodeKind::InvReturn => "<|inv_return_sep|>",
        NodeKind::InvException => "<|inv_exception_sep|>",
    }
}

fn exit_token(exit: ExitKind) -> &'static str {
    match exit {
        ExitKind::Normal => "<|exit_normal|>",
        ExitKind::Error => "<|exit_error|>",
        ExitKind::Never => "<|exit_never|>",
    }
}

const ENTRY_TOKEN: &str = "<|inv_exit_entry|>";

/// Every special token of the grammar, each of which a model's tokenizer must keep as a
/// single token.
#[must_use]
pub fn special_tokens() -> Vec<&'static str> {
    use NodeKind::{Call, Exception, InvCall, InvException, InvLine, InvLineCall, InvReturn, Line, Return};
    let mut out = vec![
        BEGIN_OF_TEXT,
        CONTEXT_START,
        FRAME_SEP,
        ACTION_SEP,
        SRC_SEP,
        ARG_SEP,
        TRACE_END,
        END_OF_TEXT,
        ENTRY_TOKEN,
    ];
    out.extend(
        [Call, Line, Return, Exception, InvCall, InvLine, InvLineCall, InvReturn, InvException].map(event_token),
    );
    out.extend([ExitKind::Normal, ExitKind::Error, ExitKind::Never].map(exit_token));
    let actions = [
        Action::StepInto,
        Action::StepOver,
        Action::StepReturn,
        Action::Breakpoint(String::new()),
        Action::Continue,
        Action::InvStepInto,
        Action::InvStepOver,
        Action::InvStepCall,
    ];
    out.extend(actions.iter().map(action_token));
    out
}

/// The token for an action (breakpoint's source text follows it directly).
#[must_use]
pub fn action_token(action: &Action) -> &'static str {
    match action {
        Action::StepInto => "<|step_into|>",
        Action::StepOver => "<|step_over|>",
        Action::StepReturn => "<|step_return|>",
        Action::Breakpoint(_) => "<|breakpoint|>",
        Action::Continue => "<|continue|>",
        Action::InvStepInto => "<|inv_step_into|>",
        Action::InvStepOver => "<|inv_step_over|>",
        Action::InvStepCall => "<|inv_step_call|>",
    }
}

/// `<|action_sep|>` + action (+ breakpoint source line).
#[must_use]
pub fn serialize_action(action: &Action) -> String {
    match action {
        Action::Breakpoint(src) => format!("{ACTION_SEP}{}{}", action_token(action), escape(src)),
        _ => format!("{ACTION_SEP}{}", action_token(action)),
    }
}

fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// The escape character of text inside the grammar (a private-use code point).
const ESCAPE: char = '\u{E000}';

/// Text as it goes between special tokens: `<|` becomes `<ESC|` (so no token can be read in
/// it) and the escape character itself is doubled. [`unescape`] restores it.
#[must_use]
pub fn escape(text: &str) -> String {
    if !text.contains("<|") && !text.contains(ESCAPE) {
        return text.to_string();
    }
    let doubled = text.replace(ESCAPE, &format!("{ESCAPE}{ESCAPE}"));
    doubled.replace("<|", &format!("<{ESCAPE}|"))
}

/// The text [`escape`] was given.
#[must_use]
pub fn unescape(text: &str) -> String {
    if !text.contains(ESCAPE) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ESCAPE && chars.peek() == Some(&ESCAPE) {
            chars.next();
            out.push(ESCAPE);
        } else if c == '<' && chars.peek() == Some(&ESCAPE) {
            let mut ahead = chars.clone();
            ahead.next();
            if ahead.peek() == Some(&'|') {
                chars.next();
                out.push('<');
            } else {
                out.push(c);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Python `json.dumps` style: `{"a": "1", "b": "'x'"}`.
#[must_use]
pub fn serialize_locals(locals: &[(String, String)]) -> String {
    let body: Vec<String> = locals.iter().map(|(k, v)| format!("{}: {}", json_str(k), json_str(v))).collect();
    format!("{{{}}}", body.join(", "))
}

fn serialize_arg(arg: &Arg) -> String {
    match arg {
        Arg::Locals(locals) => serialize_locals(locals),
        Arg::Value(v) => json_str(v),
    }
}

impl Frame {
    /// Serialize, starting with `<|frame_sep|>`. Exit frames end the text with
    /// `<|trace_end|><|end_of_text|>`.
    #[must_use]
    pub fn serialize(&self) -> String {
        match self {
            Frame::State { event, src, arg } => {
                let tok = event_token(*event);
                let (src, arg) = (escape(src), escape(&serialize_arg(arg)));
                // Forward line events show the observation before the source (CWM order).
                if *event == NodeKind::Line {
                    format!("{FRAME_SEP}{tok}{ARG_SEP}{arg}{SRC_SEP}{src}")
                } else {
                    format!("{FRAME_SEP}{tok}{SRC_SEP}{src}{ARG_SEP}{arg}")
                }
            }
            Frame::Exit { exit } => format!("{FRAME_SEP}{}{TRACE_END}{END_OF_TEXT}", exit_token(*exit)),
            Frame::Entry => format!("{FRAME_SEP}{ENTRY_TOKEN}{TRACE_END}{END_OF_TEXT}"),
        }
    }

    /// The direction of execution this frame belongs to.
    #[must_use]
    pub fn direction(&self) -> Direction {
        match self {
            Frame::State {
                event:
                    NodeKind::InvCall
                    | NodeKind::InvLine
                    | NodeKind::InvLineCall
                    | NodeKind::InvReturn
                    | NodeKind::InvException,
                ..
            }
            | Frame::Entry => Direction::Inverse,
            Frame::State { .. } | Frame::Exit { .. } => Direction::Forward,
        }
    }

    #[must_use]
    pub fn is_terminal(&self) -> bool {
        !matches!(self, Frame::State { .. })
    }
}

/// Delta-encode `now` against `before`: changed or new entries, plus one `"..": ".."`
/// marker first if anything was omitted.
#[must_use]
pub fn delta(before: &[(String, String)], now: &[(String, String)]) -> Vec<(String, String)> {
    let changed: Vec<(String, String)> =
        now.iter().filter(|(k, v)| !before.iter().any(|(bk, bv)| bk == k && bv == v)).cloned().collect();
    if changed.len() < now.len() {
        let mut out = vec![(UNCHANGED.0.to_string(), UNCHANGED.1.to_string())];
        out.extend(changed);
        out
    } else {
        changed
    }
}

/// What the serializer remembers about the previously emitted frame.
#[derive(Debug, Clone, Default)]
pub struct EmitState {
    previous: Option<(u64, Vec<(String, String)>)>,
}

impl EmitState {
    /// The frame for a target, updating the delta state. `full` forces full locals
    /// (breakpoint targets).
    ///
    /// Locals are delta-encoded against the previously emitted *state* when it belongs to
    /// the same call instance, even if that frame displayed a value (a return or exception
    /// state still has locals). This reproduces Fig. C.1b, where the `inv_line` after an
    /// `inv_return` shows `{"..": ".."}`. Call frames and breakpoint targets are always full;
    /// after a change of call instance the dict is full as well.
    pub fn frame(&mut self, tree: &StateTree, target: Target, full: bool) -> Frame {
        let i = match target {
            Target::Node(i) => i,
            Target::Exit(exit) => {
                self.previous = None;
                return Frame::Exit { exit };
            }
            Target::Entry => {
                self.previous = None;
                return Frame::Entry;
            }
        };
        let node = &tree.nodes[i];
        let event = tree.event_of(i);
        let previous = self.previous.replace((event.frame, event.locals.clone()));
        let shows_value =
            matches!(node.kind, NodeKind::Return | NodeKind::Exception | NodeKind::InvReturn | NodeKind::InvException);
        if shows_value {
            return Frame::State {
                event: node.kind,
                src: event.src.clone(),
                arg: Arg::Value(event.value.clone().unwrap_or_default()),
            };
        }
        let is_call = matches!(node.kind, NodeKind::Call | NodeKind::InvCall);
        let locals = match previous {
            Some((frame, before)) if !full && !is_call && frame == event.frame => delta(&before, &event.locals),
            _ => event.locals.clone(),
        };
        Frame::State { event: node.kind, src: event.src.clone(), arg: Arg::Locals(locals) }
    }
}

/// A trajectory: frames and the actions between them (`frames.len() == actions.len() + 1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trajectory {
    pub context: String,
    pub direction: Direction,
    pub frames: Vec<Frame>,
    pub actions: Vec<Action>,
    /// Tree positions of the frames (for replay and evaluation).
    pub targets: Vec<Target>,
}

/// Replay `actions` from node `start` of `tree`, stopping early at an exit.
///
/// # Errors
/// Fails if an action is not available in the tree's direction.
pub fn replay(
    tree: &StateTree,
    context: &str,
    start: usize,
    actions: &[Action],
) -> Result<Trajectory, super::tree::TreeError> {
    let mut emit = EmitState::default();
    let first = Target::Node(start);
    let mut traj = Trajectory {
        context: context.to_string(),
        direction: tree.direction,
        frames: vec![emit.frame(tree, first, true)],
        actions: Vec::new(),
        targets: vec![first],
    };
    let mut at = start;
    for action in actions {
        let target = tree.apply(at, action)?;
        let full = matches!(action, Action::Breakpoint(_));
        traj.frames.push(emit.frame(tree, target, full));
        traj.actions.push(action.clone());
        traj.targets.push(target);
        match target {
            Target::Node(j) => at = j,
            _ => break,
        }
    }
    Ok(traj)
}

impl Trajectory {
    /// Header: `<|begin_of_text|><|trace_context_start|>CONTEXT`.
    #[must_use]
    pub fn header(&self) -> String {
        format!("{BEGIN_OF_TEXT}{CONTEXT_START}{}", escape(&self.context))
    }

    /// Everything up to and including frame `k` (the state action `k` is taken from).
    #[must_use]
    pub fn prefix(&self, k: usize) -> String {
        let mut out = self.header();
        for j in 0..=k {
            if j > 0 {
                out.push_str(&serialize_action(&self.actions[j - 1]));
            }
            out.push_str(&self.frames[j].serialize());
        }
        out
    }

    /// The prompt for predicting frame `k + 1`: everything up to and including action `k`.
    #[must_use]
    pub fn prompt(&self, k: usize) -> String {
        format!("{}{}", self.prefix(k), serialize_action(&self.actions[k]))
    }

    /// The whole trajectory as one training text.
    #[must_use]
    pub fn serialize(&self) -> String {
        let mut out = self.header();
        for (j, frame) in self.frames.iter().enumerate() {
            out.push_str(&frame.serialize());
            if let Some(action) = self.actions.get(j) {
                out.push_str(&serialize_action(action));
            }
        }
        out
    }
}

/// A piece of grammar text: a special token or the plain text between tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    Token(&'a str),
    Text(&'a str),
}

fn is_token_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

/// Split grammar text into special tokens (by name, `frame_sep`) and the text between them.
pub(crate) fn pieces(text: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = text;
    let mut pending = 0;
    while let Some(pos) = rest[pending..].find("<|") {
        let start = pending + pos;
        let after = &rest[start + 2..];
        match after.find("|>") {
            Some(end) if is_token_name(&after[..end]) => {
                if start > 0 {
                    out.push(Piece::Text(&rest[..start]));
                }
                out.push(Piece::Token(&after[..end]));
                rest = &after[end + 2..];
                pending = 0;
            }
            _ => pending = start + 2,
        }
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

fn event_from_token(name: &str) -> Option<NodeKind> {
    Some(match name {
        "call_sep" => NodeKind::Call,
        "line_sep" => NodeKind::Line,
        "return_sep" => NodeKind::Return,
        "exception_sep" => NodeKind::Exception,
        "inv_call_sep" => NodeKind::InvCall,
        "inv_line_sep" => NodeKind::InvLine,
        "inv_line_call_sep" => NodeKind::InvLineCall,
        "inv_return_sep" => NodeKind::InvReturn,
        "inv_exception_sep" => NodeKind::InvException,
        _ => return None,
    })
}

fn parse_locals(text: &str) -> Result<Vec<(String, String)>, GrammarError> {
    let bad = || GrammarError::Json { what: "locals", text: text.to_string() };
    // serde_json's map type sorts keys; read the object as ordered pairs instead.
    let value: serde_json::Value = serde_json::from_str(text).map_err(|_| bad())?;
    if !value.is_object() {
        return Err(bad());
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let pairs = <OrderedPairs as serde::Deserialize>::deserialize(&mut de).map_err(|_| bad())?;
    Ok(pairs.0)
}

struct OrderedPairs(Vec<(String, String)>);

impl<'de> serde::Deserialize<'de> for OrderedPairs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = OrderedPairs;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object of strings")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<OrderedPairs, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, String>()? {
                    out.push((k, v));
                }
                Ok(OrderedPairs(out))
            }
        }
        d.deserialize_map(V)
    }
}

fn parse_value(text: &str) -> Result<String, GrammarError> {
    serde_json::from_str::<String>(text).map_err(|_| GrammarError::Json { what: "value", text: text.to_string() })
}

fn text_at<'a>(pieces: &[Piece<'a>], i: usize) -> &'a str {
    match pieces.get(i) {
        Some(Piece::Text(t)) => t,
        _ => "",
    }
}

/// Parse one frame (as produced by a model: starting at `<|frame_sep|>`, ending before
/// `<|action_sep|>`, optionally followed by it or by `<|trace_end|><|end_of_text|>`).
///
/// # Errors
/// Fails on anything that is not a well-formed frame.
pub fn parse_frame(text: &str) -> Result<Frame, GrammarError> {
    let ps = pieces(text.trim_start());
    let expected = |what: &'static str, at: usize| GrammarError::Expected {
        expected: what,
        at: ps.iter().skip(at).take(3).map(|p| format!("{p:?}")).collect::<Vec<_>>().join(" "),
    };
    if ps.first() != Some(&Piece::Token("frame_sep")) {
        return Err(expected("<|frame_sep|>", 0));
    }
    let Some(Piece::Token(name)) = ps.get(1) else {
        return Err(expected("an event or exit token", 1));
    };
    match *name {
        "exit_normal" => return Ok(Frame::Exit { exit: ExitKind::Normal }),
        "exit_error" => return Ok(Frame::Exit { exit: ExitKind::Error }),
        "exit_never" => return Ok(Frame::Exit { exit: ExitKind::Never }),
        "inv_exit_entry" => return Ok(Frame::Entry),
        _ => {}
    }
    let event = event_from_token(name).ok_or_else(|| GrammarError::UnknownToken((*name).to_string()))?;
    // Fields: [sep, text] pairs in either order; a field's text may be empty (then absent).
    let mut src = None;
    let mut arg_text = None;
    let mut i = 2;
    while i < ps.len() {
        match ps[i] {
            Piece::Token("src_sep") => {
                src = Some(unescape(text_at(&ps, i + 1)));
            }
            Piece::Token("arg_sep") => {
                arg_text = Some(unescape(text_at(&ps, i + 1).trim()));
            }
            Piece::Token("action_sep" | "trace_end" | "end_of_text") => break,
            Piece::Token(other) => return Err(GrammarError::UnknownToken(other.to_string())),
            Piece::Text(_) => return Err(expected("<|src_sep|> or <|arg_sep|>", i)),
        }
        i += if matches!(ps.get(i + 1), Some(Piece::Text(_))) { 2 } else { 1 };
    }
    let src = src.ok_or_else(|| expected("<|src_sep|>", 2))?;
    let arg_text = arg_text.ok_or_else(|| expected("<|arg_sep|>", 2))?;
    let arg = match event {
        NodeKind::Return | NodeKind::Exception | NodeKind::InvReturn | NodeKind::InvException => {
            Arg::Value(parse_value(&arg_text)?)
        }
        _ => Arg::Locals(parse_locals(&arg_text)?),
    };
    Ok(Frame::State { event, src, arg })
}

/// Parse a prompt into its context, frames and actions (`frames.len() == actions.len()`:
/// a prompt ends with the action whose outcome is to be predicted).
///
/// # Errors
/// Fails on malformed text.
pub fn parse_prompt(text: &str) -> Result<(String, Vec<Frame>, Vec<Action>), GrammarError> {
    let rest =
        text.strip_prefix(BEGIN_OF_TEXT).and_then(|t| t.strip_prefix(CONTEXT_START)).ok_or(GrammarError::Expected {
            expected: "<|begin_of_text|><|trace_context_start|>",
            at: text.chars().take(40).collect(),
        })?;
    let first = rest.find(FRAME_SEP).ok_or(GrammarError::Expected { expected: "<|frame_sep|>", at: String::new() })?;
    let context = unescape(&rest[..first]);
    let mut frames = Vec::new();
    let mut actions = Vec::new();
    for chunk in rest[first..].split(FRAME_SEP).skip(1) {
        let (frame_text, action_text) = match chunk.find(ACTION_SEP) {
            Some(p) => (&chunk[..p], Some(&chunk[p + ACTION_SEP.len()..])),
            None => (chunk, None),
        };
        frames.push(parse_frame(&format!("{FRAME_SEP}{frame_text}"))?);
        if let Some(a) = action_text {
            actions.push(parse_action(a)?);
        }
    }
    Ok((context, frames, actions))
}

/// Parse a whole trajectory as [`Trajectory::serialize`] writes it (a `trace-dataset`
/// row's `text`): context, frames and actions, ending with a frame. The direction is that
/// of the first frame; tree positions are unknown, so `targets` is empty.
///
/// # Errors
/// Fails on malformed text, or text that ends with an action instead of a frame.
pub fn parse_trajectory(text: &str) -> Result<Trajectory, GrammarError> {
    let (context, frames, actions) = parse_prompt(text)?;
    let direction = match frames.first() {
        Some(first) if frames.len() == actions.len() + 1 => first.direction(),
        _ => {
            return Err(GrammarError::Expected {
                expected: "a trajectory ending with a frame",
                at: text.chars().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect(),
            })
        }
    };
    Ok(Trajectory { context, direction, frames, actions, targets: Vec::new() })
}

/// Parse an action token (with breakpoint source text).
///
/// # Errors
/// Fails on unknown tokens.
pub fn parse_action(text: &str) -> Result<Action, GrammarError> {
    let ps = pieces(text);
    let Some(Piece::Token(name)) = ps.first() else {
        return Err(GrammarError::Expected { expected: "an action token", at: text.chars().take(40).collect() });
    };
    Ok(match *name {
        "step_into" => Action::StepInto,
        "step_over" => Action::StepOver,
        "step_return" => Action::StepReturn,
        "breakpoint" => Action::Breakpoint(unescape(text_at(&ps, 1))),
        "continue" => Action::Continue,
        "inv_step_into" => Action::InvStepInto,
        "inv_step_over" => Action::InvStepOver,
        "inv_step_call" => Action::InvStepCall,
        other => return Err(GrammarError::UnknownToken(other.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debugger::trace::{EventKind, Trace, TraceEvent, TRACE_FORMAT_VERSION};

    fn ev(
        event: EventKind,
        depth: usize,
        frame: u64,
        src: &str,
        locals: &[(&str, &str)],
        value: Option<&str>,
    ) -> TraceEvent {
        TraceEvent {
            event,
            depth,
            frame,
            func: "f".into(),
            lineno: 1,
            src: src.into(),
            locals: locals.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect(),
            value: value.map(Into::into),
        }
    }

    /// The paper's Fig. C.1 program, abbreviated to two loop iterations.
    fn count_trace() -> Trace {
        use EventKind::*;
        let st = [("s", "'ab'"), ("t", "'b'")];
        let events = vec![
            ev(Call, 0, 1, "def main():", &[], None),
            ev(Line, 0, 1, "    return count(\"ab\", \"b\")", &[], None),
            ev(Call, 1, 2, "def count(s, t):", &st, None),
            ev(Line, 1, 2, "    n = 0", &st, None),
            ev(Line, 1, 2, "    for c in s:", &[("s", "'ab'"), ("t", "'b'"), ("n", "0")], None),
            ev(Return, 1, 2, "    return n", &[("s", "'ab'"), ("t", "'b'"), ("n", "0")], Some("1")),
            ev(Return, 0, 1, "    return count(\"ab\", \"b\")", &[], Some("1")),
        ];
        Trace {
            format_version: TRACE_FORMAT_VERSION,
            code: String::new(),
            call: String::new(),
            program: String::new(),
            events,
            exit: ExitKind::Normal,
            limit: None,
            exception: None,
        }
    }

    #[test]
    fn forward_trajectory_matches_the_paper_layout() {
        let tree = StateTree::forward(&count_trace().whole());
        let traj = replay(&tree, "CODE\n", 0, &vec![Action::StepInto; 7]).expect("forward");
        let text = traj.serialize();
        let expected = concat!(
            "<|begin_of_text|><|trace_context_start|>CODE\n",
            "<|frame_sep|><|call_sep|><|src_sep|>def main():<|arg_sep|>{}<|action_sep|><|step_into|>",
            "<|frame_sep|><|line_sep|><|arg_sep|>{}<|src_sep|>    return count(\"ab\", \"b\")<|action_sep|><|step_into|>",
            "<|frame_sep|><|call_sep|><|src_sep|>def count(s, t):<|arg_sep|>{\"s\": \"'ab'\", \"t\": \"'b'\"}<|action_sep|><|step_into|>",
            "<|frame_sep|><|line_sep|><|arg_sep|>{\"..\": \"..\"}<|src_sep|>    n = 0<|action_sep|><|step_into|>",
            "<|frame_sep|><|line_sep|><|arg_sep|>{\"..\": \"..\", \"n\": \"0\"}<|src_sep|>    for c in s:<|action_sep|><|step_into|>",
            "<|frame_sep|><|return_sep|><|src_sep|>    return n<|arg_sep|>\"1\"<|action_sep|><|step_into|>",
            "<|frame_sep|><|return_sep|><|src_sep|>    return count(\"ab\", \"b\")<|arg_sep|>\"1\"<|action_sep|><|step_into|>",
            "<|frame_sep|><|exit_normal|><|trace_end|><|end_of_text|>",
        );
        assert_eq!(text, expected);
    }

    #[test]
    fn breakpoint_targets_show_full_locals_and_carry_the_source() {
        let tree = StateTree::forward(&count_trace().whole());
        let traj = replay(&tree, "", 0, &[Action::Breakpoint("    for c in s:".into())]).expect("bp");
        assert!(traj.serialize().contains("<|breakpoint|>    for c in s:<|frame_sep|><|line_sep|><|arg_sep|>{\"s\": \"'ab'\", \"t\": \"'b'\", \"n\": \"0\"}"));
    }

    #[test]
    fn inverse_trajectory_shows_earlier_values_and_full_args_at_the_call() {
        let t = count_trace();
        let scope = t.scope(2).expect("count");
        let tree = StateTree::inverse(&scope);
        let traj =
            replay(&tree, "", 0, &[Action::InvStepInto, Action::InvStepInto, Action::InvStepInto, Action::InvStepInto])
                .expect("inverse");
        let text = traj.serialize();
        assert!(
            text.contains(
                "<|frame_sep|><|inv_return_sep|><|src_sep|>    return n<|arg_sep|>\"1\"<|action_sep|><|inv_step_into|>"
            ),
            "{text}"
        );
        // As in Fig. C.1b: deltas are against the (hidden) locals of the return state.
        assert!(text.contains("<|inv_return_sep|><|src_sep|>    return n<|arg_sep|>\"1\"<|action_sep|><|inv_step_into|><|frame_sep|><|inv_line_sep|><|src_sep|>    for c in s:<|arg_sep|>{\"..\": \"..\"}"), "{text}");
        assert!(text.contains("<|inv_line_sep|><|src_sep|>    n = 0<|arg_sep|>{\"..\": \"..\"}"), "{text}");
        assert!(
            text.contains("<|inv_call_sep|><|src_sep|>def count(s, t):<|arg_sep|>{\"s\": \"'ab'\", \"t\": \"'b'\"}"),
            "{text}"
        );
        assert!(text.ends_with("<|frame_sep|><|inv_exit_entry|><|trace_end|><|end_of_text|>"), "{text}");
    }

    #[test]
    fn every_prompt_and_frame_parses_back() {
        let t = count_trace();
        let tree = StateTree::forward(&t.whole());
        let actions = [
            Action::StepInto,
            Action::StepInto,
            Action::Breakpoint("    for c in s:".into()),
            Action::StepOver,
            Action::StepReturn,
        ];
        let traj = replay(&tree, "def f():\n    return '<|x'\n", 0, &actions).expect("replay");
        for k in 0..traj.actions.len() {
            let (context, frames, parsed_actions) = parse_prompt(&traj.prompt(k)).expect("prompt parses");
            assert_eq!(context, traj.context);
            assert_eq!(frames, traj.frames[..=k].to_vec());
            assert_eq!(parsed_actions, traj.actions[..=k].to_vec());
            assert_eq!(parse_frame(&traj.frames[k + 1].serialize()), Ok(traj.frames[k + 1].clone()));
        }
    }

    #[test]
    fn trajectories_parse_back_and_use_only_listed_special_tokens() {
        let tree = StateTree::forward(&count_trace().whole());
        let traj = replay(
            &tree,
            "CODE\n",
            0,
            &[Action::StepInto, Action::StepInto, Action::Breakpoint("    for c in s:".into()), Action::Continue],
        )
        .expect("replay");
        let text = traj.serialize();
        let back = parse_trajectory(&text).expect("parses");
        assert_eq!(
            (back.context.as_str(), back.direction, &back.frames, &back.actions),
            ("CODE\n", Direction::Forward, &traj.frames, &traj.actions)
        );
        assert_eq!(back.serialize(), text);
        assert!(parse_trajectory(&traj.prompt(1)).is_err(), "a prompt ends with an action");
        let listed = special_tokens();
        for piece in pieces(&text) {
            if let Piece::Token(name) = piece {
                assert!(listed.contains(&format!("<|{name}|>").as_str()), "{name} is not listed");
            }
        }
        assert_eq!(listed.len(), 29);
    }

    #[test]
    fn special_tokens_inside_source_and_values_are_escaped_and_restored() {
        use EventKind::*;
        let tricky = "    s = '<|frame_sep|><|exit_normal|>\u{E000}<|'";
        let value = "'<|action_sep|><|step_into|>'";
        let mut t = count_trace();
        t.events[3] = ev(Line, 1, 2, tricky, &[("s", value), ("t", "'b'")], None);
        let tree = StateTree::forward(&t.whole());
        let code = "def count(s, t):\n    s = '<|frame_sep|>'\n";
        let actions = [Action::StepInto, Action::StepInto, Action::StepInto, Action::Breakpoint(tricky.into())];
        let traj = replay(&tree, code, 0, &actions).expect("replay");
        let text = traj.serialize();
        assert_eq!(text.matches("<|frame_sep|>").count(), traj.frames.len(), "{text}");
        let back = parse_trajectory(&text).expect("parses");
        assert_eq!((back.context.as_str(), &back.frames, &back.actions), (code, &traj.frames, &traj.actions));
        for k in 0..traj.actions.len() {
            assert_eq!(parse_frame(&traj.frames[k + 1].serialize()), Ok(traj.frames[k + 1].clone()));
        }
        for plain in ["", "a < b | c", "<|", "\u{E000}", "<\u{E000}|", "x<\u{E000}\u{E000}|"] {
            assert_eq!(unescape(&escape(plain)), plain);
        }
    }

    #[test]
    fn malformed_frames_are_errors_not_panics() {
        for bad in [
            "",
            "hello",
            "<|frame_sep|>",
            "<|frame_sep|><|bogus|>",
            "<|frame_sep|><|line_sep|><|arg_sep|>{x}<|src_sep|>a",
            "<|frame_sep|><|return_sep|><|src_sep|>a<|arg_sep|>2",
        ] {
            assert!(parse_frame(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn delta_marks_omitted_entries_once() {
        let p = |xs: &[(&str, &str)]| xs.iter().map(|(a, b)| ((*a).to_string(), (*b).to_string())).collect::<Vec<_>>();
        assert_eq!(delta(&p(&[("a", "1")]), &p(&[("a", "1"), ("b", "2")])), p(&[("..", ".."), ("b", "2")]));
        assert_eq!(delta(&p(&[("a", "1")]), &p(&[("a", "2")])), p(&[("a", "2")]));
        assert_eq!(delta(&p(&[]), &p(&[])), p(&[]));
    }
}
