//! Display elements: one element of a list, tuple or set display dropped.

use super::{shorten, Family, Generator, Operator};
use crate::patch::Edit;
use tree_sitter::Node;

pub(super) const FAMILY: Family = Family { name: "elements", operators: &[Operator::DropElement] };

/// `node` removed from the list, tuple or set display it is an element of (with one of
/// its commas; a tuple keeps the comma that makes it one: `(a, b)` → `(b,)`).
pub(super) fn drop_element(g: &mut Generator<'_>, node: Node<'_>) {
    let Some(parent) = node.parent().filter(|p| matches!(p.kind(), "list" | "tuple" | "set")) else { return };
    let mut cursor = parent.walk();
    let elements: Vec<Node<'_>> = parent.named_children(&mut cursor).filter(|c| c.kind() != "comment").collect();
    let Some(at) = elements.iter().position(|e| e.id() == node.id()) else { return };
    if elements.len() < 2 || elements.iter().any(|e| matches!(e.kind(), "list_splat" | "parenthesized_list_splat")) {
        return;
    }
    let keeps_comma = parent.kind() == "tuple" && elements.len() == 2;
    let (range, content) = match (elements.get(at + 1), at.checked_sub(1).map(|i| elements[i])) {
        (Some(next), _) if keeps_comma => (node.start_byte()..next.end_byte(), format!("{},", g.text(*next))),
        (Some(next), _) => (node.start_byte()..next.start_byte(), String::new()),
        (None, Some(previous)) => {
            (previous.end_byte()..node.end_byte(), if keeps_comma { ",".into() } else { String::new() })
        }
        (None, None) => return,
    };
    let description = format!("drop `{}` from `{}`", shorten(g.text(node)), shorten(g.text(parent)));
    g.add(Operator::DropElement, Edit::replacement(range, content), description);
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::patched;
    use super::*;
    use crate::python::Parsed;

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
}
