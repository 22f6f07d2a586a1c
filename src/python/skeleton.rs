//! Module outline for code skeletons: imports, globals, classes and functions split into
//! header, docstring and body line spans.

use super::Parsed;
use tree_sitter::Node;

/// 0-based inclusive line span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub first: usize,
    pub last: usize,
}

impl Span {
    pub fn lines(self) -> impl Iterator<Item = usize> {
        self.first..=self.last
    }

    #[must_use]
    pub fn contains(self, line: usize) -> bool {
        (self.first..=self.last).contains(&line)
    }
}

/// A class: its `class ...:` header (decorators included), docstring and attribute assignments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassOutline {
    pub name: String,
    pub whole: Span,
    pub header: Span,
    pub docstring: Option<Span>,
    pub attributes: Vec<Span>,
}

/// A module-level function or a method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionOutline {
    pub name: String,
    /// Index into [`Outline::classes`] of the class it is defined in.
    pub class: Option<usize>,
    pub whole: Span,
    pub header: Span,
    pub docstring: Option<Span>,
    /// Body lines after the docstring; `None` when empty or on the header line.
    pub body: Option<Span>,
}

/// Everything a skeleton can be made of, in document order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outline {
    pub imports: Vec<Span>,
    pub globals: Vec<Span>,
    pub classes: Vec<ClassOutline>,
    pub functions: Vec<FunctionOutline>,
}

fn last_line(node: Node<'_>) -> usize {
    let end = node.end_position();
    if end.column == 0 && end.row > node.start_position().row {
        end.row - 1
    } else {
        end.row
    }
}

/// The 0-based lines `node` spans (a node ending at a line's first column ends on the line
/// before).
#[must_use]
pub fn span(node: Node<'_>) -> Span {
    Span { first: node.start_position().row, last: last_line(node) }
}

fn is_assignment(node: Node<'_>) -> bool {
    node.kind() == "expression_statement"
        && node.named_child(0).is_some_and(|c| matches!(c.kind(), "assignment" | "augmented_assignment"))
}

fn docstring(body: Node<'_>) -> Option<Span> {
    let first = body.named_child(0)?;
    (first.kind() == "expression_statement" && first.named_child(0).is_some_and(|c| c.kind() == "string"))
        .then(|| span(first))
}

/// Header, docstring and remaining body of a `def`/`class` whose outer node is `outer`.
fn parts(outer: Node<'_>, body: Option<Node<'_>>) -> (Span, Option<Span>, Option<Span>) {
    let whole = span(outer);
    let Some(body) = body else { return (whole, None, None) };
    let body_first = body.start_position().row;
    if body_first <= whole.first {
        return (whole, None, None);
    }
    let header = Span { first: whole.first, last: body_first - 1 };
    let doc = docstring(body);
    let rest_first = doc.map_or(body_first, |d| d.last + 1);
    let rest = (rest_first <= whole.last).then_some(Span { first: rest_first, last: whole.last });
    (header, doc, rest)
}

/// Outline a parsed module.
#[must_use]
pub fn outline(parsed: &Parsed) -> Outline {
    let mut out = Outline::default();
    walk(parsed, parsed.root(), None, &mut out);
    out
}

fn walk(parsed: &Parsed, node: Node<'_>, class: Option<usize>, out: &mut Outline) {
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
    for child in children {
        let Some((def, outer)) = super::unwrap_decorated(child) else { continue };
        match def.kind() {
            "import_statement" | "import_from_statement" | "future_import_statement" if class.is_none() => {
                out.imports.push(span(def));
            }
            "expression_statement" if is_assignment(def) => match class {
                None => out.globals.push(span(def)),
                Some(c) => out.classes[c].attributes.push(span(def)),
            },
            "function_definition" => {
                let name = def.child_by_field_name("name").map_or("", |n| parsed.node_text(n)).to_string();
                let (header, docstring, body) = parts(outer, def.child_by_field_name("body"));
                out.functions.push(FunctionOutline { name, class, whole: span(outer), header, docstring, body });
            }
            "class_definition" => {
                let name = def.child_by_field_name("name").map_or("", |n| parsed.node_text(n)).to_string();
                let body = def.child_by_field_name("body");
                let (header, docstring, _) = parts(outer, body);
                out.classes.push(ClassOutline { name, whole: span(outer), header, docstring, attributes: Vec::new() });
                let index = out.classes.len() - 1;
                if let Some(body) = body {
                    walk(parsed, body, Some(index), out);
                }
            }
            "if_statement" | "try_statement" | "with_statement" | "block" | "else_clause" | "elif_clause"
            | "except_clause" | "finally_clause" => walk(parsed, def, class, out),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outline_splits_functions_into_header_docstring_and_body() {
        let src = "import os\nfrom a import b\nX = 1\n\nclass C(Base):\n    \"\"\"Doc.\"\"\"\n    size = 3\n\n    @property\n    def f(self,\n          y):\n        \"\"\"F doc.\"\"\"\n        return y\n\ndef g(): return 2\n";
        let o = outline(&Parsed::new(src));
        assert_eq!(o.imports, [Span { first: 0, last: 0 }, Span { first: 1, last: 1 }]);
        assert_eq!(o.globals, [Span { first: 2, last: 2 }]);
        assert_eq!(o.classes.len(), 1);
        assert_eq!(o.classes[0].header, Span { first: 4, last: 4 });
        assert_eq!(o.classes[0].docstring, Some(Span { first: 5, last: 5 }));
        assert_eq!(o.classes[0].attributes, [Span { first: 6, last: 6 }]);
        let f = &o.functions[0];
        assert_eq!(
            (f.class, f.header, f.docstring, f.body),
            (
                Some(0),
                Span { first: 8, last: 10 },
                Some(Span { first: 11, last: 11 }),
                Some(Span { first: 12, last: 12 })
            )
        );
        let g = &o.functions[1];
        assert_eq!((g.class, g.header, g.body), (None, Span { first: 14, last: 14 }, None));
    }
}
