//! Candidate sources for the search: operators and templates per line, combinations of partial fixes.

pub mod background;
pub mod cloze;
pub mod operators;
pub mod patcher;
pub mod signature;
pub mod widen;

use crate::localize::SuspiciousLine;
use crate::project::Project;
use crate::repair::candidate::Proposal;
use crate::repair::candidate::{self, Candidate, CandidateId};
use crate::repair::generate::operators::{FileScope, Operator};
use crate::repair::learn::priors::Priors;
use crate::repair::learn::templates::Templates;
use crate::repair::search::{CandidateSource, Produced, SourceKind, View};
use std::collections::{HashMap, HashSet};

/// The repair operators at the suspicious lines, one line per batch in rank order: the cost of
/// generation follows the search, not the size of the file.
pub struct OperatorSource<'p> {
    project: &'p Project,
    lines: Vec<SuspiciousLine>,
    next: usize,
    priors: Priors,
    max_prior: f64,
    scopes: HashMap<String, FileScope>,
}

impl<'p> OperatorSource<'p> {
    /// Operators at the first `max_lines` of `lines` (most suspicious first).
    #[must_use]
    pub fn new(project: &'p Project, lines: &[SuspiciousLine], max_lines: usize, priors: Priors) -> Self {
        let max_prior = Operator::ALL.iter().map(|op| priors.weight(*op)).fold(0.0, f64::max);
        let lines = lines.iter().take(max_lines).cloned().collect();
        OperatorSource { project, lines, next: 0, priors, max_prior, scopes: HashMap::new() }
    }
}

impl CandidateSource for OperatorSource<'_> {
    fn kind(&self) -> SourceKind {
        SourceKind::Operators
    }

    fn bound(&self) -> f64 {
        self.lines.get(self.next).map_or(0.0, |l| l.score * self.max_prior)
    }

    fn next(&mut self, _view: &View<'_>) -> Produced {
        let Some(susp) = self.lines.get(self.next) else { return Produced::Exhausted };
        self.next += 1;
        let Some(file) = self.project.file(&susp.file) else { return Produced::Batch(Vec::new()) };
        let scope = self.scopes.entry(file.rel.clone()).or_insert_with(|| FileScope::of(&file.parsed));
        Produced::Batch(candidate::operator_proposals(file, scope, susp, &self.priors))
    }
}

/// Fix templates learned from real commits, applied at the suspicious lines one line per
/// batch in rank order, scored by suspiciousness × the template's support weight × a prior.
pub struct TemplateSource<'p> {
    project: &'p Project,
    lines: Vec<SuspiciousLine>,
    next: usize,
    templates: std::sync::Arc<Templates>,
}

/// Prior of a template edit relative to the operators' (a template with the best support).
const TEMPLATE_PRIOR: f64 = 0.6;
/// Template edits proposed per line at most.
const TEMPLATES_PER_LINE: usize = 40;

impl<'p> TemplateSource<'p> {
    #[must_use]
    pub fn new(
        project: &'p Project,
        lines: &[SuspiciousLine],
        max_lines: usize,
        templates: std::sync::Arc<Templates>,
    ) -> Self {
        TemplateSource { project, lines: lines.iter().take(max_lines).cloned().collect(), next: 0, templates }
    }
}

impl CandidateSource for TemplateSource<'_> {
    fn kind(&self) -> SourceKind {
        SourceKind::Templates
    }

    fn bound(&self) -> f64 {
        self.lines.get(self.next).map_or(0.0, |l| l.score * TEMPLATE_PRIOR)
    }

    fn next(&mut self, _view: &View<'_>) -> Produced {
        let Some(susp) = self.lines.get(self.next) else { return Produced::Exhausted };
        self.next += 1;
        let Some(file) = self.project.file(&susp.file) else { return Produced::Batch(Vec::new()) };
        let proposals = self
            .templates
            .mutations_at_line(&file.parsed, susp.line, TEMPLATES_PER_LINE)
            .into_iter()
            .map(|m| Proposal {
                patch: crate::patch::Patch::single(file.rel.clone(), m.edit),
                source: crate::repair::candidate::Provenance::Template,
                line: susp.line,
                description: m.description,
                score: susp.score * TEMPLATE_PRIOR * (0.5 + 0.5 * m.weight),
            })
            .collect();
        Produced::Batch(proposals)
    }
}

/// Top single edits that partner with seeds in combined candidates.
const PARTNERS: usize = 60;
/// Seeds taken from the top single edits when no candidate fixed part of the failing tests.
const SEEDS_WITHOUT_PARTIAL_FIXES: usize = 15;
/// Edits a combined candidate may have.
const MAX_EDITS: usize = 3;

/// Multi-edit candidates: each partial fix (some, not all, failing tests pass) combined with
/// the top single edits at other lines of its file, up to three edits. Without partial fixes,
/// once single edits run out or are late, the top single edits seed pairs.
#[derive(Default)]
pub struct CombinationSource {
    /// How far into `View::recorded` this source has looked.
    cursor: usize,
    seeded: HashSet<CandidateId>,
    fallback_used: bool,
}

impl CandidateSource for CombinationSource {
    fn kind(&self) -> SourceKind {
        SourceKind::Combinations
    }

    fn bound(&self) -> f64 {
        0.0
    }

    fn next(&mut self, view: &View<'_>) -> Produced {
        // Seeds with the failing tests they fix: a combination seeds more only by fixing more.
        let mut seeds: Vec<(&Candidate, usize)> = Vec::new();
        for id in &view.recorded[self.cursor..] {
            let seed = &view.candidates[id.0];
            let Some(outcome) = view.results[id.0].as_ref().map(|v| &v.outcome) else { continue };
            if outcome.is_partial_fix(seed.source) && seed.patch.edits().len() < MAX_EDITS && self.seeded.insert(*id) {
                seeds.push((seed, outcome.fixed()));
            }
        }
        self.cursor = view.recorded.len();
        if seeds.is_empty() && !self.fallback_used && (view.singles_exhausted || view.late) {
            self.fallback_used = true;
            let top = top_singles(view.candidates, SEEDS_WITHOUT_PARTIAL_FIXES);
            seeds = top.into_iter().filter(|c| self.seeded.insert(c.id)).map(|c| (c, 0)).collect();
        }
        if seeds.is_empty() {
            return Produced::Pending;
        }
        let partners = view.top_singles(PARTNERS);
        let proposals = seeds
            .iter()
            .flat_map(|&(seed, fixed)| {
                partners.iter().filter_map(move |partner| candidate::combine(seed, fixed, partner))
            })
            .collect();
        Produced::Batch(proposals)
    }
}

/// The `n` best-scored single-edit candidates.
fn top_singles(candidates: &[std::sync::Arc<Candidate>], n: usize) -> Vec<&Candidate> {
    let mut singles: Vec<&Candidate> = candidates.iter().map(AsRef::as_ref).filter(|c| c.source.is_single()).collect();
    singles.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    singles.truncate(n);
    singles
}

/// The first `limits.max_candidates` operator candidates at the `limits.max_lines` most
/// suspicious lines, in the order the search hands them to the lab, none validated: what
/// benches and tests that measure validation on a fixed list take (the candidates `fix`
/// would draw first, through the same admission).
#[must_use]
pub fn operator_candidates(
    project: &Project,
    localization: &crate::localize::Localization,
    limits: candidate::GenerateLimits,
    priors: &Priors,
) -> Vec<Candidate> {
    let source = OperatorSource::new(project, &localization.lines, limits.max_lines, priors.clone());
    let late_at = std::time::Instant::now() + std::time::Duration::from_secs(3600);
    let mut search = crate::repair::search::Search::new(project, vec![Box::new(source)], late_at);
    let mut out = Vec::new();
    while out.len() < limits.max_candidates {
        match search.next_candidate() {
            crate::repair::validate::Next::Candidate(c) => out.push(c.as_ref().clone()),
            crate::repair::validate::Next::Wait | crate::repair::validate::Next::Done => break,
        }
    }
    out
}
