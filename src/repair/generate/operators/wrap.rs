//! Wrapping: an expression wrapped in a call (`abs(e)`, `len(e)`, ...), a call unwrapped, an operation replaced by one of its operands.

use super::tree::{enclosing_function, field_of};
use super::{Family, Generator, Operator};
use tree_sitter::Node;

pub(super) const FAMILY: Family =
    Family { name: "wrap", operators: &[Operator::WrapExpression, Operator::UnwrapCall, Operator::RemoveOperand] };

/// `a op b` → `a`, `b` (binary and boolean operators).
pub(super) fn remove_operand(g: &mut Generator<'_>, node: Node<'_>) {
    for field in ["left", "right"] {
        if let Some(operand) = node.child_by_field_name(field) {
            let text = g.text(operand).to_string();
            g.push(Operator::RemoveOperand, node, text);
        }
    }
}

/// A call replaced by one of its arguments: `len(x)` → `x`, and for a plain function of
/// at most three positional arguments each of them (`max(x, 0)` → `x`).
pub(super) fn unwrap_call(g: &mut Generator<'_>, node: Node<'_>) {
    let Some(args) = node.child_by_field_name("arguments") else { return };
    if args.kind() != "argument_list" {
        return;
    }
    let mut cursor = args.walk();
    let all: Vec<Node<'_>> = args.named_children(&mut cursor).filter(|a| a.kind() != "comment").collect();
    let plain = |a: &Node<'_>| !matches!(a.kind(), "keyword_argument" | "list_splat" | "dictionary_splat");
    let simple_callee = node.child_by_field_name("function").is_some_and(|f| f.kind() == "identifier");
    let several = simple_callee && (2..=3).contains(&all.len()) && all.iter().all(plain);
    if (all.len() == 1 && plain(&all[0])) || several {
        for arg in all {
            g.push(Operator::UnwrapCall, node, g.text(arg).to_string());
        }
    }
}

/// A value expression (not a call target, assignment target or statement) wrapped: `abs(e)`,
/// `len(e)`, `max(e, 0)`, `min(e, 0)`, `f(e)` for each one-argument function of the file,
/// `round(e)` inside `int(...)`, and `max(t, e)`/`min(t, e)` where `e` is assigned to `t`.
pub(super) fn wrap_expression(g: &mut Generator<'_>, node: Node<'_>) {
    if !matches!(node.kind(), "identifier" | "binary_operator" | "subscript" | "call" | "attribute") {
        return;
    }
    let Some(parent) = node.parent() else { return };
    let field = field_of(parent, node);
    let is_value = !matches!(
        (parent.kind(), field.as_deref()),
        ("call", Some("function"))
            | ("attribute", _)
            | ("keyword_argument", Some("name"))
            | ("assignment" | "augmented_assignment" | "for_statement", Some("left"))
            | ("expression_statement" | "function_definition" | "parameters" | "default_parameter", _)
            | ("import_statement" | "import_from_statement" | "dotted_name" | "aliased_import", _)
    );
    if !is_value || (node.kind() == "identifier" && enclosing_function(node).is_none()) {
        return;
    }
    for wrapped in wrappers(g, node, parent, field.as_deref()) {
        g.push(Operator::WrapExpression, node, wrapped);
    }
}

/// The wrapped forms of value `node` (the field of `parent` it is in), in order.
fn wrappers(g: &Generator<'_>, node: Node<'_>, parent: Node<'_>, field: Option<&str>) -> Vec<String> {
    let text = g.text(node).to_string();
    let mut wrappers: Vec<String> =
        vec![format!("abs({text})"), format!("len({text})"), format!("max({text}, 0)"), format!("min({text}, 0)")];
    wrappers.extend(g.scope.unary_functions.iter().map(|f| format!("{f}({text})")));
    // `int(seconds)` truncates where rounding was meant: `int(round(seconds))`.
    if truncated(g, node) {
        wrappers.push(format!("round({text})"));
    }
    // `best = candidate` that should keep the best so far: `best = max(best, candidate)`.
    if parent.kind() == "assignment" && field == Some("right") {
        if let Some(target) = parent.child_by_field_name("left").filter(|l| l.kind() == "identifier") {
            let target = g.text(target).to_string();
            if target != text {
                wrappers.push(format!("max({target}, {text})"));
                wrappers.push(format!("min({target}, {text})"));
            }
        }
    }
    wrappers
}

/// Whether `node` is the one argument of `int(...)` (truncation toward zero).
fn truncated(g: &Generator<'_>, node: Node<'_>) -> bool {
    let Some(args) = node.parent().filter(|a| a.kind() == "argument_list") else { return false };
    let Some(call) = args.parent().filter(|c| c.kind() == "call") else { return false };
    let callee = call.child_by_field_name("function").map(|f| g.text(f));
    callee == Some("int") && args.named_child_count() == 1
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::patched;
    use super::*;

    #[test]
    fn a_truncated_value_can_be_rounded_first() {
        let src = "def secs(a, b):\n    delta = int(total(a - b))\n    return delta\n";
        let v = patched(src, 2, Operator::WrapExpression);
        assert!(v.iter().any(|p| p.contains("    delta = int(round(total(a - b)))\n")), "{v:#?}");
        let plain = "def secs(a, b):\n    delta = float(total(a - b))\n    return delta\n";
        assert!(!patched(plain, 2, Operator::WrapExpression).iter().any(|p| p.contains("round(")), "only int()");
    }

    #[test]
    fn an_assigned_value_can_become_the_best_so_far() {
        let src = "def f(xs):\n    longest = 0\n    for x in xs:\n        longest = x + 1\n    return longest\n";
        let v = patched(src, 4, Operator::WrapExpression);
        for want in ["        longest = max(longest, x + 1)\n", "        longest = min(longest, x + 1)\n"] {
            assert!(v.iter().any(|p| p.contains(want)), "{want:?} missing: {v:#?}");
        }
    }

    #[test]
    fn expressions_are_wrapped_and_calls_unwrapped() {
        let src = "def half(x):\n    return x // 2\n\ndef f(a, b):\n    return str(a - b)\n";
        let wrapped = patched(src, 5, Operator::WrapExpression);
        assert!(wrapped.iter().any(|p| p.contains("return str(abs(a - b))")), "{wrapped:#?}");
        assert!(wrapped.iter().any(|p| p.contains("return str(half(a - b))")), "{wrapped:#?}");
        let unwrapped = patched(src, 5, Operator::UnwrapCall);
        assert!(unwrapped.iter().any(|p| p.contains("    return a - b\n")), "{unwrapped:#?}");
        // A plain function of a few arguments gives way to each; methods and keywords do not.
        let src = "def f(table, key, log):\n    x = max(table, 0)[key]\n    log.write(key, table)\n    return round(x, ndigits=2)\n";
        let unwrapped = patched(src, 2, Operator::UnwrapCall);
        assert!(unwrapped.iter().any(|p| p.contains("    x = table[key]\n")), "{unwrapped:#?}");
        assert!(unwrapped.iter().any(|p| p.contains("    x = 0[key]\n")), "{unwrapped:#?}");
        assert!(patched(src, 3, Operator::UnwrapCall).is_empty() && patched(src, 4, Operator::UnwrapCall).is_empty());
    }
}
