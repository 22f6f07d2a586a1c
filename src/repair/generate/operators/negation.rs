//! Negations: a `not` or unary minus dropped, an `if`/`while` condition negated, an index counted from the other end.

use super::{Family, Generator, Operator};
use tree_sitter::Node;

pub(super) const FAMILY: Family = Family { name: "negation", operators: &[Operator::Negation] };

/// `not x` → `x`.
pub(super) fn drop_not(g: &mut Generator<'_>, node: Node<'_>) {
    if let Some(arg) = node.child_by_field_name("argument") {
        g.push(Operator::Negation, node, g.text(arg).to_string());
    }
}

/// `-x` → `x`.
pub(super) fn drop_minus(g: &mut Generator<'_>, node: Node<'_>) {
    if let (Some(op), Some(arg)) = (node.child_by_field_name("operator"), node.child_by_field_name("argument")) {
        if g.text(op) == "-" {
            g.push(Operator::Negation, node, g.text(arg).to_string());
        }
    }
}

/// `if c:` → `if not (c):` (also `while` and `elif`; a condition that is a `not` is left to
/// [`drop_not`]).
pub(super) fn negate_condition(g: &mut Generator<'_>, node: Node<'_>) {
    if let Some(cond) = node.child_by_field_name("condition") {
        if cond.kind() != "not_operator" {
            let negated = format!("not ({})", g.text(cond));
            g.push(Operator::Negation, cond, negated);
        }
    }
}

/// `xs[n]` → `xs[-n]`, `xs[n:]` → `xs[-n:]`: counting from the other end (names,
/// attributes, calls and non-zero integers only).
pub(super) fn negate_index(g: &mut Generator<'_>, index: Node<'_>) {
    if matches!(index.kind(), "identifier" | "attribute" | "call")
        || (index.kind() == "integer" && g.text(index) != "0")
    {
        let negated = format!("-{}", g.text(index));
        g.push(Operator::Negation, index, negated);
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::patched;
    use super::*;

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
}
