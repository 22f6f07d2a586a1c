//! Names a file and its functions bind: `FileScope` (once per file) and `scope_names` (per function).

use super::tree::own_body_nodes;
use crate::python::Parsed;
use std::collections::BTreeSet;
use tree_sitter::Node;

/// Names defined or used across a file, for operators that borrow from elsewhere in it.
#[derive(Debug, Clone, Default)]
pub struct FileScope {
    /// Module-level functions taking exactly one positional argument.
    pub unary_functions: BTreeSet<String>,
    /// Attribute names used anywhere in the file (`x.name`).
    pub attributes: BTreeSet<String>,
    /// Every name bound anywhere in the file (any scope); `None` when that cannot be known (a
    /// star import, a `match`): a name outside it and the builtins is undefined.
    pub bound: Option<BTreeSet<String>>,
    /// Names bound at module level: definitions, imports, assignments.
    pub module_names: BTreeSet<String>,
}

impl FileScope {
    #[must_use]
    pub fn of(parsed: &Parsed) -> FileScope {
        let mut scope = FileScope::default();
        let mut stack = vec![parsed.root()];
        while let Some(node) = stack.pop() {
            match node.kind() {
                "attribute" => {
                    if let Some(attr) = node.child_by_field_name("attribute") {
                        scope.attributes.insert(parsed.node_text(attr).to_string());
                    }
                }
                "function_definition" if node.parent().is_some_and(|p| p.kind() == "module") => {
                    let params = node.child_by_field_name("parameters").map_or(0, |p| p.named_child_count());
                    if let (1, Some(name)) = (params, node.child_by_field_name("name")) {
                        scope.unary_functions.insert(parsed.node_text(name).to_string());
                    }
                }
                _ => {}
            }
            let mut cursor = node.walk();
            stack.extend(node.named_children(&mut cursor));
        }
        scope.bound = bound_names(parsed, parsed.root(), true);
        scope.module_names = bound_names(parsed, parsed.root(), false).unwrap_or_default();
        scope
    }
}

/// Names bound under `node`: assignment, loop and `as` targets, parameters, definitions,
/// imports, `global`/`nonlocal` names; inside nested functions and classes too when `nested`.
/// `None` on a star import or a `match` (their names are not followed).
fn bound_names(parsed: &Parsed, node: Node<'_>, nested: bool) -> Option<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        let targets: Vec<Node<'_>> = match n.kind() {
            "wildcard_import" | "match_statement" => return None,
            "function_definition" | "class_definition" => {
                names.extend(n.child_by_field_name("name").map(|name| parsed.node_text(name).to_string()));
                if !nested && n.id() != node.id() {
                    continue;
                }
                Vec::new()
            }
            "parameters" | "lambda_parameters" | "global_statement" | "nonlocal_statement" => vec![n],
            "assignment" | "augmented_assignment" | "for_statement" | "for_in_clause" => {
                n.child_by_field_name("left").into_iter().collect()
            }
            "named_expression" => n.child_by_field_name("name").into_iter().collect(),
            "as_pattern" => n.child_by_field_name("alias").into_iter().collect(),
            "aliased_import" => n.child_by_field_name("alias").into_iter().collect(),
            "import_statement" | "import_from_statement" => imported(n),
            _ => Vec::new(),
        };
        for target in targets {
            all_identifiers(parsed, target, &mut names);
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    Some(names)
}

/// The nodes naming what an import binds: `a` of `import a.b`, `b` of `from m import b`.
fn imported(import: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = import.walk();
    let names: Vec<Node<'_>> = import.children_by_field_name("name", &mut cursor).collect();
    names
        .into_iter()
        .filter(|n| n.kind() == "dotted_name")
        .filter_map(|n| {
            if import.kind() == "import_statement" {
                n.named_child(0)
            } else {
                n.named_child(n.named_child_count().checked_sub(1)?)
            }
        })
        .collect()
}

/// Every identifier under `node` (a superset of the names a target binds: erring towards
/// "bound" keeps the undefined-name rule (`names.rs`) from flagging defined names).
fn all_identifiers(parsed: &Parsed, node: Node<'_>, names: &mut BTreeSet<String>) {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.kind() == "identifier" {
            names.insert(parsed.node_text(n).to_string());
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
}

/// Parameters and locally bound names of `function` (not of nested functions).
#[must_use]
pub fn scope_names(parsed: &Parsed, function: Node<'_>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    if let Some(params) = function.child_by_field_name("parameters") {
        let mut cursor = params.walk();
        for p in params.named_children(&mut cursor) {
            let ident = if p.kind() == "identifier" {
                Some(p)
            } else {
                p.child_by_field_name("name").or_else(|| p.named_child(0))
            };
            if let Some(ident) = ident.filter(|i| i.kind() == "identifier") {
                names.insert(parsed.node_text(ident).to_string());
            }
        }
    }
    for node in own_body_nodes(function) {
        let target = match node.kind() {
            "assignment" | "augmented_assignment" | "for_statement" | "for_in_clause" => {
                node.child_by_field_name("left")
            }
            "named_expression" => node.child_by_field_name("name"),
            _ => None,
        };
        if let Some(target) = target {
            collect_identifiers(parsed, target, &mut names);
        }
    }
    names.remove("self");
    names.remove("cls");
    names
}

/// The names a target binds: identifiers, also inside tuple and list patterns.
fn collect_identifiers(parsed: &Parsed, node: Node<'_>, names: &mut BTreeSet<String>) {
    match node.kind() {
        "identifier" => {
            names.insert(parsed.node_text(node).to_string());
        }
        "pattern_list" | "tuple_pattern" | "list_pattern" | "expression_list" | "tuple" | "list" => {
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                collect_identifiers(parsed, child, names);
            }
        }
        _ => {}
    }
}
