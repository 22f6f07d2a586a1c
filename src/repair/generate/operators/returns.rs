//! Return values: what a `return` returns changed, or a missing `return` added after a function's last statement.

use super::{Family, Generator, Operator, Statement};
use crate::patch::Edit;

pub(super) const FAMILY: Family = Family { name: "returns", operators: &[Operator::ReturnValue] };

/// `return v` → `return n` for each other name of the scope, `return None`; an empty list
/// returned → `[[]]` and `[n]`; `True`/`False` returned → `n == 0`, `not n`.
pub(super) fn return_value(g: &mut Generator<'_>, statement: &Statement<'_>) {
    let node = statement.node;
    if node.kind() != "return_statement" {
        return;
    }
    let scope = &statement.scope;
    let value = node.named_child(0);
    let current = value.map(|v| g.text(v).to_string()).unwrap_or_default();
    let mut alternatives: Vec<String> = scope.iter().filter(|n| **n != current).cloned().collect();
    if value.is_some() {
        alternatives.push("None".to_string());
    }
    // A base case returning an empty list often should return one element: `[[]]`
    // (the empty combination) or a name of the scope.
    if value.is_some_and(|v| v.kind() == "list" && v.named_child_count() == 0) {
        alternatives.push("[[]]".to_string());
        alternatives.extend(scope.iter().map(|n| format!("[{n}]")));
    }
    // A constant verdict that should depend on the state reached: `return depth == 0`.
    if value.is_some_and(|v| matches!(v.kind(), "true" | "false")) {
        for name in scope {
            alternatives.push(format!("{name} == 0"));
            alternatives.push(format!("not {name}"));
        }
    }
    for alt in alternatives {
        g.push(Operator::ReturnValue, node, format!("return {alt}"));
    }
}

/// `return n` for each name of the scope added after the function's last statement (unless it
/// is a `return`).
pub(super) fn add_return(g: &mut Generator<'_>, statement: &Statement<'_>) {
    let node = statement.node;
    let is_last = statement
        .function
        .child_by_field_name("body")
        .and_then(|b| b.named_child(b.named_child_count().saturating_sub(1)))
        .is_some_and(|last| last.id() == node.id());
    if is_last && node.kind() != "return_statement" {
        for name in &statement.scope {
            let edit = Edit::insertion(statement.line_end, format!("{}return {name}\n", statement.indent));
            g.add(Operator::ReturnValue, edit, format!("add `return {name}`"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::patched;
    use super::*;

    #[test]
    fn a_constant_verdict_can_check_the_state_reached() {
        let src = "def balanced(s):\n    depth = 0\n    for c in s:\n        depth += 1 if c == '(' else -1\n        if depth < 0:\n            return False\n    return True\n";
        let v = patched(src, 7, Operator::ReturnValue);
        for want in ["    return depth == 0\n", "    return not depth\n"] {
            assert!(v.iter().any(|p| p.ends_with(want)), "{want:?} missing: {v:#?}");
        }
    }

    #[test]
    fn empty_list_returns_get_one_element_variants() {
        let v = patched("def f(n):\n    if n < 2:\n        return []\n    return f(n - 1)\n", 3, Operator::ReturnValue);
        for want in ["        return [[]]\n", "        return [n]\n", "        return n\n"] {
            assert!(v.iter().any(|p| p.contains(want)), "{want:?} missing: {v:#?}");
        }
    }

    #[test]
    fn return_values_and_missing_returns_are_proposed() {
        let src = "def f(a, b):\n    c = a + b\n    return a\n";
        let v = patched(src, 3, Operator::ReturnValue);
        assert!(v.iter().any(|p| p.ends_with("    return c\n")), "{v:#?}");
        let src = "def f(a):\n    total = a * 2\n";
        let v = patched(src, 2, Operator::ReturnValue);
        assert!(v.contains(&"def f(a):\n    total = a * 2\n    return total\n".to_string()), "{v:#?}");
    }
}
