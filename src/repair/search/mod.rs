//! The search behind `fix`: every candidate under a stable id, all sources drawn in one stream by expected success per second.

use crate::exclude::Exclude;
use crate::patch::Patch;
use crate::project::Project;
use crate::repair::candidate::{self, Candidate, CandidateId, Partner, Proposal, Provenance};
use crate::repair::validate::{CandidateOutcome, Feed, Next, Validated};
use std::collections::{BinaryHeap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Families of candidate sources, for scheduling and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SourceKind {
    /// The repair operators (`repair::generate::operators`).
    Operators,
    /// Fix templates learned from real commits (`repair::learn::templates`).
    Templates,
    /// A pretrained language model proposing lines cloze-style.
    LanguageModel,
    /// A trained patcher model (`fix --model`).
    Patcher,
    /// Two or three edits combined, seeded by partial fixes.
    Combinations,
}

impl SourceKind {
    /// The source that proposes candidates of this provenance.
    #[must_use]
    pub fn of(source: Provenance) -> SourceKind {
        match source {
            Provenance::Operator(_) => SourceKind::Operators,
            Provenance::Template => SourceKind::Templates,
            Provenance::LanguageModel => SourceKind::LanguageModel,
            Provenance::Combined { .. } => SourceKind::Combinations,
            Provenance::Neural => SourceKind::Patcher,
        }
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            SourceKind::Operators => "operators",
            SourceKind::Templates => "templates",
            SourceKind::LanguageModel => "language-model",
            SourceKind::Patcher => "patcher",
            SourceKind::Combinations => "combinations",
        }
    }
}

/// What a source has for the search right now.
#[derive(Debug)]
pub enum Produced {
    /// More proposals (possibly none that survive checking).
    Batch(Vec<Proposal>),
    /// Nothing now; maybe later (a background model still sampling, seeds not yet found).
    Pending,
    /// Nothing ever again.
    Exhausted,
}

/// A stream of candidate patches: operators, learned templates, models, combinations.
pub trait CandidateSource: Send {
    fn kind(&self) -> SourceKind;

    /// Upper bound on the score of anything proposed from now on: the search asks for more
    /// while this beats the best proposal it holds from this source.
    fn bound(&self) -> f64;

    /// The next proposals; `view` shows every candidate so far and what validation said.
    fn next(&mut self, view: &View<'_>) -> Produced;

    /// Hold (or resume) background work: the search is busy with something else that needs
    /// the CPU (scoring and confirming plausible patches).
    fn pause(&self, _paused: bool) {}
}

/// What sources may see of the search.
pub struct View<'s> {
    pub project: &'s Project,
    /// Every admitted candidate, indexed by id.
    pub candidates: &'s [Arc<Candidate>],
    /// Validation result per candidate id (`None`: not validated yet).
    pub results: &'s [Option<Validated>],
    /// Ids in the order their first result was recorded (sources keep their own cursor).
    pub recorded: &'s [CandidateId],
    /// Proposals not drawn yet, per source.
    waiting: &'s [BinaryHeap<Waiting>],
    /// Every source of single edits has nothing more to offer.
    pub singles_exhausted: bool,
    /// The search has used most of its single-edit share of the budget.
    pub late: bool,
}

impl View<'_> {
    /// The `n` best-scored single edits, admitted or still waiting: partners for combinations.
    #[must_use]
    pub fn top_singles(&self, n: usize) -> Vec<Partner<'_>> {
        let admitted = self.candidates.iter().filter(|c| c.source.is_single()).map(|c| Partner {
            patch: &c.patch,
            line: c.line,
            description: &c.description,
            score: c.score,
        });
        let waiting = self
            .waiting
            .iter()
            .flat_map(BinaryHeap::iter)
            .map(|w| &w.proposal)
            .filter(|p| p.source.is_single())
            .map(|p| Partner { patch: &p.patch, line: p.line, description: &p.description, score: p.score });
        let mut top: Vec<Partner<'_>> = admitted.chain(waiting).collect();
        top.sort_by(|a, b| b.score.total_cmp(&a.score));
        top.truncate(n);
        top
    }
}

/// Per-source counts, as reported by `--json`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SourceStats {
    /// Proposals the source made.
    pub proposed: usize,
    pub unparseable: usize,
    pub duplicates: usize,
    /// Candidates admitted (parsed, new).
    pub generated: usize,
    pub validated: usize,
    pub plausible: usize,
    /// Some, not all, failing tests fixed.
    pub partial: usize,
    /// Seconds spent validating this source's candidates.
    pub validation_seconds: f64,
    /// Seconds spent generating.
    pub generation_seconds: f64,
}

/// A waiting proposal, ordered by score (then earliest proposed). It is parsed and
/// deduplicated only when drawn: checking costs more than proposing, and most proposals of a
/// long search are never drawn.
#[derive(Debug)]
struct Waiting {
    score: f64,
    seq: usize,
    proposal: Proposal,
}

impl PartialEq for Waiting {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for Waiting {}
impl Ord for Waiting {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.score.total_cmp(&other.score).then_with(|| other.seq.cmp(&self.seq))
    }
}
impl PartialOrd for Waiting {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// One source and what it has cost and yielded (its waiting proposals are in
/// `Search::waiting`, which sources may see through [`View`]).
struct Lane<'p> {
    source: Box<dyn CandidateSource + 'p>,
    stats: SourceStats,
    exhausted: bool,
}

/// Candidates kept waiting per source before generation pauses.
const LOW_WATER: usize = 8;
/// At most this many batches are asked of one source per refill.
const MAX_BATCHES_PER_REFILL: usize = 16;
/// Failures that halve a source's weight: `(hits + 1) / (failures × FAILURE_DECAY + 1)`.
const FAILURE_DECAY: f64 = 0.02;

/// Every candidate under its stable id, validation results, and the scheduler over sources.
pub struct Search<'p> {
    project: &'p Project,
    candidates: Vec<Arc<Candidate>>,
    /// The last validation result per candidate id (confirmation verdicts included).
    results: Vec<Option<Validated>>,
    recorded: Vec<CandidateId>,
    /// Lane index per candidate id.
    lane_of: Vec<usize>,
    seen: HashSet<(String, String)>,
    lanes: Vec<Lane<'p>>,
    /// Proposals waiting to be drawn, per lane.
    waiting: Vec<BinaryHeap<Waiting>>,
    /// Candidates handed out and not yet recorded.
    in_flight: usize,
    /// Proposals made so far (orders equal scores).
    proposals: usize,
    /// From then on, `View::late` is true.
    late_at: Instant,
    /// Code no candidate may edit.
    exclude: Exclude,
}

impl<'p> Search<'p> {
    /// A search over `sources`; `late_at` is when single edits have had their share.
    #[must_use]
    pub fn new(project: &'p Project, sources: Vec<Box<dyn CandidateSource + 'p>>, late_at: Instant) -> Search<'p> {
        let lanes = sources
            .into_iter()
            .map(|source| Lane { source, stats: SourceStats::default(), exhausted: false })
            .collect::<Vec<_>>();
        Search {
            project,
            candidates: Vec::new(),
            results: Vec::new(),
            recorded: Vec::new(),
            lane_of: Vec::new(),
            seen: HashSet::new(),
            waiting: lanes.iter().map(|_| BinaryHeap::new()).collect(),
            lanes,
            in_flight: 0,
            proposals: 0,
            late_at,
            exclude: Exclude::default(),
        }
    }

    #[must_use]
    pub fn project(&self) -> &'p Project {
        self.project
    }

    /// Hold or resume every source's background work ([`CandidateSource::pause`]).
    pub fn pause_sources(&self, paused: bool) {
        for lane in &self.lanes {
            lane.source.pause(paused);
        }
    }

    /// No candidate that edits code `exclude` names is admitted.
    #[must_use]
    pub fn excluding(mut self, exclude: Exclude) -> Self {
        self.exclude = exclude;
        self
    }

    /// `patch` edits an excluded file, or inside an excluded function.
    fn excluded(&self, file: &crate::project::SourceFile, patch: &Patch) -> bool {
        if self.exclude.is_empty() {
            return false;
        }
        self.exclude.file(&file.rel)
            || patch.edits().iter().any(|e| {
                crate::python::outermost_enclosing(&file.parsed, e.range.start, e.range.end)
                    .is_some_and(|def| self.exclude.function(&file.rel, &def.qualname))
            })
    }

    /// Every admitted candidate, indexed by id.
    #[must_use]
    pub fn candidates(&self) -> &[Arc<Candidate>] {
        &self.candidates
    }

    #[must_use]
    pub fn candidate(&self, id: CandidateId) -> &Candidate {
        &self.candidates[id.0]
    }

    #[must_use]
    pub fn outcome(&self, id: CandidateId) -> Option<&CandidateOutcome> {
        self.results.get(id.0).and_then(Option::as_ref).map(|v| &v.outcome)
    }

    /// Per-source statistics, in source order.
    #[must_use]
    pub fn stats(&self) -> Vec<(SourceKind, SourceStats)> {
        self.lanes.iter().map(|l| (l.source.kind(), l.stats)).collect()
    }

    /// The next candidate to validate: refill sources lazily, then admit the head of the
    /// source with the highest expected success per second (proposals that do not parse or
    /// repeat a candidate are dropped on the way).
    pub fn next_candidate(&mut self) -> Next {
        loop {
            self.refill();
            let mean_cost = self.mean_cost();
            let best = (0..self.lanes.len())
                .filter(|&i| !self.waiting[i].is_empty())
                .max_by(|&a, &b| self.value(a, mean_cost).total_cmp(&self.value(b, mean_cost)));
            let Some(i) = best else { break };
            let head = self.waiting[i].pop().expect("non-empty lane");
            let started = Instant::now();
            let admitted = self.admit(i, head.proposal);
            self.lanes[i].stats.generation_seconds += started.elapsed().as_secs_f64();
            if let Some(id) = admitted {
                self.in_flight += 1;
                return Next::Candidate(Arc::clone(&self.candidates[id.0]));
            }
        }
        if self.in_flight == 0 && !self.any_source_can_wake() {
            Next::Done
        } else {
            Next::Wait
        }
    }

    /// Record a validation result (a later result for the same candidate replaces it).
    pub fn record(&mut self, validated: &Validated) {
        let id = validated.candidate_id;
        let first = self.results[id.0].is_none();
        if first {
            self.in_flight = self.in_flight.saturating_sub(1);
            self.recorded.push(id);
        }
        let stats = &mut self.lanes[self.lane_of[id.0]].stats;
        if first {
            stats.validated += 1;
            stats.plausible += usize::from(validated.outcome.is_plausible());
            stats.partial += usize::from(validated.outcome.is_partial_fix(self.candidates[id.0].source));
        }
        stats.validation_seconds += validated.elapsed.as_secs_f64();
        self.results[id.0] = Some(validated.clone());
    }

    /// Overwrite an outcome (a plausible patch that failed confirmation).
    pub fn set_outcome(&mut self, id: CandidateId, outcome: CandidateOutcome) {
        if let Some(validated) = &mut self.results[id.0] {
            validated.outcome = outcome;
        }
    }

    /// Ids of the plausible candidates.
    #[must_use]
    pub fn plausible(&self) -> Vec<CandidateId> {
        self.results.iter().flatten().filter(|v| v.outcome.is_plausible()).map(|v| v.candidate_id).collect()
    }

    /// Every validation result, by candidate id.
    #[must_use]
    pub fn validated(&self) -> Vec<Validated> {
        self.results.iter().flatten().cloned().collect()
    }

    /// How many candidates have a validation result.
    #[must_use]
    pub fn validated_count(&self) -> usize {
        self.results.iter().flatten().count()
    }

    /// With nothing waiting and nothing in flight: a source of single edits that is not
    /// exhausted may still produce (a background model); combinations wait on validation
    /// results, and none can come.
    fn any_source_can_wake(&self) -> bool {
        self.lanes.iter().any(|l| !l.exhausted && l.source.kind() != SourceKind::Combinations)
    }

    fn singles_exhausted(&self) -> bool {
        self.lanes
            .iter()
            .zip(&self.waiting)
            .filter(|(l, _)| l.source.kind() != SourceKind::Combinations)
            .all(|(l, waiting)| l.exhausted && waiting.is_empty())
    }

    /// Expected success per second of the head of lane `i`: its score, times how well the
    /// source has done so far, over what its candidates cost relative to the average.
    fn value(&self, i: usize, mean_cost: f64) -> f64 {
        let lane = &self.lanes[i];
        let head = self.waiting[i].peek().map_or(0.0, |w| w.score);
        head * weight(&lane.stats) * mean_cost / cost(&lane.stats, mean_cost)
    }

    fn mean_cost(&self) -> f64 {
        let (seconds, n) =
            self.lanes.iter().fold((0.0, 0), |(s, n), l| (s + l.stats.validation_seconds, n + l.stats.validated));
        if n == 0 {
            1.0
        } else {
            (seconds / n as f64).max(1e-3)
        }
    }

    /// Ask sources for more while they may beat what waits, and keep a few waiting in each.
    fn refill(&mut self) {
        for i in 0..self.lanes.len() {
            for _ in 0..MAX_BATCHES_PER_REFILL {
                let lane = &self.lanes[i];
                let waiting = &self.waiting[i];
                let head = waiting.peek().map_or(f64::NEG_INFINITY, |w| w.score);
                let wanted = waiting.len() < LOW_WATER || lane.source.bound() > head;
                if lane.exhausted || !wanted || !self.step(i) {
                    break;
                }
            }
        }
    }

    /// One batch from lane `i`; false when the source has nothing now.
    fn step(&mut self, i: usize) -> bool {
        let started = Instant::now();
        let view = View {
            project: self.project,
            candidates: &self.candidates,
            results: &self.results,
            recorded: &self.recorded,
            waiting: &self.waiting,
            singles_exhausted: self.singles_exhausted(),
            late: Instant::now() >= self.late_at,
        };
        let produced = self.lanes[i].source.next(&view);
        let more = match produced {
            Produced::Batch(proposals) => {
                self.lanes[i].stats.proposed += proposals.len();
                for proposal in proposals {
                    self.proposals += 1;
                    self.waiting[i].push(Waiting { score: proposal.score, seq: self.proposals, proposal });
                }
                true
            }
            Produced::Pending => false,
            Produced::Exhausted => {
                self.lanes[i].exhausted = true;
                false
            }
        };
        self.lanes[i].stats.generation_seconds += started.elapsed().as_secs_f64();
        more
    }

    /// Re-parse and deduplicate `proposal`; admit it under the next id.
    fn admit(&mut self, lane: usize, proposal: Proposal) -> Option<CandidateId> {
        let file = self.project.file(&proposal.patch.file)?;
        if self.excluded(file, &proposal.patch) {
            return None;
        }
        let stats = &mut self.lanes[lane].stats;
        let checked = match candidate::check_patch(file, proposal.patch.clone(), &mut self.seen) {
            Ok(checked) => checked,
            Err(candidate::Rejected::Unparseable) => {
                stats.unparseable += 1;
                return None;
            }
            Err(candidate::Rejected::Duplicate) => {
                stats.duplicates += 1;
                return None;
            }
        };
        stats.generated += 1;
        let id = CandidateId(self.candidates.len());
        self.candidates.push(Arc::new(candidate::admitted(id, proposal, checked)));
        self.results.push(None);
        self.lane_of.push(lane);
        Some(id)
    }
}

/// How well a source has done: `(hits + 1) / (failures × FAILURE_DECAY + 1)`, where hits are
/// plausible patches and partial fixes.
fn weight(stats: &SourceStats) -> f64 {
    let hits = (stats.plausible + stats.partial) as f64;
    let failures = stats.validated as f64 - hits;
    (hits + 1.0) / (failures * FAILURE_DECAY + 1.0)
}

/// Mean seconds per validated candidate of a source, smoothed towards `mean_cost`.
fn cost(stats: &SourceStats, mean_cost: f64) -> f64 {
    ((stats.validation_seconds + 2.0 * mean_cost) / (stats.validated as f64 + 2.0)).max(1e-3)
}

/// A [`Search`] shared by the lab's workers.
pub struct SharedSearch<'s, 'p> {
    search: &'s Mutex<Search<'p>>,
}

impl<'s, 'p> SharedSearch<'s, 'p> {
    #[must_use]
    pub fn new(search: &'s Mutex<Search<'p>>) -> Self {
        SharedSearch { search }
    }
}

impl Feed for SharedSearch<'_, '_> {
    fn next(&self) -> Next {
        self.search.lock().expect("search lock").next_candidate()
    }

    fn record(&self, validated: &Validated) {
        self.search.lock().expect("search lock").record(validated);
    }
}

#[cfg(test)]
mod tests;
