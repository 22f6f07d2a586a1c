//! A worker validating several candidates per forked child (the `batch` engine).

use super::{fallback, swap_of, Engine, EngineChoice, LabError, LabEvent, PathTaken, Validated, Worker};
use crate::pytest::server::{BatchItem, Request, ServerMode, Swap};
use crate::repair::candidate::Candidate;
use std::sync::Arc;
use std::time::Instant;

/// Most candidates a worker draws at once for one batch.
pub const BATCH_SIZE: usize = 32;
/// A batch is sized to take about this long, so that slow tests do not hold many drawn
/// candidates (the search learns from results, and the deadline drops what was not run).
const BATCH_SECONDS: f64 = 0.25;

/// One candidate's part of a batch: its hot swap and the tests of its first session.
struct Planned {
    swap: Swap,
    tests: Vec<String>,
    failing_only: bool,
}

impl Worker<'_> {
    /// How many candidates to hand this worker at once: [`BATCH_SIZE`] on a warm fork server
    /// that can check for state left behind, else one.
    pub(super) fn batch_size(&self) -> usize {
        match &self.engine {
            Engine::Fork(server)
                if self.config.engine == EngineChoice::Batch
                    && server.mode() == ServerMode::Warm
                    && server.batches() =>
            {
                let cost = self.batch_cost.unwrap_or_else(|| self.failing_tests_seconds());
                // Truncation is the point: how many candidates fit the window.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let fit = (BATCH_SECONDS / cost.max(1e-4)) as usize;
                fit.clamp(1, BATCH_SIZE)
            }
            _ => 1,
        }
    }

    /// What the originally failing tests took in the baseline: a first guess of a
    /// candidate's cost.
    fn failing_tests_seconds(&self) -> f64 {
        let failing = &self.config.failing;
        self.config.baseline.tests.iter().filter(|t| failing.contains(&t.nodeid)).map(|t| t.duration).sum::<f64>()
            + 0.001
    }

    /// Fold a batch's time per candidate into the running average.
    fn learn_batch_cost(&mut self, seconds: f64, candidates: usize) {
        if candidates == 0 {
            return;
        }
        #[allow(clippy::cast_precision_loss)]
        let each = seconds / candidates as f64;
        self.batch_cost = Some(self.batch_cost.map_or(each, |c| 0.5 * c + 0.5 * each));
    }

    /// Validate `candidates` (see [`Worker::validate`]): those that can be hot-swapped in one
    /// batch, the rest (and those the batch could not decide) one at a time. `None` for a
    /// candidate the deadline left unvalidated.
    pub(super) fn validate_all(
        &mut self,
        candidates: &[Arc<Candidate>],
        lenient: bool,
    ) -> Result<Vec<Option<(Validated, bool)>>, LabError> {
        let mut results: Vec<Option<(Validated, bool)>> = candidates.iter().map(|_| None).collect();
        if candidates.len() > 1 && !lenient {
            self.validate_batch(candidates, &mut results)?;
        }
        for (candidate, result) in candidates.iter().zip(results.iter_mut()) {
            if result.is_none() && (candidates.len() == 1 || Instant::now() < self.config.deadline) {
                let validated = self.validate(candidate, lenient)?;
                if !lenient {
                    self.learn_batch_cost(validated.0.elapsed.as_secs_f64(), 1);
                }
                *result = Some(validated);
            }
        }
        Ok(results)
    }

    /// Fill in `results` for the candidates one batch decides.
    fn validate_batch(
        &mut self,
        candidates: &[Arc<Candidate>],
        results: &mut [Option<(Validated, bool)>],
    ) -> Result<(), LabError> {
        let planned: Vec<Option<Planned>> = candidates.iter().map(|c| self.plan(c)).collect();
        let indices: Vec<usize> = (0..candidates.len()).filter(|&i| planned[i].is_some()).collect();
        if indices.len() < 2 {
            return Ok(());
        }
        let cpu = self.config.timeouts.per_test_cpu;
        let remaining = self.config.deadline.saturating_duration_since(Instant::now());
        let requests: Vec<Request<'_>> = indices
            .iter()
            .filter_map(|&i| planned[i].as_ref())
            .map(|p| self.request(Some(&p.tests), p.tests.len(), Some(&p.swap), cpu))
            .collect();
        let Engine::Fork(server) = &mut self.engine else { return Ok(()) };
        let started = Instant::now();
        let items = match server.run_batch(&requests, remaining) {
            Ok(items) => items,
            Err(err) => {
                (self.on_event)(LabEvent::Note(format!("{err}; {}", fallback(self.pytest))));
                self.engine = Engine::Subprocess;
                return Ok(());
            }
        };
        let ran = items.iter().filter(|i| matches!(i, BatchItem::Ran(_))).count();
        self.learn_batch_cost(started.elapsed().as_secs_f64(), ran);
        for (&i, item) in indices.iter().zip(items) {
            let (BatchItem::Ran(session), Some(plan)) = (item, &planned[i]) else { continue };
            let Some(outcome) = self.first_verdict(&session, &plan.tests, plan.failing_only) else { continue };
            let validated =
                Validated { candidate_id: candidates[i].id, outcome, elapsed: session.elapsed, path: PathTaken::BATCH };
            results[i] = Some((validated, self.cpu_limited_failing(&session)));
        }
        Ok(())
    }

    /// The batch part of a candidate whose edit can be hot-swapped, else `None`.
    fn plan(&mut self, candidate: &Candidate) -> Option<Planned> {
        let file = &candidate.patch.file;
        let focus = candidate.focus.as_ref().filter(|f| !self.config.runs_at_import(file, f))?;
        let swap = swap_of(file, focus, &candidate.patched_text);
        let config = self.config;
        let affected = self
            .affected
            .entry((file.clone(), focus.original_body_lines.clone()))
            .or_insert_with(|| config.affected_tests(file, focus).into())
            .clone();
        let (tests, failing_only) = self.first_tests(Some(&affected));
        Some(Planned { swap, tests, failing_only })
    }
}
