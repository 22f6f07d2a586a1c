//! The token view of Python code that templates are learned and matched on: tree-sitter leaves,
//! string literals as one token, comments dropped, identifiers split into project names and
//! library vocabulary.

use crate::python::Parsed;
use std::ops::Range;
use tree_sitter::Node;

/// Names that Python code uses by convention, kept like builtins.
const CONVENTIONAL: &[&str] = &["self", "cls"];

/// What a token may be abstracted into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LeafKind {
    /// A project identifier: becomes a `$N` hole.
    Name,
    /// A string literal (f-strings included): a `$S` hole where it is matched.
    Str,
    /// Kept as written: keywords, operators, numbers, builtins, names after a dot, keyword-argument names.
    Fixed,
}

/// One token: its byte range in the parsed text and its 0-based row.
#[derive(Debug, Clone)]
pub(super) struct Leaf {
    pub range: Range<usize>,
    pub row: usize,
    pub kind: LeafKind,
}

/// The tokens under `node` in document order.
pub(super) fn leaves(parsed: &Parsed, node: Node<'_>) -> Vec<Leaf> {
    let mut out = Vec::new();
    collect(parsed, &Place { node, field: None, parent: "" }, None, &mut out);
    out
}

/// The tokens that start on 0-based `row`.
pub(super) fn leaves_on_row(parsed: &Parsed, row: usize) -> Vec<Leaf> {
    let mut out = Vec::new();
    collect(parsed, &Place { node: parsed.root(), field: None, parent: "" }, Some(row), &mut out);
    out
}

/// A node with the field and the kind of the parent that holds it.
struct Place<'t> {
    node: Node<'t>,
    field: Option<&'static str>,
    parent: &'static str,
}

/// Push the tokens under `place` (only those starting on `row`, when given) to `out`.
fn collect(parsed: &Parsed, place: &Place<'_>, row: Option<usize>, out: &mut Vec<Leaf>) {
    let node = place.node;
    if row.is_some_and(|r| node.end_position().row < r || node.start_position().row > r) {
        return;
    }
    let on_row = row.is_none_or(|r| node.start_position().row == r);
    match node.kind() {
        "comment" | "line_continuation" => {}
        "string" | "identifier" if !on_row => {}
        "string" => out.push(leaf(node, LeafKind::Str)),
        "identifier" => out.push(leaf(node, identifier_kind(parsed, place))),
        _ if node.child_count() == 0 => {
            if on_row && !parsed.node_text(node).trim().is_empty() {
                out.push(leaf(node, LeafKind::Fixed));
            }
        }
        parent => {
            let mut cursor = node.walk();
            cursor.goto_first_child();
            loop {
                let child = Place { node: cursor.node(), field: cursor.field_name(), parent };
                collect(parsed, &child, row, out);
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
    }
}

fn leaf(node: Node<'_>, kind: LeafKind) -> Leaf {
    Leaf { range: node.byte_range(), row: node.start_position().row, kind }
}

fn identifier_kind(parsed: &Parsed, place: &Place<'_>) -> LeafKind {
    let vocabulary = match place.field {
        Some("attribute") => true,
        Some("name") => place.parent == "keyword_argument",
        _ => false,
    };
    let text = parsed.node_text(place.node);
    if vocabulary || crate::python::builtins::is_builtin(text) || CONVENTIONAL.contains(&text) {
        LeafKind::Fixed
    } else {
        LeafKind::Name
    }
}

/// Indices of the leaves that lie inside `node`'s byte range.
pub(super) fn leaf_span(leaves: &[Leaf], node: Node<'_>) -> Range<usize> {
    let start = leaves.partition_point(|l| l.range.start < node.start_byte());
    let end = leaves.partition_point(|l| l.range.end <= node.end_byte());
    start..end.max(start)
}

/// Statements that fit on one line; templates replace, insert or delete whole ones of these.
pub(super) fn is_simple_statement(kind: &str) -> bool {
    matches!(
        kind,
        "expression_statement"
            | "return_statement"
            | "assert_statement"
            | "pass_statement"
            | "break_statement"
            | "continue_statement"
            | "raise_statement"
            | "delete_statement"
            | "global_statement"
            | "nonlocal_statement"
            | "import_statement"
            | "import_from_statement"
            | "print_statement"
            | "exec_statement"
            | "future_import_statement"
            | "type_alias_statement"
    )
}

/// Nodes that are parts of a construct rather than an expression of their own.
pub(super) fn is_fragment(kind: &str) -> bool {
    matches!(
        kind,
        "argument_list"
            | "parameters"
            | "lambda_parameters"
            | "keyword_argument"
            | "default_parameter"
            | "typed_parameter"
            | "typed_default_parameter"
            | "slice"
            | "pair"
            | "for_in_clause"
            | "if_clause"
            | "as_pattern_target"
            | "dotted_name"
            | "aliased_import"
            | "string_content"
            | "interpolation"
            | "format_specifier"
            | "type"
            | "chevron"
            | "decorator"
            | "else_clause"
            | "elif_clause"
            | "except_clause"
            | "finally_clause"
            | "block"
            | "module"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(String, LeafKind)> {
        let parsed = Parsed::new(src);
        leaves(&parsed, parsed.root()).into_iter().map(|l| (src[l.range].to_string(), l.kind)).collect()
    }

    #[test]
    fn project_names_are_told_from_library_vocabulary() {
        let got = kinds("x = len(d.keys(), key=f'{a}')  # note\n");
        let name = |s: &str| (s.to_string(), LeafKind::Name);
        let fixed = |s: &str| (s.to_string(), LeafKind::Fixed);
        assert_eq!(
            got,
            [
                name("x"),
                fixed("="),
                fixed("len"),
                fixed("("),
                name("d"),
                fixed("."),
                fixed("keys"),
                fixed("("),
                fixed(")"),
                fixed(","),
                fixed("key"),
                fixed("="),
                ("f'{a}'".to_string(), LeafKind::Str),
                fixed(")"),
            ]
        );
    }
}
