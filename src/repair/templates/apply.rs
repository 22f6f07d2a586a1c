//! Matching templates against the tokens of one line and instantiating their fixed side.

use super::pattern::{render, Piece, Template, TemplateKind};
use super::tokens::{is_fragment, is_simple_statement, leaf_span, Leaf, LeafKind};
use crate::patch::Edit;
use crate::python::Parsed;
use crate::repair::operators::{enclosing_function, scope_names};
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use tree_sitter::Node;

/// Most instantiations of one template's new names at one place.
const MAX_INSTANCES: usize = 12;

/// The tokens of one line and the syntax nodes that lie on it.
pub(super) struct LineView<'p> {
    parsed: &'p Parsed,
    leaves: Vec<Leaf>,
    /// Ends of the expression nodes starting at each token, and whether each is an operator
    /// expression (wrapped in parentheses where an operator of the fixed code adjoins it).
    expr_ends: Vec<Vec<(usize, bool)>>,
    statements: HashSet<(usize, usize)>,
    /// Whether a statement (simple or compound) starts at the line's first token.
    starts_statement: bool,
    /// Byte offsets of the line's start and of the start of the next line.
    line: Range<usize>,
    /// The innermost node holding the line's first token (for the names in scope).
    anchor: Node<'p>,
}

/// A template matched at a line: the tokens it covers and what its holes bound.
struct Match {
    span: Range<usize>,
    bound: Vec<(Piece, Range<usize>)>,
}

impl<'p> LineView<'p> {
    /// `None` for a line without tokens.
    pub(super) fn new(parsed: &'p Parsed, row: usize) -> Option<LineView<'p>> {
        let leaves = super::tokens::leaves_on_row(parsed, row);
        let first = leaves.first()?;
        let text = parsed.text();
        let start = text[..first.range.start].rfind('\n').map_or(0, |i| i + 1);
        let last_end = leaves.last().map_or(first.range.end, |l| l.range.end);
        let end = text[last_end..].find('\n').map_or(text.len(), |i| last_end + i + 1);
        let anchor = parsed.root().descendant_for_byte_range(first.range.start, first.range.end)?;
        let mut view = LineView {
            parsed,
            expr_ends: vec![Vec::new(); leaves.len()],
            leaves,
            statements: HashSet::new(),
            starts_statement: false,
            line: start..end,
            anchor,
        };
        view.collect_nodes(parsed.root(), row);
        Some(view)
    }

    fn collect_nodes(&mut self, node: Node<'_>, row: usize) {
        if node.end_position().row < row || node.start_position().row > row {
            return;
        }
        let kind = node.kind();
        if node.start_byte() == self.leaves[0].range.start && (kind.ends_with("_statement") || kind.ends_with("_definition")) {
            self.starts_statement = true;
        }
        if node.start_position().row == row && node.end_position().row == row && node.is_named() {
            let span = leaf_span(&self.leaves, node);
            if is_simple_statement(node.kind()) {
                self.statements.insert((span.start, span.end));
            } else if !is_fragment(node.kind()) && !span.is_empty() {
                let operator = node.kind().ends_with("_operator") || matches!(node.kind(), "conditional_expression" | "lambda");
                self.expr_ends[span.start].push((span.end, operator));
            }
        }
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            self.collect_nodes(child, row);
        }
    }

    fn text(&self, i: usize) -> &str {
        &self.parsed.text()[self.leaves[i].range.clone()]
    }

    fn source(&self, span: &Range<usize>) -> &str {
        &self.parsed.text()[self.leaves[span.start].range.start..self.leaves[span.end - 1].range.end]
    }

    /// Every distinct token text of the line.
    pub(super) fn token_texts(&self) -> HashSet<&str> {
        (0..self.leaves.len()).map(|i| self.text(i)).collect()
    }

    /// The edits `template` proposes on this line.
    pub(super) fn edits(&self, template: &Template, scope: &mut Option<Vec<String>>) -> Vec<Edit> {
        match template.kind {
            TemplateKind::InsertStatement => self.insertions(template, scope),
            TemplateKind::DeleteStatement => {
                let whole = self.statements.contains(&(0, self.leaves.len()));
                let matched = whole && self.match_at(&template.before, 0).is_some_and(|m| m.span.end == self.leaves.len());
                if matched { vec![Edit::deletion(self.line.clone())] } else { Vec::new() }
            }
            TemplateKind::Expression | TemplateKind::Statement => self.rewrites(template, scope),
        }
    }

    fn rewrites(&self, template: &Template, scope: &mut Option<Vec<String>>) -> Vec<Edit> {
        let mut out = Vec::new();
        for start in 0..self.leaves.len() {
            let Some(m) = self.match_at(&template.before, start) else { continue };
            let is_node = match template.kind {
                TemplateKind::Statement => self.statements.contains(&(m.span.start, m.span.end)),
                _ => self.expr_ends[m.span.start].iter().any(|(end, _)| *end == m.span.end),
            };
            if !is_node {
                continue;
            }
            let range = self.leaves[m.span.start].range.start..self.leaves[m.span.end - 1].range.end;
            for code in self.instances(template, &m, scope) {
                out.push(Edit::replacement(range.clone(), code));
            }
        }
        out
    }

    /// The statement inserted before the line and, after a one-line simple statement, after it.
    fn insertions(&self, template: &Template, scope: &mut Option<Vec<String>>) -> Vec<Edit> {
        let text = self.parsed.text();
        let indent_end = self.leaves[0].range.start;
        let indent = &text[self.line.start..indent_end];
        if !self.starts_statement || !indent.chars().all(char::is_whitespace) {
            return Vec::new();
        }
        let empty = Match { span: 0..0, bound: Vec::new() };
        let codes = self.instances(template, &empty, scope);
        let simple = self.statements.contains(&(0, self.leaves.len()));
        let mut out = Vec::new();
        for code in codes {
            let line = format!("{indent}{code}\n");
            if simple && text[..self.line.end].ends_with('\n') {
                out.push(Edit::insertion(self.line.end, line.clone()));
            }
            out.push(Edit::insertion(self.line.start, line));
        }
        out
    }

    /// The fixed side's code for a match, once per choice of names in scope for its new holes.
    fn instances(&self, template: &Template, m: &Match, scope: &mut Option<Vec<String>>) -> Vec<String> {
        let new_names = template.new_names();
        let choices: Vec<Vec<&str>> = if new_names.is_empty() {
            vec![Vec::new()]
        } else {
            let names = scope.get_or_insert_with(|| self.scope_names());
            name_choices(names, new_names.len())
        };
        choices.into_iter().map(|chosen| self.instantiate(&template.after, m, &new_names, &chosen)).collect()
    }

    fn instantiate(&self, after: &[Piece], m: &Match, new_names: &[u8], chosen: &[&str]) -> String {
        let mut tokens: Vec<String> = Vec::with_capacity(after.len());
        for (i, piece) in after.iter().enumerate() {
            let bound = m.bound.iter().find(|(p, _)| p == piece).map(|(_, span)| span);
            tokens.push(match (piece, bound) {
                (Piece::Text(text), _) => text.clone(),
                (Piece::Expr(_), Some(span)) if self.is_operator(span) && !self.stands_alone(after, i, &m.span) => {
                    format!("({})", self.source(span))
                }
                (_, Some(span)) => self.source(span).to_string(),
                (Piece::Name(n), None) => chosen[new_names.iter().position(|x| x == n).unwrap_or(0)].to_string(),
                (_, None) => String::new(),
            });
        }
        render(&tokens)
    }

    /// Whether position `i` of the fixed side, put in place of the tokens `matched`, is
    /// delimited on both sides (brackets, commas, `=`, line ends), so that an operator
    /// expression there needs no parentheses.
    fn stands_alone(&self, after: &[Piece], i: usize, matched: &Range<usize>) -> bool {
        let left = match i.checked_sub(1) {
            Some(j) => Some(after[j].to_string()),
            None => matched.start.checked_sub(1).map(|j| self.text(j).to_string()),
        };
        let right = match after.get(i + 1) {
            Some(piece) => Some(piece.to_string()),
            None => self.text_at(matched.end).map(String::from),
        };
        left.as_deref().is_none_or(|t| matches!(t, "(" | "[" | "{" | "," | "=" | "return" | ":"))
            && right.as_deref().is_none_or(|t| matches!(t, ")" | "]" | "}" | "," | ":"))
    }

    fn is_operator(&self, span: &Range<usize>) -> bool {
        self.expr_ends[span.start].iter().any(|&(end, op)| end == span.end && op)
    }

    /// Parameters and locals of the enclosing function, then the module's names; none at
    /// module level.
    fn scope_names(&self) -> Vec<String> {
        let Some(function) = enclosing_function(self.anchor) else { return Vec::new() };
        let mut names: Vec<String> = scope_names(self.parsed, function).into_iter().collect();
        for name in module_names(self.parsed) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    /// Match `pattern` against the tokens from `start` on.
    fn match_at(&self, pattern: &[Piece], start: usize) -> Option<Match> {
        let mut bound = Vec::new();
        let end = self.match_from(pattern, start, &mut bound)?;
        Some(Match { span: start..end, bound })
    }

    fn match_from(&self, pattern: &[Piece], at: usize, bound: &mut Vec<(Piece, Range<usize>)>) -> Option<usize> {
        let Some((piece, rest)) = pattern.split_first() else { return Some(at) };
        let leaf = self.leaves.get(at);
        let ends: Vec<usize> = match piece {
            Piece::Text(text) => return (self.text_at(at) == Some(text.as_str())).then(|| self.match_from(rest, at + 1, bound)).flatten(),
            Piece::Name(_) => leaf.filter(|l| l.kind == LeafKind::Name).map(|_| at + 1).into_iter().collect(),
            Piece::Str(_) => leaf.filter(|l| l.kind == LeafKind::Str).map(|_| at + 1).into_iter().collect(),
            Piece::Expr(_) => self.expr_ends.get(at).map(|e| e.iter().map(|(end, _)| *end).collect()).unwrap_or_default(),
        };
        for end in ends {
            let previous = bound.iter().find(|(p, _)| p == piece).map(|(_, span)| span.clone());
            match previous {
                Some(span) if self.source(&span) != self.source(&(at..end)) => continue,
                Some(_) => {}
                None => bound.push((piece.clone(), at..end)),
            }
            if let Some(done) = self.match_from(rest, end, bound) {
                return Some(done);
            }
            if previous.is_none() {
                bound.pop();
            }
        }
        None
    }

    fn text_at(&self, i: usize) -> Option<&str> {
        (i < self.leaves.len()).then(|| self.text(i))
    }
}

/// Names a module binds at its top level: imports, assignments, functions and classes.
fn module_names(parsed: &Parsed) -> Vec<String> {
    let mut names = Vec::new();
    let root = parsed.root();
    let mut cursor = root.walk();
    for statement in root.named_children(&mut cursor) {
        let node = crate::python::unwrap_decorated(statement).map_or(statement, |(def, _)| def);
        let bound: Vec<Node<'_>> = match node.kind() {
            "function_definition" | "class_definition" => node.child_by_field_name("name").into_iter().collect(),
            "import_statement" | "import_from_statement" => imported(node),
            "expression_statement" => node
                .named_child(0)
                .filter(|a| a.kind() == "assignment")
                .and_then(|a| a.child_by_field_name("left"))
                .filter(|l| l.kind() == "identifier")
                .into_iter()
                .collect(),
            _ => Vec::new(),
        };
        names.extend(bound.into_iter().map(|n| parsed.node_text(n).to_string()));
    }
    names
}

/// The identifiers an import binds (`import a.b` binds `a`, `from m import x as y` binds `y`).
fn imported(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.children_by_field_name("name", &mut cursor)
        .filter_map(|name| match name.kind() {
            "aliased_import" => name.child_by_field_name("alias"),
            "dotted_name" if node.kind() == "import_statement" => name.named_child(0),
            "dotted_name" => name.named_child(name.named_child_count().saturating_sub(1)),
            _ => None,
        })
        .collect()
}

/// Up to [`MAX_INSTANCES`] ways to pick `count` names (with repetition) from `names`.
fn name_choices(names: &[String], count: usize) -> Vec<Vec<&str>> {
    let mut choices: Vec<Vec<&str>> = vec![Vec::new()];
    for _ in 0..count {
        choices = choices
            .into_iter()
            .flat_map(|c| names.iter().map(move |n| [c.clone(), vec![n.as_str()]].concat()))
            .take(MAX_INSTANCES)
            .collect();
    }
    choices
}

/// Templates indexed by their rarest concrete token, so a line only tries those that can match.
#[derive(Debug, Clone, Default)]
pub(super) struct Index {
    by_token: HashMap<String, Vec<usize>>,
    always: Vec<usize>,
}

impl Index {
    pub(super) fn new(templates: &[&Template]) -> Index {
        let mut frequency: HashMap<&str, usize> = HashMap::new();
        for t in templates {
            for text in concrete(&t.before) {
                *frequency.entry(text).or_default() += 1;
            }
        }
        let mut index = Index::default();
        for (i, t) in templates.iter().enumerate() {
            match concrete(&t.before).min_by_key(|text| frequency[text]) {
                Some(key) => index.by_token.entry(key.to_string()).or_default().push(i),
                None => index.always.push(i),
            }
        }
        index
    }

    /// Templates that may match a line with these tokens, in rank order.
    pub(super) fn candidates(&self, texts: &HashSet<&str>) -> Vec<usize> {
        let mut out: Vec<usize> = self.always.clone();
        for text in texts {
            out.extend(self.by_token.get(*text).into_iter().flatten());
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

fn concrete(pattern: &[Piece]) -> impl Iterator<Item = &str> {
    pattern.iter().filter_map(|p| match p {
        Piece::Text(t) => Some(t.as_str()),
        _ => None,
    })
}
