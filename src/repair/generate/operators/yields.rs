//! Generators: `yield e` ↔ `yield from e`.

use super::{Family, Generator, Operator};
use tree_sitter::Node;

pub(super) const FAMILY: Family = Family { name: "yields", operators: &[Operator::YieldFrom] };

/// `yield e` ↔ `yield from e` (a generator delegating to another, or yielding it whole).
pub(super) fn yield_from(g: &mut Generator<'_>, node: Node<'_>) {
    let Some(value) = node.named_child(0) else { return };
    let text = g.text(value).to_string();
    // The `from` keyword token, not text: `yield from_x` does not delegate.
    let delegates = node.child(1).is_some_and(|token| token.kind() == "from");
    let replacement = if delegates { format!("yield {text}") } else { format!("yield from {text}") };
    g.push(Operator::YieldFrom, node, replacement);
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::patched;
    use super::*;

    #[test]
    fn generators_delegate_with_yield_from_or_stop_delegating() {
        let src =
            "def walk(xs):\n    for x in xs:\n        yield walk(x)\n        yield from x\n        yield from_x\n";
        assert_eq!(patched(src, 3, Operator::YieldFrom).len(), 1);
        assert!(patched(src, 3, Operator::YieldFrom)[0].contains("        yield from walk(x)\n"));
        assert!(patched(src, 4, Operator::YieldFrom)[0].contains("        yield x\n"));
        assert!(patched(src, 5, Operator::YieldFrom)[0].contains("        yield from from_x\n"));
    }
}
