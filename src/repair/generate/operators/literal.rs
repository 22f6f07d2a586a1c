//! Literals: `True` ↔ `False`, `None` → `0`, empty containers and strings exchanged, two `%` directives swapped.

use super::{Family, Generator, Operator};
use tree_sitter::Node;

pub(super) const FAMILY: Family = Family { name: "literal", operators: &[Operator::Literal] };

/// Format strings with more `%` directives than this are left alone.
const MAX_DIRECTIVES: usize = 8;

/// `True` → `False`, `False` → `True`, `None` → `0`.
pub(super) fn constant(g: &mut Generator<'_>, node: Node<'_>) {
    let replacement = match node.kind() {
        "true" => "False",
        "false" => "True",
        _ => "0",
    };
    g.push(Operator::Literal, node, replacement.to_string());
}

/// An empty list, dict, tuple or set → each of the others (non-empty ones are left alone).
pub(super) fn empty_container(g: &mut Generator<'_>, node: Node<'_>) {
    if node.named_child_count() == 0 {
        for alt in ["[]", "{}", "()", "set()"] {
            g.push(Operator::Literal, node, alt.to_string());
        }
    }
}

/// A short string (`''`, `'a'`) → an empty one, or an empty one → `' '`; a longer one has its
/// `%` directives swapped ([`format_directives`]).
pub(super) fn string(g: &mut Generator<'_>, node: Node<'_>) {
    let text = g.text(node);
    if text.len() > 3 || text.contains('{') {
        format_directives(g, node);
        return;
    }
    let quote = if text.contains('\'') { "\"" } else { "'" };
    let empty = text.chars().filter(|c| *c == '\'' || *c == '"').count() == text.len();
    let alt = if empty { format!("{quote} {quote}") } else { format!("{quote}{quote}") };
    g.push(Operator::Literal, node, alt);
}

/// `"%Y-%d-%m"` → `"%Y-%m-%d"`: two adjacent `%` directives of a format string (printf,
/// `strftime`, logging) swapped.
fn format_directives(g: &mut Generator<'_>, node: Node<'_>) {
    let text = g.text(node).as_bytes().to_vec();
    let mut directives = Vec::new();
    let mut i = 0;
    while i + 1 < text.len() {
        match (text[i], text[i + 1]) {
            (b'%', b'%') => i += 2,
            (b'%', c) if c.is_ascii_alphabetic() => {
                directives.push(i + 1);
                i += 2;
            }
            _ => i += 1,
        }
    }
    if directives.len() > MAX_DIRECTIVES {
        return;
    }
    for pair in directives.windows(2) {
        if text[pair[0]] != text[pair[1]] {
            let mut swapped = text.clone();
            swapped.swap(pair[0], pair[1]);
            if let Ok(swapped) = String::from_utf8(swapped) {
                g.push(Operator::Literal, node, swapped);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::patched;
    use super::*;

    #[test]
    fn adjacent_format_directives_are_swapped() {
        let src = "def f(t):\n    return t.strftime('%Y-%d-%m %%d %H:%H') + '%s%%'\n";
        let v = patched(src, 2, Operator::Literal);
        assert!(v.iter().any(|p| p.contains("'%Y-%m-%d %%d %H:%H'")), "{v:#?}");
        assert!(v.iter().any(|p| p.contains("'%d-%Y-%m %%d")), "{v:#?}");
        // `%%` is no directive, and equal directives are not swapped.
        assert!(!v.iter().any(|p| p.contains("%d-%m %%H") || p.contains("'%%s") || p.contains("%m %H:%%")), "{v:#?}");
        assert_eq!(
            v.iter().filter(|p| p.contains("strftime") && !p.contains("'%Y-%d-%m %%d %H:%H'")).count(),
            3,
            "{v:#?}"
        );
    }

    #[test]
    fn literals_and_attributes_are_swapped() {
        let src = "def f(p):\n    seen = []\n    return p.width if True else p.height\n";
        let v = patched(src, 2, Operator::Literal);
        assert!(v.iter().any(|p| p.contains("seen = {}")), "{v:#?}");
        let v = patched(src, 3, Operator::Literal);
        assert!(v.iter().any(|p| p.contains("if False")), "{v:#?}");
        let v = patched(src, 3, Operator::AttributeMisuse);
        assert!(v.iter().any(|p| p.contains("return p.height if True else p.height")), "{v:#?}");
    }
}
