//! Names: another variable of the scope, a defined name for an undefined one, the object's own attribute for a module's, another attribute of the file.

use super::scope_names;
use super::tree::{enclosing_class, enclosing_function, field_of, is_free_load};
use super::{edit_distance, Family, Generator, Operator};
use crate::patch::Edit;
use crate::python::builtins::{is_builtin, BUILTINS, SITE_BUILTINS};
use crate::python::Parsed;
use std::collections::BTreeSet;
use tree_sitter::Node;

pub(super) const FAMILY: Family =
    Family { name: "names", operators: &[Operator::VariableMisuse, Operator::AttributeMisuse] };

/// Alternatives [`Operator::AttributeMisuse`] proposes per attribute.
const MAX_ATTRIBUTE_ALTERNATIVES: usize = 16;

/// Python 2 names (builtins, and `six`'s and compatibility modules' names for them) with the
/// Python 3 builtin that replaces them.
const PY2_NAMES: [(&str, &str); 14] = [
    ("basestring", "str"),
    ("binary_type", "bytes"),
    ("class_types", "type"),
    ("ifilter", "filter"),
    ("imap", "map"),
    ("integer_types", "int"),
    ("izip", "zip"),
    ("long", "int"),
    ("raw_input", "input"),
    ("string_types", "str"),
    ("text_type", "str"),
    ("unichr", "chr"),
    ("unicode", "str"),
    ("xrange", "range"),
];

/// A variable read in a function → each other name of the function's scope.
pub(super) fn variable_misuse(g: &mut Generator<'_>, node: Node<'_>) {
    let Some(parent) = node.parent() else { return };
    // Only plain loads of variables: not attribute names, keywords, definitions or callees.
    let field = field_of(parent, node);
    match (parent.kind(), field.as_deref()) {
        ("attribute", Some("attribute"))
        | ("keyword_argument", Some("name"))
        | ("function_definition" | "class_definition", _)
        | ("parameters" | "default_parameter" | "typed_parameter" | "typed_default_parameter", _)
        | ("call", Some("function"))
        | ("assignment" | "augmented_assignment", Some("left"))
        | ("for_statement" | "for_in_clause", Some("left"))
        | ("import_statement" | "import_from_statement" | "dotted_name" | "aliased_import", _)
        | ("global_statement" | "nonlocal_statement", _) => return,
        _ => {}
    }
    let Some(function) = enclosing_function(node) else { return };
    let name = g.text(node).to_string();
    let scope = scope_names(g.parsed, function);
    if !scope.contains(&name) {
        return;
    }
    for other in scope {
        if other != name {
            g.push(Operator::VariableMisuse, node, other);
        }
    }
}

/// A name bound nowhere in the file and no builtin (a `NameError` when it runs) → the name
/// it is imported as, the Python 3 builtin of a Python 2 name, and the closest names by edit
/// distance among those visible from its function.
pub(super) fn undefined_name(g: &mut Generator<'_>, node: Node<'_>) {
    const CLOSEST: usize = 4;
    let Some(bound) = &g.scope.bound else { return };
    let name = g.text(node).to_string();
    let dunder = name.starts_with("__") && name.ends_with("__");
    if dunder
        || bound.contains(&name)
        || is_builtin(&name)
        || SITE_BUILTINS.contains(&name.as_str())
        || !is_free_load(node)
    {
        return;
    }
    let Some(function) = enclosing_function(node) else { return };
    if let Some(alias) = import_alias(g.parsed, &name) {
        // `from datetime import tzinfo as dt_tzinfo` and a `tzinfo` that is not defined: the
        // name is imported under another one, and that one is the fix (no guess needed).
        g.push(Operator::VariableMisuse, node, alias);
        return;
    }
    if let Some((_, py3)) = PY2_NAMES.iter().find(|(py2, _)| *py2 == name) {
        // A Python 2 compatibility name (`six.text_type`, `unicode`) left behind when the
        // project dropped its compatibility layer: the Python 3 builtin it stood for.
        g.push(Operator::VariableMisuse, node, (*py3).to_string());
    }
    let mut ranked: Vec<(usize, String)> =
        visible_names(g, node, function).into_iter().map(|v| (edit_distance(&name, &v), v)).collect();
    ranked.sort();
    for (_, other) in ranked.into_iter().take(CLOSEST) {
        g.push(Operator::VariableMisuse, node, other);
    }
}

/// The names visible from `function`: the module's, its own and its enclosing functions', and
/// for a callee the lowercase builtins.
fn visible_names(g: &Generator<'_>, node: Node<'_>, function: Node<'_>) -> BTreeSet<String> {
    let mut visible = g.scope.module_names.clone();
    let mut current = Some(function);
    while let Some(f) = current {
        visible.extend(scope_names(g.parsed, f));
        current = enclosing_function(f);
    }
    let callee = node.parent().is_some_and(|p| p.kind() == "call" && field_of(p, node).as_deref() == Some("function"));
    if callee {
        let builtins = BUILTINS.iter().chain(SITE_BUILTINS);
        visible.extend(builtins.filter(|b| b.starts_with(char::is_lowercase)).map(|b| (*b).to_string()));
    }
    visible
}

/// The alias under which the module imports `name` (`from m import name as alias`, `import
/// name as alias`), when it does so once.
fn import_alias(parsed: &Parsed, name: &str) -> Option<String> {
    let mut aliases = BTreeSet::new();
    let mut stack = vec![parsed.root()];
    while let Some(n) = stack.pop() {
        if n.kind() == "aliased_import" {
            let imported = n.child_by_field_name("name").map(|d| parsed.node_text(d));
            let alias = n.child_by_field_name("alias").map(|a| parsed.node_text(a));
            let from = n.parent().is_some_and(|p| p.kind() == "import_from_statement");
            let names_it = imported.is_some_and(|i| if from { i == name } else { i.rsplit('.').next() == Some(name) });
            if let (true, Some(alias)) = (names_it, alias) {
                aliases.insert(alias.to_string());
            }
            continue;
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    (aliases.len() == 1).then(|| aliases.into_iter().next()).flatten()
}

/// Another attribute of the file in place of this one: first those used on the same
/// receiver (`self.`) in the enclosing class (or function), then by spelling, at most
/// [`MAX_ATTRIBUTE_ALTERNATIVES`] (a large module uses hundreds of attribute names).
pub(super) fn attribute_misuse(g: &mut Generator<'_>, node: Node<'_>) {
    let Some(attr) = node.child_by_field_name("attribute") else { return };
    let name = g.text(attr).to_string();
    let receiver = node.child_by_field_name("object").map(|o| g.text(o).to_string());
    let region = enclosing_class(node).or_else(|| enclosing_function(node)).unwrap_or(g.parsed.root());
    let same_receiver = receiver.map(|r| attributes_on(g.parsed, region, &r)).unwrap_or_default();
    let mut others: Vec<(bool, usize, &String)> = g
        .scope
        .attributes
        .iter()
        .filter(|a| **a != name)
        .map(|a| (!same_receiver.contains(a), edit_distance(&name, a), a))
        .collect();
    others.sort();
    let others: Vec<String> = others.into_iter().take(MAX_ATTRIBUTE_ALTERNATIVES).map(|(_, _, a)| a.clone()).collect();
    for other in others {
        g.push(Operator::AttributeMisuse, attr, other);
    }
}

/// `mod.f` → `self.f` in a method, for a module-level name `mod` when the class uses
/// `self.f` too (the object's own `dumps` in place of `json.dumps`): every `mod.f` of the
/// statement at once, so both sides of `json.dumps(a) == json.dumps(b)` change together.
pub(super) fn receiver_misuse(g: &mut Generator<'_>, node: Node<'_>) {
    let (Some(object), Some(attr)) = (node.child_by_field_name("object"), node.child_by_field_name("attribute")) else {
        return;
    };
    let (module, name) = (g.text(object).to_string(), g.text(attr).to_string());
    if object.kind() != "identifier" || module == "self" || !g.scope.module_names.contains(&module) {
        return;
    }
    let Some(class) = enclosing_class(node) else { return };
    let in_body = enclosing_function(node)
        .and_then(|f| f.child_by_field_name("body"))
        .is_some_and(|b| b.byte_range().contains(&node.start_byte()));
    if !in_body || !attributes_on(g.parsed, class, "self").contains(&name) {
        return;
    }
    let target = format!("{module}.{name}");
    let mut same: Vec<Node<'_>> = Vec::new();
    let mut stack = vec![statement_of(node)];
    while let Some(n) = stack.pop() {
        if n.kind() == "attribute" && g.text(n) == target {
            same.push(n);
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    same.sort_by_key(Node::start_byte);
    // Proposed once per statement, at its first `mod.f`.
    let (Some(first), Some(last)) = (same.first(), same.last()) else { return };
    if first.id() != node.id() {
        return;
    }
    let text = g.parsed.text();
    let mut content = String::new();
    let mut at = first.start_byte();
    for n in &same {
        content.push_str(&text[at..n.start_byte()]);
        content.push_str(&format!("self.{name}"));
        at = n.end_byte();
    }
    let edit = Edit::replacement(first.start_byte()..last.end_byte(), content);
    g.add(Operator::VariableMisuse, edit, format!("`{target}` → `self.{name}`"));
}

/// The simple statement (or clause header) that holds `node`.
fn statement_of(node: Node<'_>) -> Node<'_> {
    let mut current = node;
    while let Some(parent) = current.parent() {
        if super::tree::is_statement(current.kind()) || matches!(parent.kind(), "block" | "module") {
            return current;
        }
        current = parent;
    }
    current
}

/// Attribute names used on `receiver` (`self.name`) anywhere under `region`.
fn attributes_on(parsed: &Parsed, region: Node<'_>, receiver: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![region];
    while let Some(n) = stack.pop() {
        if n.kind() == "attribute" && n.child_by_field_name("object").is_some_and(|o| parsed.node_text(o) == receiver) {
            if let Some(attr) = n.child_by_field_name("attribute") {
                out.insert(parsed.node_text(attr).to_string());
            }
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{patched, variants};
    use super::super::mutations_at_line;
    use super::*;

    #[test]
    fn variables_are_replaced_only_by_names_of_the_same_scope() {
        let src = "G = 1\ndef f(a, b):\n    c = a\n    return c.real + a\n";
        let v = variants(src, 4, Operator::VariableMisuse);
        assert_eq!(v, ["return a.real + a", "return b.real + a", "return c.real + b", "return c.real + c"]);
    }

    #[test]
    fn an_undefined_name_imported_under_an_alias_is_replaced_by_the_alias_only() {
        let src = "from datetime import date\nfrom datetime import tzinfo as dt_tzinfo\nimport numpy.linalg as la\n\ndef now(tz):\n    if not isinstance(tz, tzinfo):\n        return date\n    return linalg.norm(tz)\n";
        let v = variants(src, 6, Operator::VariableMisuse);
        assert_eq!(v, ["if not isinstance(tz, dt_tzinfo):"], "{v:#?}");
        let v = variants(src, 8, Operator::VariableMisuse);
        assert_eq!(v, ["return la.norm(tz)"], "{v:#?}");
    }

    #[test]
    fn an_undefined_name_is_replaced_by_the_closest_visible_names() {
        let src = "import os.path\nfrom math import floor as fl\nLIMIT = 3\n\ndef spread(values, default=0):\n    low = min(values)\n    return hihg - low if values else defualt\n\ndef other():\n    high = 1\n    return high\n";
        let v = variants(src, 7, Operator::VariableMisuse);
        // `high` is bound in another function only: not visible from `spread`.
        assert!(v.contains(&"return hihg - low if values else default".to_string()), "{v:#?}");
        let replaced: Vec<&String> = v.iter().filter(|p| !p.contains("hihg")).collect();
        assert_eq!(replaced.len(), 4, "{v:#?}");
        assert!(replaced.iter().all(|p| !p.contains("high")), "{v:#?}");
        // Defined names, builtins, attributes, keywords and imports are left alone.
        let src = "import os.path\nfrom math import floor as fl\n\ndef f(xs, n=2):\n    try:\n        pass\n    except ValueError as err:\n        print(err)\n    with open(os.path.join('a')) as fh:\n        return fl(len(xs), key=n), [y for y in xs], fh, lambda z: z\n";
        for line in 1..=10 {
            let parsed = Parsed::new(src);
            let found: Vec<String> = mutations_at_line(&parsed, line)
                .into_iter()
                .filter(|m| m.operator == Operator::VariableMisuse)
                .map(|m| m.description)
                .filter(|d| {
                    d.starts_with("`os`")
                        || d.starts_with("`path`")
                        || d.starts_with("`fl`")
                        || d.starts_with("`print`")
                        || d.starts_with("`key`")
                        || d.starts_with("`err`")
                        || d.starts_with("`fh`")
                        || d.starts_with("`z`")
                })
                .collect();
            assert!(found.is_empty(), "line {line}: {found:#?}");
        }
    }

    #[test]
    fn a_python2_name_left_undefined_becomes_the_python3_builtin() {
        let src = "from .compat import PY2\n\ndef render(tokens):\n    return ''.join(map(text_type, tokens))\n";
        let v = variants(src, 4, Operator::VariableMisuse);
        assert!(v.contains(&"return ''.join(map(str, tokens))".to_string()), "{v:#?}");
        let defined = format!("text_type = str\n{src}");
        assert!(variants(&defined, 5, Operator::VariableMisuse).iter().all(|p| !p.contains("map(str,")), "defined");
    }

    #[test]
    fn an_undefined_callee_is_replaced_by_close_functions_and_builtins() {
        let src = "def total(xs):\n    return sum(xs)\n\ndef mean(xs):\n    return totl(xs) / lenght(xs)\n";
        let v = variants(src, 5, Operator::VariableMisuse);
        assert!(v.contains(&"return total(xs) / lenght(xs)".to_string()), "{v:#?}");
        assert!(v.contains(&"return totl(xs) / len(xs)".to_string()), "{v:#?}");
        // No name is flagged in a file with a star import.
        let v = variants(&format!("from helpers import *\n{src}"), 6, Operator::VariableMisuse);
        assert!(v.iter().all(|p| p.contains("totl(") && p.contains("lenght(")), "{v:#?}");
    }

    #[test]
    fn attribute_alternatives_prefer_the_receivers_own_attributes_then_spelling_and_are_capped() {
        let mut src = String::from("class Shape:\n    def area(self):\n        return self.width * self.hieght\n\n    def scale(self):\n        self.height = 2\n\n");
        for i in 0..40 {
            src.push_str(&format!("def f{i}(o):\n    return o.attr_{i}\n"));
        }
        let v = patched(&src, 3, Operator::AttributeMisuse);
        assert!(v.iter().any(|p| p.contains("self.width * self.height\n")), "{v:#?}");
        assert!(v.len() <= 2 * MAX_ATTRIBUTE_ALTERNATIVES, "{}", v.len());
        // The receiver's own attributes are kept before 40 others: width → height.
        assert!(v.iter().any(|p| p.contains("self.height * self.hieght")), "{v:#?}");
    }

    #[test]
    fn a_module_function_becomes_the_objects_own_in_the_whole_statement() {
        let src = "import json\n\nclass Builder:\n    def __init__(self, dumps=json.dumps):\n        self.dumps = dumps\n\n    def same(self, a, b):\n        return json.dumps(a) == json.dumps(b)\n";
        let v = variants(src, 8, Operator::VariableMisuse);
        assert!(v.contains(&"return self.dumps(a) == self.dumps(b)".to_string()), "{v:#?}");
        assert_eq!(v.iter().filter(|p| p.contains("self.dumps")).count(), 1, "once per statement: {v:#?}");
        // Outside a class, or where the class never uses `self.loads`: nothing.
        let plain = "import json\n\ndef same(a, b):\n    return json.loads(a) == json.loads(b)\n";
        assert!(!variants(plain, 4, Operator::VariableMisuse).iter().any(|p| p.contains("self.")));
    }
}
