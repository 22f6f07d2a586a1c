//! Repair operators: small, generic source edits proposed at suspicious lines.

use crate::patch::Edit;
use crate::python::builtins::{is_builtin, BUILTINS, SITE_BUILTINS};
use crate::python::Parsed;
use std::collections::BTreeSet;
use tree_sitter::Node;

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
            Operator::GuardClause => 0.3,
        }
    }

    /// Every operator, in declaration order.
    pub const ALL: [Operator; 23] = [
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

const COMPARISONS: &[&str] = &["<", "<=", ">", ">=", "==", "!="];
/// Binary operators whose operands are worth swapping (not commutative, or `+` on sequences).
const SWAPPABLE: &[&str] = &["-", "/", "//", "%", "**", "+", "<<", ">>", "@"];

/// Format strings with more `%` directives than this are left alone.
const MAX_DIRECTIVES: usize = 8;

const ARITHMETIC: &[(&str, &[&str])] = &[
    ("+", &["-", "*"]),
    ("-", &["+"]),
    ("*", &["/", "//", "+", "**"]),
    ("/", &["//", "*"]),
    ("//", &["/", "%", "*"]),
    ("%", &["//"]),
    ("**", &["*"]),
    ("&", &["|", "^"]),
    ("|", &["&", "^"]),
    ("^", &["&", "|"]),
    ("<<", &[">>"]),
    (">>", &["<<"]),
];

/// Names defined or used across a file, for operators that borrow from elsewhere in it.
#[derive(Debug, Clone, Default)]
pub struct FileScope {
    /// Module-level functions taking exactly one positional argument.
    pub unary_functions: BTreeSet<String>,
    /// Attribute names used anywhere in the file (`x.name`).
    pub attributes: BTreeSet<String>,
    /// Every name bound anywhere in the file (any scope); `None` when that cannot be known (a
    /// star import, a `match`): a name outside it and the builtins is undefined.
    pub bound: Option<BTreeSet<String>>,
    /// Names bound at module level: definitions, imports, assignments.
    pub module_names: BTreeSet<String>,
}

impl FileScope {
    #[must_use]
    pub fn of(parsed: &Parsed) -> FileScope {
        let mut scope = FileScope::default();
        let mut stack = vec![parsed.root()];
        while let Some(node) = stack.pop() {
            match node.kind() {
                "attribute" => {
                    if let Some(attr) = node.child_by_field_name("attribute") {
                        scope.attributes.insert(parsed.node_text(attr).to_string());
                    }
                }
                "function_definition" if node.parent().is_some_and(|p| p.kind() == "module") => {
                    let params = node.child_by_field_name("parameters").map_or(0, |p| p.named_child_count());
                    if let (1, Some(name)) = (params, node.child_by_field_name("name")) {
                        scope.unary_functions.insert(parsed.node_text(name).to_string());
                    }
                }
                _ => {}
            }
            let mut cursor = node.walk();
            stack.extend(node.named_children(&mut cursor));
        }
        scope.bound = bound_names(parsed, parsed.root(), true);
        scope.module_names = bound_names(parsed, parsed.root(), false).unwrap_or_default();
        scope
    }
}

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

struct Generator<'a> {
    parsed: &'a Parsed,
    scope: &'a FileScope,
    out: Vec<Mutation>,
}

impl Generator<'_> {
    fn text(&self, node: Node<'_>) -> &str {
        self.parsed.node_text(node)
    }

    fn push(&mut self, operator: Operator, node: Node<'_>, replacement: String) {
        let original = self.text(node);
        if original == replacement {
            return;
        }
        let description = format!("`{}` → `{}`", shorten(original), shorten(&replacement));
        self.out.push(Mutation { operator, edit: Edit::replacement(node.byte_range(), replacement), description });
    }

    fn node(&mut self, node: Node<'_>) {
        match node.kind() {
            "comparison_operator" => self.comparison(node),
            "binary_operator" => self.binary(node),
            "augmented_assignment" => self.augmented(node),
            "boolean_operator" => {
                if let Some(op) = node.child_by_field_name("operator") {
                    let swapped = if self.text(op) == "and" { "or" } else { "and" };
                    self.push(Operator::Boolean, op, swapped.to_string());
                }
                self.remove_operand(node);
            }
            "not_operator" => {
                if let Some(arg) = node.child_by_field_name("argument") {
                    self.push(Operator::Negation, node, self.text(arg).to_string());
                }
            }
            "unary_operator" => {
                if let (Some(op), Some(arg)) =
                    (node.child_by_field_name("operator"), node.child_by_field_name("argument"))
                {
                    if self.text(op) == "-" {
                        self.push(Operator::Negation, node, self.text(arg).to_string());
                    }
                }
            }
            "if_statement" | "while_statement" | "elif_clause" => {
                if let Some(cond) = node.child_by_field_name("condition") {
                    if cond.kind() != "not_operator" {
                        let negated = format!("not ({})", self.text(cond));
                        self.push(Operator::Negation, cond, negated);
                    }
                }
            }
            "integer" => self.integer(node),
            "subscript" => {
                let mut cursor = node.walk();
                let indices: Vec<Node<'_>> = node.children_by_field_name("subscript", &mut cursor).collect();
                for index in indices {
                    if index.kind() == "slice" {
                        let mut c = index.walk();
                        let bounds: Vec<Node<'_>> = index.named_children(&mut c).collect();
                        for bound in bounds {
                            self.off_by_one(bound);
                            self.negate_index(bound);
                        }
                    } else if index.kind() != "string" {
                        self.off_by_one(index);
                        self.negate_index(index);
                    }
                }
            }
            "call" => {
                self.call(node);
                self.unwrap_call(node);
            }
            "identifier" => {
                self.variable_misuse(node);
                self.undefined_name(node);
            }
            "true" => self.push(Operator::Literal, node, "False".to_string()),
            "false" => self.push(Operator::Literal, node, "True".to_string()),
            "none" => self.push(Operator::Literal, node, "0".to_string()),
            "list" | "dictionary" | "tuple" | "set" if node.named_child_count() == 0 => {
                for alt in ["[]", "{}", "()", "set()"] {
                    self.push(Operator::Literal, node, alt.to_string());
                }
            }
            "string" if self.text(node).len() <= 3 && !self.text(node).contains('{') => {
                let quote = if self.text(node).contains('\'') { "\"" } else { "'" };
                let text = self.text(node);
                let empty = text.chars().filter(|c| *c == '\'' || *c == '"').count() == text.len();
                let alt = if empty { format!("{quote} {quote}") } else { format!("{quote}{quote}") };
                self.push(Operator::Literal, node, alt);
            }
            "string" => self.format_directives(node),
            "attribute" => self.attribute_misuse(node),
            "except_clause" => self.exception_type(node),
            "yield" => self.yield_from(node),
            _ => {}
        }
        self.wrap(node);
        self.expression_off_by_one(node);
        self.drop_element(node);
    }

    /// `node` removed from the list, tuple or set display it is an element of (with one of
    /// its commas; a tuple keeps the comma that makes it one: `(a, b)` → `(b,)`).
    fn drop_element(&mut self, node: Node<'_>) {
        let Some(parent) = node.parent().filter(|p| matches!(p.kind(), "list" | "tuple" | "set")) else { return };
        let mut cursor = parent.walk();
        let elements: Vec<Node<'_>> = parent.named_children(&mut cursor).filter(|c| c.kind() != "comment").collect();
        let Some(at) = elements.iter().position(|e| e.id() == node.id()) else { return };
        if elements.len() < 2 || elements.iter().any(|e| matches!(e.kind(), "list_splat" | "parenthesized_list_splat"))
        {
            return;
        }
        let keeps_comma = parent.kind() == "tuple" && elements.len() == 2;
        let (range, content) = match (elements.get(at + 1), at.checked_sub(1).map(|i| elements[i])) {
            (Some(next), _) if keeps_comma => (node.start_byte()..next.end_byte(), format!("{},", self.text(*next))),
            (Some(next), _) => (node.start_byte()..next.start_byte(), String::new()),
            (None, Some(previous)) => {
                (previous.end_byte()..node.end_byte(), if keeps_comma { ",".into() } else { String::new() })
            }
            (None, None) => return,
        };
        let description = format!("drop `{}` from `{}`", shorten(self.text(node)), shorten(self.text(parent)));
        self.out.push(Mutation {
            operator: Operator::DropElement,
            edit: Edit::replacement(range, content),
            description,
        });
    }

    /// `v` → `v + 1` / `v - 1` where `v` is assigned, returned, compared or passed.
    fn expression_off_by_one(&mut self, node: Node<'_>) {
        if !matches!(node.kind(), "identifier" | "call" | "attribute" | "subscript" | "binary_operator") {
            return;
        }
        let Some(parent) = node.parent() else { return };
        let field = field_of(parent, node);
        let position = matches!(
            (parent.kind(), field.as_deref()),
            ("assignment", Some("right")) | ("return_statement", _) | ("comparison_operator", _) | ("argument_list", _)
        );
        let in_range = parent.kind() == "argument_list"
            && parent.parent().and_then(|c| c.child_by_field_name("function")).is_some_and(|f| self.text(f) == "range");
        if !position || in_range || enclosing_function(node).is_none() {
            return;
        }
        let before = self.out.len();
        self.off_by_one(node);
        for m in &mut self.out[before..] {
            m.operator = Operator::ExpressionOffByOne;
        }
    }

    /// Missing guard clauses before `node`: for each of (at most four) names of the function's
    /// scope that the statement (a compound one: its condition or iterable) reads, `if not n:`
    /// or `if n is None:` followed by `continue` inside a loop, else by `return`, `return n`,
    /// and in a method that returns something of `self`, `return self`.
    fn guard_clauses(&mut self, node: Node<'_>, function: Node<'_>, scope: &[String], (indent, at): (&str, usize)) {
        let header = match node.kind() {
            "if_statement" | "while_statement" => node.child_by_field_name("condition"),
            "for_statement" => node.child_by_field_name("right"),
            "expression_statement" | "return_statement" => Some(node),
            _ => None,
        };
        let Some(header) = header else { return };
        let mut names: Vec<String> = Vec::new();
        let mut stack = vec![header];
        while let Some(n) = stack.pop() {
            let text = self.text(n);
            let readable = n.kind() == "identifier" && is_free_load(n) && !matches!(text, "self" | "cls");
            if readable && scope.iter().any(|s| s == text) && !names.iter().any(|m| m == text) {
                names.push(text.to_string());
            }
            let mut cursor = n.walk();
            let children: Vec<Node<'_>> = n.named_children(&mut cursor).collect();
            stack.extend(children.into_iter().rev());
        }
        let in_loop = inside_loop(node, function);
        let returns_self = !in_loop && self.returns_of_self(function);
        let unit = if indent.contains('\t') { "\t" } else { "    " };
        for name in names.iter().take(4) {
            let mut exits = if in_loop {
                vec!["continue".to_string()]
            } else {
                vec!["return".to_string(), format!("return {name}")]
            };
            if returns_self {
                exits.push("return self".to_string());
            }
            for condition in [format!("not {name}"), format!("{name} is None")] {
                for exit in &exits {
                    self.out.push(Mutation {
                        operator: Operator::GuardClause,
                        edit: Edit::insertion(at, format!("{indent}if {condition}:\n{indent}{unit}{exit}\n")),
                        description: format!("insert `if {condition}: {exit}`"),
                    });
                }
            }
        }
    }

    /// Whether a method (first parameter `self`) returns something of `self` somewhere
    /// (`return self.replace(...)`): an unchanged `self` is then a natural early result.
    fn returns_of_self(&self, function: Node<'_>) -> bool {
        let first = function.child_by_field_name("parameters").and_then(|p| p.named_child(0));
        if first.map(|f| self.text(f)) != Some("self") {
            return false;
        }
        let mut stack = vec![function];
        while let Some(n) = stack.pop() {
            if n.kind() == "return_statement" && n.named_child(0).is_some_and(|v| self.text(v).starts_with("self")) {
                return true;
            }
            let mut cursor = n.walk();
            stack.extend(n.named_children(&mut cursor).filter(|c| c.kind() != "function_definition"));
        }
        false
    }

    /// Statement-level operators for a statement starting on the line.
    fn statement(&mut self, node: Node<'_>) {
        let Some(parent) = node.parent() else { return };
        if parent.kind() != "block" || !is_statement(node.kind()) {
            return;
        }
        let Some(function) = enclosing_function(node) else { return };
        let scope: Vec<String> = scope_names(self.parsed, function).into_iter().collect();
        let line_start = node.start_byte() - node.start_position().column;
        // The statement's own indentation: tabs stay tabs (spaces would not compile there).
        let indent = match &self.parsed.text()[line_start..node.start_byte()] {
            lead if lead.bytes().all(|b| b == b' ' || b == b'\t') => lead.to_string(),
            _ => " ".repeat(node.start_position().column),
        };
        let line_end = self.parsed.text()[node.end_byte()..]
            .find('\n')
            .map_or(self.parsed.text().len(), |i| node.end_byte() + i + 1);
        let siblings = parent.named_child_count();
        // Delete (or replace by `pass` when it is the only statement of its block).
        if siblings == 1 {
            self.push(Operator::DeleteStatement, node, "pass".to_string());
        } else {
            self.out.push(Mutation {
                operator: Operator::DeleteStatement,
                edit: Edit::deletion(line_start..line_end),
                description: format!("delete `{}`", shorten(self.text(node))),
            });
        }
        // Conditions: widen or narrow with None/emptiness checks of names in scope.
        if matches!(node.kind(), "if_statement" | "while_statement") {
            if let Some(cond) = node.child_by_field_name("condition") {
                let c = self.text(cond).to_string();
                let c = if cond.kind() == "boolean_operator" { format!("({c})") } else { c };
                for name in &scope {
                    for variant in [
                        format!("{c} and {name} is not None"),
                        format!("{c} or {name} is None"),
                        format!("{c} and {name}"),
                        format!("{c} or not {name}"),
                    ] {
                        self.push(Operator::ConditionChange, cond, variant);
                    }
                }
            }
        }
        // Return values.
        if node.kind() == "return_statement" {
            let value = node.named_child(0);
            let current = value.map(|v| self.text(v).to_string()).unwrap_or_default();
            let mut alternatives: Vec<String> = scope.iter().filter(|n| **n != current).cloned().collect();
            if value.is_some() {
                alternatives.push("None".to_string());
            }
            // A base case returning an empty list often should return one element: `[[]]`
            // (the empty combination) or a name of the scope.
            if value.is_some_and(|v| v.kind() == "list" && v.named_child_count() == 0) {
                alternatives.push("[[]]".to_string());
                alternatives.extend(scope.iter().map(|n| format!("[{n}]")));
            }
            // A constant verdict that should depend on the state reached: `return depth == 0`.
            if value.is_some_and(|v| matches!(v.kind(), "true" | "false")) {
                for name in &scope {
                    alternatives.push(format!("{name} == 0"));
                    alternatives.push(format!("not {name}"));
                }
            }
            for alt in alternatives {
                self.push(Operator::ReturnValue, node, format!("return {alt}"));
            }
        }
        self.guard_clauses(node, function, &scope, (&indent, line_start));
        let is_last = function
            .child_by_field_name("body")
            .and_then(|b| b.named_child(b.named_child_count().saturating_sub(1)))
            .is_some_and(|last| last.id() == node.id());
        if is_last && node.kind() != "return_statement" {
            for name in &scope {
                self.out.push(Mutation {
                    operator: Operator::ReturnValue,
                    edit: Edit::insertion(line_end, format!("{indent}return {name}\n")),
                    description: format!("add `return {name}`"),
                });
            }
        }
        // Insert a copy of another simple statement of the function before this one.
        let mut donors: Vec<String> = Vec::new();
        let mut stack = vec![function.child_by_field_name("body")];
        while let Some(Some(n)) = stack.pop() {
            let mut cursor = n.walk();
            for child in n.named_children(&mut cursor) {
                if matches!(child.kind(), "function_definition" | "class_definition") {
                    continue;
                }
                if matches!(
                    child.kind(),
                    "expression_statement" | "return_statement" | "break_statement" | "continue_statement"
                ) && child.id() != node.id()
                    && !self.text(child).contains('\n')
                {
                    donors.push(self.text(child).to_string());
                }
                stack.push(Some(child));
            }
        }
        // Updates the function may be missing: `c.add(v)` / `c.append(v)` on a collection the
        // function (or an enclosing one) builds or updates, and `a = b` for a local `a`
        // assigned elsewhere in the function (a state variable not advanced on some path).
        let mut updates: Vec<String> = Vec::new();
        let indexed = indexed_sequences(self.parsed, function);
        for (collection, method) in collections_visible(self.parsed, function) {
            updates.extend(scope.iter().filter(|v| **v != collection).map(|v| format!("{collection}.{method}({v})")));
            // A list filled element by element from sequences walked by index may miss their
            // remainders (`out.extend(xs[i:])`), one or all of them.
            if method == "append" {
                let rests: Vec<String> = indexed
                    .iter()
                    .filter(|(seq, _)| *seq != collection)
                    .map(|(seq, index)| format!("{collection}.extend({seq}[{index}:])"))
                    .collect();
                if rests.len() > 1 {
                    updates.push(rests.join(&format!("\n{indent}")));
                }
                updates.extend(rests);
            }
        }
        for target in assigned_names(self.parsed, function) {
            updates.extend(scope.iter().filter(|v| **v != target).map(|v| format!("{target} = {v}")));
        }
        donors.sort();
        donors.dedup();
        updates.retain(|u| !donors.contains(u));
        for text in updates {
            self.out.push(Mutation {
                operator: Operator::InsertStatement,
                edit: Edit::insertion(line_start, format!("{indent}{text}\n")),
                description: format!("insert `{}`", shorten(&text)),
            });
        }
        for donor in donors {
            let variants = renamed_variants(&donor, &scope);
            for text in std::iter::once(donor.clone()).chain(variants) {
                self.out.push(Mutation {
                    operator: Operator::InsertStatement,
                    edit: Edit::insertion(line_start, format!("{indent}{text}\n")),
                    description: format!("insert `{}`", shorten(&text)),
                });
            }
        }
    }

    /// `xs[n]` → `xs[-n]`, `xs[n:]` → `xs[-n:]`: counting from the other end (names,
    /// attributes, calls and non-zero integers only).
    fn negate_index(&mut self, index: Node<'_>) {
        if matches!(index.kind(), "identifier" | "attribute" | "call")
            || (index.kind() == "integer" && self.text(index) != "0")
        {
            let negated = format!("-{}", self.text(index));
            self.push(Operator::Negation, index, negated);
        }
    }

    /// `except KeyError` → `except IndexError`, ...: the handled type is another builtin
    /// exception often confused with it (also inside `except X as e` and tuples).
    fn exception_type(&mut self, node: Node<'_>) {
        let mut cursor = node.walk();
        let Some(mut handled) = node.named_children(&mut cursor).find(|c| c.kind() != "block" && c.kind() != "comment")
        else {
            return;
        };
        if handled.kind() == "as_pattern" {
            let Some(inner) = handled.named_child(0) else { return };
            handled = inner;
        }
        let mut types = vec![handled];
        if handled.kind() == "tuple" {
            let mut c = handled.walk();
            types = handled.named_children(&mut c).collect();
        }
        for ty in types.into_iter().filter(|t| t.kind() == "identifier") {
            let name = self.text(ty).to_string();
            if !CONFUSED_EXCEPTIONS.contains(&name.as_str()) {
                continue;
            }
            for other in CONFUSED_EXCEPTIONS.iter().filter(|o| **o != name) {
                self.push(Operator::ExceptionType, ty, (*other).to_string());
            }
        }
    }

    /// `yield e` ↔ `yield from e` (a generator delegating to another, or yielding it whole).
    fn yield_from(&mut self, node: Node<'_>) {
        let Some(value) = node.named_child(0) else { return };
        let text = self.text(value).to_string();
        // The `from` keyword token, not text: `yield from_x` does not delegate.
        let delegates = node.child(1).is_some_and(|token| token.kind() == "from");
        let replacement = if delegates { format!("yield {text}") } else { format!("yield from {text}") };
        self.push(Operator::YieldFrom, node, replacement);
    }

    /// A call replaced by one of its arguments: `len(x)` → `x`, and for a plain function of
    /// at most three positional arguments each of them (`max(x, 0)` → `x`).
    fn unwrap_call(&mut self, node: Node<'_>) {
        let Some(args) = node.child_by_field_name("arguments") else { return };
        if args.kind() != "argument_list" {
            return;
        }
        let mut cursor = args.walk();
        let all: Vec<Node<'_>> = args.named_children(&mut cursor).filter(|a| a.kind() != "comment").collect();
        let plain = |a: &Node<'_>| !matches!(a.kind(), "keyword_argument" | "list_splat" | "dictionary_splat");
        let simple_callee = node.child_by_field_name("function").is_some_and(|f| f.kind() == "identifier");
        let several = simple_callee && (2..=3).contains(&all.len()) && all.iter().all(plain);
        if (all.len() == 1 && plain(&all[0])) || several {
            for arg in all {
                self.push(Operator::UnwrapCall, node, self.text(arg).to_string());
            }
        }
    }

    /// Another attribute of the file in place of this one: first those used on the same
    /// receiver (`self.`) in the enclosing class (or function), then by spelling, at most
    /// [`MAX_ATTRIBUTE_ALTERNATIVES`] (a large module uses hundreds of attribute names).
    fn attribute_misuse(&mut self, node: Node<'_>) {
        let Some(attr) = node.child_by_field_name("attribute") else { return };
        let name = self.text(attr).to_string();
        let receiver = node.child_by_field_name("object").map(|o| self.text(o).to_string());
        let region = enclosing_class(node).or_else(|| enclosing_function(node)).unwrap_or(self.parsed.root());
        let same_receiver = receiver.map(|r| attributes_on(self.parsed, region, &r)).unwrap_or_default();
        let mut others: Vec<(bool, usize, &String)> = self
            .scope
            .attributes
            .iter()
            .filter(|a| **a != name)
            .map(|a| (!same_receiver.contains(a), edit_distance(&name, a), a))
            .collect();
        others.sort();
        let others: Vec<String> =
            others.into_iter().take(MAX_ATTRIBUTE_ALTERNATIVES).map(|(_, _, a)| a.clone()).collect();
        for other in others {
            self.push(Operator::AttributeMisuse, attr, other);
        }
    }

    /// Whether `node` is the one argument of `int(...)` (truncation toward zero).
    fn truncated(&self, node: Node<'_>) -> bool {
        let Some(args) = node.parent().filter(|a| a.kind() == "argument_list") else { return false };
        let Some(call) = args.parent().filter(|c| c.kind() == "call") else { return false };
        let callee = call.child_by_field_name("function").map(|f| self.text(f));
        callee == Some("int") && args.named_child_count() == 1
    }

    /// Wrap value expressions (not call targets, assignment targets or statements).
    fn wrap(&mut self, node: Node<'_>) {
        if !matches!(node.kind(), "identifier" | "binary_operator" | "subscript" | "call" | "attribute") {
            return;
        }
        let Some(parent) = node.parent() else { return };
        let field = field_of(parent, node);
        let is_value = !matches!(
            (parent.kind(), field.as_deref()),
            ("call", Some("function"))
                | ("attribute", _)
                | ("keyword_argument", Some("name"))
                | ("assignment" | "augmented_assignment" | "for_statement", Some("left"))
                | ("expression_statement" | "function_definition" | "parameters" | "default_parameter", _)
                | ("import_statement" | "import_from_statement" | "dotted_name" | "aliased_import", _)
        );
        if !is_value || (node.kind() == "identifier" && enclosing_function(node).is_none()) {
            return;
        }
        let text = self.text(node).to_string();
        let mut wrappers: Vec<String> =
            vec![format!("abs({text})"), format!("len({text})"), format!("max({text}, 0)"), format!("min({text}, 0)")];
        wrappers.extend(self.scope.unary_functions.iter().map(|f| format!("{f}({text})")));
        // `int(seconds)` truncates where rounding was meant: `int(round(seconds))`.
        if self.truncated(node) {
            wrappers.push(format!("round({text})"));
        }
        // `best = candidate` that should keep the best so far: `best = max(best, candidate)`.
        if parent.kind() == "assignment" && field.as_deref() == Some("right") {
            if let Some(target) = parent.child_by_field_name("left").filter(|l| l.kind() == "identifier") {
                let target = self.text(target).to_string();
                if target != text {
                    wrappers.push(format!("max({target}, {text})"));
                    wrappers.push(format!("min({target}, {text})"));
                }
            }
        }
        for wrapped in wrappers {
            self.push(Operator::WrapExpression, node, wrapped);
        }
    }

    /// `"%Y-%d-%m"` → `"%Y-%m-%d"`: two adjacent `%` directives of a format string (printf,
    /// `strftime`, logging) swapped.
    fn format_directives(&mut self, node: Node<'_>) {
        let text = self.text(node).as_bytes().to_vec();
        let mut directives = Vec::new();
        let mut i = 0;
        while i + 1 < text.len() {
            match (text[i], text[i + 1]) {
                (b'%', b'%') => i += 2,
                (b'%', c) if c.is_ascii_alphabetic() => {
                    directives.push(i + 1);
                    i += 2;
                }
                _ => i += 1,
            }
        }
        if directives.len() > MAX_DIRECTIVES {
            return;
        }
        for pair in directives.windows(2) {
            if text[pair[0]] != text[pair[1]] {
                let mut swapped = text.clone();
                swapped.swap(pair[0], pair[1]);
                if let Ok(swapped) = String::from_utf8(swapped) {
                    self.push(Operator::Literal, node, swapped);
                }
            }
        }
    }

    fn comparison(&mut self, node: Node<'_>) {
        let mut cursor = node.walk();
        let ops: Vec<Node<'_>> = node.children_by_field_name("operators", &mut cursor).collect();
        for op in ops {
            let text = self.text(op).split_whitespace().collect::<Vec<_>>().join(" ");
            let alternatives: Vec<&str> = match text.as_str() {
                "in" => vec!["not in"],
                "not in" => vec!["in"],
                "is" => vec!["is not", "=="],
                "is not" => vec!["is", "!="],
                t if COMPARISONS.contains(&t) => COMPARISONS.iter().copied().filter(|c| *c != t).collect(),
                _ => vec![],
            };
            for alt in alternatives {
                self.push(Operator::Comparison, op, alt.to_string());
            }
        }
    }

    fn binary(&mut self, node: Node<'_>) {
        if let Some(op) = node.child_by_field_name("operator") {
            let text = self.text(op).to_string();
            if let Some((_, alts)) = ARITHMETIC.iter().find(|(o, _)| *o == text) {
                for alt in *alts {
                    self.push(Operator::Arithmetic, op, (*alt).to_string());
                }
            }
            // `a - b` → `b - a`; `+` too, for sequences and strings (`s + c` vs `c + s`).
            if SWAPPABLE.contains(&text.as_str()) {
                if let (Some(left), Some(right)) = (node.child_by_field_name("left"), node.child_by_field_name("right"))
                {
                    let (tl, tr) = (self.text(left).to_string(), self.text(right).to_string());
                    if tl != tr {
                        let between = self.parsed.text()[left.end_byte()..right.start_byte()].to_string();
                        self.out.push(Mutation {
                            operator: Operator::ArgumentSwap,
                            edit: Edit::replacement(left.start_byte()..right.end_byte(), format!("{tr}{between}{tl}")),
                            description: format!("swap the operands of `{text}`"),
                        });
                    }
                }
            }
        }
        self.remove_operand(node);
    }

    fn remove_operand(&mut self, node: Node<'_>) {
        for field in ["left", "right"] {
            if let Some(operand) = node.child_by_field_name(field) {
                let text = self.text(operand).to_string();
                self.push(Operator::RemoveOperand, node, text);
            }
        }
    }

    fn augmented(&mut self, node: Node<'_>) {
        if let Some(op) = node.child_by_field_name("operator") {
            let text = self.text(op).trim_end_matches('=').to_string();
            if let Some((_, alts)) = ARITHMETIC.iter().find(|(o, _)| *o == text) {
                for alt in *alts {
                    self.push(Operator::Arithmetic, op, format!("{alt}="));
                }
            }
        }
    }

    fn integer(&mut self, node: Node<'_>) {
        let text = self.text(node).replace('_', "");
        let Ok(value) = text.parse::<i64>() else { return };
        // A literal at the edge of i64 (`9223372036854775807`) has no successor here.
        let mut values: Vec<i64> = value.checked_add(1).into_iter().collect();
        if value > 0 {
            values.push(value - 1);
        }
        // `e - 1` → `e` rather than `e - 0`.
        let folds_parent = node.parent().filter(|p| {
            p.kind() == "binary_operator"
                && p.child_by_field_name("right").is_some_and(|r| r.id() == node.id())
                && p.child_by_field_name("operator").is_some_and(|o| matches!(self.text(o), "+" | "-"))
        });
        for v in values {
            match (v, folds_parent) {
                (0, Some(parent)) => {
                    let left = parent.child_by_field_name("left").map(|l| self.text(l).to_string());
                    if let Some(left) = left {
                        self.push(Operator::ConstantOffByOne, parent, left);
                    }
                }
                _ => self.push(Operator::ConstantOffByOne, node, v.to_string()),
            }
        }
    }

    /// `expr` → `expr + 1` / `expr - 1`, folding integer literals.
    fn off_by_one(&mut self, node: Node<'_>) {
        if node.kind() == "integer" {
            return; // covered by ConstantOffByOne
        }
        let text = self.text(node).to_string();
        let atom =
            matches!(node.kind(), "identifier" | "call" | "attribute" | "subscript" | "parenthesized_expression");
        let base = if atom { text } else { format!("({text})") };
        if let Some(folded) = fold_offset(self.parsed, node) {
            for replacement in folded {
                self.push(Operator::IndexOffByOne, node, replacement);
            }
            return;
        }
        self.push(Operator::IndexOffByOne, node, format!("{base} + 1"));
        self.push(Operator::IndexOffByOne, node, format!("{base} - 1"));
    }

    fn call(&mut self, node: Node<'_>) {
        let Some(args) = node.child_by_field_name("arguments") else { return };
        let mut cursor = args.walk();
        let positional: Vec<Node<'_>> = args
            .named_children(&mut cursor)
            .filter(|a| !matches!(a.kind(), "keyword_argument" | "list_splat" | "dictionary_splat" | "comment"))
            .collect();
        let is_range = node.child_by_field_name("function").is_some_and(|f| self.text(f) == "range");
        // Dual builtins: `min` ↔ `max` (a flipped comparison), `any` ↔ `all` (`or` ↔ `and`).
        if let Some(function) = node.child_by_field_name("function").filter(|f| f.kind() == "identifier") {
            let dual = match self.text(function) {
                "min" => Some(("max", Operator::Comparison)),
                "max" => Some(("min", Operator::Comparison)),
                "any" => Some(("all", Operator::Boolean)),
                "all" => Some(("any", Operator::Boolean)),
                _ => None,
            };
            if let Some((name, operator)) = dual {
                self.push(operator, function, name.to_string());
            }
        }
        if is_range {
            for arg in &positional {
                self.off_by_one(*arg);
            }
        }
        for pair in positional.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let (ta, tb) = (self.text(a).to_string(), self.text(b).to_string());
            if ta == tb {
                continue;
            }
            let between = &self.parsed.text()[a.end_byte()..b.start_byte()];
            let range = a.start_byte()..b.end_byte();
            self.out.push(Mutation {
                operator: Operator::ArgumentSwap,
                edit: Edit::replacement(range, format!("{tb}{between}{ta}")),
                description: format!("swap `{}` and `{}`", shorten(&ta), shorten(&tb)),
            });
        }
    }

    fn variable_misuse(&mut self, node: Node<'_>) {
        let Some(parent) = node.parent() else { return };
        // Only plain loads of variables: not attribute names, keywords, definitions or callees.
        let field = field_of(parent, node);
        match (parent.kind(), field.as_deref()) {
            ("attribute", Some("attribute"))
            | ("keyword_argument", Some("name"))
            | ("function_definition" | "class_definition", _)
            | ("parameters" | "default_parameter" | "typed_parameter" | "typed_default_parameter", _)
            | ("call", Some("function"))
            | ("assignment" | "augmented_assignment", Some("left"))
            | ("for_statement" | "for_in_clause", Some("left"))
            | ("import_statement" | "import_from_statement" | "dotted_name" | "aliased_import", _)
            | ("global_statement" | "nonlocal_statement", _) => return,
            _ => {}
        }
        let Some(function) = enclosing_function(node) else { return };
        let name = self.text(node).to_string();
        let scope = scope_names(self.parsed, function);
        if !scope.contains(&name) {
            return;
        }
        for other in scope {
            if other != name {
                self.push(Operator::VariableMisuse, node, other);
            }
        }
    }
}

impl Generator<'_> {
    /// A name bound nowhere in the file and no builtin (a `NameError` when it runs) →
    /// the closest names by edit distance among those visible from its function.
    fn undefined_name(&mut self, node: Node<'_>) {
        const CLOSEST: usize = 4;
        let Some(bound) = &self.scope.bound else { return };
        let name = self.text(node).to_string();
        let dunder = name.starts_with("__") && name.ends_with("__");
        if dunder
            || bound.contains(&name)
            || is_builtin(&name)
            || SITE_BUILTINS.contains(&name.as_str())
            || !is_free_load(node)
        {
            return;
        }
        let Some(function) = enclosing_function(node) else { return };
        if let Some(alias) = import_alias(self.parsed, &name) {
            // `from datetime import tzinfo as dt_tzinfo` and a `tzinfo` that is not defined: the
            // name is imported under another one, and that one is the fix (no guess needed).
            self.push(Operator::VariableMisuse, node, alias);
            return;
        }
        if let Some((_, py3)) = PY2_NAMES.iter().find(|(py2, _)| *py2 == name) {
            // A Python 2 compatibility name (`six.text_type`, `unicode`) left behind when the
            // project dropped its compatibility layer: the Python 3 builtin it stood for.
            self.push(Operator::VariableMisuse, node, (*py3).to_string());
        }
        let mut visible = self.scope.module_names.clone();
        let mut current = Some(function);
        while let Some(f) = current {
            visible.extend(scope_names(self.parsed, f));
            current = enclosing_function(f);
        }
        let callee =
            node.parent().is_some_and(|p| p.kind() == "call" && field_of(p, node).as_deref() == Some("function"));
        if callee {
            let builtins = BUILTINS.iter().chain(SITE_BUILTINS);
            visible.extend(builtins.filter(|b| b.starts_with(char::is_lowercase)).map(|b| (*b).to_string()));
        }
        let mut ranked: Vec<(usize, String)> = visible.into_iter().map(|v| (edit_distance(&name, &v), v)).collect();
        ranked.sort();
        for (_, other) in ranked.into_iter().take(CLOSEST) {
            self.push(Operator::VariableMisuse, node, other);
        }
    }
}

/// Python 2 names (builtins, and `six`'s and compatibility modules' names for them) with the
/// Python 3 builtin that replaces them.
const PY2_NAMES: [(&str, &str); 14] = [
    ("basestring", "str"),
    ("binary_type", "bytes"),
    ("class_types", "type"),
    ("ifilter", "filter"),
    ("imap", "map"),
    ("integer_types", "int"),
    ("izip", "zip"),
    ("long", "int"),
    ("raw_input", "input"),
    ("string_types", "str"),
    ("text_type", "str"),
    ("unichr", "chr"),
    ("unicode", "str"),
    ("xrange", "range"),
];

/// The alias under which the module imports `name` (`from m import name as alias`, `import
/// name as alias`), when it does so once.
fn import_alias(parsed: &Parsed, name: &str) -> Option<String> {
    let mut aliases = BTreeSet::new();
    let mut stack = vec![parsed.root()];
    while let Some(n) = stack.pop() {
        if n.kind() == "aliased_import" {
            let imported = n.child_by_field_name("name").map(|d| parsed.node_text(d));
            let alias = n.child_by_field_name("alias").map(|a| parsed.node_text(a));
            let from = n.parent().is_some_and(|p| p.kind() == "import_from_statement");
            let names_it = imported.is_some_and(|i| if from { i == name } else { i.rsplit('.').next() == Some(name) });
            if let (true, Some(alias)) = (names_it, alias) {
                aliases.insert(alias.to_string());
            }
            continue;
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    (aliases.len() == 1).then(|| aliases.into_iter().next()).flatten()
}

/// Whether `node` lies in the body of a `for` or `while` loop of `function` (not of a nested
/// function).
fn inside_loop(node: Node<'_>, function: Node<'_>) -> bool {
    let mut current = node.parent();
    while let Some(n) = current.filter(|n| n.id() != function.id()) {
        if matches!(n.kind(), "for_statement" | "while_statement") {
            return true;
        }
        current = n.parent();
    }
    false
}

/// Whether identifier `node` reads a variable, as far as [`bound_names`] cannot tell: not an
/// attribute, keyword or module path, nor inside a type annotation.
fn is_free_load(node: Node<'_>) -> bool {
    let Some(parent) = node.parent() else { return false };
    match (parent.kind(), field_of(parent, node).as_deref()) {
        ("attribute", Some("attribute")) | ("keyword_argument", Some("name")) => return false,
        ("dotted_name" | "relative_import" | "aliased_import" | "import_from_statement", _) => return false,
        _ => {}
    }
    let mut current = Some(parent);
    while let Some(n) = current {
        if n.kind() == "type" {
            return false;
        }
        current = n.parent();
    }
    true
}

/// Names bound under `node`: assignment, loop and `as` targets, parameters, definitions,
/// imports, `global`/`nonlocal` names; inside nested functions and classes too when `nested`.
/// `None` on a star import or a `match` (their names are not followed).
fn bound_names(parsed: &Parsed, node: Node<'_>, nested: bool) -> Option<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        let targets: Vec<Node<'_>> = match n.kind() {
            "wildcard_import" | "match_statement" => return None,
            "function_definition" | "class_definition" => {
                names.extend(n.child_by_field_name("name").map(|name| parsed.node_text(name).to_string()));
                if !nested && n.id() != node.id() {
                    continue;
                }
                Vec::new()
            }
            "parameters" | "lambda_parameters" | "global_statement" | "nonlocal_statement" => vec![n],
            "assignment" | "augmented_assignment" | "for_statement" | "for_in_clause" => {
                n.child_by_field_name("left").into_iter().collect()
            }
            "named_expression" => n.child_by_field_name("name").into_iter().collect(),
            "as_pattern" => n.child_by_field_name("alias").into_iter().collect(),
            "aliased_import" => n.child_by_field_name("alias").into_iter().collect(),
            "import_statement" | "import_from_statement" => imported(n),
            _ => Vec::new(),
        };
        for target in targets {
            all_identifiers(parsed, target, &mut names);
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    Some(names)
}

/// The nodes naming what an import binds: `a` of `import a.b`, `b` of `from m import b`.
fn imported(import: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = import.walk();
    let names: Vec<Node<'_>> = import.children_by_field_name("name", &mut cursor).collect();
    names
        .into_iter()
        .filter(|n| n.kind() == "dotted_name")
        .filter_map(|n| {
            if import.kind() == "import_statement" {
                n.named_child(0)
            } else {
                n.named_child(n.named_child_count().checked_sub(1)?)
            }
        })
        .collect()
}

/// Every identifier under `node` (a superset of the names a target binds: erring towards
/// "bound" keeps [`Generator::undefined_name`] from flagging defined names).
fn all_identifiers(parsed: &Parsed, node: Node<'_>, names: &mut BTreeSet<String>) {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.kind() == "identifier" {
            names.insert(parsed.node_text(n).to_string());
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
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

/// `n + 1` / `n - 1` folded when the node already ends in `± integer`.
fn fold_offset(parsed: &Parsed, node: Node<'_>) -> Option<Vec<String>> {
    if node.kind() != "binary_operator" {
        return None;
    }
    let op = node.child_by_field_name("operator")?;
    let right = node.child_by_field_name("right")?;
    let left = node.child_by_field_name("left")?;
    if right.kind() != "integer" {
        return None;
    }
    let sign = match parsed.node_text(op) {
        "+" => 1,
        "-" => -1,
        _ => return None,
    };
    let value: i64 = parsed.node_text(right).replace('_', "").parse().ok()?;
    let left_text = parsed.node_text(left);
    let mut out = Vec::new();
    for delta in [1, -1] {
        let Some(total) = (sign * value).checked_add(delta) else { continue };
        out.push(match total {
            0 => left_text.to_string(),
            t if t > 0 => format!("{left_text} + {t}"),
            t => format!("{left_text} - {}", t.unsigned_abs()),
        });
    }
    Some(out)
}

/// Builtin exceptions that handlers confuse (`except IndexError` for a dict lookup, ...).
const CONFUSED_EXCEPTIONS: [&str; 8] = [
    "KeyError",
    "IndexError",
    "LookupError",
    "ValueError",
    "TypeError",
    "AttributeError",
    "ZeroDivisionError",
    "Exception",
];

fn is_statement(kind: &str) -> bool {
    matches!(
        kind,
        "expression_statement"
            | "return_statement"
            | "pass_statement"
            | "break_statement"
            | "continue_statement"
            | "raise_statement"
            | "assert_statement"
            | "delete_statement"
            | "if_statement"
            | "for_statement"
            | "while_statement"
            | "try_statement"
            | "with_statement"
    )
}

/// `text` with one whole-word occurrence of a scope name replaced by another (bounded).
fn renamed_variants(text: &str, scope: &[String]) -> Vec<String> {
    const MAX: usize = 12;
    if text.len() > 60 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for from in scope {
        for (at, _) in text.match_indices(from.as_str()) {
            let before = text[..at].chars().next_back();
            let after = text[at + from.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
            if word(before) || after.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            for to in scope.iter().filter(|t| *t != from) {
                out.push(format!("{}{to}{}", &text[..at], &text[at + from.len()..]));
                if out.len() >= MAX {
                    return out;
                }
            }
        }
    }
    out
}

fn field_of(parent: Node<'_>, child: Node<'_>) -> Option<String> {
    let mut cursor = parent.walk();
    for (i, c) in parent.children(&mut cursor).enumerate() {
        if c.id() == child.id() {
            return parent.field_name_for_child(u32::try_from(i).ok()?).map(str::to_string);
        }
    }
    None
}

/// The innermost function definition around `node`.
/// Alternatives [`Operator::AttributeMisuse`] proposes per attribute.
const MAX_ATTRIBUTE_ALTERNATIVES: usize = 16;

fn enclosing_class(node: Node<'_>) -> Option<Node<'_>> {
    enclosing(node, "class_definition")
}

/// Attribute names used on `receiver` (`self.name`) anywhere under `region`.
fn attributes_on(parsed: &Parsed, region: Node<'_>, receiver: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![region];
    while let Some(n) = stack.pop() {
        if n.kind() == "attribute" && n.child_by_field_name("object").is_some_and(|o| parsed.node_text(o) == receiver) {
            if let Some(attr) = n.child_by_field_name("attribute") {
                out.insert(parsed.node_text(attr).to_string());
            }
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    out
}

pub(crate) fn enclosing_function(node: Node<'_>) -> Option<Node<'_>> {
    enclosing(node, "function_definition")
}

/// The nearest ancestor of `node` of this kind.
fn enclosing<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
    let mut current = node.parent();
    while let Some(n) = current {
        if n.kind() == kind {
            return Some(n);
        }
        current = n.parent();
    }
    None
}

/// Collections `function` or an enclosing function builds (`set()`, `[]`, `list()`,
/// `deque()`, set literals) or grows (`x.add(..)`, `x.append(..)`), with the method that grows
/// them.
fn collections_visible(parsed: &Parsed, function: Node<'_>) -> BTreeSet<(String, &'static str)> {
    let mut found = BTreeSet::new();
    let mut current = Some(function);
    while let Some(f) = current {
        for node in own_body_nodes(f) {
            let grown = match node.kind() {
                "assignment" => {
                    let left = node.child_by_field_name("left").filter(|l| l.kind() == "identifier");
                    let method = node.child_by_field_name("right").and_then(|right| match right.kind() {
                        "list" | "list_comprehension" => Some("append"),
                        "set" | "set_comprehension" => Some("add"),
                        "call" => match right.child_by_field_name("function").map(|f| parsed.node_text(f)) {
                            Some("set") => Some("add"),
                            Some("list" | "deque" | "collections.deque") => Some("append"),
                            _ => None,
                        },
                        _ => None,
                    });
                    left.zip(method)
                }
                "call" => node.child_by_field_name("function").filter(|c| c.kind() == "attribute").and_then(|callee| {
                    let object = callee.child_by_field_name("object").filter(|o| o.kind() == "identifier");
                    let method = callee.child_by_field_name("attribute").and_then(|a| match parsed.node_text(a) {
                        "add" => Some("add"),
                        "append" => Some("append"),
                        _ => None,
                    });
                    object.zip(method)
                }),
                _ => None,
            };
            if let Some((name, method)) = grown {
                found.insert((parsed.node_text(name).to_string(), method));
            }
        }
        current = enclosing_function(f);
    }
    found
}

/// `(sequence, index)` name pairs subscripted as `sequence[index]` in `function`'s own body.
fn indexed_sequences(parsed: &Parsed, function: Node<'_>) -> BTreeSet<(String, String)> {
    own_body_nodes(function)
        .into_iter()
        .filter(|node| node.kind() == "subscript")
        .filter_map(|node| {
            let value = node.child_by_field_name("value").filter(|v| v.kind() == "identifier")?;
            let index = node.child_by_field_name("subscript").filter(|i| i.kind() == "identifier")?;
            Some((parsed.node_text(value).to_string(), parsed.node_text(index).to_string()))
        })
        .collect()
}

/// Plain names assigned (`name = ...`) in `function`'s own body.
fn assigned_names(parsed: &Parsed, function: Node<'_>) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = own_body_nodes(function)
        .into_iter()
        .filter(|node| node.kind() == "assignment")
        .filter_map(|node| node.child_by_field_name("left").filter(|l| l.kind() == "identifier"))
        .map(|left| parsed.node_text(left).to_string())
        .collect();
    names.remove("self");
    names
}

/// Every node of `function`'s own body: nested functions, classes and lambdas are left out.
fn own_body_nodes(function: Node<'_>) -> Vec<Node<'_>> {
    let mut nodes = Vec::new();
    let mut stack: Vec<Node<'_>> = function.child_by_field_name("body").into_iter().collect();
    while let Some(node) = stack.pop() {
        if matches!(node.kind(), "function_definition" | "class_definition" | "lambda") {
            continue;
        }
        nodes.push(node);
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    nodes
}

/// Parameters and locally bound names of `function` (not of nested functions).
#[must_use]
pub fn scope_names(parsed: &Parsed, function: Node<'_>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    if let Some(params) = function.child_by_field_name("parameters") {
        let mut cursor = params.walk();
        for p in params.named_children(&mut cursor) {
            let ident = if p.kind() == "identifier" {
                Some(p)
            } else {
                p.child_by_field_name("name").or_else(|| p.named_child(0))
            };
            if let Some(ident) = ident.filter(|i| i.kind() == "identifier") {
                names.insert(parsed.node_text(ident).to_string());
            }
        }
    }
    for node in own_body_nodes(function) {
        let target = match node.kind() {
            "assignment" | "augmented_assignment" | "for_statement" | "for_in_clause" => {
                node.child_by_field_name("left")
            }
            "named_expression" => node.child_by_field_name("name"),
            _ => None,
        };
        if let Some(target) = target {
            collect_identifiers(parsed, target, &mut names);
        }
    }
    names.remove("self");
    names.remove("cls");
    names
}

fn collect_identifiers(parsed: &Parsed, node: Node<'_>, names: &mut BTreeSet<String>) {
    match node.kind() {
        "identifier" => {
            names.insert(parsed.node_text(node).to_string());
        }
        "pattern_list" | "tuple_pattern" | "list_pattern" | "expression_list" | "tuple" | "list" => {
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                collect_identifiers(parsed, child, names);
            }
        }
        _ => {}
    }
}

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
    use crate::patch::Patch;

    fn variants(src: &str, line: usize, op: Operator) -> Vec<String> {
        let parsed = Parsed::new(src);
        let mut out: Vec<String> = mutations_at_line(&parsed, line)
            .into_iter()
            .filter(|m| m.operator == op)
            .map(|m| {
                let patched = Patch::single("m.py", m.edit).apply(src);
                patched.lines().nth(line - 1).unwrap().trim().to_string()
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn statements_inserted_in_a_tab_indented_function_are_indented_with_tabs() {
        let src = "def f(xs):\n\tout = []\n\tfor x in xs:\n\t\tout.append(x)\n\treturn out\n";
        let parsed = Parsed::new(src);
        let inserted: Vec<String> = mutations_at_line(&parsed, 5)
            .into_iter()
            .filter(|m| m.operator == Operator::InsertStatement && m.edit.range.is_empty())
            .map(|m| m.edit.content)
            .collect();
        assert!(!inserted.is_empty());
        assert!(inserted.iter().all(|text| text.starts_with('\t') && !text.starts_with("\t ")), "{inserted:?}");
        for text in &inserted {
            let patched = Parsed::new(src.replacen("\treturn out", &format!("{text}\treturn out"), 1));
            assert!(patched.is_valid(), "{text:?}");
        }
    }

    #[test]
    fn comparison_operators_are_swapped() {
        let v = variants("def f(a, b):\n    return a < b\n", 2, Operator::Comparison);
        assert_eq!(v, ["return a != b", "return a <= b", "return a == b", "return a > b", "return a >= b"]);
        let v = variants("def f(a, b):\n    return a not in b\n", 2, Operator::Comparison);
        assert_eq!(v, ["return a in b"]);
    }

    #[test]
    fn range_bounds_and_indices_are_shifted_by_one() {
        let src = "def f(xs):\n    for i in range(len(xs) - 1):\n        print(xs[i])\n";
        let v = variants(src, 2, Operator::IndexOffByOne);
        assert_eq!(v, ["for i in range(len(xs) - 2):", "for i in range(len(xs)):"]);
        let v = variants(src, 3, Operator::IndexOffByOne);
        assert_eq!(v, ["print(xs[i + 1])", "print(xs[i - 1])"]);
    }

    #[test]
    fn variables_are_replaced_only_by_names_of_the_same_scope() {
        let src = "G = 1\ndef f(a, b):\n    c = a\n    return c.real + a\n";
        let v = variants(src, 4, Operator::VariableMisuse);
        assert_eq!(v, ["return a.real + a", "return b.real + a", "return c.real + b", "return c.real + c"]);
    }

    #[test]
    fn call_arguments_are_swapped() {
        let v = variants("def f(a, b):\n    return g(a, b, k=1)\n", 2, Operator::ArgumentSwap);
        assert_eq!(v, ["return g(b, a, k=1)"]);
    }

    #[test]
    fn operands_of_non_commutative_operators_are_swapped() {
        let v = variants("def f(a, b):\n    return a - b * 2\n", 2, Operator::ArgumentSwap);
        assert_eq!(v, ["return b * 2 - a"]);
        let v = variants("def f(s, c):\n    s = s + c\n", 2, Operator::ArgumentSwap);
        assert_eq!(v, ["s = c + s"]);
        // `*` is commutative; equal operands are not swapped.
        assert!(variants("def f(a, b):\n    return a * b\n", 2, Operator::ArgumentSwap).is_empty());
        assert!(variants("def f(a):\n    return a - a\n", 2, Operator::ArgumentSwap).is_empty());
    }

    #[test]
    fn dual_builtins_are_exchanged() {
        let v = variants("def f(xs):\n    return min(xs) if any(xs) else 0\n", 2, Operator::Comparison);
        assert!(v.contains(&"return max(xs) if any(xs) else 0".to_string()), "{v:?}");
        let v = variants("def f(xs):\n    return min(xs) if any(xs) else 0\n", 2, Operator::Boolean);
        assert_eq!(v, ["return min(xs) if all(xs) else 0"]);
        // A local function that happens to be called `max` is still a call of `max`; methods are not.
        assert!(variants("def f(o):\n    return o.max(1)\n", 2, Operator::Comparison).is_empty());
    }

    #[test]
    fn the_largest_integer_literal_is_only_decremented() {
        let v = variants("def f():\n    return 9223372036854775807\n", 2, Operator::ConstantOffByOne);
        assert_eq!(v, ["return 9223372036854775806"]);
        let v = variants("def f(xs):\n    return xs[len(xs) + 9223372036854775807]\n", 2, Operator::IndexOffByOne);
        assert_eq!(v, ["return xs[len(xs) + 9223372036854775806]"]);
    }

    #[test]
    fn only_nodes_starting_on_the_line_are_mutated() {
        let src = "def f(a):\n    x = a + 1\n    return x * 2\n";
        let parsed = Parsed::new(src);
        for m in mutations_at_line(&parsed, 3) {
            assert!(m.edit.range.start >= src.find("    return").unwrap(), "{m:?}");
        }
    }

    #[test]
    fn an_undefined_name_imported_under_an_alias_is_replaced_by_the_alias_only() {
        let src = "from datetime import date\nfrom datetime import tzinfo as dt_tzinfo\nimport numpy.linalg as la\n\ndef now(tz):\n    if not isinstance(tz, tzinfo):\n        return date\n    return linalg.norm(tz)\n";
        let v = variants(src, 6, Operator::VariableMisuse);
        assert_eq!(v, ["if not isinstance(tz, dt_tzinfo):"], "{v:#?}");
        let v = variants(src, 8, Operator::VariableMisuse);
        assert_eq!(v, ["return la.norm(tz)"], "{v:#?}");
    }

    #[test]
    fn an_undefined_name_is_replaced_by_the_closest_visible_names() {
        let src = "import os.path\nfrom math import floor as fl\nLIMIT = 3\n\ndef spread(values, default=0):\n    low = min(values)\n    return hihg - low if values else defualt\n\ndef other():\n    high = 1\n    return high\n";
        let v = variants(src, 7, Operator::VariableMisuse);
        // `high` is bound in another function only: not visible from `spread`.
        assert!(v.contains(&"return hihg - low if values else default".to_string()), "{v:#?}");
        let replaced: Vec<&String> = v.iter().filter(|p| !p.contains("hihg")).collect();
        assert_eq!(replaced.len(), 4, "{v:#?}");
        assert!(replaced.iter().all(|p| !p.contains("high")), "{v:#?}");
        // Defined names, builtins, attributes, keywords and imports are left alone.
        let src = "import os.path\nfrom math import floor as fl\n\ndef f(xs, n=2):\n    try:\n        pass\n    except ValueError as err:\n        print(err)\n    with open(os.path.join('a')) as fh:\n        return fl(len(xs), key=n), [y for y in xs], fh, lambda z: z\n";
        for line in 1..=10 {
            let parsed = Parsed::new(src);
            let found: Vec<String> = mutations_at_line(&parsed, line)
                .into_iter()
                .filter(|m| m.operator == Operator::VariableMisuse)
                .map(|m| m.description)
                .filter(|d| {
                    d.starts_with("`os`")
                        || d.starts_with("`path`")
                        || d.starts_with("`fl`")
                        || d.starts_with("`print`")
                        || d.starts_with("`key`")
                        || d.starts_with("`err`")
                        || d.starts_with("`fh`")
                        || d.starts_with("`z`")
                })
                .collect();
            assert!(found.is_empty(), "line {line}: {found:#?}");
        }
    }

    #[test]
    fn a_python2_name_left_undefined_becomes_the_python3_builtin() {
        let src = "from .compat import PY2\n\ndef render(tokens):\n    return ''.join(map(text_type, tokens))\n";
        let v = variants(src, 4, Operator::VariableMisuse);
        assert!(v.contains(&"return ''.join(map(str, tokens))".to_string()), "{v:#?}");
        let defined = format!("text_type = str\n{src}");
        assert!(variants(&defined, 5, Operator::VariableMisuse).iter().all(|p| !p.contains("map(str,")), "defined");
    }

    #[test]
    fn an_undefined_callee_is_replaced_by_close_functions_and_builtins() {
        let src = "def total(xs):\n    return sum(xs)\n\ndef mean(xs):\n    return totl(xs) / lenght(xs)\n";
        let v = variants(src, 5, Operator::VariableMisuse);
        assert!(v.contains(&"return total(xs) / lenght(xs)".to_string()), "{v:#?}");
        assert!(v.contains(&"return totl(xs) / len(xs)".to_string()), "{v:#?}");
        // No name is flagged in a file with a star import.
        let v = variants(&format!("from helpers import *\n{src}"), 6, Operator::VariableMisuse);
        assert!(v.iter().all(|p| p.contains("totl(") && p.contains("lenght(")), "{v:#?}");
    }
}

#[cfg(test)]
mod catalogue_tests {
    use super::*;
    use crate::patch::Patch;

    fn patched(src: &str, line: usize, op: Operator) -> Vec<String> {
        let parsed = Parsed::new(src);
        let mut out: Vec<String> = mutations_at_line(&parsed, line)
            .into_iter()
            .filter(|m| m.operator == op)
            .map(|m| Patch::single("m.py", m.edit).apply(src))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    #[test]
    fn conditions_are_widened_with_none_checks_of_names_in_scope() {
        let src = "def f(node, x):\n    if node.left:\n        return x\n    return None\n";
        let v = patched(src, 2, Operator::ConditionChange);
        assert!(v.iter().any(|p| p.contains("if node.left and node is not None:")), "{v:#?}");
        assert!(v.iter().any(|p| p.contains("if node.left or not x:")), "{v:#?}");
    }

    #[test]
    fn statements_are_deleted_or_replaced_by_pass() {
        let src = "def f(xs):\n    xs.sort()\n    return xs\n\ndef g(x):\n    if x:\n        x.pop()\n    return x\n";
        let v = patched(src, 2, Operator::DeleteStatement);
        assert_eq!(v, ["def f(xs):\n    return xs\n\ndef g(x):\n    if x:\n        x.pop()\n    return x\n"]);
        let v = patched(src, 7, Operator::DeleteStatement);
        assert!(v[0].contains("    if x:\n        pass\n"), "{v:#?}");
    }

    #[test]
    fn statements_of_the_same_function_are_inserted_with_names_replaced() {
        let src = "def f(a, b):\n    a.append(1)\n    return b\n";
        let v = patched(src, 3, Operator::InsertStatement);
        assert!(v.contains(&"def f(a, b):\n    a.append(1)\n    b.append(1)\n    return b\n".to_string()), "{v:#?}");
        assert!(v.contains(&"def f(a, b):\n    a.append(1)\n    a.append(1)\n    return b\n".to_string()), "{v:#?}");
    }

    #[test]
    fn a_constant_verdict_can_check_the_state_reached() {
        let src = "def balanced(s):\n    depth = 0\n    for c in s:\n        depth += 1 if c == '(' else -1\n        if depth < 0:\n            return False\n    return True\n";
        let v = patched(src, 7, Operator::ReturnValue);
        for want in ["    return depth == 0\n", "    return not depth\n"] {
            assert!(v.iter().any(|p| p.ends_with(want)), "{want:?} missing: {v:#?}");
        }
    }

    #[test]
    fn remainders_of_sequences_walked_by_index_are_added_one_or_all() {
        let src = "def merge(a, b):\n    out = []\n    i = j = 0\n    while i < len(a) and j < len(b):\n        if a[i] <= b[j]:\n            out.append(a[i])\n            i += 1\n        else:\n            out.append(b[j])\n            j += 1\n    return out\n";
        let v = patched(src, 11, Operator::InsertStatement);
        assert!(v.iter().any(|p| p.ends_with("    out.extend(a[i:])\n    return out\n")), "{v:#?}");
        assert!(
            v.iter().any(|p| p.ends_with("    out.extend(a[i:])\n    out.extend(b[j:])\n    return out\n")),
            "{v:#?}"
        );
    }

    #[test]
    fn a_truncated_value_can_be_rounded_first() {
        let src = "def secs(a, b):\n    delta = int(total(a - b))\n    return delta\n";
        let v = patched(src, 2, Operator::WrapExpression);
        assert!(v.iter().any(|p| p.contains("    delta = int(round(total(a - b)))\n")), "{v:#?}");
        let plain = "def secs(a, b):\n    delta = float(total(a - b))\n    return delta\n";
        assert!(!patched(plain, 2, Operator::WrapExpression).iter().any(|p| p.contains("round(")), "only int()");
    }

    #[test]
    fn an_assigned_value_can_become_the_best_so_far() {
        let src = "def f(xs):\n    longest = 0\n    for x in xs:\n        longest = x + 1\n    return longest\n";
        let v = patched(src, 4, Operator::WrapExpression);
        for want in ["        longest = max(longest, x + 1)\n", "        longest = min(longest, x + 1)\n"] {
            assert!(v.iter().any(|p| p.contains(want)), "{want:?} missing: {v:#?}");
        }
    }

    #[test]
    fn missing_updates_of_collections_and_state_variables_are_inserted() {
        // A visited set that a nested search never grows.
        let src = "def search(start, goal):\n    seen = set()\n    def visit(node):\n        if node in seen:\n            return False\n        return any(visit(n) for n in node.next)\n    return visit(start)\n";
        let v = patched(src, 6, Operator::InsertStatement);
        assert!(v.iter().any(|p| p.contains("        seen.add(node)\n        return any(")), "{v:#?}");
        // A list grown elsewhere, and a state variable never advanced.
        let src = "def walk(node):\n    prev = None\n    out = []\n    while node:\n        nxt = node.next\n        node.next = prev\n        node = nxt\n    return prev\n";
        let v = patched(src, 7, Operator::InsertStatement);
        assert!(
            v.iter().any(|p| p.contains("        node.next = prev\n        prev = node\n        node = nxt\n")),
            "{v:#?}"
        );
        assert!(v.iter().any(|p| p.contains("        out.append(node)\n        node = nxt\n")), "{v:#?}");
        assert!(!v.iter().any(|p| p.contains("prev = prev") || p.contains("out.append(out)")), "{v:#?}");
    }

    #[test]
    fn empty_list_returns_get_one_element_variants() {
        let v = patched("def f(n):\n    if n < 2:\n        return []\n    return f(n - 1)\n", 3, Operator::ReturnValue);
        for want in ["        return [[]]\n", "        return [n]\n", "        return n\n"] {
            assert!(v.iter().any(|p| p.contains(want)), "{want:?} missing: {v:#?}");
        }
    }

    #[test]
    fn return_values_and_missing_returns_are_proposed() {
        let src = "def f(a, b):\n    c = a + b\n    return a\n";
        let v = patched(src, 3, Operator::ReturnValue);
        assert!(v.iter().any(|p| p.ends_with("    return c\n")), "{v:#?}");
        let src = "def f(a):\n    total = a * 2\n";
        let v = patched(src, 2, Operator::ReturnValue);
        assert!(v.contains(&"def f(a):\n    total = a * 2\n    return total\n".to_string()), "{v:#?}");
    }

    #[test]
    fn expressions_are_wrapped_and_calls_unwrapped() {
        let src = "def half(x):\n    return x // 2\n\ndef f(a, b):\n    return str(a - b)\n";
        let wrapped = patched(src, 5, Operator::WrapExpression);
        assert!(wrapped.iter().any(|p| p.contains("return str(abs(a - b))")), "{wrapped:#?}");
        assert!(wrapped.iter().any(|p| p.contains("return str(half(a - b))")), "{wrapped:#?}");
        let unwrapped = patched(src, 5, Operator::UnwrapCall);
        assert!(unwrapped.iter().any(|p| p.contains("    return a - b\n")), "{unwrapped:#?}");
        // A plain function of a few arguments gives way to each; methods and keywords do not.
        let src = "def f(table, key, log):\n    x = max(table, 0)[key]\n    log.write(key, table)\n    return round(x, ndigits=2)\n";
        let unwrapped = patched(src, 2, Operator::UnwrapCall);
        assert!(unwrapped.iter().any(|p| p.contains("    x = table[key]\n")), "{unwrapped:#?}");
        assert!(unwrapped.iter().any(|p| p.contains("    x = 0[key]\n")), "{unwrapped:#?}");
        assert!(patched(src, 3, Operator::UnwrapCall).is_empty() && patched(src, 4, Operator::UnwrapCall).is_empty());
    }

    #[test]
    fn attribute_alternatives_prefer_the_receivers_own_attributes_then_spelling_and_are_capped() {
        let mut src = String::from("class Shape:\n    def area(self):\n        return self.width * self.hieght\n\n    def scale(self):\n        self.height = 2\n\n");
        for i in 0..40 {
            src.push_str(&format!("def f{i}(o):\n    return o.attr_{i}\n"));
        }
        let v = patched(&src, 3, Operator::AttributeMisuse);
        assert!(v.iter().any(|p| p.contains("self.width * self.height\n")), "{v:#?}");
        assert!(v.len() <= 2 * MAX_ATTRIBUTE_ALTERNATIVES, "{}", v.len());
        // The receiver's own attributes are kept before 40 others: width → height.
        assert!(v.iter().any(|p| p.contains("self.height * self.hieght")), "{v:#?}");
    }

    #[test]
    fn adjacent_format_directives_are_swapped() {
        let src = "def f(t):\n    return t.strftime('%Y-%d-%m %%d %H:%H') + '%s%%'\n";
        let v = patched(src, 2, Operator::Literal);
        assert!(v.iter().any(|p| p.contains("'%Y-%m-%d %%d %H:%H'")), "{v:#?}");
        assert!(v.iter().any(|p| p.contains("'%d-%Y-%m %%d")), "{v:#?}");
        // `%%` is no directive, and equal directives are not swapped.
        assert!(!v.iter().any(|p| p.contains("%d-%m %%H") || p.contains("'%%s") || p.contains("%m %H:%%")), "{v:#?}");
        assert_eq!(
            v.iter().filter(|p| p.contains("strftime") && !p.contains("'%Y-%d-%m %%d %H:%H'")).count(),
            3,
            "{v:#?}"
        );
    }

    #[test]
    fn literals_and_attributes_are_swapped() {
        let src = "def f(p):\n    seen = []\n    return p.width if True else p.height\n";
        let v = patched(src, 2, Operator::Literal);
        assert!(v.iter().any(|p| p.contains("seen = {}")), "{v:#?}");
        let v = patched(src, 3, Operator::Literal);
        assert!(v.iter().any(|p| p.contains("if False")), "{v:#?}");
        let v = patched(src, 3, Operator::AttributeMisuse);
        assert!(v.iter().any(|p| p.contains("return p.height if True else p.height")), "{v:#?}");
    }

    #[test]
    fn indices_and_slice_bounds_are_counted_from_the_other_end() {
        let src = "def f(xs, n):\n    return xs[n:] + [xs[1]] + xs[0:n] + [xs[-1]]\n";
        let v = patched(src, 2, Operator::Negation);
        assert!(v.iter().any(|p| p.contains("return xs[-n:] + [xs[1]]")), "{v:#?}");
        assert!(v.iter().any(|p| p.contains("[xs[-1]] + xs[0:n]")), "{v:#?}");
        assert!(v.iter().any(|p| p.contains("xs[0:-n]")), "{v:#?}");
        // Zero and bounds that are already negative are left alone.
        assert!(!v.iter().any(|p| p.contains("xs[-0:n]") || p.contains("--1")), "{v:#?}");
    }

    #[test]
    fn handled_exception_types_are_exchanged_for_commonly_confused_builtins() {
        let src = "def get(d, k):\n    try:\n        return d[k]\n    except IndexError as e:\n        return None\n    except (ValueError, MyError):\n        return 0\n";
        let v = patched(src, 4, Operator::ExceptionType);
        assert!(v.iter().any(|p| p.contains("except KeyError as e:")), "{v:#?}");
        assert!(v.iter().all(|p| !p.contains("except IndexError as e:")), "{v:#?}");
        let v = patched(src, 6, Operator::ExceptionType);
        assert!(v.iter().any(|p| p.contains("except (TypeError, MyError):")), "{v:#?}");
        assert!(v.iter().all(|p| p.contains("MyError")), "a project's own exception is kept: {v:#?}");
    }

    #[test]
    fn generators_delegate_with_yield_from_or_stop_delegating() {
        let src =
            "def walk(xs):\n    for x in xs:\n        yield walk(x)\n        yield from x\n        yield from_x\n";
        assert_eq!(patched(src, 3, Operator::YieldFrom).len(), 1);
        assert!(patched(src, 3, Operator::YieldFrom)[0].contains("        yield from walk(x)\n"));
        assert!(patched(src, 4, Operator::YieldFrom)[0].contains("        yield x\n"));
        assert!(patched(src, 5, Operator::YieldFrom)[0].contains("        yield from from_x\n"));
    }

    #[test]
    fn elements_of_displays_are_dropped_and_a_pair_stays_a_tuple() {
        let src = "def eq(self, other):\n    for attr in ['scheme', 'host',\n                 'port', 'family']:\n        pass\n    return isinstance(other, (A, B))\n";
        let v = patched(src, 3, Operator::DropElement);
        assert!(v.iter().any(|p| p.contains("['scheme', 'host',\n                 'family']:")), "{v:#?}");
        assert!(v.iter().any(|p| p.contains("['scheme', 'host',\n                 'port']:")), "{v:#?}");
        assert_eq!(v.len(), 2, "only elements that start on the line: {v:#?}");
        let v = patched(src, 5, Operator::DropElement);
        assert!(v.iter().any(|p| p.contains("isinstance(other, (B,))")), "{v:#?}");
        assert!(v.iter().any(|p| p.contains("isinstance(other, (A,))")), "{v:#?}");
        assert!(v.iter().all(|p| Parsed::new(p.as_str()).is_valid()), "{v:#?}");
    }

    #[test]
    fn guard_clauses_return_early_or_skip_an_iteration() {
        let src = "class U:\n    def child(self, *segments):\n        new = self.path + segments\n        return self.replace(path=new)\n\n\ndef clean(pairs):\n    out = []\n    for ksv in pairs:\n        out.append(ksv[0])\n    return out\n";
        let v = patched(src, 3, Operator::GuardClause);
        let early = "        if not segments:\n            return self\n        new = self.path + segments\n";
        assert!(v.iter().any(|p| p.contains(early)), "{v:#?}");
        assert!(v.iter().any(|p| p.contains("        if segments is None:\n            return segments\n")), "{v:#?}");
        let v = patched(src, 10, Operator::GuardClause);
        assert!(
            v.iter().any(|p| p.contains("        if not ksv:\n            continue\n        out.append(ksv[0])")),
            "{v:#?}"
        );
        assert!(v.iter().all(|p| !p.split("def clean").nth(1).unwrap().contains("return self")), "in a loop: {v:#?}");
        assert!(v.iter().all(|p| Parsed::new(p.as_str()).is_valid()), "{v:#?}");
    }
}
