//! Matching templates against the tokens of one line and instantiating their fixed side.

use super::pattern::{render, Context, Piece, Template, TemplateKind};
use super::tokens::{is_fragment, is_simple_statement, leaf_span, Leaf, LeafKind};
use crate::patch::Edit;
use crate::python::Parsed;
use crate::repair::generate::operators::{enclosing_function, scope_names};
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
    expr_ends: Vec<Vec<(usize, bool, Context)>>,
    statements: HashSet<(usize, usize)>,
    /// Whether a statement (simple or compound) starts at the line's first token.
    starts_statement: bool,
    /// Byte offsets of the line's start and of the start of the next line.
    line: Range<usize>,
    /// The innermost node holding the line's first token (for the names in scope).
    anchor: Node<'p>,
}

/// Names that new holes of a fixed side may take.
#[derive(Debug, Default)]
pub(super) struct Scope {
    /// Parameters and locals of the enclosing function.
    function: Vec<String>,
    /// Those, then the names the module binds.
    all: Vec<String>,
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
        view.collect_nodes(parsed.root(), None, "", row);
        Some(view)
    }

    /// Record the statements and value expressions of the line under `node`, which `parent`
    /// holds under `field`.
    fn collect_nodes(&mut self, node: Node<'_>, field: Option<&str>, parent: &str, row: usize) {
        if node.end_position().row < row || node.start_position().row > row {
            return;
        }
        let kind = node.kind();
        if node.start_byte() == self.leaves[0].range.start && kind.ends_with("_statement") {
            self.starts_statement = true;
        }
        if node.start_position().row == row && node.end_position().row == row && node.is_named() {
            let span = leaf_span(&self.leaves, node);
            if is_simple_statement(kind) {
                self.statements.insert((span.start, span.end));
            } else if !is_fragment(kind)
                && !span.is_empty()
                && !kind.contains("assignment")
                && !is_not_a_value(parent, field)
            {
                let operator = kind.ends_with("_operator") || matches!(kind, "conditional_expression" | "lambda");
                self.expr_ends[span.start].push((span.end, operator, Context::of(node)));
            }
        }
        let mut cursor = node.walk();
        if cursor.goto_first_child() {
            loop {
                self.collect_nodes(cursor.node(), cursor.field_name(), kind, row);
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
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
    pub(super) fn edits(&self, template: &Template, scope: &mut Option<Scope>) -> Vec<Edit> {
        match template.kind {
            TemplateKind::InsertStatement => self.insertions(template, scope),
            TemplateKind::DeleteStatement => {
                let whole = self.statements.contains(&(0, self.leaves.len()));
                let matched =
                    whole && self.matches_at(&template.before, 0).iter().any(|m| m.span.end == self.leaves.len());
                if matched {
                    vec![Edit::deletion(self.line.clone())]
                } else {
                    Vec::new()
                }
            }
            TemplateKind::Expression | TemplateKind::Statement => self.rewrites(template, scope),
        }
    }

    fn rewrites(&self, template: &Template, scope: &mut Option<Scope>) -> Vec<Edit> {
        let mut out = Vec::new();
        for m in (0..self.leaves.len()).flat_map(|start| self.matches_at(&template.before, start)) {
            let is_node = match template.kind {
                TemplateKind::Statement => self.statements.contains(&(m.span.start, m.span.end)),
                _ => self.expr_ends[m.span.start]
                    .iter()
                    .any(|(end, _, context)| *end == m.span.end && template.context.is_none_or(|c| c == *context)),
            };
            if !is_node {
                continue;
            }
            let range = self.leaves[m.span.start].range.start..self.leaves[m.span.end - 1].range.end;
            let wrap = template.kind == TemplateKind::Expression
                && has_operator(&template.after)
                && !self.stands_alone(&[], 0, &m.span);
            for code in self.instances(template, &m, scope) {
                out.push(Edit::replacement(range.clone(), if wrap { format!("({code})") } else { code }));
            }
        }
        out
    }

    /// The statement inserted before the line and, after a one-line simple statement, after it.
    fn insertions(&self, template: &Template, scope: &mut Option<Scope>) -> Vec<Edit> {
        let text = self.parsed.text();
        let indent_end = self.leaves[0].range.start;
        let indent = &text[self.line.start..indent_end];
        let in_function = enclosing_function(self.anchor).is_some();
        if !self.starts_statement || !in_function || !indent.chars().all(char::is_whitespace) {
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

    /// The fixed side's code for a match, once per choice of names in scope for its new holes:
    /// the enclosing function's names, and also the module's for the object of an attribute.
    fn instances(&self, template: &Template, m: &Match, scope: &mut Option<Scope>) -> Vec<String> {
        let new_names = template.new_names();
        let choices: Vec<Vec<&str>> = if new_names.is_empty() {
            vec![Vec::new()]
        } else {
            let scope = scope.get_or_insert_with(|| self.scope());
            let candidates: Vec<&[String]> = new_names
                .iter()
                .map(|n| {
                    let at = template.after.iter().position(|p| *p == Piece::Name(*n)).unwrap_or(0);
                    let attribute_object = template.after.get(at + 1).is_some_and(|p| *p == Piece::Text(".".into()));
                    if attribute_object {
                        scope.all.as_slice()
                    } else {
                        scope.function.as_slice()
                    }
                })
                .collect();
            name_choices(&candidates)
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
        let opens = |t: &str| {
            matches!(t, "(" | "[" | "{" | "," | "=" | ":" | "return" | "yield" | "if" | "elif" | "while" | "assert")
        };
        left.as_deref().is_none_or(opens) && right.as_deref().is_none_or(|t| matches!(t, ")" | "]" | "}" | "," | ":"))
    }

    fn is_operator(&self, span: &Range<usize>) -> bool {
        self.expr_ends[span.start].iter().any(|&(end, op, _)| end == span.end && op)
    }

    /// Parameters and locals of the enclosing function, and those followed by the module's
    /// names; none at module level.
    pub(super) fn scope(&self) -> Scope {
        let Some(function) = enclosing_function(self.anchor) else { return Scope::default() };
        let function: Vec<String> = scope_names(self.parsed, function).into_iter().collect();
        let mut all = function.clone();
        for name in module_names(self.parsed) {
            if !all.contains(&name) {
                all.push(name);
            }
        }
        Scope { function, all }
    }

    /// Every way `pattern` matches the tokens from `start` on.
    fn matches_at(&self, pattern: &[Piece], start: usize) -> Vec<Match> {
        let mut found = Vec::new();
        self.match_from(pattern, start, &mut Vec::new(), &mut |end, bound| {
            found.push(Match { span: start..end, bound: bound.to_vec() });
        });
        found
    }

    /// Match `pattern` from token `at` with the holes `bound` so far; call `found` with the end
    /// and the bindings of each complete match.
    fn match_from(
        &self,
        pattern: &[Piece],
        at: usize,
        bound: &mut Vec<(Piece, Range<usize>)>,
        found: &mut impl FnMut(usize, &[(Piece, Range<usize>)]),
    ) {
        let Some((piece, rest)) = pattern.split_first() else { return found(at, bound) };
        let leaf = self.leaves.get(at);
        let ends: Vec<usize> = match piece {
            Piece::Text(text) => (self.text_at(at) == Some(text.as_str())).then_some(at + 1).into_iter().collect(),
            Piece::Name(_) => leaf.filter(|l| l.kind == LeafKind::Name).map(|_| at + 1).into_iter().collect(),
            Piece::Str(_) => leaf.filter(|l| l.kind == LeafKind::Str).map(|_| at + 1).into_iter().collect(),
            Piece::Expr(_) => {
                self.expr_ends.get(at).map(|e| e.iter().map(|(end, ..)| *end).collect()).unwrap_or_default()
            }
        };
        for end in ends {
            if !piece.is_hole() {
                self.match_from(rest, end, bound, found);
                continue;
            }
            match bound.iter().find(|(p, _)| p == piece).map(|(_, span)| span.clone()) {
                Some(span) if self.source(&span) != self.source(&(at..end)) => {}
                Some(_) => self.match_from(rest, end, bound, found),
                None => {
                    bound.push((piece.clone(), at..end));
                    self.match_from(rest, end, bound, found);
                    bound.pop();
                }
            }
        }
    }

    fn text_at(&self, i: usize) -> Option<&str> {
        (i < self.leaves.len()).then(|| self.text(i))
    }
}

/// Whether a node held by `parent` under `field` names something rather than computing a
/// value (definitions, parameters, assignment targets, attribute and keyword names), so that no
/// template may rewrite it.
fn is_not_a_value(parent: &str, field: Option<&str>) -> bool {
    matches!(
        (parent, field),
        (
            "function_definition"
                | "class_definition"
                | "keyword_argument"
                | "default_parameter"
                | "typed_default_parameter",
            Some("name")
        ) | ("attribute", Some("attribute"))
            | ("assignment" | "augmented_assignment" | "for_statement" | "for_in_clause", Some("left"))
            | ("typed_parameter", None)
            | (
                "parameters"
                    | "lambda_parameters"
                    | "list_splat_pattern"
                    | "dictionary_splat_pattern"
                    | "pattern_list"
                    | "tuple_pattern"
                    | "list_pattern"
                    | "global_statement"
                    | "nonlocal_statement"
                    | "dotted_name"
                    | "aliased_import"
                    | "as_pattern_target",
                _
            )
    )
}

/// Modules the file imports at its top level (`import a.b` binds `a`, `import m as n` binds `n`).
fn module_names(parsed: &Parsed) -> Vec<String> {
    let root = parsed.root();
    let mut cursor = root.walk();
    let imports: Vec<Node<'_>> = root.named_children(&mut cursor).filter(|n| n.kind() == "import_statement").collect();
    let mut names = Vec::new();
    for import in imports {
        let mut cursor = import.walk();
        let bound = import.children_by_field_name("name", &mut cursor).filter_map(|name| match name.kind() {
            "aliased_import" => name.child_by_field_name("alias"),
            _ => name.named_child(0),
        });
        names.extend(bound.map(|n| parsed.node_text(n).to_string()));
    }
    names
}

/// Whether a pattern has an operator outside brackets, so that code made from it may need
/// parentheses where it replaces an operand.
fn has_operator(pattern: &[Piece]) -> bool {
    let mut depth = 0usize;
    pattern.iter().any(|piece| {
        let Piece::Text(text) = piece else { return false };
        match text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth = depth.saturating_sub(1),
            _ => {}
        }
        let word = text.starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '"' || c == '\'');
        depth == 0
            && !matches!(text.as_str(), "." | "(" | "[" | "{" | ")" | "]" | "}")
            && (!word || is_operator_word(text))
    })
}

fn is_operator_word(text: &str) -> bool {
    matches!(text, "and" | "or" | "not" | "is" | "in" | "if" | "else" | "lambda" | "await")
}

/// Up to [`MAX_INSTANCES`] ways to pick one name for each hole from its candidates.
fn name_choices<'n>(candidates: &[&'n [String]]) -> Vec<Vec<&'n str>> {
    let mut choices: Vec<Vec<&str>> = vec![Vec::new()];
    for names in candidates {
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
