//! Argument swaps: two adjacent positional arguments of a call, or the operands of a non-commutative operator.

use super::tree::positional_arguments;
use super::{shorten, Family, Generator, Operator};
use crate::patch::Edit;
use tree_sitter::Node;

pub(super) const FAMILY: Family = Family { name: "arguments", operators: &[Operator::ArgumentSwap] };

/// Binary operators whose operands are worth swapping (not commutative, or `+` on sequences).
const SWAPPABLE: &[&str] = &["-", "/", "//", "%", "**", "+", "<<", ">>", "@"];

/// `a - b` → `b - a`; `+` too, for sequences and strings (`s + c` vs `c + s`).
pub(super) fn swap_operands(g: &mut Generator<'_>, node: Node<'_>) {
    let Some(op) = node.child_by_field_name("operator") else { return };
    let text = g.text(op).to_string();
    if !SWAPPABLE.contains(&text.as_str()) {
        return;
    }
    let (Some(left), Some(right)) = (node.child_by_field_name("left"), node.child_by_field_name("right")) else {
        return;
    };
    let (tl, tr) = (g.text(left).to_string(), g.text(right).to_string());
    if tl != tr {
        let between = g.parsed.text()[left.end_byte()..right.start_byte()].to_string();
        let edit = Edit::replacement(left.start_byte()..right.end_byte(), format!("{tr}{between}{tl}"));
        g.add(Operator::ArgumentSwap, edit, format!("swap the operands of `{text}`"));
    }
}

/// `f(a, b)` → `f(b, a)`: each pair of adjacent positional arguments that differ.
pub(super) fn swap_arguments(g: &mut Generator<'_>, node: Node<'_>) {
    let Some(positional) = positional_arguments(node) else { return };
    for pair in positional.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let (ta, tb) = (g.text(a).to_string(), g.text(b).to_string());
        if ta == tb {
            continue;
        }
        let between = &g.parsed.text()[a.end_byte()..b.start_byte()];
        let edit = Edit::replacement(a.start_byte()..b.end_byte(), format!("{tb}{between}{ta}"));
        g.add(Operator::ArgumentSwap, edit, format!("swap `{}` and `{}`", shorten(&ta), shorten(&tb)));
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::variants;
    use super::*;

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
}
