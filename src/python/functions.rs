//! Function definitions (with their enclosing class) found in a parsed module.

use super::Parsed;
use std::ops::Range;
use tree_sitter::Node;

/// A `def` (or `async def`) in a module, possibly nested in classes or functions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionDef {
    /// Bare name, e.g. `area`.
    pub name: String,
    /// Dotted path through enclosing classes and functions, e.g. `Shape.area`.
    pub qualname: String,
    /// Innermost enclosing class, if any.
    pub class: Option<String>,
    /// Byte range of the definition, decorators included.
    pub byte_range: Range<usize>,
    /// 1-based inclusive line range of the definition, decorators included.
    pub start_line: usize,
    pub end_line: usize,
    /// Byte range of the body block (after the `def ...:` header).
    pub body_byte_range: Range<usize>,
}

impl FunctionDef {
    /// True when 1-based `line` lies inside this definition.
    #[must_use]
    pub fn contains_line(&self, line: usize) -> bool {
        (self.start_line..=self.end_line).contains(&line)
    }
}

/// Every function definition in document order (outer before inner).
#[must_use]
pub fn functions(parsed: &Parsed) -> Vec<FunctionDef> {
    let mut out = Vec::new();
    walk(parsed, parsed.root(), &mut Vec::new(), None, &mut out);
    out
}

/// The outermost definition [`functions`] lists whose body holds bytes `start..end`, found by
/// walking down the tree to that range only (cost follows the nesting, not the file).
#[must_use]
pub fn outermost_enclosing(parsed: &Parsed, start: usize, end: usize) -> Option<FunctionDef> {
    let root = parsed.root();
    let mut chain = Vec::new();
    let mut node = root.descendant_for_byte_range(start, end);
    while let Some(n) = node.filter(|n| n.id() != root.id()) {
        chain.push(n);
        node = n.parent();
    }
    let mut scope: Vec<String> = Vec::new();
    let mut class = None;
    for n in chain.into_iter().rev() {
        match n.kind() {
            "function_definition" => {
                let name = parsed.node_text(n.child_by_field_name("name")?).to_string();
                let body = n.child_by_field_name("body")?;
                if !(body.start_byte() <= start && end <= body.end_byte()) {
                    return None;
                }
                let outer = n.parent().filter(|p| p.kind() == "decorated_definition").unwrap_or(n);
                scope.push(name.clone());
                return Some(FunctionDef {
                    name,
                    qualname: scope.join("."),
                    class,
                    byte_range: outer.byte_range(),
                    start_line: outer.start_position().row + 1,
                    end_line: outer.end_position().row + 1,
                    body_byte_range: body.byte_range(),
                });
            }
            "class_definition" => {
                let name = parsed.node_text(n.child_by_field_name("name")?).to_string();
                scope.push(name.clone());
                class = Some(name);
            }
            "decorated_definition"
            | "block"
            | "if_statement"
            | "try_statement"
            | "with_statement"
            | "else_clause"
            | "elif_clause"
            | "except_clause"
            | "finally_clause" => {}
            _ => return None,
        }
    }
    None
}

fn walk(parsed: &Parsed, node: Node<'_>, scope: &mut Vec<String>, class: Option<&str>, out: &mut Vec<FunctionDef>) {
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        let Some((def, outer)) = super::unwrap_decorated(child) else { continue };
        match def.kind() {
            "function_definition" => {
                let Some(name_node) = def.child_by_field_name("name") else { continue };
                let name = parsed.node_text(name_node).to_string();
                scope.push(name.clone());
                out.push(FunctionDef {
                    name,
                    qualname: scope.join("."),
                    class: class.map(str::to_string),
                    byte_range: outer.byte_range(),
                    start_line: outer.start_position().row + 1,
                    end_line: outer.end_position().row + 1,
                    body_byte_range: def
                        .child_by_field_name("body")
                        .map_or(outer.end_byte()..outer.end_byte(), |b| b.byte_range()),
                });
                if let Some(body) = def.child_by_field_name("body") {
                    walk(parsed, body, scope, None, out);
                }
                scope.pop();
            }
            "class_definition" => {
                let Some(name_node) = def.child_by_field_name("name") else { continue };
                let name = parsed.node_text(name_node).to_string();
                scope.push(name.clone());
                if let Some(body) = def.child_by_field_name("body") {
                    walk(parsed, body, scope, Some(&name), out);
                }
                scope.pop();
            }
            _ => {
                // Definitions inside if/try/with blocks at module level still count.
                if matches!(
                    def.kind(),
                    "if_statement"
                        | "try_statement"
                        | "with_statement"
                        | "block"
                        | "else_clause"
                        | "elif_clause"
                        | "except_clause"
                        | "finally_clause"
                ) {
                    walk(parsed, def, scope, class, out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outermost_enclosing_definition_is_the_one_functions_lists() {
        let src = "import os\n\nclass Shape:\n    @property\n    def area(self):\n        def inner():\n            return 1\n        return inner()\n\nfor i in []:\n    def hidden():\n        return i\n\ndef top(x):\n    return x\n";
        let parsed = Parsed::new(src);
        let listed = functions(&parsed);
        let at = |s: &str| src.find(s).unwrap();
        for needle in ["return 1", "return inner()", "return x"] {
            let found = outermost_enclosing(&parsed, at(needle), at(needle) + needle.len()).unwrap();
            let expected = listed
                .iter()
                .filter(|d| d.body_byte_range.start <= at(needle) && at(needle) + needle.len() <= d.body_byte_range.end)
                .max_by_key(|d| d.byte_range.len())
                .unwrap();
            assert_eq!(&found, expected);
        }
        assert_eq!(
            outermost_enclosing(&parsed, at("return i\n"), at("return i\n") + 8),
            None,
            "not listed by functions()"
        );
        assert_eq!(outermost_enclosing(&parsed, at("import os"), at("import os") + 9), None);
        assert_eq!(outermost_enclosing(&parsed, at("def top"), at("def top") + 3), None, "a header is not a body");
    }

    #[test]
    fn methods_carry_their_class_and_qualified_name() {
        let src = "import os\n\nclass Shape:\n    @property\n    def area(self):\n        return 1\n\ndef top(x):\n    def inner():\n        return x\n    return inner\n";
        let parsed = Parsed::new(src);
        let fns = functions(&parsed);
        let names: Vec<_> = fns.iter().map(|f| f.qualname.as_str()).collect();
        assert_eq!(names, ["Shape.area", "top", "top.inner"]);
        assert_eq!(fns[0].class.as_deref(), Some("Shape"));
        assert_eq!((fns[0].start_line, fns[0].end_line), (4, 6));
        assert!(fns[1].contains_line(10));
        assert_eq!(fns[2].class, None);
    }
}
