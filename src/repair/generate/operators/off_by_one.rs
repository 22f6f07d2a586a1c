//! Off-by-one: an integer constant, an index, slice bound or `range` argument, or a value where it is used, ±1.

use super::negation::negate_index;
use super::tree::{enclosing_function, field_of, positional_arguments};
use super::{Family, Generator, Operator};
use crate::python::Parsed;
use tree_sitter::Node;

pub(super) const FAMILY: Family = Family {
    name: "off_by_one",
    operators: &[Operator::ConstantOffByOne, Operator::IndexOffByOne, Operator::ExpressionOffByOne],
};

/// An integer literal ±1 (`e - 1` → `e` rather than `e - 0`).
pub(super) fn constant(g: &mut Generator<'_>, node: Node<'_>) {
    let text = g.text(node).replace('_', "");
    let Ok(value) = text.parse::<i64>() else { return };
    // A literal at the edge of i64 (`9223372036854775807`) has no successor here.
    let mut values: Vec<i64> = value.checked_add(1).into_iter().collect();
    if value > 0 {
        values.push(value - 1);
    }
    let folds_parent = node.parent().filter(|p| {
        p.kind() == "binary_operator"
            && p.child_by_field_name("right").is_some_and(|r| r.id() == node.id())
            && p.child_by_field_name("operator").is_some_and(|o| matches!(g.text(o), "+" | "-"))
    });
    for v in values {
        match (v, folds_parent) {
            (0, Some(parent)) => {
                let left = parent.child_by_field_name("left").map(|l| g.text(l).to_string());
                if let Some(left) = left {
                    g.push(Operator::ConstantOffByOne, parent, left);
                }
            }
            _ => g.push(Operator::ConstantOffByOne, node, v.to_string()),
        }
    }
}

/// Each index and slice bound of a subscript ±1, and counted from the other end
/// ([`negate_index`]), one index after the other.
pub(super) fn indices(g: &mut Generator<'_>, node: Node<'_>) {
    let mut cursor = node.walk();
    let indices: Vec<Node<'_>> = node.children_by_field_name("subscript", &mut cursor).collect();
    for index in indices {
        if index.kind() == "slice" {
            let mut c = index.walk();
            let bounds: Vec<Node<'_>> = index.named_children(&mut c).collect();
            for bound in bounds {
                shift(g, bound);
                negate_index(g, bound);
            }
        } else if index.kind() != "string" {
            shift(g, index);
            negate_index(g, index);
        }
    }
}

/// Each positional argument of `range(...)` ±1.
pub(super) fn range_arguments(g: &mut Generator<'_>, node: Node<'_>) {
    let Some(positional) = positional_arguments(node) else { return };
    if node.child_by_field_name("function").is_some_and(|f| g.text(f) == "range") {
        for arg in positional {
            shift(g, arg);
        }
    }
}

/// `v` → `v + 1` / `v - 1` where `v` is assigned, returned, compared or passed.
pub(super) fn expression(g: &mut Generator<'_>, node: Node<'_>) {
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
        && parent.parent().and_then(|c| c.child_by_field_name("function")).is_some_and(|f| g.text(f) == "range");
    if !position || in_range || enclosing_function(node).is_none() {
        return;
    }
    let before = g.out.len();
    shift(g, node);
    for m in &mut g.out[before..] {
        m.operator = Operator::ExpressionOffByOne;
    }
}

/// `expr` → `expr + 1` / `expr - 1`, folding integer literals.
fn shift(g: &mut Generator<'_>, node: Node<'_>) {
    if node.kind() == "integer" {
        return; // covered by ConstantOffByOne
    }
    let text = g.text(node).to_string();
    let atom = matches!(node.kind(), "identifier" | "call" | "attribute" | "subscript" | "parenthesized_expression");
    let base = if atom { text } else { format!("({text})") };
    if let Some(folded) = fold_offset(g.parsed, node) {
        for replacement in folded {
            g.push(Operator::IndexOffByOne, node, replacement);
        }
        return;
    }
    g.push(Operator::IndexOffByOne, node, format!("{base} + 1"));
    g.push(Operator::IndexOffByOne, node, format!("{base} - 1"));
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

#[cfg(test)]
mod tests {
    use super::super::fixtures::variants;
    use super::*;

    #[test]
    fn range_bounds_and_indices_are_shifted_by_one() {
        let src = "def f(xs):\n    for i in range(len(xs) - 1):\n        print(xs[i])\n";
        let v = variants(src, 2, Operator::IndexOffByOne);
        assert_eq!(v, ["for i in range(len(xs) - 2):", "for i in range(len(xs)):"]);
        let v = variants(src, 3, Operator::IndexOffByOne);
        assert_eq!(v, ["print(xs[i + 1])", "print(xs[i - 1])"]);
    }

    #[test]
    fn the_largest_integer_literal_is_only_decremented() {
        let v = variants("def f():\n    return 9223372036854775807\n", 2, Operator::ConstantOffByOne);
        assert_eq!(v, ["return 9223372036854775806"]);
        let v = variants("def f(xs):\n    return xs[len(xs) + 9223372036854775807]\n", 2, Operator::IndexOffByOne);
        assert_eq!(v, ["return xs[len(xs) + 9223372036854775806]"]);
    }
}
