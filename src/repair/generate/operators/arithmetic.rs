//! Arithmetic operators: `+` ↔ `-`, `*` ↔ `/` ↔ `//`, bitwise and shift operators, also in augmented assignments.

use super::{Family, Generator, Operator};
use tree_sitter::Node;

pub(super) const FAMILY: Family = Family { name: "arithmetic", operators: &[Operator::Arithmetic] };

/// Each operator with the operators it is mistaken for.
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

/// The alternatives of `op` (without its `=`).
fn alternatives(op: &str) -> &'static [&'static str] {
    ARITHMETIC.iter().find(|(o, _)| *o == op).map(|(_, alts)| *alts).unwrap_or_default()
}

/// `a + b` → `a - b`, ...
pub(super) fn binary_operator(g: &mut Generator<'_>, node: Node<'_>) {
    if let Some(op) = node.child_by_field_name("operator") {
        for alt in alternatives(g.text(op)) {
            g.push(Operator::Arithmetic, op, (*alt).to_string());
        }
    }
}

/// `a += b` → `a -= b`, ...
pub(super) fn augmented_assignment(g: &mut Generator<'_>, node: Node<'_>) {
    if let Some(op) = node.child_by_field_name("operator") {
        for alt in alternatives(g.text(op).trim_end_matches('=')) {
            g.push(Operator::Arithmetic, op, format!("{alt}="));
        }
    }
}
