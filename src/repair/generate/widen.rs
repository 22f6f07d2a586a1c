//! How a generative source widens once its plan is used up: more targets, hotter sampling and new seeds each round, targets that led to progress first, until rounds stop bringing new candidates.

use crate::repair::candidate::Provenance;
use crate::repair::search::View;
use crate::repair::validate::CandidateOutcome;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

/// Consecutive rounds without a new candidate (once nothing is left to widen to but the
/// sampling) after which a source reports that widening no longer helps.
pub const DRY_ROUNDS: usize = 2;
/// The hottest sampling a round goes to.
pub const MAX_TEMPERATURE: f64 = 1.4;
/// Temperature added per round.
const TEMPERATURE_STEP: f64 = 0.2;

/// One round of sampling.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    /// 0 for the source's own plan.
    pub index: usize,
    /// How many of the source's targets (functions, windows of lines) the round samples,
    /// most suspicious first.
    pub targets: usize,
    pub temperature: f64,
    pub top_p: f64,
    /// Added to every seed of the round, so no round repeats another's draws.
    pub salt: u64,
    /// The round's targets in the order to sample them: those whose candidates made progress
    /// (plausible, partial or regressing fixes: see [`Widening::credit`]) first, most credit
    /// first, then the others, most suspicious first.
    pub order: Vec<usize>,
}

/// The rounds of one source and what they brought: round 0 is the plan (`base` targets at the
/// configured sampling), each later one takes `step` more targets (up to `available`) and
/// samples hotter. Duplicates and samples that propose nothing are not progress.
#[derive(Debug, Clone)]
pub struct Widening {
    base: usize,
    step: usize,
    available: usize,
    temperature: f64,
    top_p: f64,
    next: usize,
    /// Keys of every candidate proposed so far.
    seen: HashSet<u64>,
    /// New candidates in the round under way, and per finished round.
    new_now: usize,
    history: Vec<usize>,
    /// Progress credited to each target by what validation said of its candidates.
    credit: Vec<f64>,
}

impl Widening {
    #[must_use]
    pub fn new(base: usize, step: usize, available: usize, temperature: f64, top_p: f64) -> Widening {
        Widening {
            base: base.min(available),
            step: step.max(1),
            available,
            temperature,
            top_p,
            next: 0,
            seen: HashSet::new(),
            new_now: 0,
            history: Vec::new(),
            credit: vec![0.0; available],
        }
    }

    /// Credit `target` with progress seen in validation (learned online: the next rounds take
    /// it first). Unknown targets are ignored.
    pub fn credit(&mut self, target: usize, amount: f64) {
        if let Some(c) = self.credit.get_mut(target) {
            *c += amount;
        }
    }

    /// The first `n` targets, credited ones first (most credit first), the rest in plan order.
    fn order(&self, n: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| self.credit[b].total_cmp(&self.credit[a]).then(a.cmp(&b)));
        order
    }

    /// The next round, or `None` once widening has stopped producing new candidates: the
    /// last [`DRY_ROUNDS`] rounds brought none although they could not widen any further
    /// than sampling (every target taken).
    pub fn next_round(&mut self) -> Option<Round> {
        if self.next > 0 {
            self.history.push(std::mem::take(&mut self.new_now));
        }
        if self.is_dry() {
            return None;
        }
        let index = self.next;
        self.next += 1;
        #[allow(clippy::cast_precision_loss)]
        let k = index as f64;
        let targets = (self.base + index * self.step).min(self.available);
        Some(Round {
            index,
            targets,
            order: self.order(targets),
            temperature: (self.temperature + TEMPERATURE_STEP * k).min(MAX_TEMPERATURE.max(self.temperature)),
            top_p: (self.top_p + 0.01 * k).min(1.0),
            salt: index as u64 * 1_000_003,
        })
    }

    fn is_dry(&self) -> bool {
        // The first of the last DRY_ROUNDS rounds already took every target.
        let widest = self.base + self.next.saturating_sub(DRY_ROUNDS) * self.step >= self.available;
        let recent = self.history.iter().rev().take(DRY_ROUNDS);
        widest && self.history.len() >= DRY_ROUNDS && recent.clone().all(|&n| n == 0)
    }

    /// Record a proposed candidate (any hashable description of its edit); true when it is new.
    pub fn record(&mut self, key: &impl Hash) -> bool {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut hasher);
        let new = self.seen.insert(hasher.finish());
        self.new_now += usize::from(new);
        new
    }

    /// New candidates per finished round.
    #[must_use]
    pub fn history(&self) -> &[usize] {
        &self.history
    }
}

/// Where a source's targets lie: per target, the line ranges (file, first and last line,
/// 1-based, inclusive) of the functions it samples.
pub type TargetLines = Vec<Vec<(String, usize, usize)>>;

/// What validation said of a source's candidates, turned into credit for the targets they came
/// from: the search thread observes results ([`Progress::observe`]), the sampling thread
/// applies the credit to its [`Widening`] before each round ([`Inbox::apply`]).
#[derive(Debug)]
pub struct Progress {
    source: Provenance,
    targets: TargetLines,
    /// How many of the search's recorded results have been read.
    cursor: usize,
    inbox: Inbox,
}

/// Credit waiting for the sampling thread.
#[derive(Debug, Clone, Default)]
pub struct Inbox(Arc<Mutex<Vec<(usize, f64)>>>);

impl Progress {
    #[must_use]
    pub fn new(source: Provenance, targets: TargetLines) -> (Progress, Inbox) {
        let inbox = Inbox::default();
        (Progress { source, targets, cursor: 0, inbox: inbox.clone() }, inbox)
    }

    /// Read the results recorded since the last call and credit the target (the first that
    /// holds the candidate's line) of each of this source's candidates that made progress.
    pub fn observe(&mut self, view: &View<'_>) {
        let fresh = view.recorded.get(self.cursor..).unwrap_or_default();
        self.cursor = view.recorded.len();
        let mut credit = Vec::new();
        for id in fresh {
            let candidate = &view.candidates[id.0];
            let Some(result) = view.results.get(id.0).and_then(Option::as_ref) else { continue };
            let amount = progress(&result.outcome, candidate.source);
            if candidate.source != self.source || amount == 0.0 {
                continue;
            }
            let (file, line) = (&candidate.patch.file, candidate.line);
            let holds = |ranges: &Vec<(String, usize, usize)>| {
                ranges.iter().any(|(f, first, last)| f == file && (*first..=*last).contains(&line))
            };
            if let Some(target) = self.targets.iter().position(holds) {
                credit.push((target, amount));
            }
        }
        if !credit.is_empty() {
            self.inbox.0.lock().expect("credit inbox").extend(credit);
        }
    }
}

impl Inbox {
    /// Hand the waiting credit to `widening`.
    pub fn apply(&self, widening: &mut Widening) {
        for (target, amount) in self.0.lock().expect("credit inbox").drain(..) {
            widening.credit(target, amount);
        }
    }
}

/// Credit for one validated candidate: 1 when plausible, ½ when it fixed some failing tests
/// (a partial fix) or all of them while breaking others (a regression), else 0.
#[must_use]
pub fn progress(outcome: &CandidateOutcome, source: Provenance) -> f64 {
    match outcome {
        CandidateOutcome::Plausible => 1.0,
        CandidateOutcome::Regression { .. } => 0.5,
        _ if outcome.is_partial_fix(source) => 0.5,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_take_more_targets_and_sample_hotter_with_new_seeds() {
        let mut w = Widening::new(2, 2, 5, 0.8, 0.95);
        let rounds: Vec<Round> = (0..5)
            .map(|i| {
                let round = w.next_round().expect("each round brought news");
                w.record(&i);
                round
            })
            .collect();
        assert_eq!(rounds.iter().map(|r| r.targets).collect::<Vec<_>>(), [2, 4, 5, 5, 5]);
        assert!((rounds[0].temperature - 0.8).abs() < 1e-9 && (rounds[1].temperature - 1.0).abs() < 1e-9);
        assert!(rounds.iter().all(|r| r.temperature <= MAX_TEMPERATURE && r.top_p <= 1.0));
        assert!((rounds[4].temperature - MAX_TEMPERATURE).abs() < 1e-9, "capped");
        let salts: HashSet<u64> = rounds.iter().map(|r| r.salt).collect();
        assert_eq!(salts.len(), 5);
    }

    #[test]
    fn targets_that_made_progress_are_sampled_first_in_later_rounds() {
        let mut w = Widening::new(3, 1, 5, 0.8, 0.95);
        assert_eq!(w.next_round().unwrap().order, [0, 1, 2], "the plan's order before any feedback");
        w.credit(2, 0.5);
        w.credit(1, 1.0);
        w.credit(9, 1.0); // not a target: ignored
        w.record(&"news");
        let round = w.next_round().unwrap();
        assert_eq!(round.order, [1, 2, 0, 3], "most credit first, then the plan's order");
        w.credit(2, 1.0);
        w.record(&"more news");
        assert_eq!(w.next_round().unwrap().order, [2, 1, 0, 3, 4]);
    }

    #[test]
    fn a_source_is_dry_only_after_rounds_without_news_at_full_width() {
        let mut w = Widening::new(1, 1, 2, 0.8, 0.95);
        w.next_round().unwrap();
        assert!(w.record(&"a") && !w.record(&"a"), "a duplicate is not progress");
        w.next_round().unwrap(); // round 1: both targets, nothing new
        w.next_round().unwrap(); // round 2: nothing new again, but round 0 was the last news
        assert!(w.next_round().is_none(), "two rounds at full width brought nothing: dry");
        assert_eq!(w.history(), [1, 0, 0]);

        // Rounds without news while targets remain go on widening.
        let mut w = Widening::new(1, 1, 4, 0.8, 0.95);
        for _ in 0..4 {
            assert!(w.next_round().is_some());
        }
        // News keeps it going at full width.
        let mut w = Widening::new(1, 1, 1, 0.8, 0.95);
        for i in 0..10 {
            w.next_round().expect("every round brings news");
            w.record(&i);
        }
    }
}
