//! Exception types: `except A` → `except B` among the builtin exceptions commonly confused.

use super::{Family, Generator, Operator};
use tree_sitter::Node;

pub(super) const FAMILY: Family = Family { name: "exceptions", operators: &[Operator::ExceptionType] };

/// Builtin exceptions that handlers confuse (`except IndexError` for a dict lookup, ...).
const CONFUSED_EXCEPTIONS: [&str; 8] = [
    "KeyError",
    "IndexError",
    "LookupError",
    "ValueError",
    "TypeError",
    "AttributeError",
    "ZeroDivisionError",
    "Exception",
];

/// `except KeyError` → `except IndexError`, ...: the handled type is another builtin
/// exception often confused with it (also inside `except X as e` and tuples).
pub(super) fn exception_type(g: &mut Generator<'_>, node: Node<'_>) {
    for ty in handled_types(node).into_iter().filter(|t| t.kind() == "identifier") {
        let name = g.text(ty).to_string();
        if !CONFUSED_EXCEPTIONS.contains(&name.as_str()) {
            continue;
        }
        for other in CONFUSED_EXCEPTIONS.iter().filter(|o| **o != name) {
            g.push(Operator::ExceptionType, ty, (*other).to_string());
        }
    }
}

/// The types an `except` clause names: `X`, `X as e`, `(X, Y)`.
fn handled_types(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    let Some(mut handled) = node.named_children(&mut cursor).find(|c| c.kind() != "block" && c.kind() != "comment")
    else {
        return Vec::new();
    };
    if handled.kind() == "as_pattern" {
        let Some(inner) = handled.named_child(0) else { return Vec::new() };
        handled = inner;
    }
    if handled.kind() == "tuple" {
        let mut c = handled.walk();
        return handled.named_children(&mut c).collect();
    }
    vec![handled]
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::patched;
    use super::*;

    #[test]
    fn handled_exception_types_are_exchanged_for_commonly_confused_builtins() {
        let src = "def get(d, k):\n    try:\n        return d[k]\n    except IndexError as e:\n        return None\n    except (ValueError, MyError):\n        return 0\n";
        let v = patched(src, 4, Operator::ExceptionType);
        assert!(v.iter().any(|p| p.contains("except KeyError as e:")), "{v:#?}");
        assert!(v.iter().all(|p| !p.contains("except IndexError as e:")), "{v:#?}");
        let v = patched(src, 6, Operator::ExceptionType);
        assert!(v.iter().any(|p| p.contains("except (TypeError, MyError):")), "{v:#?}");
        assert!(v.iter().all(|p| p.contains("MyError")), "a project's own exception is kept: {v:#?}");
    }
}
