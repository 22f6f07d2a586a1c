//! The interface to tree-sitter-python is localized here: parsing, syntax errors, functions.

pub mod builtins;
mod functions;
mod incremental;
mod line_skeleton;
mod normalize;
pub mod skeleton;
mod skeleton_context;

pub use functions::{functions, outermost_enclosing, FunctionDef};
pub use line_skeleton::LineSkeleton;
pub use normalize::{normalize_range, normalize_source, NUM_LIT, STR_LIT};
pub use skeleton_context::SkeletonContext;

use tree_sitter::{Node, Parser, Tree};

/// A parsed Python source file. Parsing never fails: syntax errors are data.
pub struct Parsed {
    text: String,
    tree: Tree,
}

/// For a statement of a block: the definition it holds and the node spanning it with its
/// decorators (`(node, node)` for undecorated statements); `None` for a malformed decoration.
#[must_use]
pub fn unwrap_decorated(node: Node<'_>) -> Option<(Node<'_>, Node<'_>)> {
    if node.kind() == "decorated_definition" {
        node.child_by_field_name("definition").map(|def| (def, node))
    } else {
        Some((node, node))
    }
}

/// A syntax error found by the parser, 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl Parsed {
    /// Parse `text` as Python 3.
    #[must_use]
    pub fn new(text: impl Into<String>) -> Parsed {
        let text = text.into();
        let mut parser = Parser::new();
        parser
            .set_language(&tree_sitter_python::LANGUAGE.into())
            .expect("tree-sitter-python grammar is compatible with the linked tree-sitter");
        let tree =
            parser.parse(&text, None).expect("parser has a language and no timeout, so it always returns a tree");
        Parsed { text, tree }
    }

    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    #[must_use]
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    #[must_use]
    pub fn root(&self) -> Node<'_> {
        self.tree.root_node()
    }

    /// Source text of a node.
    #[must_use]
    pub fn node_text(&self, node: Node<'_>) -> &str {
        &self.text[node.byte_range()]
    }

    /// True when the parser found no ERROR or MISSING node.
    #[must_use]
    pub fn is_valid(&self) -> bool {
        !self.tree.root_node().has_error()
    }

    /// Every syntax error in document order (ERROR and MISSING nodes).
    #[must_use]
    pub fn syntax_errors(&self) -> Vec<SyntaxError> {
        let mut errors = Vec::new();
        if !self.root().has_error() {
            return errors;
        }
        let mut stack = vec![self.root()];
        while let Some(node) = stack.pop() {
            if !node.has_error() {
                continue;
            }
            let pos = node.start_position();
            if node.is_missing() {
                errors.push(SyntaxError {
                    line: pos.row + 1,
                    column: pos.column + 1,
                    message: format!("missing `{}`", node.kind()),
                });
                continue;
            }
            if node.is_error() {
                let snippet: String = self.node_text(node).chars().take(30).collect();
                errors.push(SyntaxError {
                    line: pos.row + 1,
                    column: pos.column + 1,
                    message: format!("invalid syntax near `{}`", snippet.trim()),
                });
                continue;
            }
            let mut cursor = node.walk();
            let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
            stack.extend(children.into_iter().rev());
        }
        errors.sort_by_key(|e| (e.line, e.column));
        errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_source_has_no_syntax_errors() {
        let parsed = Parsed::new("def f(x):\n    return x + 1\n");
        assert!(parsed.is_valid());
        assert!(parsed.syntax_errors().is_empty());
    }

    #[test]
    fn broken_source_reports_the_line_of_the_error() {
        let parsed = Parsed::new("def f(x):\n    return x +\n\ny = 2\n");
        assert!(!parsed.is_valid());
        let errors = parsed.syntax_errors();
        assert!(!errors.is_empty());
        assert_eq!(errors[0].line, 2, "{errors:?}");
    }
}
