//! From one fix pair to its templates: the minimal token edit, widened to the smallest syntax
//! node that holds it on both sides, with project names and strings abstracted into holes; the
//! general form also turns the subexpressions both sides share into `$E` holes.

use super::pattern::{Context, Piece, Template, TemplateKind};
use super::tokens::{is_fragment, is_simple_statement, leaf_span, leaves, Leaf, LeafKind};
use crate::python::Parsed;
use crate::repair::learn::pairs::LineHunk;
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use tree_sitter::Node;

/// Most tokens the minimal edit may delete and insert together.
const MAX_CHANGED_TOKENS: usize = 8;
/// Most tokens of a pattern.
const MAX_PATTERN_TOKENS: usize = 16;
/// Most names of the fixed code that the buggy code does not bind, for a rewrite and an insertion.
const MAX_NEW_NAMES_REWRITE: usize = 1;
const MAX_NEW_NAMES_INSERT: usize = 2;

/// The templates of a before/after function pair whose edit is one small change within a line,
/// or one inserted or deleted one-line statement: none, the specific form, and the general
/// form where it differs. Pairs that do not parse give none.
#[must_use]
pub fn extract(before: &str, after: &str) -> Vec<Template> {
    let hunk = LineHunk::of(before, after);
    match (hunk.removed, hunk.added) {
        (1, 1) => rewrites(before, after, hunk.prefix),
        (0, 1) => {
            Side::new(after).and_then(|s| s.statement(hunk.prefix, TemplateKind::InsertStatement)).into_iter().collect()
        }
        (1, 0) => Side::new(before)
            .and_then(|s| s.statement(hunk.prefix, TemplateKind::DeleteStatement))
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

/// One version of the function: its tree and tokens.
struct Side {
    parsed: Parsed,
    leaves: Vec<Leaf>,
}

impl Side {
    fn new(code: &str) -> Option<Side> {
        let parsed = Parsed::new(code);
        let leaves = leaves(&parsed, parsed.root());
        parsed.is_valid().then_some(Side { parsed, leaves })
    }

    fn text(&self, i: usize) -> &str {
        &self.parsed.text()[self.leaves[i].range.clone()]
    }

    fn span(&self, node: Node<'_>) -> Range<usize> {
        leaf_span(&self.leaves, node)
    }

    /// The smallest expression or simple statement on `row` that holds the tokens `tokens`
    /// (for an empty range: the tokens next to it on `row`).
    fn covering(&self, tokens: Range<usize>, row: usize) -> Option<Node<'_>> {
        let tokens = if tokens.is_empty() { self.neighbours(tokens.start, row)? } else { tokens };
        let (start, end) = (self.leaves[tokens.start].range.start, self.leaves[tokens.end - 1].range.end);
        let mut node = self.parsed.root().named_descendant_for_byte_range(start, end)?;
        while is_fragment(node.kind())
            || (self.span(node).len() == 1 && self.leaves[self.span(node).start].kind == LeafKind::Fixed)
        {
            node = node.parent()?;
        }
        if let Some(statement) =
            node.parent().filter(|p| p.kind() == "expression_statement" && p.byte_range() == node.byte_range())
        {
            node = statement;
        }
        (node.start_position().row == row && node.end_position().row == row).then_some(node)
    }

    fn neighbours(&self, at: usize, row: usize) -> Option<Range<usize>> {
        let on_row = |i: usize| self.leaves.get(i).is_some_and(|l| l.row == row);
        let left = at.checked_sub(1).filter(|&i| on_row(i));
        let right = Some(at).filter(|&i| on_row(i));
        match (left, right) {
            (Some(l), Some(r)) => Some(l..r + 1),
            (Some(i), None) | (None, Some(i)) => Some(i..i + 1),
            (None, None) => None,
        }
    }

    /// Whether token `i` lies in a type annotation or an import: typing changes are not bug
    /// fixes, and imports name project modules.
    fn in_annotation_or_import(&self, i: usize) -> bool {
        let Some(leaf) = self.leaves.get(i) else { return false };
        let mut current = self.parsed.root().descendant_for_byte_range(leaf.range.start, leaf.range.end);
        while let Some(n) = current {
            if n.kind() == "type" || n.kind().contains("import") {
                return true;
            }
            current = n.parent();
        }
        false
    }

    /// The template of inserting (or deleting) the one-line statement on `row`.
    fn statement(&self, row: usize, kind: TemplateKind) -> Option<Template> {
        let first = self.leaves.iter().position(|l| l.row == row)?;
        let last = self.leaves.iter().rposition(|l| l.row == row)?;
        let (start, end) = (self.leaves[first].range.start, self.leaves[last].range.end);
        let mut node = self.parsed.root().named_descendant_for_byte_range(start, end)?;
        while !is_simple_statement(node.kind()) && node.byte_range() == (start..end) {
            node = node.parent()?;
        }
        let one_line = node.byte_range() == (start..end) && node.end_position().row == row;
        if !one_line || !is_simple_statement(node.kind()) || node.kind().contains("import") {
            return None;
        }
        let pieces = Holes::default().pieces(self, first..last + 1, &[], kind == TemplateKind::DeleteStatement);
        let (before, after) =
            if kind == TemplateKind::DeleteStatement { (pieces, Vec::new()) } else { (Vec::new(), pieces) };
        Template { kind, before, after, context: None }.checked()
    }
}

/// Templates of a pair whose only changed line is `row`.
fn rewrites(before: &str, after: &str, row: usize) -> Vec<Template> {
    let (Some(b), Some(a)) = (Side::new(before), Side::new(after)) else { return Vec::new() };
    let (nb, na) = (b.leaves.len(), a.leaves.len());
    let prefix = (0..nb.min(na)).take_while(|&i| b.text(i) == a.text(i)).count();
    let room = nb.min(na) - prefix;
    let suffix = (1..=room).take_while(|&k| b.text(nb - k) == a.text(na - k)).count();
    if (prefix + suffix == nb && prefix + suffix == na) || changed_tokens(&b, &a, prefix, suffix) > MAX_CHANGED_TOKENS {
        return Vec::new();
    }
    let Some((rb, ra)) = aligned_nodes(&b, &a, prefix, suffix, row) else { return Vec::new() };
    if is_simple_statement(rb.kind()) != is_simple_statement(ra.kind())
        || b.in_annotation_or_import(prefix)
        || a.in_annotation_or_import(prefix)
    {
        return Vec::new();
    }
    let kind = if is_simple_statement(rb.kind()) { TemplateKind::Statement } else { TemplateKind::Expression };
    let context = (kind == TemplateKind::Expression).then(|| Context::of(rb));
    let mut out: Vec<Template> = Vec::new();
    for general in [false, true] {
        let mut holes = Holes::default();
        let (eb, ea) = if general { shared_subtrees(&b, rb, &a, ra, &mut holes) } else { Default::default() };
        let before = holes.pieces(&b, b.span(rb), &eb, true);
        let after = holes.pieces(&a, a.span(ra), &ea, false);
        if let Some(t) = (Template { kind, before, after, context }).checked().filter(|t| !out.contains(t)) {
            out.push(t);
        }
    }
    out
}

/// Tokens deleted plus tokens inserted between the shared prefix and suffix (Myers diff).
fn changed_tokens(b: &Side, a: &Side, prefix: usize, suffix: usize) -> usize {
    let old: Vec<&str> = (prefix..b.leaves.len() - suffix).map(|i| b.text(i)).collect();
    let new: Vec<&str> = (prefix..a.leaves.len() - suffix).map(|i| a.text(i)).collect();
    if old.len() + new.len() <= MAX_CHANGED_TOKENS {
        return old.len() + new.len();
    }
    similar::capture_diff_slices(similar::Algorithm::Myers, &old, &new)
        .iter()
        .map(|op| match op.as_tag_tuple() {
            (similar::DiffTag::Equal, _, _) => 0,
            (_, old, new) => old.len() + new.len(),
        })
        .sum()
}

/// Covering nodes of the change on both sides that also cover the same unchanged tokens on
/// each side, so that one pattern can stand for the other.
fn aligned_nodes<'b, 'a>(
    b: &'b Side,
    a: &'a Side,
    prefix: usize,
    suffix: usize,
    row: usize,
) -> Option<(Node<'b>, Node<'a>)> {
    let (nb, na) = (b.leaves.len(), a.leaves.len());
    let (mut lo, mut tail) = (prefix, suffix);
    // A pure insertion (or deletion) is placed by the node that holds it on the other side.
    let other = if prefix == nb - suffix {
        Some((a, na))
    } else if prefix == na - suffix {
        Some((b, nb))
    } else {
        None
    };
    if let Some((side, n)) = other {
        let span = side.span(side.covering(prefix..n - suffix, row)?);
        (lo, tail) = (span.start, n - span.end);
    }
    for _ in 0..8 {
        let (rb, ra) = (b.covering(lo..nb - tail, row)?, a.covering(lo..na - tail, row)?);
        let (sb, sa) = (b.span(rb), a.span(ra));
        if sb.start == sa.start && nb - sb.end == na - sa.end {
            return Some((rb, ra));
        }
        (lo, tail) = (sb.start.min(sa.start), (nb - sb.end).min(na - sa.end));
    }
    None
}

/// Spans of the largest subtrees of `rb` that also occur in `ra` and hold a project name or
/// string, numbered as `$E` holes, on each side.
type ExprSpans = Vec<(Range<usize>, u8)>;

fn shared_subtrees(b: &Side, rb: Node<'_>, a: &Side, ra: Node<'_>, holes: &mut Holes) -> (ExprSpans, ExprSpans) {
    let mut in_after = HashSet::new();
    visit_subtrees(a, ra, &mut |key, _| {
        in_after.insert(key);
        false
    });
    let mut eb = Vec::new();
    visit_subtrees(b, rb, &mut |key, span| {
        let shared = in_after.contains(&key);
        if shared {
            eb.push((span, holes.expr(key)));
        }
        shared
    });
    let mut ea = Vec::new();
    visit_subtrees(a, ra, &mut |key, span| match holes.exprs.get(&key) {
        Some(&i) => {
            ea.push((span, i));
            true
        }
        None => false,
    });
    (eb, ea)
}

/// Call `f(key, span)` on the named subtrees of `node` that may become `$E` holes (not
/// fragments, not a lone string, holding a project name or string), outermost first; `f`
/// returns true to skip the subtree's children.
fn visit_subtrees(side: &Side, node: Node<'_>, f: &mut impl FnMut(String, Range<usize>) -> bool) {
    let span = side.span(node);
    let project = span.clone().any(|i| side.leaves[i].kind != LeafKind::Fixed);
    let lone_string = span.len() == 1 && side.leaves[span.start].kind == LeafKind::Str;
    if project && !lone_string && !is_fragment(node.kind()) && !span.is_empty() {
        let key = span.clone().map(|i| side.text(i)).collect::<Vec<_>>().join("\u{1}");
        if f(key, span) {
            return;
        }
    }
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        visit_subtrees(side, child, f);
    }
}

/// Hole numbers handed out while abstracting one pair.
#[derive(Default)]
struct Holes {
    names: HashMap<String, u8>,
    strings: HashMap<String, u8>,
    exprs: HashMap<String, u8>,
}

impl Holes {
    fn expr(&mut self, key: String) -> u8 {
        next_index(&mut self.exprs, key)
    }

    /// The pattern of `side`'s tokens `span`, with `exprs` as `$E` holes. Strings become holes
    /// on the buggy side and stay literal on the fixed side unless the buggy side has them.
    fn pieces(&mut self, side: &Side, span: Range<usize>, exprs: &[(Range<usize>, u8)], buggy: bool) -> Vec<Piece> {
        let mut out = Vec::new();
        let mut i = span.start;
        while i < span.end {
            if let Some((range, e)) = exprs.iter().find(|(r, _)| r.start == i) {
                out.push(Piece::Expr(*e));
                i = range.end;
                continue;
            }
            let text = side.text(i);
            out.push(match side.leaves[i].kind {
                LeafKind::Name => Piece::Name(next_index(&mut self.names, text.to_string())),
                LeafKind::Str if buggy => Piece::Str(next_index(&mut self.strings, text.to_string())),
                LeafKind::Str => {
                    self.strings.get(text).map_or_else(|| Piece::Text(text.to_string()), |&s| Piece::Str(s))
                }
                LeafKind::Fixed => Piece::Text(text.to_string()),
            });
            i += 1;
        }
        out
    }
}

fn next_index(map: &mut HashMap<String, u8>, key: String) -> u8 {
    let next = u8::try_from(map.len()).unwrap_or(u8::MAX);
    *map.entry(key).or_insert(next)
}

impl Template {
    /// `self` if it is small, changes more than hole names, and every hole it needs can be bound.
    fn checked(self) -> Option<Template> {
        let concrete = |p: &[Piece]| p.iter().filter(|x| !x.is_hole()).cloned().collect::<Vec<_>>();
        let max_new =
            if self.kind == TemplateKind::InsertStatement { MAX_NEW_NAMES_INSERT } else { MAX_NEW_NAMES_REWRITE };
        let only_holes = !self.before.is_empty() && self.before.iter().all(Piece::is_hole);
        let ok = self.before.len() <= MAX_PATTERN_TOKENS
            && self.after.len() <= MAX_PATTERN_TOKENS
            && concrete(&self.before) != concrete(&self.after)
            && self.new_names().len() <= max_new
            && !self.calls_a_new_name()
            && !(self.after.len() == 1 && self.new_names().len() == 1)
            && (!only_holes || self.before.iter().all(|p| self.after.contains(p)))
            && self.after.iter().all(|p| !matches!(p, Piece::Expr(_) | Piece::Str(_)) || self.before.contains(p));
        ok.then_some(self)
    }

    /// Whether the fixed side calls a name the buggy side does not bind (a project function
    /// that names in scope could not stand for).
    fn calls_a_new_name(&self) -> bool {
        let new = self.new_names();
        self.after
            .windows(2)
            .any(|w| matches!((&w[0], &w[1]), (Piece::Name(n), Piece::Text(t)) if t == "(" && new.contains(n)))
    }
}
