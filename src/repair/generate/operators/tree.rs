//! Tree helpers the rules share: fields, enclosing definitions, a function's own nodes, statements.

use tree_sitter::Node;

/// The field name under which `parent` holds `child`.
pub(super) fn field_of(parent: Node<'_>, child: Node<'_>) -> Option<String> {
    let mut cursor = parent.walk();
    for (i, c) in parent.children(&mut cursor).enumerate() {
        if c.id() == child.id() {
            return parent.field_name_for_child(u32::try_from(i).ok()?).map(str::to_string);
        }
    }
    None
}

/// The innermost function definition around `node`.
pub(crate) fn enclosing_function(node: Node<'_>) -> Option<Node<'_>> {
    enclosing(node, "function_definition")
}

/// The innermost class definition around `node`.
pub(super) fn enclosing_class(node: Node<'_>) -> Option<Node<'_>> {
    enclosing(node, "class_definition")
}

/// The nearest ancestor of `node` of this kind.
fn enclosing<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
    let mut current = node.parent();
    while let Some(n) = current {
        if n.kind() == kind {
            return Some(n);
        }
        current = n.parent();
    }
    None
}

/// Every node of `function`'s own body: nested functions, classes and lambdas are left out.
pub(super) fn own_body_nodes(function: Node<'_>) -> Vec<Node<'_>> {
    let mut nodes = Vec::new();
    let mut stack: Vec<Node<'_>> = function.child_by_field_name("body").into_iter().collect();
    while let Some(node) = stack.pop() {
        if matches!(node.kind(), "function_definition" | "class_definition" | "lambda") {
            continue;
        }
        nodes.push(node);
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    nodes
}

/// Whether identifier `node` reads a variable, as far as the bound names of `scope.rs` cannot
/// tell: not an attribute, keyword or module path, nor inside a type annotation.
pub(super) fn is_free_load(node: Node<'_>) -> bool {
    let Some(parent) = node.parent() else { return false };
    match (parent.kind(), field_of(parent, node).as_deref()) {
        ("attribute", Some("attribute")) | ("keyword_argument", Some("name")) => return false,
        ("dotted_name" | "relative_import" | "aliased_import" | "import_from_statement", _) => return false,
        _ => {}
    }
    let mut current = Some(parent);
    while let Some(n) = current {
        if n.kind() == "type" {
            return false;
        }
        current = n.parent();
    }
    true
}

/// Whether `node` lies in the body of a `for` or `while` loop of `function` (not of a nested
/// function).
pub(super) fn inside_loop(node: Node<'_>, function: Node<'_>) -> bool {
    let mut current = node.parent();
    while let Some(n) = current.filter(|n| n.id() != function.id()) {
        if matches!(n.kind(), "for_statement" | "while_statement") {
            return true;
        }
        current = n.parent();
    }
    false
}

/// The statements the statement rules edit.
pub(super) fn is_statement(kind: &str) -> bool {
    matches!(
        kind,
        "expression_statement"
            | "return_statement"
            | "pass_statement"
            | "break_statement"
            | "continue_statement"
            | "raise_statement"
            | "assert_statement"
            | "delete_statement"
            | "if_statement"
            | "for_statement"
            | "while_statement"
            | "try_statement"
            | "with_statement"
    )
}

/// The arguments of `call` that are neither keywords, splats nor comments (`None` without an
/// argument list).
pub(super) fn positional_arguments(call: Node<'_>) -> Option<Vec<Node<'_>>> {
    let args = call.child_by_field_name("arguments")?;
    let mut cursor = args.walk();
    let positional = args
        .named_children(&mut cursor)
        .filter(|a| !matches!(a.kind(), "keyword_argument" | "list_splat" | "dictionary_splat" | "comment"))
        .collect();
    Some(positional)
}
