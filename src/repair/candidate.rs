//! Candidate patches: generated from localized lines, re-parsed, deduplicated and ranked.

use super::operators::{mutations_at_line_in, FileScope, Operator};
use super::priors::Priors;
use crate::localize::Localization;
use crate::patch::Patch;
use crate::project::Project;
use crate::python::Parsed;
use std::collections::{HashMap, HashSet};

/// Where a candidate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A repair operator.
    Operator(Operator),
    /// Two edits combined (each from an operator), at different places in one file.
    Combined(Operator, Operator),
}

impl Source {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Source::Operator(op) => op.name(),
            Source::Combined(..) => "combined",
        }
    }
}

/// A patch to validate, with its provenance and rank.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Position in the ranked list, from 0.
    pub id: usize,
    pub patch: Patch,
    /// The whole patched file text (already checked to parse).
    pub patched_text: String,
    pub source: Source,
    /// 1-based line the edit starts on.
    pub line: usize,
    pub description: String,
    /// Localization score × operator prior.
    pub score: f64,
    /// Bytes removed plus bytes inserted: smaller edits are preferred among equals.
    pub edit_size: usize,
    /// The functions this patch edits, when every edit lies inside a function body
    /// (enables hot-swapping and regression-test selection); `None` otherwise.
    pub focus: Option<Focus>,
}

/// The outermost functions whose bodies hold a patch's edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Focus {
    /// Qualified name and 1-based `def` line (decorators included) in the patched text.
    pub functions: Vec<(String, usize)>,
    /// 1-based inclusive line ranges of those bodies in the original text.
    pub original_body_lines: Vec<(usize, usize)>,
}

/// The [`Focus`] of `patch`, given the original file and the patched text.
#[must_use]
pub fn focus(patch: &Patch, original: &Parsed, patched: &Parsed) -> Option<Focus> {
    let new_defs = crate::python::functions(patched);
    let old_defs = crate::python::functions(original);
    let mut focus = Focus { functions: Vec::new(), original_body_lines: Vec::new() };
    let mut shift: isize = 0;
    for edit in patch.edits() {
        let old = outermost(&old_defs, edit.range.start, edit.range.end)?;
        // Position of the edit in the patched text.
        let start = edit.range.start.checked_add_signed(shift)?;
        let end = start + edit.content.len();
        shift += edit.content.len() as isize - edit.range.len() as isize;
        let new = outermost(&new_defs, start, end)?;
        let entry = (new.qualname.clone(), new.start_line);
        if !focus.functions.contains(&entry) {
            focus.functions.push(entry);
            let body_start = original.text()[..old.body_byte_range.start].matches('\n').count() + 1;
            focus.original_body_lines.push((body_start, old.end_line));
        }
    }
    Some(focus)
}

fn outermost(defs: &[crate::python::FunctionDef], start: usize, end: usize) -> Option<&crate::python::FunctionDef> {
    defs.iter()
        .filter(|d| d.body_byte_range.start <= start && end <= d.body_byte_range.end)
        .max_by_key(|d| d.byte_range.len())
}

/// Limits on candidate generation.
#[derive(Debug, Clone, Copy)]
pub struct GenerateLimits {
    /// How many of the most suspicious lines to mutate.
    pub max_lines: usize,
    /// Upper bound on the candidates returned.
    pub max_candidates: usize,
}

impl Default for GenerateLimits {
    fn default() -> Self {
        GenerateLimits { max_lines: 40, max_candidates: 5000 }
    }
}

/// Counts from candidate generation.
#[derive(Debug, Clone, Copy, Default)]
pub struct GenerateStats {
    pub proposed: usize,
    pub unparseable: usize,
    pub duplicates: usize,
}

/// Generate, re-parse, deduplicate and rank candidates at the most suspicious lines.
#[must_use]
pub fn generate(
    project: &Project,
    localization: &Localization,
    limits: GenerateLimits,
    priors: &Priors,
) -> (Vec<Candidate>, GenerateStats) {
    let mut stats = GenerateStats::default();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut out = Vec::new();
    let mut scopes: HashMap<String, FileScope> = HashMap::new();
    for susp in localization.lines.iter().take(limits.max_lines) {
        let Some(file) = project.file(&susp.file) else { continue };
        let original = file.parsed.text();
        let scope = scopes
            .entry(file.rel.clone())
            .or_insert_with(|| FileScope::of(&file.parsed));
        for mutation in mutations_at_line_in(&file.parsed, scope, susp.line) {
            stats.proposed += 1;
            let edit_size = mutation.edit.range.len() + mutation.edit.content.len();
            let patch = Patch::single(file.rel.clone(), mutation.edit);
            let patched_text = patch.apply(original);
            let reparsed = Parsed::new(patched_text.as_str());
            if !reparsed.is_valid() {
                stats.unparseable += 1;
                continue;
            }
            if !seen.insert((file.rel.clone(), normalize(&patched_text))) {
                stats.duplicates += 1;
                continue;
            }
            let focus = focus(&patch, &file.parsed, &reparsed);
            out.push(Candidate {
                id: 0,
                focus,
                patch,
                patched_text,
                source: Source::Operator(mutation.operator),
                line: susp.line,
                description: mutation.description,
                score: susp.score * priors.weight(mutation.operator),
                edit_size,
            });
        }
    }
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.edit_size.cmp(&b.edit_size))
            .then_with(|| a.patch.file.cmp(&b.patch.file))
            .then_with(|| a.line.cmp(&b.line))
    });
    out.truncate(limits.max_candidates);
    for (id, c) in out.iter_mut().enumerate() {
        c.id = id;
    }
    (out, stats)
}

/// Penalty on two-edit candidates: each extra edit is a chance to overfit the tests.
const PAIR_PENALTY: f64 = 0.5;

/// Two-edit candidates: each seed (e.g. a partial fix) combined with each partner at another
/// line of the same file, ranked by the product of their scores. Ids continue from `next_id`.
#[must_use]
pub fn pairs(
    project: &Project,
    seeds: &[&Candidate],
    partners: &[&Candidate],
    next_id: usize,
    max: usize,
) -> Vec<Candidate> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for seed in seeds {
        for partner in partners {
            if seed.id == partner.id || seed.patch.file != partner.patch.file || seed.line == partner.line {
                continue;
            }
            let key = (seed.id.min(partner.id), seed.id.max(partner.id));
            if !seen.insert(key) {
                continue;
            }
            let Some(file) = project.file(&seed.patch.file) else { continue };
            let Ok(patch) = seed.patch.merge(&partner.patch) else { continue };
            let patched_text = patch.apply(file.parsed.text());
            let reparsed = Parsed::new(patched_text.as_str());
            if !reparsed.is_valid() {
                continue;
            }
            let (Source::Operator(a), Source::Operator(b)) = (seed.source, partner.source) else { continue };
            out.push(Candidate {
                id: 0,
                focus: focus(&patch, &file.parsed, &reparsed),
                patch,
                patched_text,
                source: Source::Combined(a, b),
                line: seed.line.min(partner.line),
                description: format!("{}; {}", seed.description, partner.description),
                score: seed.score * partner.score * PAIR_PENALTY,
                edit_size: seed.edit_size + partner.edit_size,
            });
        }
    }
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.edit_size.cmp(&b.edit_size)));
    out.truncate(max);
    for (i, c) in out.iter_mut().enumerate() {
        c.id = next_id + i;
    }
    out
}

/// Code with whitespace runs collapsed, so formatting-only differences dedupe.
fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        out.push_str(&line[..indent]);
        let mut prev_space = false;
        for ch in line.trim().chars() {
            if ch == ' ' || ch == '\t' {
                prev_space = true;
                continue;
            }
            if prev_space && (ch.is_alphanumeric() || ch == '_') && out.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                out.push(' ');
            }
            prev_space = false;
            out.push(ch);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn normalization_ignores_spacing_but_not_tokens() {
        assert_eq!(normalize("x = a+1\n"), normalize("x = a + 1\n"));
        assert_ne!(normalize("x = a+1\n"), normalize("x = a-1\n"));
        assert_ne!(normalize("return not x\n"), normalize("return notx\n"));
        assert_ne!(normalize("if x:\n    y\n"), normalize("if x:\ny\n"));
    }
}
