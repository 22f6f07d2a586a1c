//! Repair operators: small, generic source edits proposed at suspicious lines.

use crate::patch::Edit;
use crate::python::Parsed;
use std::collections::BTreeSet;
use tree_sitter::Node;

/// The kind of edit a repair operator makes (the repair analogue of a mutation genre).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// `<` ↔ `<=` ↔ `>` ↔ `>=` ↔ `==` ↔ `!=`, `in` ↔ `not in`, `is` ↔ `is not`.
    Comparison,
    /// `+` ↔ `-`, `*` ↔ `/` ↔ `//`, ... also in augmented assignments.
    Arithmetic,
    /// `and` ↔ `or`.
    Boolean,
    /// Drop a `not` or a unary minus; negate an `if`/`while` condition.
    Negation,
    /// An integer constant ±1.
    ConstantOffByOne,
    /// An index, slice bound or `range` argument ±1.
    IndexOffByOne,
    /// Swap two arguments of a call.
    ArgumentSwap,
    /// Use another variable of the same scope.
    VariableMisuse,
    /// Replace `a op b` by one of its operands.
    RemoveOperand,
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
            Operator::VariableMisuse => 0.5,
            Operator::RemoveOperand => 0.4,
        }
    }

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
            Operator::VariableMisuse => "variable-misuse",
            Operator::RemoveOperand => "remove-operand",
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

/// Propose every operator edit for the nodes that start on 1-based `line` of `parsed`.
#[must_use]
pub fn mutations_at_line(parsed: &Parsed, line: usize) -> Vec<Mutation> {
    let mut gen = Generator { parsed, out: Vec::new() };
    let row = line.saturating_sub(1);
    let mut stack = vec![parsed.root()];
    while let Some(node) = stack.pop() {
        if node.end_position().row < row || node.start_position().row > row {
            continue;
        }
        if node.start_position().row == row {
            gen.node(node);
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    gen.out
}

struct Generator<'a> {
    parsed: &'a Parsed,
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
        self.out.push(Mutation {
            operator,
            edit: Edit::replacement(node.byte_range(), replacement),
            description,
        });
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
                let indices: Vec<Node<'_>> =
                    node.children_by_field_name("subscript", &mut cursor).collect();
                for index in indices {
                    if index.kind() == "slice" {
                        let mut c = index.walk();
                        let bounds: Vec<Node<'_>> = index.named_children(&mut c).collect();
                        for bound in bounds {
                            self.off_by_one(bound);
                        }
                    } else if index.kind() != "string" {
                        self.off_by_one(index);
                    }
                }
            }
            "call" => self.call(node),
            "identifier" => self.variable_misuse(node),
            _ => {}
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
        let mut values = vec![value + 1];
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
        let atom = matches!(
            node.kind(),
            "identifier" | "call" | "attribute" | "subscript" | "parenthesized_expression"
        );
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
        let is_range = node
            .child_by_field_name("function")
            .is_some_and(|f| self.text(f) == "range");
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
        let total = sign * value + delta;
        out.push(match total {
            0 => left_text.to_string(),
            t if t > 0 => format!("{left_text} + {t}"),
            t => format!("{left_text} - {}", -t),
        });
    }
    Some(out)
}

fn field_of(parent: Node<'_>, child: Node<'_>) -> Option<String> {
    let mut cursor = parent.walk();
    for (i, c) in parent.children(&mut cursor).enumerate() {
        if c.id() == child.id() {
            return parent
                .field_name_for_child(u32::try_from(i).ok()?)
                .map(str::to_string);
        }
    }
    None
}

fn enclosing_function(node: Node<'_>) -> Option<Node<'_>> {
    let mut current = node.parent();
    while let Some(n) = current {
        if n.kind() == "function_definition" {
            return Some(n);
        }
        current = n.parent();
    }
    None
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
    let Some(body) = function.child_by_field_name("body") else { return names };
    let mut stack = vec![body];
    while let Some(node) = stack.pop() {
        if matches!(node.kind(), "function_definition" | "class_definition" | "lambda") {
            continue;
        }
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
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
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

fn shorten(text: &str) -> String {
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
    fn only_nodes_starting_on_the_line_are_mutated() {
        let src = "def f(a):\n    x = a + 1\n    return x * 2\n";
        let parsed = Parsed::new(src);
        for m in mutations_at_line(&parsed, 3) {
            assert!(m.edit.range.start >= src.find("return").unwrap(), "{m:?}");
        }
    }
}
