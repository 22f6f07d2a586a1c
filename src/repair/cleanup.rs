//! Dead stores a patch leaves behind: an assignment whose every read the patch removed goes with the patch, as a developer would write it.

use crate::patch::{Edit, Patch};
use crate::python::Parsed;
use std::ops::Range;
use tree_sitter::Node;

/// Names whose presence in a function makes any local possibly read by name.
const DYNAMIC: [&str; 4] = ["locals", "vars", "eval", "exec"];

/// `patch` (already applied: `patched` is its parse) extended so that it also removes each
/// simple assignment `name = <expression without calls>` of the edited function whose name the
/// original function read and the patched one no longer reads; the removal is folded into the
/// nearest edit, so the patch keeps its number of edits. `None` when nothing is left dead.
/// Returns the new patch and the names whose stores it removes.
#[must_use]
pub fn without_dead_stores(original: &Parsed, patched: &Parsed, patch: &Patch) -> Option<(Patch, Vec<String>)> {
    let mut removals: Vec<(Range<usize>, String)> = Vec::new();
    for (edit, patched_range) in patch.edits().iter().zip(patched_ranges(patch)) {
        let (Some(before), Some(after)) = (
            enclosing_function(original.root(), edit.range.clone()),
            enclosing_function(patched.root(), patched_range),
        ) else {
            continue;
        };
        for (name, statement) in dead_stores(original, before, patched, after) {
            let Some(line) = whole_lines(patched.text(), statement.byte_range()) else { continue };
            let Some(range) = to_original(patch, line) else { continue };
            if !removals.iter().any(|(r, _)| r.start < range.end && range.start < r.end) {
                removals.push((range, name));
            }
        }
    }
    if removals.is_empty() {
        return None;
    }
    let mut edits = patch.edits().to_vec();
    let mut names = Vec::new();
    for (range, name) in removals {
        edits = fold(original.text(), edits, Edit::deletion(range))?;
        names.push(name);
    }
    Some((Patch::new(patch.file.clone(), edits).ok()?, names))
}

/// Where each edit's new content lies in the patched text.
fn patched_ranges(patch: &Patch) -> Vec<Range<usize>> {
    let mut shift: isize = 0;
    patch
        .edits()
        .iter()
        .map(|e| {
            let start = e.range.start.checked_add_signed(shift).unwrap_or(0);
            shift += e.content.len() as isize - e.range.len() as isize;
            start..start + e.content.len()
        })
        .collect()
}

/// The innermost function definition whose body holds `range`.
fn enclosing_function(root: Node<'_>, range: Range<usize>) -> Option<Node<'_>> {
    let mut node = root.descendant_for_byte_range(range.start, range.end);
    while let Some(n) = node {
        if n.kind() == "function_definition" {
            let body = n.child_by_field_name("body")?;
            return (body.start_byte() <= range.start && range.end <= body.end_byte()).then_some(n);
        }
        node = n.parent();
    }
    None
}

/// Simple stores of `after` whose names are read nowhere else in `after` but were read in
/// `before` outside such stores.
fn dead_stores<'t>(
    original: &Parsed,
    before: Node<'_>,
    patched: &'t Parsed,
    after: Node<'t>,
) -> Vec<(String, Node<'t>)> {
    let uses = identifiers(patched, after);
    if uses.iter().any(|(name, _)| DYNAMIC.contains(&name.as_str())) {
        return Vec::new();
    }
    let stores = simple_stores(patched, after);
    let old_uses = identifiers(original, before);
    let old_stores = simple_stores(original, before);
    let mut out: Vec<(String, Node<'t>)> = Vec::new();
    for (name, _) in &stores {
        if out.iter().any(|(n, _)| n == name) {
            continue;
        }
        let inside = |stores: &[(String, Node<'_>)], at: usize| {
            stores.iter().any(|(n, s)| n == name && s.byte_range().contains(&at))
        };
        let read_now = uses.iter().any(|(n, at)| n == name && !inside(&stores, *at));
        let read_before = old_uses.iter().any(|(n, at)| n == name && !inside(&old_stores, *at));
        if !read_now && read_before {
            out.extend(stores.iter().filter(|(n, _)| n == name).map(|(n, s)| (n.clone(), *s)));
        }
    }
    out
}

/// Every identifier under `node` with its start byte.
fn identifiers(parsed: &Parsed, node: Node<'_>) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.kind() == "identifier" && !member_name(n) {
            out.push((parsed.node_text(n).to_string(), n.start_byte()));
        }
        let mut cursor = n.walk();
        stack.extend(n.children(&mut cursor));
    }
    out
}

/// Whether `node` names an attribute (`x.name`) or a keyword argument (`f(name=...)`), not a
/// variable.
fn member_name(node: Node<'_>) -> bool {
    let field = |parent: Node<'_>, field: &str| parent.child_by_field_name(field).is_some_and(|c| c.id() == node.id());
    node.parent().is_some_and(|p| match p.kind() {
        "attribute" => field(p, "attribute"),
        "keyword_argument" => field(p, "name"),
        _ => false,
    })
}

/// Statements `name = value` of `function`'s own body (not nested definitions) whose value
/// calls nothing, in a block with other statements.
fn simple_stores<'t>(parsed: &'t Parsed, function: Node<'t>) -> Vec<(String, Node<'t>)> {
    let mut out = Vec::new();
    let mut stack: Vec<Node<'t>> = function.child_by_field_name("body").into_iter().collect();
    while let Some(n) = stack.pop() {
        if matches!(n.kind(), "function_definition" | "class_definition" | "decorated_definition") {
            continue;
        }
        if let Some(name) = store_name(parsed, n) {
            out.push((name, n));
            continue;
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    out
}

/// The target of an expression statement `name = value` (value without calls, awaits,
/// yields or walrus), alone on its line(s) in a block of more than one statement.
fn store_name(parsed: &Parsed, statement: Node<'_>) -> Option<String> {
    if statement.kind() != "expression_statement" || statement.named_child_count() != 1 {
        return None;
    }
    let assignment = statement.named_child(0).filter(|a| a.kind() == "assignment")?;
    let target = assignment.child_by_field_name("left").filter(|t| t.kind() == "identifier")?;
    let value = assignment.child_by_field_name("right")?;
    if assignment.child_by_field_name("type").is_some() || has_effects(parsed.text(), value) {
        return None;
    }
    let block = statement.parent().filter(|b| b.kind() == "block")?;
    let mut cursor = block.walk();
    let siblings = block.named_children(&mut cursor).filter(|c| c.kind() != "comment").count();
    (siblings > 1).then(|| parsed.node_text(target).to_string())
}

/// Builtins that compute a value from their arguments and change nothing.
const PURE_FUNCTIONS: [&str; 18] = [
    "abs",
    "bool",
    "dict",
    "float",
    "frozenset",
    "int",
    "isinstance",
    "len",
    "list",
    "max",
    "min",
    "repr",
    "round",
    "set",
    "sorted",
    "str",
    "tuple",
    "type",
];
/// Methods of `str`, `bytes`, `dict` and `list` that return a value and change nothing.
const PURE_METHODS: [&str; 22] = [
    "copy",
    "count",
    "decode",
    "encode",
    "endswith",
    "find",
    "format",
    "get",
    "index",
    "items",
    "join",
    "keys",
    "lower",
    "lstrip",
    "replace",
    "rsplit",
    "rstrip",
    "split",
    "splitlines",
    "startswith",
    "strip",
    "upper",
];

/// Whether evaluating `node` may do more than compute a value: a call other than a known pure
/// builtin or method, an await, a yield, an assignment expression.
fn has_effects(text: &str, node: Node<'_>) -> bool {
    if matches!(node.kind(), "await" | "yield" | "named_expression" | "assignment" | "augmented_assignment") {
        return true;
    }
    if node.kind() == "call" && !pure_call(text, node) {
        return true;
    }
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    children.into_iter().any(|c| has_effects(text, c))
}

fn pure_call(text: &str, call: Node<'_>) -> bool {
    let Some(callee) = call.child_by_field_name("function") else { return false };
    match callee.kind() {
        "identifier" => PURE_FUNCTIONS.contains(&&text[callee.byte_range()]),
        "attribute" => {
            callee.child_by_field_name("attribute").is_some_and(|a| PURE_METHODS.contains(&&text[a.byte_range()]))
        }
        _ => false,
    }
}

/// The lines `range` spans, newline included, when nothing else but blanks and a comment
/// share them.
fn whole_lines(text: &str, range: Range<usize>) -> Option<Range<usize>> {
    let start = text[..range.start].rfind('\n').map_or(0, |i| i + 1);
    if !text[start..range.start].trim().is_empty() {
        return None;
    }
    let end = text[range.end..].find('\n').map_or(text.len(), |i| range.end + i + 1);
    let rest = text[range.end..end].trim();
    (rest.is_empty() || rest.starts_with('#')).then_some(start..end)
}

/// `range` of the patched text in the original's coordinates, when no edit touches it.
fn to_original(patch: &Patch, range: Range<usize>) -> Option<Range<usize>> {
    let mut shift: isize = 0;
    for (edit, new) in patch.edits().iter().zip(patched_ranges(patch)) {
        if new.start < range.end && range.start < new.end.max(new.start + 1) {
            return None;
        }
        if new.end <= range.start {
            shift = new.end as isize - edit.range.end as isize;
        }
    }
    Some(range.start.checked_add_signed(-shift)?..range.end.checked_add_signed(-shift)?)
}

/// `edits` with `removal` folded into the nearest edit: one edit over both and whatever lies
/// between (edits in between are folded in as well).
fn fold(original: &str, edits: Vec<Edit>, removal: Edit) -> Option<Vec<Edit>> {
    let distance = |e: &Edit| {
        if e.range.end <= removal.range.start {
            removal.range.start - e.range.end
        } else {
            e.range.start.saturating_sub(removal.range.end)
        }
    };
    let nearest = edits.iter().min_by_key(|e| distance(e))?.clone();
    let lo = nearest.range.start.min(removal.range.start);
    let hi = nearest.range.end.max(removal.range.end);
    let (mut inside, outside): (Vec<Edit>, Vec<Edit>) =
        edits.into_iter().partition(|e| lo <= e.range.start && e.range.end <= hi);
    if outside.iter().any(|e| e.range.start < hi && lo < e.range.end) {
        return None;
    }
    inside.push(removal);
    let local: Vec<Edit> =
        inside.into_iter().map(|e| Edit::replacement(e.range.start - lo..e.range.end - lo, e.content)).collect();
    let content = Patch::new("", local).ok()?.apply(&original[lo..hi]);
    let mut out = outside;
    out.push(Edit::replacement(lo..hi, content));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHECK: &str = "class V:\n    def check(self, field, value):\n        invalid = value - self.types\n        if invalid:\n            path = self.document_path + (field,)\n            self._error(\n                path, 'Unsupported: {}'.format(invalid)\n            )\n";

    fn cleaned(original: &str, from: &str, to: &str) -> Option<(String, Vec<String>, usize)> {
        let at = original.find(from).unwrap();
        let patch = Patch::single("m.py", Edit::replacement(at..at + from.len(), to));
        let parsed = Parsed::new(original);
        let patched = Parsed::new(patch.apply(original));
        let (patch, names) = without_dead_stores(&parsed, &patched, &patch)?;
        Some((patch.apply(original), names, patch.edits().len()))
    }

    #[test]
    fn a_store_whose_only_read_the_patch_replaced_is_removed_in_the_same_edit() {
        let (text, names, edits) = cleaned(CHECK, "path, 'Unsupported", "field, 'Unsupported").unwrap();
        assert_eq!(names, ["path"]);
        assert_eq!(edits, 1);
        assert!(!text.contains("path"), "{text}");
        assert!(
            text.contains("        if invalid:\n            self._error(\n                field, 'Unsup"),
            "{text}"
        );
        assert!(Parsed::new(text).is_valid());
    }

    #[test]
    fn stores_that_are_still_read_called_or_alone_in_their_block_stay() {
        assert!(cleaned(CHECK, "'Unsupported: {}'", "'Unsupported types: {}'").is_none(), "still read");
        let calls = CHECK.replace("self.document_path + (field,)", "self.path_of(field)");
        assert!(cleaned(&calls, "path, 'Unsupported", "field, 'Unsupported").is_none(), "value has a call");
        let pure = "def first(text):\n    line = text.splitlines()[0]\n    return MATCH(line)\n";
        let (out, _, _) = cleaned(pure, "MATCH(line)", "MATCH(text)").expect("a pure method's result is dropped");
        assert_eq!(out, "def first(text):\n    return MATCH(text)\n");
        let alone = "def f(a):\n    if a:\n        b = a + 1\n    return b\n";
        assert!(cleaned(alone, "return b", "return a").is_none(), "alone in its block");
        let dynamic = "def f(a):\n    b = a + 1\n    print(locals())\n    return b\n";
        assert!(cleaned(dynamic, "return b", "return a").is_none(), "locals() may read it");
        let dead_before = "def f(a):\n    b = a + 1\n    c = 2\n    return a\n";
        assert!(cleaned(dead_before, "return a", "return -a").is_none(), "already dead: not the patch's doing");
    }

    #[test]
    fn a_store_before_the_edit_or_in_a_nested_block_is_folded_in_whichever_side_it_lies() {
        let text = "def f(a, b):\n    total = a + b\n    for x in a:\n        print(x)\n    return total * 2\n";
        let (out, _, edits) = cleaned(text, "total * 2", "(a - b) * 2").unwrap();
        assert_eq!(edits, 1);
        assert_eq!(out, "def f(a, b):\n    for x in a:\n        print(x)\n    return (a - b) * 2\n");
    }
}
