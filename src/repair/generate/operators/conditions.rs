//! Conditions: an `if`/`while` condition widened or narrowed with a name's None or emptiness check, a missing guard clause inserted.

use super::tree::{inside_loop, is_free_load};
use super::{Family, Generator, Operator, Statement};
use crate::patch::Edit;
use tree_sitter::Node;

pub(super) const FAMILY: Family =
    Family { name: "conditions", operators: &[Operator::ConditionChange, Operator::GuardClause] };

/// `cond` → `cond and x is not None`, `cond or x is None`, `cond and x`, `cond or not x` for
/// each name `x` of the function's scope (`if` and `while` statements).
pub(super) fn condition_change(g: &mut Generator<'_>, statement: &Statement<'_>) {
    if !matches!(statement.node.kind(), "if_statement" | "while_statement") {
        return;
    }
    let Some(cond) = statement.node.child_by_field_name("condition") else { return };
    let c = g.text(cond).to_string();
    let c = if cond.kind() == "boolean_operator" { format!("({c})") } else { c };
    for name in &statement.scope {
        for variant in [
            format!("{c} and {name} is not None"),
            format!("{c} or {name} is None"),
            format!("{c} and {name}"),
            format!("{c} or not {name}"),
        ] {
            g.push(Operator::ConditionChange, cond, variant);
        }
    }
}

/// Missing guard clauses before the statement: for each of (at most four) names of the
/// function's scope that the statement (a compound one: its condition or iterable) reads,
/// `if not n:` or `if n is None:` followed by `continue` inside a loop, else by `return`,
/// `return n`, and in a method that returns something of `self`, `return self`.
pub(super) fn guard_clauses(g: &mut Generator<'_>, statement: &Statement<'_>) {
    let names = names_read(g, statement);
    if names.is_empty() {
        return;
    }
    let Statement { node, function, indent, line_start, .. } = statement;
    let in_loop = inside_loop(*node, *function);
    let returns_self = !in_loop && returns_of_self(g, *function);
    let unit = if indent.contains('\t') { "\t" } else { "    " };
    for name in names.iter().take(4) {
        let mut exits =
            if in_loop { vec!["continue".to_string()] } else { vec!["return".to_string(), format!("return {name}")] };
        if returns_self {
            exits.push("return self".to_string());
        }
        for condition in [format!("not {name}"), format!("{name} is None")] {
            for exit in &exits {
                let edit = Edit::insertion(*line_start, format!("{indent}if {condition}:\n{indent}{unit}{exit}\n"));
                g.add(Operator::GuardClause, edit, format!("insert `if {condition}: {exit}`"));
            }
        }
    }
}

/// The names of the function's scope the statement reads (a compound statement: its
/// condition or iterable), in the order they first appear; not `self` or `cls`.
fn names_read(g: &Generator<'_>, statement: &Statement<'_>) -> Vec<String> {
    let node = statement.node;
    let header = match node.kind() {
        "if_statement" | "while_statement" => node.child_by_field_name("condition"),
        "for_statement" => node.child_by_field_name("right"),
        "expression_statement" | "return_statement" => Some(node),
        _ => None,
    };
    let mut names: Vec<String> = Vec::new();
    let mut stack: Vec<Node<'_>> = header.into_iter().collect();
    while let Some(n) = stack.pop() {
        let text = g.text(n);
        let readable = n.kind() == "identifier" && is_free_load(n) && !matches!(text, "self" | "cls");
        if readable && statement.scope.iter().any(|s| s == text) && !names.iter().any(|m| m == text) {
            names.push(text.to_string());
        }
        let mut cursor = n.walk();
        let children: Vec<Node<'_>> = n.named_children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    names
}

/// Whether a method (first parameter `self`) returns something of `self` somewhere
/// (`return self.replace(...)`): an unchanged `self` is then a natural early result.
fn returns_of_self(g: &Generator<'_>, function: Node<'_>) -> bool {
    let first = function.child_by_field_name("parameters").and_then(|p| p.named_child(0));
    if first.map(|f| g.text(f)) != Some("self") {
        return false;
    }
    let mut stack = vec![function];
    while let Some(n) = stack.pop() {
        if n.kind() == "return_statement" && n.named_child(0).is_some_and(|v| g.text(v).starts_with("self")) {
            return true;
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor).filter(|c| c.kind() != "function_definition"));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::patched;
    use super::*;
    use crate::python::Parsed;

    #[test]
    fn conditions_are_widened_with_none_checks_of_names_in_scope() {
        let src = "def f(node, x):\n    if node.left:\n        return x\n    return None\n";
        let v = patched(src, 2, Operator::ConditionChange);
        assert!(v.iter().any(|p| p.contains("if node.left and node is not None:")), "{v:#?}");
        assert!(v.iter().any(|p| p.contains("if node.left or not x:")), "{v:#?}");
    }

    #[test]
    fn guard_clauses_return_early_or_skip_an_iteration() {
        let src = "class U:\n    def child(self, *segments):\n        new = self.path + segments\n        return self.replace(path=new)\n\n\ndef clean(pairs):\n    out = []\n    for ksv in pairs:\n        out.append(ksv[0])\n    return out\n";
        let v = patched(src, 3, Operator::GuardClause);
        let early = "        if not segments:\n            return self\n        new = self.path + segments\n";
        assert!(v.iter().any(|p| p.contains(early)), "{v:#?}");
        assert!(v.iter().any(|p| p.contains("        if segments is None:\n            return segments\n")), "{v:#?}");
        let v = patched(src, 10, Operator::GuardClause);
        assert!(
            v.iter().any(|p| p.contains("        if not ksv:\n            continue\n        out.append(ksv[0])")),
            "{v:#?}"
        );
        assert!(v.iter().all(|p| !p.split("def clean").nth(1).unwrap().contains("return self")), "in a loop: {v:#?}");
        assert!(v.iter().all(|p| Parsed::new(p.as_str()).is_valid()), "{v:#?}");
    }
}
