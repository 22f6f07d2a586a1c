//! Repair operators: small, generic source edits proposed at suspicious lines, one rule module per family.

mod arguments;
mod arithmetic;
mod comparison;
mod conditions;
mod elements;
mod exceptions;
#[cfg(test)]
mod fixtures;
mod literal;
mod names;
mod negation;
mod off_by_one;
mod returns;
mod scope;
mod statements;
mod tree;
mod wrap;
mod yields;

use crate::patch::Edit;
use crate::python::Parsed;
use tree_sitter::Node;

pub use scope::{scope_names, FileScope};
pub(crate) use tree::enclosing_function;

/// The kind of edit a repair operator makes (the repair analogue of a mutation genre).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// `<` ↔ `<=` ↔ `>` ↔ `>=` ↔ `==` ↔ `!=`, `in` ↔ `not in`, `is` ↔ `is not`; `min` ↔ `max`.
    Comparison,
    /// `+` ↔ `-`, `*` ↔ `/` ↔ `//`, ... also in augmented assignments.
    Arithmetic,
    /// `and` ↔ `or`; `any` ↔ `all`.
    Boolean,
    /// Drop a `not` or a unary minus; negate an `if`/`while` condition; negate an index or a
    /// slice bound (`xs[n:]` → `xs[-n:]`).
    Negation,
    /// An integer constant ±1.
    ConstantOffByOne,
    /// An index, slice bound or `range` argument ±1.
    IndexOffByOne,
    /// A value ±1 where it is assigned, returned, compared or passed.
    ExpressionOffByOne,
    /// Swap two arguments of a call, or the operands of a non-commutative binary operator.
    ArgumentSwap,
    /// Use another variable of the same scope.
    VariableMisuse,
    /// Replace `a op b` by one of its operands.
    RemoveOperand,
    /// `True` ↔ `False`, empty-container variants, `None` ↔ `0`; two adjacent `%` directives of
    /// a format string swapped.
    Literal,
    /// `cond` → `cond and x is not None`, `cond or not x`, ... for names in scope.
    ConditionChange,
    /// `e` → `abs(e)`, `len(e)`, `max(e, 0)`, `min(e, 0)`, `f(e)` for a one-argument function of the file.
    WrapExpression,
    /// `f(e)` → `e`.
    UnwrapCall,
    /// `obj.a` → `obj.b` for another attribute used in the file.
    AttributeMisuse,
    /// A call's arguments made to fit its signature (missing one passed, surplus one
    /// removed, unknown keyword renamed), directed by the `TypeError` the call raised.
    CallArguments,
    /// Insert a statement copied from the same function (possibly with one name replaced).
    InsertStatement,
    /// Delete a statement.
    DeleteStatement,
    /// Change what a `return` returns, or add a missing `return`.
    ReturnValue,
    /// `except A` → `except B` among the builtin exceptions commonly confused.
    ExceptionType,
    /// `yield e` ↔ `yield from e`.
    YieldFrom,
    /// An element of a list, tuple or set display removed (`(a, b, c)` → `(a, c)`).
    DropElement,
    /// `name=self.name` added to a call in a method, for an `__init__` parameter the class
    /// stores under its own name: an option of the object the call forgot to pass on.
    ForwardOption,
    /// An element added to a list, tuple or set display whose elements share a shape: another
    /// attribute of their receiver (`sql.X`), name or string constant of the file.
    AddElement,
    /// A missing guard clause inserted before a statement: `if not x: return` (`continue` in a
    /// loop) for a name the statement reads.
    GuardClause,
}

impl Operator {
    /// Prior probability weight of this operator producing the fix (hand-set defaults).
    #[must_use]
    pub fn prior(self) -> f64 {
        match self {
            Operator::Comparison => 1.0,
            Operator::ConstantOffByOne | Operator::IndexOffByOne => 0.9,
            Operator::Arithmetic => 0.85,
            Operator::Boolean => 0.8,
            Operator::Negation => 0.6,
            Operator::ArgumentSwap => 0.55,
            Operator::ExpressionOffByOne => 0.5,
            Operator::VariableMisuse => 0.5,
            Operator::RemoveOperand => 0.4,
            Operator::Literal => 0.6,
            Operator::ConditionChange => 0.45,
            Operator::WrapExpression => 0.35,
            Operator::UnwrapCall => 0.35,
            Operator::AttributeMisuse => 0.4,
            Operator::CallArguments => 0.5,
            Operator::InsertStatement => 0.3,
            Operator::DeleteStatement => 0.3,
            Operator::ReturnValue => 0.45,
            Operator::ExceptionType => 0.4,
            Operator::YieldFrom => 0.4,
            Operator::DropElement => 0.3,
            Operator::AddElement => 0.3,
            Operator::ForwardOption => 0.3,
            Operator::GuardClause => 0.3,
        }
    }

    /// Every operator, in declaration order.
    pub const ALL: [Operator; 25] = [
        Operator::Comparison,
        Operator::Arithmetic,
        Operator::Boolean,
        Operator::Negation,
        Operator::ConstantOffByOne,
        Operator::IndexOffByOne,
        Operator::ExpressionOffByOne,
        Operator::ArgumentSwap,
        Operator::VariableMisuse,
        Operator::RemoveOperand,
        Operator::Literal,
        Operator::ConditionChange,
        Operator::WrapExpression,
        Operator::UnwrapCall,
        Operator::AttributeMisuse,
        Operator::CallArguments,
        Operator::InsertStatement,
        Operator::DeleteStatement,
        Operator::ReturnValue,
        Operator::ExceptionType,
        Operator::YieldFrom,
        Operator::DropElement,
        Operator::AddElement,
        Operator::ForwardOption,
        Operator::GuardClause,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Operator::Comparison => "comparison",
            Operator::Arithmetic => "arithmetic",
            Operator::Boolean => "boolean",
            Operator::Negation => "negation",
            Operator::ConstantOffByOne => "constant-off-by-one",
            Operator::IndexOffByOne => "index-off-by-one",
            Operator::ArgumentSwap => "argument-swap",
            Operator::ExpressionOffByOne => "expression-off-by-one",
            Operator::VariableMisuse => "variable-misuse",
            Operator::RemoveOperand => "remove-operand",
            Operator::Literal => "literal",
            Operator::ConditionChange => "condition-change",
            Operator::WrapExpression => "wrap-expression",
            Operator::UnwrapCall => "unwrap-call",
            Operator::AttributeMisuse => "attribute-misuse",
            Operator::CallArguments => "call-arguments",
            Operator::InsertStatement => "insert-statement",
            Operator::DeleteStatement => "delete-statement",
            Operator::ReturnValue => "return-value",
            Operator::ExceptionType => "exception-type",
            Operator::YieldFrom => "yield-from",
            Operator::DropElement => "drop-element",
            Operator::AddElement => "add-element",
            Operator::ForwardOption => "forward-option",
            Operator::GuardClause => "guard-clause",
        }
    }
}

/// One proposed edit.
#[derive(Debug, Clone)]
pub struct Mutation {
    pub operator: Operator,
    pub edit: Edit,
    /// Human-readable summary, e.g. "`<` → `<=`".
    pub description: String,
}

/// A family of operators: one module of rules in this folder, with a fixture of Python
/// snippets (`tests/fixtures/operators/<name>.py`) and a snapshot of what it proposes there.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    pub name: &'static str,
    pub operators: &'static [Operator],
}

/// Every family of the operators [`mutations_at_line`] proposes (all but
/// [`Operator::CallArguments`], which `signature.rs` proposes from a `TypeError`).
pub const FAMILIES: [Family; 14] = [
    comparison::FAMILY,
    arithmetic::FAMILY,
    negation::FAMILY,
    off_by_one::FAMILY,
    arguments::FAMILY,
    names::FAMILY,
    literal::FAMILY,
    conditions::FAMILY,
    wrap::FAMILY,
    statements::FAMILY,
    returns::FAMILY,
    exceptions::FAMILY,
    yields::FAMILY,
    elements::FAMILY,
];

/// Propose every operator edit for the nodes that start on 1-based `line` of `parsed`.
#[must_use]
pub fn mutations_at_line(parsed: &Parsed, line: usize) -> Vec<Mutation> {
    mutations_at_line_in(parsed, &FileScope::of(parsed), line)
}

/// [`mutations_at_line`] with the file's [`FileScope`] computed once by the caller.
#[must_use]
pub fn mutations_at_line_in(parsed: &Parsed, scope: &FileScope, line: usize) -> Vec<Mutation> {
    let mut gen = Generator { parsed, scope, out: Vec::new() };
    let row = line.saturating_sub(1);
    let mut stack = vec![parsed.root()];
    while let Some(node) = stack.pop() {
        if node.end_position().row < row || node.start_position().row > row {
            continue;
        }
        if node.start_position().row == row {
            gen.node(node);
            gen.statement(node);
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    gen.out
}

/// A rule: the mutations one operator (or a few that go together) proposes for a node.
type Rule = fn(&mut Generator<'_>, Node<'_>);

/// A statement rule: the mutations proposed for a statement of a function.
type StatementRule = fn(&mut Generator<'_>, &Statement<'_>);

/// The rules for a node of this kind, in the order their mutations are listed (candidate
/// ids and scores follow that order).
fn rules_for(kind: &str) -> &'static [Rule] {
    match kind {
        "comparison_operator" => &[comparison::comparison_operators],
        "binary_operator" => &[arithmetic::binary_operator, arguments::swap_operands, wrap::remove_operand],
        "augmented_assignment" => &[arithmetic::augmented_assignment],
        "boolean_operator" => &[comparison::boolean_operator, wrap::remove_operand],
        "not_operator" => &[negation::drop_not],
        "unary_operator" => &[negation::drop_minus],
        "if_statement" | "while_statement" | "elif_clause" => &[negation::negate_condition],
        "integer" => &[off_by_one::constant],
        "subscript" => &[off_by_one::indices],
        "call" => &[
            comparison::dual_builtins,
            off_by_one::range_arguments,
            arguments::swap_arguments,
            wrap::unwrap_call,
            arguments::forward_option,
        ],
        "identifier" => &[names::variable_misuse, names::undefined_name],
        "true" | "false" | "none" => &[literal::constant],
        "list" | "tuple" | "set" => &[literal::empty_container, elements::add_element],
        "dictionary" => &[literal::empty_container],
        "string" => &[literal::string],
        "attribute" => &[names::attribute_misuse, names::receiver_misuse],
        "except_clause" => &[exceptions::exception_type],
        "yield" => &[yields::yield_from],
        _ => &[],
    }
}

/// The rules for a node of any kind, after those of its kind.
const EVERY_NODE: [Rule; 3] = [wrap::wrap_expression, off_by_one::expression, elements::drop_element];

/// The rules for a statement of a function that starts on the line, in order.
const STATEMENT_RULES: [StatementRule; 6] = [
    statements::delete,
    conditions::condition_change,
    returns::return_value,
    conditions::guard_clauses,
    returns::add_return,
    statements::insert,
];

/// What the rules share while they propose the mutations of one line.
struct Generator<'a> {
    parsed: &'a Parsed,
    scope: &'a FileScope,
    out: Vec<Mutation>,
}

impl Generator<'_> {
    fn text(&self, node: Node<'_>) -> &str {
        self.parsed.node_text(node)
    }

    /// `node` replaced by `replacement` (nothing when the text is the same), described as
    /// `` `old` → `new` ``.
    fn push(&mut self, operator: Operator, node: Node<'_>, replacement: String) {
        let original = self.text(node);
        if original == replacement {
            return;
        }
        let description = format!("`{}` → `{}`", shorten(original), shorten(&replacement));
        self.out.push(Mutation { operator, edit: Edit::replacement(node.byte_range(), replacement), description });
    }

    /// Any other edit, with its own description.
    fn add(&mut self, operator: Operator, edit: Edit, description: String) {
        self.out.push(Mutation { operator, edit, description });
    }

    fn node(&mut self, node: Node<'_>) {
        for rule in rules_for(node.kind()).iter().chain(&EVERY_NODE) {
            rule(self, node);
        }
    }

    fn statement(&mut self, node: Node<'_>) {
        if let Some(statement) = Statement::at(self.parsed, node) {
            for rule in STATEMENT_RULES {
                rule(self, &statement);
            }
        }
    }
}

/// A statement in a block of a function: what the statement rules share.
struct Statement<'t> {
    node: Node<'t>,
    /// The block it is in.
    block: Node<'t>,
    function: Node<'t>,
    /// The function's parameters and local names ([`scope_names`]).
    scope: Vec<String>,
    /// The statement's own indentation: tabs stay tabs (spaces would not compile there).
    indent: String,
    /// Where its first line starts.
    line_start: usize,
    /// Where its last line ends, after the newline.
    line_end: usize,
}

impl<'t> Statement<'t> {
    fn at(parsed: &Parsed, node: Node<'t>) -> Option<Statement<'t>> {
        let block = node.parent()?;
        if block.kind() != "block" || !tree::is_statement(node.kind()) {
            return None;
        }
        let function = enclosing_function(node)?;
        let scope: Vec<String> = scope_names(parsed, function).into_iter().collect();
        let line_start = node.start_byte() - node.start_position().column;
        let indent = match &parsed.text()[line_start..node.start_byte()] {
            lead if lead.bytes().all(|b| b == b' ' || b == b'\t') => lead.to_string(),
            _ => " ".repeat(node.start_position().column),
        };
        let line_end =
            parsed.text()[node.end_byte()..].find('\n').map_or(parsed.text().len(), |i| node.end_byte() + i + 1);
        Some(Statement { node, block, function, scope, indent, line_start, line_end })
    }
}

/// Levenshtein distance over characters.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != *cb)).min(row[j] + 1).min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// `text` on one line, cut to 40 characters (descriptions quote code with it).
pub(crate) fn shorten(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 40 {
        format!("{}…", one_line.chars().take(39).collect::<String>())
    } else {
        one_line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_nodes_starting_on_the_line_are_mutated() {
        let src = "def f(a):\n    x = a + 1\n    return x * 2\n";
        let parsed = Parsed::new(src);
        for m in mutations_at_line(&parsed, 3) {
            assert!(m.edit.range.start >= src.find("    return").unwrap(), "{m:?}");
        }
    }

    #[test]
    fn every_operator_of_a_line_belongs_to_exactly_one_family() {
        for operator in Operator::ALL {
            let families = FAMILIES.iter().filter(|f| f.operators.contains(&operator)).count();
            let expected = usize::from(operator != Operator::CallArguments);
            assert_eq!(families, expected, "{}", operator.name());
        }
    }
}
