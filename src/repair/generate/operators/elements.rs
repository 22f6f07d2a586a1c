//! Display elements: one element of a list, tuple or set display dropped, or one of the same shape added.

use super::{shorten, Family, Generator, Operator};
use crate::patch::Edit;
use tree_sitter::Node;

pub(super) const FAMILY: Family =
    Family { name: "elements", operators: &[Operator::DropElement, Operator::AddElement] };

/// Elements an [`add_element`] proposes per display at most (the nearest in the file first).
const MAX_ADDED: usize = 8;

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

/// What every element of a display is: the shape an added element must have.
#[derive(Debug, PartialEq, Eq)]
enum Shape {
    /// `recv.name` with one receiver (`sql.Identifier`, `T.Keyword`).
    Attribute(String),
    /// Capitalized bare names (classes, constants).
    Name,
    /// String constants that are words of one case (`'IF'`, `'keysrules'`).
    Word { upper: bool },
}

/// The shape all `elements` share, if any.
fn shape(g: &Generator<'_>, elements: &[Node<'_>]) -> Option<Shape> {
    let first = shape_of(g, *elements.first()?)?;
    elements.iter().skip(1).all(|e| shape_of(g, *e).as_ref() == Some(&first)).then_some(first)
}

fn shape_of(g: &Generator<'_>, node: Node<'_>) -> Option<Shape> {
    match node.kind() {
        "attribute" => {
            let object = node.child_by_field_name("object")?;
            matches!(object.kind(), "identifier" | "attribute").then(|| Shape::Attribute(g.text(object).to_string()))
        }
        "identifier" => {
            // The `name` of `recv.name` is not a name of the file's scope.
            let attribute_part = node.parent().is_some_and(|p| {
                p.kind() == "attribute" && p.child_by_field_name("attribute").is_some_and(|a| a.id() == node.id())
            });
            let capitalized = g.text(node).starts_with(|c: char| c.is_ascii_uppercase());
            (capitalized && !attribute_part).then_some(Shape::Name)
        }
        "string" => {
            let word = word_of(g.text(node))?;
            let upper = word.chars().any(|c| c.is_ascii_uppercase());
            let lower = word.chars().any(|c| c.is_ascii_lowercase());
            (upper != lower).then_some(Shape::Word { upper })
        }
        _ => None,
    }
}

/// The content of a plain quoted string that is a word or words (`'END IF'`), without prefixes.
fn word_of(text: &str) -> Option<&str> {
    let quote = text.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = text.strip_prefix(quote)?.strip_suffix(quote)?;
    let ok = !inner.is_empty()
        && inner.len() <= 30
        && inner.starts_with(|c: char| c.is_ascii_alphabetic())
        && inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ' ');
    ok.then_some(inner)
}

/// An element of the display's shape that the file uses elsewhere appended to `display`
/// (`('IF', 'FOR')` → `('IF', 'FOR', 'CASE')` when `'CASE'` is a string of the file): a case
/// the code forgot. The nearest uses in the file come first.
pub(super) fn add_element(g: &mut Generator<'_>, display: Node<'_>) {
    let mut cursor = display.walk();
    let elements: Vec<Node<'_>> = display.named_children(&mut cursor).filter(|c| c.kind() != "comment").collect();
    let Some(last) = elements.last().copied() else { return };
    if elements.len() < 2 {
        return;
    }
    let Some(shape) = shape(g, &elements) else { return };
    let present: Vec<&str> = elements.iter().map(|e| g.text(*e)).collect();
    let mut found: Vec<(usize, String)> = Vec::new();
    let mut stack = vec![g.parsed.root()];
    while let Some(node) = stack.pop() {
        if node.id() == display.id() {
            continue;
        }
        let text = g.text(node);
        if shape_of(g, node).as_ref() == Some(&shape) && !present.contains(&text) {
            found.push((node.start_byte().abs_diff(display.start_byte()), text.to_string()));
        }
        let mut c = node.walk();
        stack.extend(node.children(&mut c));
    }
    found.sort();
    let mut added: Vec<String> = Vec::new();
    for (_, text) in found {
        if added.len() == MAX_ADDED {
            break;
        }
        if !added.contains(&text) {
            let description = format!("add `{}` to `{}`", shorten(&text), shorten(g.text(display)));
            g.add(Operator::AddElement, Edit::insertion(last.end_byte(), format!(", {text}")), description);
            added.push(text);
        }
    }
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

    #[test]
    fn an_element_of_the_displays_shape_used_elsewhere_in_the_file_is_added() {
        let src = "def level(word, token):\n    if word in ('IF', 'FOR'):\n        return 1\n    if word == 'CASE' or word == 'end':\n        return 2\n    return isinstance(token, (sql.Name, sql.Call)) or sql.Literal\n";
        let v = patched(src, 2, Operator::AddElement);
        assert_eq!(v.len(), 1, "upper-case words only: {v:#?}");
        assert!(v[0].contains("('IF', 'FOR', 'CASE')"), "{v:#?}");
        let v = patched(src, 6, Operator::AddElement);
        assert_eq!(v.len(), 1, "attributes of the same receiver: {v:#?}");
        assert!(v[0].contains("(sql.Name, sql.Call, sql.Literal)"), "{v:#?}");
        let mixed = "def f(a):\n    return a in ('x', 1)\n\n\ndef g():\n    return 'y'\n";
        assert!(patched(mixed, 2, Operator::AddElement).is_empty(), "elements of several shapes");
    }
}
