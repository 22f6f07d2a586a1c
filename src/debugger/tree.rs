//! State trees (forward and inverse) and the exact semantics of every debugger action.
//!
//! Nodes are stored in preorder, which for the forward tree is the recorded event order.
//! A callee's states are children of the calling *line* node, so depth = call depth.

use super::trace::{EventKind, ExitKind, Scope, TraceEvent};
use serde::{Deserialize, Serialize};

/// A debugger action (the paper's action set).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "action", content = "src", rename_all = "snake_case")]
pub enum Action {
    StepInto,
    StepOver,
    StepReturn,
    /// Jump to the next future state whose source line is this text.
    Breakpoint(String),
    Continue,
    InvStepInto,
    InvStepOver,
    /// Jump back to the call of the current function (predicts its arguments).
    InvStepCall,
}

/// Kind of action, without the breakpoint's argument (used for per-action metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    StepInto,
    StepOver,
    StepReturn,
    Breakpoint,
    Continue,
    InvStepInto,
    InvStepOver,
    InvStepCall,
}

impl ActionKind {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::StepInto => "step_into",
            ActionKind::StepOver => "step_over",
            ActionKind::StepReturn => "step_return",
            ActionKind::Breakpoint => "breakpoint",
            ActionKind::Continue => "continue",
            ActionKind::InvStepInto => "inv_step_into",
            ActionKind::InvStepOver => "inv_step_over",
            ActionKind::InvStepCall => "inv_step_call",
        }
    }
}

impl Action {
    #[must_use]
    pub fn kind(&self) -> ActionKind {
        match self {
            Action::StepInto => ActionKind::StepInto,
            Action::StepOver => ActionKind::StepOver,
            Action::StepReturn => ActionKind::StepReturn,
            Action::Breakpoint(_) => ActionKind::Breakpoint,
            Action::Continue => ActionKind::Continue,
            Action::InvStepInto => ActionKind::InvStepInto,
            Action::InvStepOver => ActionKind::InvStepOver,
            Action::InvStepCall => ActionKind::InvStepCall,
        }
    }

    #[must_use]
    pub fn direction(&self) -> Direction {
        match self {
            Action::InvStepInto | Action::InvStepOver | Action::InvStepCall => Direction::Inverse,
            _ => Direction::Forward,
        }
    }
}

/// Forward (recorded order) or inverse (reversed) execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Forward,
    Inverse,
}

/// What a node stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    Call,
    Line,
    Return,
    Exception,
    InvCall,
    InvLine,
    /// Duplicate of a line node that made traced calls; the callee states are its children.
    InvLineCall,
    InvReturn,
    InvException,
}

/// One state in a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub kind: NodeKind,
    pub depth: usize,
    /// Index of the recorded event in [`Scope::events`].
    pub event: usize,
    /// Index of the parent node (the calling line, or the `inv_line_call` duplicate).
    pub parent: Option<usize>,
}

/// Where an action leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Node(usize),
    /// Forward execution ended (the exit code).
    Exit(ExitKind),
    /// Inverse execution reached the start of the scope.
    Entry,
}

/// Errors from applying an action.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    #[error("action {action} is not available in {direction:?} mode")]
    WrongDirection { action: &'static str, direction: Direction },
    #[error("node {0} does not exist")]
    NoSuchNode(usize),
}

/// A forward or inverse state tree over one call scope.
#[derive(Debug, Clone)]
pub struct StateTree {
    pub direction: Direction,
    pub events: Vec<TraceEvent>,
    pub nodes: Vec<Node>,
    /// Exit of the scope (the outcome of running forward past the last node).
    pub exit: ExitKind,
}

fn with_parents(mut nodes: Vec<Node>) -> Vec<Node> {
    // The parent of a node is the latest preceding node one level up.
    let mut last_at_depth: Vec<usize> = Vec::new();
    for (i, node) in nodes.iter_mut().enumerate() {
        let d = node.depth;
        node.parent = if d == 0 { None } else { last_at_depth.get(d - 1).copied() };
        last_at_depth.truncate(d);
        last_at_depth.push(i);
    }
    nodes
}

fn forward_kind(event: EventKind) -> NodeKind {
    match event {
        EventKind::Call => NodeKind::Call,
        EventKind::Line => NodeKind::Line,
        EventKind::Return => NodeKind::Return,
        EventKind::Exception => NodeKind::Exception,
    }
}

fn inverse_kind(event: EventKind) -> NodeKind {
    match event {
        EventKind::Call => NodeKind::InvCall,
        EventKind::Line => NodeKind::InvLine,
        EventKind::Return => NodeKind::InvReturn,
        EventKind::Exception => NodeKind::InvException,
    }
}

impl StateTree {
    /// The forward tree: nodes in recorded order.
    #[must_use]
    pub fn forward(scope: &Scope) -> StateTree {
        let nodes = scope
            .events
            .iter()
            .enumerate()
            .map(|(i, e)| Node { kind: forward_kind(e.event), depth: e.depth, event: i, parent: None })
            .collect();
        StateTree {
            direction: Direction::Forward,
            events: scope.events.clone(),
            nodes: with_parents(nodes),
            exit: scope.exit,
        }
    }

    /// The inverse tree: the forward order reversed, with every line node that has callee
    /// children duplicated as `inv_line_call` (holding the reversed callee states) right
    /// before the plain `inv_line` node.
    #[must_use]
    pub fn inverse(scope: &Scope) -> StateTree {
        let forward = StateTree::forward(scope);
        let mut nodes = Vec::with_capacity(forward.nodes.len() + 8);
        forward.reverse_range(0, forward.nodes.len(), &mut nodes);
        StateTree {
            direction: Direction::Inverse,
            events: scope.events.clone(),
            nodes: with_parents(nodes),
            exit: scope.exit,
        }
    }

    /// Append the inverse of the forward nodes `start..end` (a sequence of sibling subtrees).
    fn reverse_range(&self, start: usize, end: usize, out: &mut Vec<Node>) {
        let mut items = Vec::new();
        let mut i = start;
        while i < end {
            let e = self.subtree_end(i).min(end);
            items.push((i, e));
            i = e;
        }
        for &(k, e) in items.iter().rev() {
            let node = &self.nodes[k];
            let event = self.events[node.event].event;
            let has_children = e > k + 1;
            if has_children && event == EventKind::Line {
                out.push(Node { kind: NodeKind::InvLineCall, depth: node.depth, event: node.event, parent: None });
                self.reverse_range(k + 1, e, out);
                out.push(Node { kind: NodeKind::InvLine, depth: node.depth, event: node.event, parent: None });
            } else {
                // Callee states under a non-line node only occur in odd traces; keep them as
                // children of the node itself.
                out.push(Node { kind: inverse_kind(event), depth: node.depth, event: node.event, parent: None });
                if has_children {
                    self.reverse_range(k + 1, e, out);
                }
            }
        }
    }

    /// One past the last descendant of node `i`.
    #[must_use]
    pub fn subtree_end(&self, i: usize) -> usize {
        let d = self.nodes[i].depth;
        (i + 1..self.nodes.len()).find(|&j| self.nodes[j].depth <= d).unwrap_or(self.nodes.len())
    }

    /// Children of node `i`, in order.
    #[must_use]
    pub fn children(&self, i: usize) -> Vec<usize> {
        (i + 1..self.subtree_end(i)).filter(|&j| self.nodes[j].parent == Some(i)).collect()
    }

    #[must_use]
    pub fn event_of(&self, i: usize) -> &TraceEvent {
        &self.events[self.nodes[i].event]
    }

    fn end(&self) -> Target {
        match self.direction {
            Direction::Forward => Target::Exit(self.exit),
            Direction::Inverse => Target::Entry,
        }
    }

    fn at(&self, j: Option<usize>) -> Target {
        j.map_or(self.end(), Target::Node)
    }

    /// Apply `action` at node `i`.
    ///
    /// # Errors
    /// Fails if the node does not exist or the action belongs to the other direction
    /// (breakpoint and continue are forward-only).
    pub fn apply(&self, i: usize, action: &Action) -> Result<Target, TreeError> {
        if i >= self.nodes.len() {
            return Err(TreeError::NoSuchNode(i));
        }
        if action.direction() != self.direction {
            return Err(TreeError::WrongDirection { action: action.kind().as_str(), direction: self.direction });
        }
        let d = self.nodes[i].depth;
        let n = self.nodes.len();
        Ok(match action {
            // The next node in preorder: into a call, or up at the end of a level.
            Action::StepInto | Action::InvStepInto => self.at((i + 1 < n).then_some(i + 1)),
            // The next node at this level or above: skips the subtree (callees).
            Action::StepOver | Action::InvStepOver => self.at((i + 1..n).find(|&j| self.nodes[j].depth <= d)),
            Action::StepReturn => self.jump_to_level_kind(i, NodeKind::Return),
            Action::InvStepCall => self.jump_to_level_kind(i, NodeKind::InvCall),
            Action::Breakpoint(src) => {
                let want = src.trim();
                self.at((i + 1..n).find(|&j| self.event_of(j).src.trim() == want))
            }
            Action::Continue => Target::Exit(self.exit),
        })
    }

    /// The node of `kind` at the current level of node `i` (searching forward, not leaving
    /// the level). At such a node already, the level is done and this moves to the next node.
    fn jump_to_level_kind(&self, i: usize, kind: NodeKind) -> Target {
        let d = self.nodes[i].depth;
        let n = self.nodes.len();
        if self.nodes[i].kind == kind {
            return self.at((i + 1 < n).then_some(i + 1));
        }
        for j in i + 1..n {
            let node = &self.nodes[j];
            if node.depth < d {
                return Target::Node(j);
            }
            if node.depth == d && node.kind == kind {
                return Target::Node(j);
            }
        }
        self.end()
    }

    /// The inverse node showing forward node `i` (the plain one, never the duplicate).
    #[must_use]
    pub fn inverse_position(&self, forward_node: usize) -> Option<usize> {
        let event = forward_node;
        self.nodes.iter().position(|n| n.event == event && n.kind != NodeKind::InvLineCall)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debugger::trace::{Limit, Trace, TRACE_FORMAT_VERSION};

    /// `(event, depth, frame, src, locals)`.
    type Row<'a> = (EventKind, usize, u64, &'a str, &'a [(&'a str, &'a str)]);

    /// Build a trace from rows.
    fn trace(rows: &[Row], exit: ExitKind) -> Trace {
        let events = rows
            .iter()
            .map(|(event, depth, frame, src, locals)| TraceEvent {
                event: *event,
                depth: *depth,
                frame: *frame,
                func: "f".into(),
                lineno: 1,
                src: (*src).into(),
                locals: locals.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect(),
                value: matches!(event, EventKind::Return | EventKind::Exception).then(|| "0".into()),
            })
            .collect();
        Trace {
            format_version: TRACE_FORMAT_VERSION,
            code: String::new(),
            call: String::new(),
            program: String::new(),
            events,
            exit,
            limit: (exit == ExitKind::Never).then_some(Limit::Events),
            exception: None,
        }
    }

    use EventKind::{Call as C, Exception as X, Line as L, Return as R};

    /// main calls g twice on one line; g has two lines.
    fn two_calls() -> Trace {
        trace(
            &[
                (C, 0, 1, "def main():", &[]),          // 0
                (L, 0, 1, "  y = g(1) + g(2)", &[]),    // 1
                (C, 1, 2, "def g(x):", &[("x", "1")]),  // 2
                (L, 1, 2, "  z = x", &[("x", "1")]),    // 3
                (R, 1, 2, "  return z", &[]),           // 4
                (C, 1, 3, "def g(x):", &[("x", "2")]),  // 5
                (L, 1, 3, "  z = x", &[("x", "2")]),    // 6
                (R, 1, 3, "  return z", &[]),           // 7
                (L, 0, 1, "  return y", &[("y", "3")]), // 8
                (R, 0, 1, "  return y", &[]),           // 9
            ],
            ExitKind::Normal,
        )
    }

    fn fwd(t: &Trace) -> StateTree {
        StateTree::forward(&t.whole())
    }

    #[test]
    fn callees_hang_under_the_calling_line() {
        let tree = fwd(&two_calls());
        // All states of both g calls (call, lines, return) are children of the calling line.
        assert_eq!(tree.children(1), vec![2, 3, 4, 5, 6, 7]);
        assert_eq!(tree.children(2), Vec::<usize>::new());
        assert_eq!(tree.nodes[3].parent, Some(1));
        assert_eq!(tree.children(0), Vec::<usize>::new());
        assert_eq!(tree.nodes[8].parent, None);
    }

    #[test]
    fn step_into_only_reproduces_the_recorded_sequence() {
        let t = two_calls();
        let tree = fwd(&t);
        let mut at = 0;
        let mut seen = vec![0];
        while let Ok(Target::Node(j)) = tree.apply(at, &Action::StepInto) {
            seen.push(j);
            at = j;
        }
        assert_eq!(seen, (0..t.events.len()).collect::<Vec<_>>());
        assert_eq!(tree.apply(at, &Action::StepInto), Ok(Target::Exit(ExitKind::Normal)));
    }

    #[test]
    fn step_over_skips_callees_and_moves_up_at_the_end_of_a_level() {
        let tree = fwd(&two_calls());
        assert_eq!(tree.apply(1, &Action::StepOver), Ok(Target::Node(8)));
        assert_eq!(tree.apply(2, &Action::StepOver), Ok(Target::Node(3)));
        // The callee's return: end of level, so up to the caller's next state.
        assert_eq!(tree.apply(4, &Action::StepOver), Ok(Target::Node(5)));
        assert_eq!(tree.apply(7, &Action::StepOver), Ok(Target::Node(8)));
        assert_eq!(tree.apply(9, &Action::StepOver), Ok(Target::Exit(ExitKind::Normal)));
    }

    #[test]
    fn step_return_goes_to_the_return_of_the_current_level() {
        let tree = fwd(&two_calls());
        assert_eq!(tree.apply(3, &Action::StepReturn), Ok(Target::Node(4)));
        assert_eq!(tree.apply(2, &Action::StepReturn), Ok(Target::Node(4)));
        assert_eq!(tree.apply(0, &Action::StepReturn), Ok(Target::Node(9)));
        assert_eq!(tree.apply(1, &Action::StepReturn), Ok(Target::Node(9)));
        // Already at a return: move on to the caller.
        assert_eq!(tree.apply(4, &Action::StepReturn), Ok(Target::Node(5)));
        assert_eq!(tree.apply(9, &Action::StepReturn), Ok(Target::Exit(ExitKind::Normal)));
    }

    #[test]
    fn breakpoint_finds_the_first_future_match_at_any_level_or_exits() {
        let tree = fwd(&two_calls());
        let bp = |s: &str| Action::Breakpoint(s.into());
        assert_eq!(tree.apply(0, &bp("  z = x")), Ok(Target::Node(3)));
        assert_eq!(tree.apply(3, &bp("z = x")), Ok(Target::Node(6)));
        // Matches the line event first, then its return event.
        assert_eq!(tree.apply(0, &bp("return y")), Ok(Target::Node(8)));
        assert_eq!(tree.apply(8, &bp("return y")), Ok(Target::Node(9)));
        // Never hit (again): the exit code.
        assert_eq!(tree.apply(6, &bp("z = x")), Ok(Target::Exit(ExitKind::Normal)));
        assert_eq!(tree.apply(0, &bp("print('never')")), Ok(Target::Exit(ExitKind::Normal)));
        assert_eq!(tree.apply(0, &Action::Continue), Ok(Target::Exit(ExitKind::Normal)));
    }

    #[test]
    fn recursion_nests_calls_and_step_return_stays_in_its_frame() {
        // fact(2) -> fact(1): same source lines at two depths.
        let t = trace(
            &[
                (C, 0, 1, "def fact(n):", &[("n", "2")]),             // 0
                (L, 0, 1, "  if n <= 1:", &[("n", "2")]),             // 1
                (L, 0, 1, "  return n * fact(n - 1)", &[("n", "2")]), // 2
                (C, 1, 2, "def fact(n):", &[("n", "1")]),             // 3
                (L, 1, 2, "  if n <= 1:", &[("n", "1")]),             // 4
                (L, 1, 2, "  return 1", &[("n", "1")]),               // 5
                (R, 1, 2, "  return 1", &[("n", "1")]),               // 6
                (R, 0, 1, "  return n * fact(n - 1)", &[("n", "2")]), // 7
            ],
            ExitKind::Normal,
        );
        let tree = fwd(&t);
        assert_eq!(tree.children(2), vec![3, 4, 5, 6]);
        assert_eq!(tree.apply(1, &Action::StepReturn), Ok(Target::Node(7)));
        assert_eq!(tree.apply(4, &Action::StepReturn), Ok(Target::Node(6)));
        assert_eq!(tree.apply(2, &Action::StepOver), Ok(Target::Node(7)));
        assert_eq!(tree.apply(1, &Action::Breakpoint("if n <= 1:".into())), Ok(Target::Node(4)));
        // A scope of the inner call ends at its own return.
        let inner = t.scope(3).expect("call");
        assert_eq!(inner.events.len(), 4);
        assert_eq!(inner.events[0].depth, 0);
        assert_eq!(inner.exit, ExitKind::Normal);
    }

    #[test]
    fn exceptions_are_states_and_unwinding_scopes_exit_with_error() {
        let t = trace(
            &[
                (C, 0, 1, "def main():", &[]),
                (L, 0, 1, "  return g()", &[]),
                (C, 1, 2, "def g():", &[]),
                (L, 1, 2, "  1 / 0", &[]),
                (X, 1, 2, "  1 / 0", &[]),
                (R, 1, 2, "  1 / 0", &[]),
                (X, 0, 1, "  return g()", &[]),
                (R, 0, 1, "  return g()", &[]),
            ],
            ExitKind::Error,
        );
        let tree = fwd(&t);
        assert_eq!(tree.nodes[4].kind, NodeKind::Exception);
        assert_eq!(tree.apply(3, &Action::StepOver), Ok(Target::Node(4)));
        assert_eq!(tree.apply(2, &Action::StepReturn), Ok(Target::Node(5)));
        assert_eq!(tree.apply(1, &Action::StepOver), Ok(Target::Node(6)));
        assert_eq!(tree.apply(7, &Action::StepInto), Ok(Target::Exit(ExitKind::Error)));
        assert_eq!(t.scope(2).map(|s| s.exit), Some(ExitKind::Error));
        assert_eq!(t.whole().exit, ExitKind::Error);
    }

    #[test]
    fn an_infinite_loop_cut_by_the_event_cap_exits_never() {
        let t = trace(
            &[
                (C, 0, 1, "def f():", &[]),
                (L, 0, 1, "  while True:", &[]),
                (L, 0, 1, "    pass", &[]),
                (L, 0, 1, "  while True:", &[]),
                (L, 0, 1, "    pass", &[]),
            ],
            ExitKind::Never,
        );
        let tree = fwd(&t);
        assert_eq!(tree.apply(1, &Action::StepReturn), Ok(Target::Exit(ExitKind::Never)));
        assert_eq!(tree.apply(1, &Action::Breakpoint("  return 1".into())), Ok(Target::Exit(ExitKind::Never)));
        assert_eq!(tree.apply(1, &Action::Breakpoint("    pass".into())), Ok(Target::Node(2)));
        assert_eq!(tree.apply(0, &Action::Continue), Ok(Target::Exit(ExitKind::Never)));
        assert_eq!(t.scope(0).map(|s| s.exit), Some(ExitKind::Never));
    }

    #[test]
    fn inverse_tree_reverses_and_duplicates_calling_lines() {
        let t = two_calls();
        let inv = StateTree::inverse(&t.whole());
        let shape: Vec<(NodeKind, usize, usize)> = inv.nodes.iter().map(|n| (n.kind, n.depth, n.event)).collect();
        use NodeKind::*;
        assert_eq!(
            shape,
            vec![
                (InvReturn, 0, 9),
                (InvLine, 0, 8),
                (InvLineCall, 0, 1),
                (InvReturn, 1, 7),
                (InvLine, 1, 6),
                (InvCall, 1, 5),
                (InvReturn, 1, 4),
                (InvLine, 1, 3),
                (InvCall, 1, 2),
                (InvLine, 0, 1),
                (InvCall, 0, 0),
            ]
        );
        assert_eq!(inv.children(2), vec![3, 4, 5, 6, 7, 8]);
        // inv_step_into enters the call, inv_step_over skips it.
        assert_eq!(inv.apply(2, &Action::InvStepInto), Ok(Target::Node(3)));
        assert_eq!(inv.apply(2, &Action::InvStepOver), Ok(Target::Node(9)));
        // inv_step_call: to the call of the current function (its arguments).
        assert_eq!(inv.apply(4, &Action::InvStepCall), Ok(Target::Node(5)));
        assert_eq!(inv.apply(6, &Action::InvStepCall), Ok(Target::Node(8)));
        assert_eq!(inv.apply(0, &Action::InvStepCall), Ok(Target::Node(10)));
        assert_eq!(inv.apply(8, &Action::InvStepOver), Ok(Target::Node(9)));
        assert_eq!(inv.inverse_position(1), Some(9));
    }

    #[test]
    fn inverse_actions_at_the_start_of_the_trace_reach_the_entry() {
        let t = two_calls();
        let inv = StateTree::inverse(&t.whole());
        let last = inv.nodes.len() - 1;
        for action in [Action::InvStepInto, Action::InvStepOver, Action::InvStepCall] {
            assert_eq!(inv.apply(last, &action), Ok(Target::Entry), "{action:?}");
        }
        // Breakpoint and continue are disabled in inverse mode; inverse actions forward.
        assert!(matches!(inv.apply(0, &Action::Breakpoint("x".into())), Err(TreeError::WrongDirection { .. })));
        assert!(matches!(inv.apply(0, &Action::Continue), Err(TreeError::WrongDirection { .. })));
        assert!(matches!(fwd(&t).apply(0, &Action::InvStepInto), Err(TreeError::WrongDirection { .. })));
        assert_eq!(fwd(&t).apply(99, &Action::StepInto), Err(TreeError::NoSuchNode(99)));
    }
}
