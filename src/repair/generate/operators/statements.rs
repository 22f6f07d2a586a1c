//! Statements: one deleted, or one inserted (a copy of another of the function, or an update the function may be missing).

use super::tree::{enclosing_function, own_body_nodes};
use super::{shorten, Family, Generator, Operator, Statement};
use crate::patch::Edit;
use crate::python::Parsed;
use std::collections::BTreeSet;
use tree_sitter::Node;

pub(super) const FAMILY: Family =
    Family { name: "statements", operators: &[Operator::DeleteStatement, Operator::InsertStatement] };

/// The statement deleted with its lines, or replaced by `pass` when it is the only statement
/// of its block.
pub(super) fn delete(g: &mut Generator<'_>, statement: &Statement<'_>) {
    let node = statement.node;
    if statement.block.named_child_count() == 1 {
        g.push(Operator::DeleteStatement, node, "pass".to_string());
    } else {
        let description = format!("delete `{}`", shorten(g.text(node)));
        g.add(Operator::DeleteStatement, Edit::deletion(statement.line_start..statement.line_end), description);
    }
}

/// A statement inserted before this one: first the updates the function may be missing
/// ([`updates`]), then each other one-line simple statement of the function, as it is and
/// with one name of the scope replaced by another.
pub(super) fn insert(g: &mut Generator<'_>, statement: &Statement<'_>) {
    let donors = donors(g, statement);
    let mut updates = updates(g, statement);
    updates.retain(|u| !donors.contains(u));
    let copies = donors.into_iter().flat_map(|donor| {
        let variants = renamed_variants(&donor, &statement.scope);
        std::iter::once(donor).chain(variants)
    });
    for text in updates.into_iter().chain(copies) {
        let edit = Edit::insertion(statement.line_start, format!("{}{text}\n", statement.indent));
        g.add(Operator::InsertStatement, edit, format!("insert `{}`", shorten(&text)));
    }
}

/// The other one-line expression, `return`, `break` and `continue` statements of the
/// function's own body, sorted, without duplicates.
fn donors(g: &Generator<'_>, statement: &Statement<'_>) -> Vec<String> {
    let mut donors: Vec<String> = Vec::new();
    let mut stack = vec![statement.function.child_by_field_name("body")];
    while let Some(Some(n)) = stack.pop() {
        let mut cursor = n.walk();
        for child in n.named_children(&mut cursor) {
            if matches!(child.kind(), "function_definition" | "class_definition") {
                continue;
            }
            if matches!(
                child.kind(),
                "expression_statement" | "return_statement" | "break_statement" | "continue_statement"
            ) && child.id() != statement.node.id()
                && !g.text(child).contains('\n')
            {
                donors.push(g.text(child).to_string());
            }
            stack.push(Some(child));
        }
    }
    donors.sort();
    donors.dedup();
    donors
}

/// Updates the function may be missing: `c.add(v)` / `c.append(v)` on a collection the
/// function (or an enclosing one) builds or updates, and `a = b` for a local `a` assigned
/// elsewhere in the function (a state variable not advanced on some path).
fn updates(g: &Generator<'_>, statement: &Statement<'_>) -> Vec<String> {
    let (function, scope) = (statement.function, &statement.scope);
    let mut updates: Vec<String> = Vec::new();
    let indexed = indexed_sequences(g.parsed, function);
    for (collection, method) in collections_visible(g.parsed, function) {
        updates.extend(scope.iter().filter(|v| **v != collection).map(|v| format!("{collection}.{method}({v})")));
        // A list filled element by element from sequences walked by index may miss their
        // remainders (`out.extend(xs[i:])`), one or all of them.
        if method == "append" {
            let rests: Vec<String> = indexed
                .iter()
                .filter(|(seq, _)| *seq != collection)
                .map(|(seq, index)| format!("{collection}.extend({seq}[{index}:])"))
                .collect();
            if rests.len() > 1 {
                updates.push(rests.join(&format!("\n{}", statement.indent)));
            }
            updates.extend(rests);
        }
    }
    for target in assigned_names(g.parsed, function) {
        updates.extend(scope.iter().filter(|v| **v != target).map(|v| format!("{target} = {v}")));
    }
    updates
}

/// `text` with one whole-word occurrence of a scope name replaced by another (bounded).
fn renamed_variants(text: &str, scope: &[String]) -> Vec<String> {
    const MAX: usize = 12;
    if text.len() > 60 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for from in scope {
        for (at, _) in text.match_indices(from.as_str()) {
            let before = text[..at].chars().next_back();
            let after = text[at + from.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
            if word(before) || after.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            for to in scope.iter().filter(|t| *t != from) {
                out.push(format!("{}{to}{}", &text[..at], &text[at + from.len()..]));
                if out.len() >= MAX {
                    return out;
                }
            }
        }
    }
    out
}

/// Collections `function` or an enclosing function builds (`set()`, `[]`, `list()`,
/// `deque()`, set literals) or grows (`x.add(..)`, `x.append(..)`), with the method that grows
/// them.
fn collections_visible(parsed: &Parsed, function: Node<'_>) -> BTreeSet<(String, &'static str)> {
    let mut found = BTreeSet::new();
    let mut current = Some(function);
    while let Some(f) = current {
        for node in own_body_nodes(f) {
            let grown = match node.kind() {
                "assignment" => built(parsed, node),
                "call" => grown(parsed, node),
                _ => None,
            };
            if let Some((name, method)) = grown {
                found.insert((parsed.node_text(name).to_string(), method));
            }
        }
        current = enclosing_function(f);
    }
    found
}

/// `name = []` (`set()`, `list()`, `deque()`, a comprehension, ...): the name, and the method
/// that grows such a collection.
fn built<'t>(parsed: &Parsed, assignment: Node<'t>) -> Option<(Node<'t>, &'static str)> {
    let left = assignment.child_by_field_name("left").filter(|l| l.kind() == "identifier");
    let method = assignment.child_by_field_name("right").and_then(|right| match right.kind() {
        "list" | "list_comprehension" => Some("append"),
        "set" | "set_comprehension" => Some("add"),
        "call" => match right.child_by_field_name("function").map(|f| parsed.node_text(f)) {
            Some("set") => Some("add"),
            Some("list" | "deque" | "collections.deque") => Some("append"),
            _ => None,
        },
        _ => None,
    });
    left.zip(method)
}

/// `name.add(..)` / `name.append(..)`: the name, and the method.
fn grown<'t>(parsed: &Parsed, call: Node<'t>) -> Option<(Node<'t>, &'static str)> {
    let callee = call.child_by_field_name("function").filter(|c| c.kind() == "attribute")?;
    let object = callee.child_by_field_name("object").filter(|o| o.kind() == "identifier");
    let method = callee.child_by_field_name("attribute").and_then(|a| match parsed.node_text(a) {
        "add" => Some("add"),
        "append" => Some("append"),
        _ => None,
    });
    object.zip(method)
}

/// `(sequence, index)` name pairs subscripted as `sequence[index]` in `function`'s own body.
fn indexed_sequences(parsed: &Parsed, function: Node<'_>) -> BTreeSet<(String, String)> {
    own_body_nodes(function)
        .into_iter()
        .filter(|node| node.kind() == "subscript")
        .filter_map(|node| {
            let value = node.child_by_field_name("value").filter(|v| v.kind() == "identifier")?;
            let index = node.child_by_field_name("subscript").filter(|i| i.kind() == "identifier")?;
            Some((parsed.node_text(value).to_string(), parsed.node_text(index).to_string()))
        })
        .collect()
}

/// Plain names assigned (`name = ...`) in `function`'s own body.
fn assigned_names(parsed: &Parsed, function: Node<'_>) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = own_body_nodes(function)
        .into_iter()
        .filter(|node| node.kind() == "assignment")
        .filter_map(|node| node.child_by_field_name("left").filter(|l| l.kind() == "identifier"))
        .map(|left| parsed.node_text(left).to_string())
        .collect();
    names.remove("self");
    names
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::patched;
    use super::super::mutations_at_line;
    use super::*;

    #[test]
    fn statements_inserted_in_a_tab_indented_function_are_indented_with_tabs() {
        let src = "def f(xs):\n\tout = []\n\tfor x in xs:\n\t\tout.append(x)\n\treturn out\n";
        let parsed = Parsed::new(src);
        let inserted: Vec<String> = mutations_at_line(&parsed, 5)
            .into_iter()
            .filter(|m| m.operator == Operator::InsertStatement && m.edit.range.is_empty())
            .map(|m| m.edit.content)
            .collect();
        assert!(!inserted.is_empty());
        assert!(inserted.iter().all(|text| text.starts_with('\t') && !text.starts_with("\t ")), "{inserted:?}");
        for text in &inserted {
            let patched = Parsed::new(src.replacen("\treturn out", &format!("{text}\treturn out"), 1));
            assert!(patched.is_valid(), "{text:?}");
        }
    }

    #[test]
    fn statements_are_deleted_or_replaced_by_pass() {
        let src = "def f(xs):\n    xs.sort()\n    return xs\n\ndef g(x):\n    if x:\n        x.pop()\n    return x\n";
        let v = patched(src, 2, Operator::DeleteStatement);
        assert_eq!(v, ["def f(xs):\n    return xs\n\ndef g(x):\n    if x:\n        x.pop()\n    return x\n"]);
        let v = patched(src, 7, Operator::DeleteStatement);
        assert!(v[0].contains("    if x:\n        pass\n"), "{v:#?}");
    }

    #[test]
    fn statements_of_the_same_function_are_inserted_with_names_replaced() {
        let src = "def f(a, b):\n    a.append(1)\n    return b\n";
        let v = patched(src, 3, Operator::InsertStatement);
        assert!(v.contains(&"def f(a, b):\n    a.append(1)\n    b.append(1)\n    return b\n".to_string()), "{v:#?}");
        assert!(v.contains(&"def f(a, b):\n    a.append(1)\n    a.append(1)\n    return b\n".to_string()), "{v:#?}");
    }

    #[test]
    fn remainders_of_sequences_walked_by_index_are_added_one_or_all() {
        let src = "def merge(a, b):\n    out = []\n    i = j = 0\n    while i < len(a) and j < len(b):\n        if a[i] <= b[j]:\n            out.append(a[i])\n            i += 1\n        else:\n            out.append(b[j])\n            j += 1\n    return out\n";
        let v = patched(src, 11, Operator::InsertStatement);
        assert!(v.iter().any(|p| p.ends_with("    out.extend(a[i:])\n    return out\n")), "{v:#?}");
        assert!(
            v.iter().any(|p| p.ends_with("    out.extend(a[i:])\n    out.extend(b[j:])\n    return out\n")),
            "{v:#?}"
        );
    }

    #[test]
    fn missing_updates_of_collections_and_state_variables_are_inserted() {
        // A visited set that a nested search never grows.
        let src = "def search(start, goal):\n    seen = set()\n    def visit(node):\n        if node in seen:\n            return False\n        return any(visit(n) for n in node.next)\n    return visit(start)\n";
        let v = patched(src, 6, Operator::InsertStatement);
        assert!(v.iter().any(|p| p.contains("        seen.add(node)\n        return any(")), "{v:#?}");
        // A list grown elsewhere, and a state variable never advanced.
        let src = "def walk(node):\n    prev = None\n    out = []\n    while node:\n        nxt = node.next\n        node.next = prev\n        node = nxt\n    return prev\n";
        let v = patched(src, 7, Operator::InsertStatement);
        assert!(
            v.iter().any(|p| p.contains("        node.next = prev\n        prev = node\n        node = nxt\n")),
            "{v:#?}"
        );
        assert!(v.iter().any(|p| p.contains("        out.append(node)\n        node = nxt\n")), "{v:#?}");
        assert!(!v.iter().any(|p| p.contains("prev = prev") || p.contains("out.append(out)")), "{v:#?}");
    }
}
