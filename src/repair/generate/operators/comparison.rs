//! Comparison and boolean operators: `<` ↔ `<=` ↔ ..., `in` ↔ `not in`, `and` ↔ `or`, `min` ↔ `max`, `any` ↔ `all`.

use super::{Family, Generator, Operator};
use tree_sitter::Node;

pub(super) const FAMILY: Family = Family { name: "comparison", operators: &[Operator::Comparison, Operator::Boolean] };

const COMPARISONS: &[&str] = &["<", "<=", ">", ">=", "==", "!="];

/// Each operator of a comparison (`a < b < c` has two) replaced by the others of its kind.
pub(super) fn comparison_operators(g: &mut Generator<'_>, node: Node<'_>) {
    let mut cursor = node.walk();
    let ops: Vec<Node<'_>> = node.children_by_field_name("operators", &mut cursor).collect();
    for op in ops {
        let text = g.text(op).split_whitespace().collect::<Vec<_>>().join(" ");
        let alternatives: Vec<&str> = match text.as_str() {
            "in" => vec!["not in"],
            "not in" => vec!["in"],
            "is" => vec!["is not", "=="],
            "is not" => vec!["is", "!="],
            t if COMPARISONS.contains(&t) => COMPARISONS.iter().copied().filter(|c| *c != t).collect(),
            _ => vec![],
        };
        for alt in alternatives {
            g.push(Operator::Comparison, op, alt.to_string());
        }
    }
}

/// `and` ↔ `or`.
pub(super) fn boolean_operator(g: &mut Generator<'_>, node: Node<'_>) {
    if let Some(op) = node.child_by_field_name("operator") {
        let swapped = if g.text(op) == "and" { "or" } else { "and" };
        g.push(Operator::Boolean, op, swapped.to_string());
    }
}

/// Dual builtins: `min` ↔ `max` (a flipped comparison), `any` ↔ `all` (`or` ↔ `and`).
pub(super) fn dual_builtins(g: &mut Generator<'_>, node: Node<'_>) {
    if node.child_by_field_name("arguments").is_none() {
        return;
    }
    let Some(function) = node.child_by_field_name("function").filter(|f| f.kind() == "identifier") else { return };
    let dual = match g.text(function) {
        "min" => Some(("max", Operator::Comparison)),
        "max" => Some(("min", Operator::Comparison)),
        "any" => Some(("all", Operator::Boolean)),
        "all" => Some(("any", Operator::Boolean)),
        _ => None,
    };
    if let Some((name, operator)) = dual {
        g.push(operator, function, name.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::variants;
    use super::*;

    #[test]
    fn comparison_operators_are_swapped() {
        let v = variants("def f(a, b):\n    return a < b\n", 2, Operator::Comparison);
        assert_eq!(v, ["return a != b", "return a <= b", "return a == b", "return a > b", "return a >= b"]);
        let v = variants("def f(a, b):\n    return a not in b\n", 2, Operator::Comparison);
        assert_eq!(v, ["return a in b"]);
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
}
