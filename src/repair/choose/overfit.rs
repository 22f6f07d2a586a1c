//! Overfit control: the anti-patterns by which a plausible patch passes the tests by degrading behaviour.
//!
//! Each changed function (paired by qualified name) is compared with its original; the
//! anti-patterns follow Tan et al., "Anti-patterns in search-based program repair" (FSE 2016),
//! plus Python's own degradations (constant returns, `None` sentinels, dunder results).

use crate::project::Project;
use crate::python::{functions, FunctionDef, Parsed};
use crate::repair::candidate::{Candidate, CandidateId};
use std::collections::HashMap;
use tree_sitter::Node;

/// A way a patch degrades the function it edits. Candidates with one rank after every plausible
/// candidate without one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AntiPattern {
    /// A `return` that computed its value now gives a constant (`return len(xs)` → `return 0`).
    ConstantReturn,
    /// A `return` that computed its value now gives a bare parameter or attribute of one, whose
    /// names the old value did not use (`return total / n` → `return items`).
    UnrelatedReturn,
    /// `None` swapped for a falsy constant (`0`, `False`, `""`, `[]`, ...) or back, in a
    /// `return` or a comparison.
    SentinelSwap,
    /// A dunder method (`__len__`, `__eq__`, ...) whose result becomes a constant or a bare name
    /// (`__len__` returning `self.items` instead of `len(self.items)`).
    DunderResult,
    /// A condition made constant (`if True:`, `if x or True:`, `while False:`, `return x or
    /// True`): Tan's anti-append trivial conditions.
    TrivialCondition,
    /// A `raise`, `return` or `assert` deleted: Tan's anti-delete CFG exit node.
    DeletedExit,
    /// An `if`, `elif`, `else`, loop, `try`, `except`, `break` or `continue` deleted: Tan's
    /// anti-delete control statement.
    DeletedControl,
    /// A block's whole body replaced by `pass`, `...`, `continue` or a bare return: Tan's
    /// anti-delete single-statement CFG.
    EmptiedBlock,
    /// A `return`, `break` or `continue` inserted before other statements of its block, which
    /// it leaves dead: Tan's anti-append early exit.
    EarlyExit,
    /// An assignment deleted right before an `if` whose condition reads it: Tan's anti-delete
    /// set-before-if.
    DeletedSetBeforeIf,
    /// The update of a `while` loop's counter deleted: Tan's anti-delete loop-counter.
    DeletedLoopCounter,
    /// A simple statement doubled: the copy sits right next to the statement it repeats
    /// (`x = f(x)` run twice). It changes how often an effect happens, which passes a test that
    /// counts by chance far more often than it fixes the code.
    RepeatedStatement,
    /// Behavioural, not syntactic (`repair::choose::behaviour`): on the tests' inputs the patched
    /// function returns a kind of value the buggy one never returned (`None` from a function
    /// of booleans, a list for a tuple).
    NewReturnType,
    /// Behavioural: the failing tests had timed out at baseline, and the patch makes them
    /// finish by changing what the function computes (a call the buggy function finished gets
    /// another result), not how fast.
    ChangedResults,
    /// Behavioural: the failing tests pass because most of the code they ran at baseline no
    /// longer runs (a directory skipped, a loop left early): they no longer test the bug.
    SkippedCode,
    /// Judged by the language model, not by syntax (`repair::choose::rank`): the patched function
    /// reads far less natural than the buggy one ([`crate::repair::choose::rank::UNNATURAL_GAIN`]).
    Unnatural,
    /// The patch contains a smaller plausible patch that shows one of the above
    /// ([`crate::repair::choose::minimal::contains`]): what it adds to that change does not
    /// clear it (`86400` → `86399` with a `<` → `<=` beside it).
    ContainsFlagged,
}

impl AntiPattern {
    /// The name in reports (`--json`'s `overfit`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            AntiPattern::ConstantReturn => "constant-return",
            AntiPattern::UnrelatedReturn => "unrelated-return",
            AntiPattern::SentinelSwap => "sentinel-swap",
            AntiPattern::DunderResult => "dunder-result",
            AntiPattern::TrivialCondition => "trivial-condition",
            AntiPattern::DeletedExit => "deleted-exit",
            AntiPattern::DeletedControl => "deleted-control",
            AntiPattern::EmptiedBlock => "emptied-block",
            AntiPattern::EarlyExit => "early-exit",
            AntiPattern::DeletedSetBeforeIf => "deleted-set-before-if",
            AntiPattern::DeletedLoopCounter => "deleted-loop-counter",
            AntiPattern::RepeatedStatement => "repeated-statement",
            AntiPattern::NewReturnType => "new-return-type",
            AntiPattern::ChangedResults => "changed-results",
            AntiPattern::SkippedCode => "skipped-code",
            AntiPattern::Unnatural => "unnatural",
            AntiPattern::ContainsFlagged => "contains-flagged",
        }
    }
}

/// Mark with [`AntiPattern::ContainsFlagged`] every one of `plausible` without an
/// anti-pattern in `patterns` whose change contains a smaller one's that has one.
pub fn inherit(project: &Project, plausible: &[&Candidate], patterns: &mut HashMap<CandidateId, Vec<AntiPattern>>) {
    let flagged: Vec<&Candidate> =
        plausible.iter().copied().filter(|c| patterns.get(&c.id).is_some_and(|p| !p.is_empty())).collect();
    for c in plausible {
        let clean = patterns.get(&c.id).is_none_or(Vec::is_empty);
        if clean && flagged.iter().any(|f| crate::repair::choose::minimal::contains(project, c, f)) {
            patterns.entry(c.id).or_default().push(AntiPattern::ContainsFlagged);
        }
    }
}

/// The anti-patterns of `candidate`'s patch (none when its file is not in `project`).
#[must_use]
pub fn of_candidate(project: &Project, candidate: &Candidate) -> Vec<AntiPattern> {
    let Some(file) = project.file(&candidate.patch.file) else { return Vec::new() };
    let edits: Vec<(std::ops::Range<usize>, &str)> =
        candidate.patch.edits().iter().map(|e| (e.range.clone(), e.content.as_str())).collect();
    anti_patterns(&file.parsed, &file.parsed.with_edits(&edits, candidate.patched_text.clone()))
}

/// The anti-patterns of the functions `patched` changes in `original` (paired by qualified name
/// and rank among the definitions of that name), sorted and without repeats.
#[must_use]
pub fn anti_patterns(original: &Parsed, patched: &Parsed) -> Vec<AntiPattern> {
    let old = definitions(original);
    let mut found = Vec::new();
    for (key, new_def) in definitions(patched) {
        let Some(&old_def) = old.get(&key) else { continue };
        if original.node_text(old_def) != patched.node_text(new_def) {
            found.extend(compare(&Body::new(original, old_def), &Body::new(patched, new_def)));
        }
    }
    found.sort_unstable();
    found.dedup();
    found
}

/// `function_definition` nodes by (qualified name, how many of that name came before).
fn definitions(parsed: &Parsed) -> HashMap<(String, usize), Node<'_>> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = HashMap::new();
    for def in functions(parsed) {
        let rank = seen.entry(def.qualname.clone()).or_default();
        if let Some(node) = definition_node(parsed, &def) {
            out.insert((def.qualname.clone(), *rank), node);
        }
        *rank += 1;
    }
    out
}

fn definition_node<'t>(parsed: &'t Parsed, def: &FunctionDef) -> Option<Node<'t>> {
    let body = &def.body_byte_range;
    let mut node = parsed.root().descendant_for_byte_range(body.start, body.end)?;
    while node.kind() != "function_definition"
        || node.child_by_field_name("body").map(|b| b.byte_range()) != Some(body.clone())
    {
        node = node.parent()?;
    }
    Some(node)
}

/// One function's own nodes (nested definitions, classes and lambdas left out: they are
/// compared as functions of their own, or not at all).
struct Body<'t> {
    parsed: &'t Parsed,
    name: &'t str,
    params: Vec<&'t str>,
    nodes: Vec<Node<'t>>,
}

impl<'t> Body<'t> {
    fn new(parsed: &'t Parsed, def: Node<'t>) -> Body<'t> {
        let name = def.child_by_field_name("name").map_or("", |n| parsed.node_text(n));
        let params = def.child_by_field_name("parameters").map(|p| parameters(parsed, p)).unwrap_or_default();
        let mut nodes = Vec::new();
        let mut stack: Vec<Node<'t>> = def.child_by_field_name("body").into_iter().collect();
        while let Some(node) = stack.pop() {
            if matches!(node.kind(), "function_definition" | "class_definition" | "decorated_definition" | "lambda") {
                continue;
            }
            nodes.push(node);
            let mut cursor = node.walk();
            stack.extend(node.named_children(&mut cursor).collect::<Vec<_>>().into_iter().rev());
        }
        Body { parsed, name, params, nodes }
    }

    fn text(&self, node: Node<'_>) -> &'t str {
        &self.parsed.text()[node.byte_range()]
    }

    /// A node's text without whitespace (what tells two versions of it apart).
    fn key(&self, node: Node<'_>) -> String {
        self.text(node).split_whitespace().collect()
    }

    fn of_kind<'s>(&'s self, kinds: &'s [&str]) -> impl Iterator<Item = Node<'t>> + 's {
        self.nodes.iter().copied().filter(|n| kinds.contains(&n.kind()))
    }

    fn count(&self, kind: &str) -> usize {
        self.of_kind(&[kind]).count()
    }

    /// Identifiers inside `node`.
    fn names(&self, node: Node<'_>) -> Vec<&'t str> {
        let mut names = Vec::new();
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            if n.kind() == "identifier" {
                names.push(self.text(n));
            }
            let mut cursor = n.walk();
            stack.extend(n.named_children(&mut cursor));
        }
        names
    }
}

/// Parameter names of a `parameters` node.
fn parameters<'t>(parsed: &'t Parsed, params: Node<'t>) -> Vec<&'t str> {
    let mut cursor = params.walk();
    params
        .named_children(&mut cursor)
        .filter_map(|p| match p.kind() {
            "identifier" => Some(p),
            _ => p.child_by_field_name("name").or_else(|| first_identifier(p)),
        })
        .map(|n| parsed.node_text(n))
        .collect()
}

fn first_identifier(node: Node<'_>) -> Option<Node<'_>> {
    let mut cursor = node.walk();
    let found = node.named_children(&mut cursor).find(|c| c.kind() == "identifier");
    found
}

fn compare(old: &Body<'_>, new: &Body<'_>) -> Vec<AntiPattern> {
    let mut found = returns(old, new);
    found.extend(comparisons(old, new));
    found.extend(conditions(old, new));
    found.extend(deletions(old, new));
    found.extend(blocks(old, new));
    found.extend(assignments(old, new));
    found.extend((repeats(new) > repeats(old)).then_some(AntiPattern::RepeatedStatement));
    found
}

/// Simple statements (expressions, assignments) equal to the statement right before them in
/// their block.
fn repeats(body: &Body<'_>) -> usize {
    let simple = |n: &Node<'_>| n.kind() == "expression_statement";
    body.of_kind(&["expression_statement"])
        .filter(|n| n.prev_named_sibling().is_some_and(|p| simple(&p) && body.key(p) == body.key(*n)))
        .count()
}

/// The nodes of `old` and of `new` that the other side lacks (compared by whitespace-free text):
/// what the patch changed, zipped in order into (old, new) pairs.
fn changed<'t>(old: &Body<'t>, olds: &[Node<'t>], new: &Body<'t>, news: &[Node<'t>]) -> Vec<(Node<'t>, Node<'t>)> {
    let removed = surplus(old, olds, &counts(new, news));
    let added = surplus(new, news, &counts(old, olds));
    removed.into_iter().zip(added).collect()
}

fn counts(body: &Body<'_>, nodes: &[Node<'_>]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for n in nodes {
        *counts.entry(body.key(*n)).or_default() += 1;
    }
    counts
}

/// The nodes beyond the number of copies of their text that `other` counts.
fn surplus<'t>(body: &Body<'t>, nodes: &[Node<'t>], other: &HashMap<String, usize>) -> Vec<Node<'t>> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for &n in nodes {
        let key = body.key(n);
        let copies = other.get(&key).copied().unwrap_or(0);
        let s = seen.entry(key).or_default();
        *s += 1;
        if *s > copies {
            out.push(n);
        }
    }
    out
}

/// What a returned value is, coarsely (a bare `return` gives the constant `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value {
    Constant,
    /// A name or an attribute chain (`x`, `self.items`).
    Name,
    Call,
    /// A comparison, `not` or `and`/`or`.
    Boolean,
    Other,
}

fn value(node: Option<Node<'_>>) -> Value {
    let Some(node) = node else { return Value::Constant };
    match node.kind() {
        _ if is_constant(node) => Value::Constant,
        "identifier" | "attribute" if root_name(node).is_some() => Value::Name,
        "call" => Value::Call,
        "comparison_operator" | "not_operator" | "boolean_operator" => Value::Boolean,
        "parenthesized_expression" => value(node.named_child(0)),
        _ => Value::Other,
    }
}

/// The identifier at the root of a name or attribute chain (`self` in `self.items.data`).
fn root_name(node: Node<'_>) -> Option<Node<'_>> {
    match node.kind() {
        "identifier" => Some(node),
        "attribute" => root_name(node.child_by_field_name("object")?),
        _ => None,
    }
}

/// A literal, `None`, `True`/`False`, `...`, or a container or tuple of constants.
fn is_constant(node: Node<'_>) -> bool {
    let mut cursor = node.walk();
    let mut children = node.named_children(&mut cursor).filter(|c| c.kind() != "comment");
    match node.kind() {
        "integer" | "float" | "true" | "false" | "none" | "ellipsis" => true,
        "string" => !children.any(|c| c.kind() == "interpolation"),
        "concatenated_string"
        | "list"
        | "tuple"
        | "set"
        | "dictionary"
        | "pair"
        | "parenthesized_expression"
        | "expression_list" => children.all(is_constant),
        "unary_operator" => node.child_by_field_name("argument").is_some_and(is_constant),
        _ => false,
    }
}

/// A constant that is false: `None`, `False`, zero, `""`, an empty container.
fn is_falsy(body: &Body<'_>, node: Node<'_>) -> bool {
    let mut cursor = node.walk();
    let mut children = node.named_children(&mut cursor).filter(|c| c.kind() != "comment");
    match node.kind() {
        "none" | "false" => true,
        "integer" | "float" => body.text(node).replace('_', "").parse::<f64>().is_ok_and(|v| v == 0.0),
        "string" => !children.any(|c| matches!(c.kind(), "string_content" | "interpolation")),
        "list" | "tuple" | "set" | "dictionary" => children.next().is_none(),
        "parenthesized_expression" => children.next().is_some_and(|c| is_falsy(body, c)),
        _ => false,
    }
}

/// `None` on one side, another falsy constant on the other (a missing value is `None`).
fn sentinel_swap(old: &Body<'_>, o: Option<Node<'_>>, new: &Body<'_>, n: Option<Node<'_>>) -> bool {
    let is_none = |v: Option<Node<'_>>| v.is_none_or(|v| v.kind() == "none");
    let other_falsy = |body: &Body<'_>, v: Option<Node<'_>>| v.is_some_and(|v| v.kind() != "none" && is_falsy(body, v));
    (is_none(o) && other_falsy(new, n)) || (is_none(n) && other_falsy(old, o))
}

/// Methods whose result Python's protocols read (a constant or a bare name there degrades them).
const DUNDERS: &[&str] = &[
    "__len__",
    "__length_hint__",
    "__bool__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__hash__",
    "__iter__",
    "__next__",
    "__contains__",
    "__getitem__",
    "__str__",
    "__repr__",
    "__int__",
    "__float__",
    "__index__",
];

fn returns(old: &Body<'_>, new: &Body<'_>) -> Vec<AntiPattern> {
    let olds: Vec<Node<'_>> = old.of_kind(&["return_statement"]).collect();
    let news: Vec<Node<'_>> = new.of_kind(&["return_statement"]).collect();
    let mut found = Vec::new();
    for (o, n) in changed(old, &olds, new, &news) {
        let (o, n) = (o.named_child(0), n.named_child(0));
        let (was, is) = (value(o), value(n));
        if sentinel_swap(old, o, new, n) {
            found.push(AntiPattern::SentinelSwap);
        } else if is == Value::Constant && was != Value::Constant {
            found.push(AntiPattern::ConstantReturn);
        }
        // Name → name is a variable swap (a classic genuine fix), not a degradation.
        if is == Value::Name && !matches!(was, Value::Constant | Value::Name) && unrelated(old, o, new, n) {
            found.push(AntiPattern::UnrelatedReturn);
        }
        if DUNDERS.contains(&new.name) && was != is && matches!(is, Value::Constant | Value::Name) {
            found.push(AntiPattern::DunderResult);
        }
        if was == Value::Boolean && n.is_some_and(|n| trivial(new, n)) {
            found.push(AntiPattern::TrivialCondition);
        }
    }
    found
}

/// `n` is a parameter or an attribute of one, and none of its names (besides `self`/`cls`)
/// occurs in `o`.
fn unrelated(old: &Body<'_>, o: Option<Node<'_>>, new: &Body<'_>, n: Option<Node<'_>>) -> bool {
    let (Some(o), Some(n)) = (o, n) else { return false };
    if !root_name(n).is_some_and(|r| new.params.contains(&new.text(r))) {
        return false;
    }
    let names = new.names(n);
    let own: Vec<&str> = names.iter().copied().filter(|n| !matches!(*n, "self" | "cls")).collect();
    let old_names = old.names(o);
    let own = if own.is_empty() { names } else { own };
    !own.iter().any(|n| old_names.contains(n))
}

fn comparisons(old: &Body<'_>, new: &Body<'_>) -> Option<AntiPattern> {
    let olds: Vec<Node<'_>> = old.of_kind(&["comparison_operator"]).collect();
    let news: Vec<Node<'_>> = new.of_kind(&["comparison_operator"]).collect();
    let swapped = |(o, n): (Node<'_>, Node<'_>)| {
        let (mut ca, mut cb) = (o.walk(), n.walk());
        let a: Vec<Node<'_>> = o.named_children(&mut ca).collect();
        let b: Vec<Node<'_>> = n.named_children(&mut cb).collect();
        let differ: Vec<(Node<'_>, Node<'_>)> =
            a.iter().copied().zip(b.iter().copied()).filter(|(x, y)| old.key(*x) != new.key(*y)).collect();
        a.len() == b.len() && differ.len() == 1 && sentinel_swap(old, Some(differ[0].0), new, Some(differ[0].1))
    };
    changed(old, &olds, new, &news).into_iter().any(swapped).then_some(AntiPattern::SentinelSwap)
}

fn conditions(old: &Body<'_>, new: &Body<'_>) -> Option<AntiPattern> {
    (trivial_conditions(new) > trivial_conditions(old)).then_some(AntiPattern::TrivialCondition)
}

/// Conditions of `if`, `elif`, `while` and `x if c else y` that do not depend on the program's state.
fn trivial_conditions(body: &Body<'_>) -> usize {
    body.nodes.iter().filter_map(|n| condition(*n)).filter(|c| trivial(body, *c)).count()
}

fn condition(node: Node<'_>) -> Option<Node<'_>> {
    match node.kind() {
        "if_statement" | "elif_clause" | "while_statement" => node.child_by_field_name("condition"),
        "conditional_expression" => node.named_child(1),
        _ => None,
    }
}

/// A constant, a comparison of constants, an object that is always true (a class, a non-empty
/// tuple, a lambda), or a `not`/`and`/`or` one of whose operands decides the result or cannot
/// change it (`x or True`, `x and False`, `x and SomeClass`: a test made constant, or dropped).
fn trivial(body: &Body<'_>, node: Node<'_>) -> bool {
    let mut cursor = node.walk();
    match node.kind() {
        _ if is_constant(node) || always_true(body, node) => true,
        "parenthesized_expression" => node.named_child(0).is_some_and(|n| trivial(body, n)),
        "not_operator" => node.child_by_field_name("argument").is_some_and(|n| trivial(body, n)),
        "comparison_operator" => node.named_children(&mut cursor).all(is_constant),
        "boolean_operator" => {
            let (Some(l), Some(r)) = (node.child_by_field_name("left"), node.child_by_field_name("right")) else {
                return false;
            };
            let or = node.child_by_field_name("operator").is_some_and(|op| body.text(op) == "or");
            let truthy = |x: Node<'_>| (is_constant(x) && !is_falsy(body, x)) || always_true(body, x);
            // Decides the whole result, or leaves it to the other operand alone.
            let absorbs = |x: Node<'_>| if or { truthy(x) } else { is_falsy(body, x) };
            let inert = |x: Node<'_>| if or { is_falsy(body, x) } else { truthy(x) };
            let same_op = |x: Node<'_>| x.kind() == "boolean_operator" && trivial(body, x);
            [l, r].into_iter().any(|x| absorbs(x) || inert(x) || same_op(x)) || (trivial(body, l) && trivial(body, r))
        }
        _ => false,
    }
}

/// An object no program state makes false: a class named in CamelCase (`ast.Call`), a
/// non-empty tuple, a lambda.
fn always_true(body: &Body<'_>, node: Node<'_>) -> bool {
    match node.kind() {
        "identifier" | "attribute" => {
            let name = body.text(node).rsplit('.').next().unwrap_or_default();
            name.starts_with(|c: char| c.is_ascii_uppercase()) && name.chars().any(|c| c.is_ascii_lowercase())
        }
        "tuple" => node.named_child_count() > 0,
        "lambda" => true,
        "parenthesized_expression" => node.named_child(0).is_some_and(|n| always_true(body, n)),
        _ => false,
    }
}

const EXITS: &[&str] = &["raise_statement", "return_statement", "assert_statement"];
const CONTROL: &[&str] = &[
    "if_statement",
    "elif_clause",
    "else_clause",
    "for_statement",
    "while_statement",
    "try_statement",
    "except_clause",
    "break_statement",
    "continue_statement",
];

fn deletions(old: &Body<'_>, new: &Body<'_>) -> Vec<AntiPattern> {
    let fewer = |kinds: &[&str]| kinds.iter().any(|k| new.count(k) < old.count(k));
    [(EXITS, AntiPattern::DeletedExit), (CONTROL, AntiPattern::DeletedControl)]
        .into_iter()
        .filter_map(|(kinds, pattern)| fewer(kinds).then_some(pattern))
        .collect()
}

fn blocks(old: &Body<'_>, new: &Body<'_>) -> Vec<AntiPattern> {
    let mut found = Vec::new();
    if emptied(new) > emptied(old) && new.count("block") <= old.count("block") {
        found.push(AntiPattern::EmptiedBlock);
    }
    if early_exits(new) > early_exits(old) {
        found.push(AntiPattern::EarlyExit);
    }
    found
}

/// Blocks that do nothing: `pass`, `...`, `continue`, a bare `return` or `return None`.
fn emptied(body: &Body<'_>) -> usize {
    let empty = |s: Node<'_>| match s.kind() {
        "pass_statement" | "continue_statement" | "comment" => true,
        "return_statement" => s.named_child(0).is_none_or(|v| v.kind() == "none"),
        "expression_statement" => s.named_child(0).is_some_and(|e| e.kind() == "ellipsis"),
        _ => false,
    };
    body.of_kind(&["block"])
        .filter(|b| {
            let mut cursor = b.walk();
            let all_empty = b.named_children(&mut cursor).all(empty);
            all_empty
        })
        .count()
}

/// `return`, `break` and `continue` statements followed by another statement of their block.
fn early_exits(body: &Body<'_>) -> usize {
    let dead_after = |n: &Node<'_>| {
        let mut next = n.next_named_sibling();
        while next.is_some_and(|s| s.kind() == "comment") {
            next = next.and_then(|s| s.next_named_sibling());
        }
        next.is_some()
    };
    body.of_kind(&["return_statement", "break_statement", "continue_statement"]).filter(dead_after).count()
}

fn assignments(old: &Body<'_>, new: &Body<'_>) -> Vec<AntiPattern> {
    let fewer = |targets: Vec<&str>| targets.iter().any(|t| assigned(new, t) < assigned(old, t));
    let mut found = Vec::new();
    if fewer(set_before_if(old)) {
        found.push(AntiPattern::DeletedSetBeforeIf);
    }
    if fewer(loop_counters(old)) {
        found.push(AntiPattern::DeletedLoopCounter);
    }
    found
}

/// Assignments (plain or augmented) to the name `target`.
fn assigned(body: &Body<'_>, target: &str) -> usize {
    body.of_kind(&["assignment", "augmented_assignment"])
        .filter(|a| a.child_by_field_name("left").is_some_and(|l| body.text(l) == target))
        .count()
}

/// The name an assignment statement sets, when it sets one name.
fn assigned_name<'t>(body: &Body<'t>, node: Node<'t>) -> Option<&'t str> {
    let left = node.child_by_field_name("left").filter(|l| l.kind() == "identifier")?;
    matches!(node.kind(), "assignment" | "augmented_assignment").then(|| body.text(left))
}

/// Names assigned by a statement right before an `if` whose condition reads them.
fn set_before_if<'t>(body: &Body<'t>) -> Vec<&'t str> {
    let site = |stmt: Node<'t>| {
        let name = assigned_name(body, stmt.named_child(0)?)?;
        let next = stmt.next_named_sibling().filter(|n| n.kind() == "if_statement")?;
        let condition = next.child_by_field_name("condition")?;
        body.names(condition).contains(&name).then_some(name)
    };
    body.of_kind(&["expression_statement"]).filter_map(site).collect()
}

/// Names a `while` loop's condition reads and its body assigns.
fn loop_counters<'t>(body: &Body<'t>) -> Vec<&'t str> {
    let mut counters = Vec::new();
    for w in body.of_kind(&["while_statement"]) {
        let (Some(condition), Some(block)) = (w.child_by_field_name("condition"), w.child_by_field_name("body")) else {
            continue;
        };
        let read = body.names(condition);
        let inside = |n: &Node<'_>| block.start_byte() <= n.start_byte() && n.end_byte() <= block.end_byte();
        for a in body.of_kind(&["assignment", "augmented_assignment"]).filter(inside) {
            counters.extend(assigned_name(body, a).filter(|name| read.contains(name)));
        }
    }
    counters
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names of the anti-patterns of `new` against `old` (whole modules).
    fn check(old: &str, new: &str) -> Vec<&'static str> {
        anti_patterns(&Parsed::new(old), &Parsed::new(new)).into_iter().map(AntiPattern::name).collect()
    }

    /// `check` on one function whose body line `from` becomes `to`.
    fn edit(body: &str, from: &str, to: &str) -> Vec<&'static str> {
        assert!(body.contains(from), "{from:?} not in {body:?}");
        check(body, &body.replacen(from, to, 1))
    }

    const MEAN: &str = "def mean(xs, default):\n    if not xs:\n        return None\n    total = sum(xs)\n    return total / len(xs)\n";

    #[test]
    fn a_computed_return_made_constant_is_a_constant_return() {
        assert_eq!(edit(MEAN, "return total / len(xs)", "return 0"), ["constant-return"]);
        assert_eq!(edit(MEAN, "return total / len(xs)", "return []"), ["constant-return"]);
        assert_eq!(edit(MEAN, "return total / len(xs)", "return"), ["constant-return"]);
    }

    #[test]
    fn a_genuine_change_of_a_returned_value_is_no_anti_pattern() {
        assert!(edit(MEAN, "return total / len(xs)", "return total / (len(xs) + 1)").is_empty());
        assert!(edit(MEAN, "return None", "return default").is_empty());
        assert!(edit("def f(x):\n    return x\n", "return x", "return x + 1").is_empty());
        assert!(edit("def f(x):\n    return 'WARN'\n", "'WARN'", "'WARNING'").is_empty());
    }

    #[test]
    fn a_return_of_an_unrelated_parameter_is_an_unrelated_return() {
        assert_eq!(edit(MEAN, "return total / len(xs)", "return default"), ["unrelated-return"]);
        let method = "class C:\n    def size(self):\n        return self.count + 1\n";
        assert_eq!(edit(method, "self.count + 1", "self.items"), ["unrelated-return"]);
    }

    #[test]
    fn a_return_of_a_local_or_a_related_name_is_no_unrelated_return() {
        assert!(edit(MEAN, "return total / len(xs)", "return total").is_empty());
        let method = "class C:\n    def first(self, xs):\n        return xs[0]\n";
        assert!(edit(method, "xs[0]", "xs").is_empty());
        assert!(edit("def pick(lo, hi):\n    return lo\n", "return lo", "return hi").is_empty());
    }

    #[test]
    fn none_swapped_for_a_falsy_constant_is_a_sentinel_swap() {
        assert_eq!(edit(MEAN, "return None", "return 0"), ["sentinel-swap"]);
        assert_eq!(edit(MEAN, "return None", "return ''"), ["sentinel-swap"]);
        let compare = "def f(x):\n    if x is None:\n        x = 1\n    return x\n";
        assert_eq!(edit(compare, "x is None", "x == 0"), ["sentinel-swap"]);
        assert_eq!(edit("def f(x):\n    return x == []\n", "x == []", "x == None"), ["sentinel-swap"]);
    }

    #[test]
    fn other_constant_and_operator_changes_are_no_sentinel_swap() {
        assert!(edit(MEAN, "return None", "return 1").is_empty());
        let compare = "def f(x):\n    if x is None:\n        x = 1\n    return x\n";
        assert!(edit(compare, "x is None", "x is not None").is_empty());
        assert!(edit(compare, "x is None", "y is None").is_empty());
    }

    const BAG: &str = "class Bag:\n    def __len__(self):\n        return len(self.items)\n\n    def __eq__(self, other):\n        return self.items == other.items\n";

    #[test]
    fn a_dunder_returning_a_constant_or_its_attribute_is_a_dunder_result() {
        assert_eq!(edit(BAG, "return len(self.items)", "return self.items"), ["dunder-result"]);
        assert_eq!(edit(BAG, "return len(self.items)", "return 0"), ["constant-return", "dunder-result"]);
        assert_eq!(
            edit(BAG, "return self.items == other.items", "return True"),
            ["constant-return", "dunder-result", "trivial-condition"]
        );
    }

    #[test]
    fn a_dunder_whose_result_keeps_its_kind_is_no_dunder_result() {
        assert!(edit(BAG, "return len(self.items)", "return len(set(self.items))").is_empty());
        assert!(edit(BAG, "self.items == other.items", "sorted(self.items) == sorted(other.items)").is_empty());
    }

    const LOOP: &str = "def count(xs, limit):\n    n = 0\n    i = 0\n    while i < len(xs):\n        if xs[i] > limit:\n            n += 1\n        i += 1\n    return n\n";

    #[test]
    fn a_condition_made_constant_is_a_trivial_condition() {
        assert_eq!(edit(LOOP, "if xs[i] > limit:", "if True:"), ["trivial-condition"]);
        assert_eq!(edit(LOOP, "if xs[i] > limit:", "if xs[i] > limit or True:"), ["trivial-condition"]);
        assert_eq!(edit(LOOP, "while i < len(xs):", "while False:"), ["trivial-condition"]);
        assert_eq!(edit("def f(a, b):\n    return a < b\n", "a < b", "a < b or True"), ["trivial-condition"]);
        // A test turned into an object that is always true: a class, alone or as a conjunct.
        let named = "def f(node, scope):\n    if node.id == 'x' and isinstance(node.parent, ast.Call):\n        scope.uses = True\n";
        assert_eq!(edit(named, "isinstance(node.parent, ast.Call)", "ast.Call"), ["trivial-condition"]);
        assert_eq!(
            edit(named, "node.id == 'x' and isinstance(node.parent, ast.Call)", "ast.Call"),
            ["trivial-condition"]
        );
        assert_eq!(edit(named, "isinstance(node.parent, ast.Call)", "(ast.Call, ast.Name)"), ["trivial-condition"]);
    }

    #[test]
    fn a_changed_comparison_is_no_trivial_condition() {
        assert!(edit(LOOP, "if xs[i] > limit:", "if xs[i] >= limit:").is_empty());
        assert!(edit(LOOP, "if xs[i] > limit:", "if xs[i] > limit or xs[i] == 0:").is_empty());
        // Names of values, an ALL_CAPS constant, a call: they may be false.
        let named = "def f(node, scope):\n    if node.id == 'x' and isinstance(node.parent, ast.Call):\n        scope.uses = True\n";
        assert!(edit(named, "isinstance(node.parent, ast.Call)", "node.parent").is_empty());
        assert!(edit(named, "isinstance(node.parent, ast.Call)", "DEBUG").is_empty());
        assert!(edit(named, "isinstance(node.parent, ast.Call)", "isinstance(node, ast.Call)").is_empty());
        let forever = "def f(q):\n    while True:\n        if not q:\n            break\n        q.pop()\n";
        assert!(edit(forever, "q.pop()", "q.pop(0)").is_empty());
    }

    const CHECKED: &str = "def withdraw(self, amount):\n    if amount > self.balance:\n        raise ValueError('overdrawn')\n    self.balance -= amount\n    return self.balance\n";

    #[test]
    fn a_deleted_raise_is_a_deleted_exit() {
        assert_eq!(edit(CHECKED, "raise ValueError('overdrawn')", "self.balance = 0"), ["deleted-exit"]);
    }

    #[test]
    fn a_changed_raise_is_no_deleted_exit() {
        assert!(edit(CHECKED, "ValueError('overdrawn')", "RuntimeError('overdrawn')").is_empty());
    }

    #[test]
    fn a_branch_replaced_by_pass_or_return_is_an_emptied_block() {
        assert_eq!(edit(CHECKED, "raise ValueError('overdrawn')", "pass"), ["deleted-exit", "emptied-block"]);
        assert_eq!(edit(LOOP, "            n += 1\n", "            pass\n"), ["emptied-block"]);
    }

    #[test]
    fn an_added_guard_that_returns_is_no_emptied_block() {
        let guarded = "    if not xs:\n        return\n    n = 0\n";
        assert!(edit(LOOP, "    n = 0\n", guarded).is_empty());
    }

    #[test]
    fn a_deleted_loop_or_branch_is_a_deleted_control() {
        let unguarded = CHECKED.replace("    if amount > self.balance:\n        raise ValueError('overdrawn')\n", "");
        assert_eq!(check(CHECKED, &unguarded), ["deleted-exit", "deleted-control"]);
        let flat = "def f(xs):\n    for x in xs:\n        print(x)\n";
        assert_eq!(edit(flat, "    for x in xs:\n        print(x)\n", "    print(xs)\n"), ["deleted-control"]);
    }

    #[test]
    fn an_added_branch_is_no_deleted_control() {
        assert!(edit(CHECKED, "    self.balance -= amount\n", "    if amount:\n        self.balance -= amount\n")
            .is_empty());
    }

    #[test]
    fn a_return_before_other_statements_is_an_early_exit() {
        assert_eq!(edit(LOOP, "    i = 0\n", "    return 0\n    i = 0\n"), ["early-exit"]);
    }

    #[test]
    fn a_return_at_the_end_of_its_block_is_no_early_exit() {
        assert!(edit(LOOP, "            n += 1\n", "            n += 1\n            continue\n").is_empty());
        let inserted = "        if xs[i] is None:\n            return n\n        if xs[i] > limit:";
        assert!(edit(LOOP, "        if xs[i] > limit:", inserted).is_empty());
    }

    #[test]
    fn a_deleted_assignment_read_by_the_next_if_is_a_deleted_set_before_if() {
        let before = "def f(s):\n    n = len(s)\n    if n > 3:\n        return s[:3]\n    return s\n";
        let after = "def f(s):\n    if n > 3:\n        return s[:3]\n    return s\n";
        assert_eq!(check(before, after), ["deleted-set-before-if"]);
        assert!(edit(before, "n = len(s)", "n = len(s) - 1").is_empty());
    }

    #[test]
    fn a_deleted_loop_counter_update_is_a_deleted_loop_counter() {
        assert_eq!(edit(LOOP, "        i += 1\n", ""), ["deleted-loop-counter"]);
        assert!(edit(LOOP, "        i += 1\n", "        i += 2\n").is_empty());
    }

    #[test]
    fn functions_are_paired_by_qualified_name_and_unchanged_ones_are_skipped() {
        let two = format!("{MEAN}\n\nclass K:\n    def mean(self):\n        return 1\n");
        assert_eq!(check(&two, &two.replace("return 1", "return self.x")), Vec::<&str>::new());
        assert_eq!(check(&two, &two.replacen("return total / len(xs)", "return 0", 1)), ["constant-return"]);
        assert!(check(&two, &format!("x = 1\n{two}")).is_empty());
    }

    #[test]
    fn a_statement_doubled_next_to_itself_is_a_repeated_statement() {
        let body = "def load(self, schema):\n    schema = self.expand(schema)\n    self.validate(schema)\n";
        let doubled = "    schema = self.expand(schema)\n    schema = self.expand(schema)\n";
        assert_eq!(edit(body, "    schema = self.expand(schema)\n", doubled), ["repeated-statement"]);
        // The same statement elsewhere, or a doubled statement the original had, is no repeat.
        let apart = "    schema = self.expand(schema)\n    self.validate(schema)\n    schema = self.expand(schema)\n";
        assert!(edit(body, "    schema = self.expand(schema)\n    self.validate(schema)\n", apart).is_empty());
        let twice = "def skip(rows):\n    next(rows)\n    next(rows)\n    return rows\n";
        assert!(edit(twice, "return rows", "return list(rows)").is_empty());
    }
}
