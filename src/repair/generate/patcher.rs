//! The trained patcher as a background candidate source: whole-function rewrites sampled on their own thread, taking turns with the language-model lines.

use crate::localize::SuspiciousFunction;
use crate::model::{ModelError, Patcher, SampleOptions, SampleRun};
use crate::patch::Patch;
use crate::project::Project;
use crate::repair::candidate::Proposal;
use crate::repair::candidate::{minimal_edit, reindent, NeuralLimits, Provenance};
use crate::repair::generate::background::{Background, BackgroundSender, BackgroundSource};
use crate::repair::generate::widen::{Inbox, Progress, Round, Widening};
use crate::repair::search::SourceKind;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Prior of a patcher rewrite relative to the operators' (see `Operator::prior`).
const PATCHER_PRIOR: f64 = 0.7;
/// The patcher starts after the line sampler's first window, or after this long at most.
const MAX_WAIT_FOR_LINES: Duration = Duration::from_secs(8);
const POLL: Duration = Duration::from_millis(10);
/// Tokens of the trace note after a skeleton.
const TRACE_BUDGET: usize = 160;
/// Line-sampler turns between two patcher turns once the patcher widens.
const LINE_TURNS_PER_WIDENED_TURN: usize = 4;
/// Functions planned beyond `max_functions` (as multiples of it) for the widening rounds.
const WIDEN_FUNCTIONS: usize = 4;

/// Two background users of the CPU-bound models (the language-model line sampler and the
/// patcher) taking turns (a suspicious line, or a function to rewrite): the bundled patcher
/// waits for the line sampler's first window of lines (its most productive work); then the
/// patcher takes the next turn whenever it asks.
#[derive(Debug, Default)]
pub struct ModelTurns {
    lock: Mutex<()>,
    patcher_waiting: AtomicBool,
    first_window_done: AtomicBool,
    /// Turns the line sampler has taken, and whether it has stopped for good.
    lines_turns: AtomicUsize,
    lines_done: AtomicBool,
}

impl ModelTurns {
    /// Turns where the patcher waits for the line sampler's first window, or (`patcher_first`:
    /// a patcher the user asked for) starts at once.
    #[must_use]
    pub fn new(patcher_first: bool) -> ModelTurns {
        ModelTurns { first_window_done: AtomicBool::new(patcher_first), ..ModelTurns::default() }
    }

    /// The line sampler's turn (held for one suspicious line's samples); it waits while the patcher asks.
    ///
    /// # Panics
    /// When another holder of the turn panicked.
    pub fn lines_turn(&self) -> MutexGuard<'_, ()> {
        while self.patcher_waiting.load(Ordering::SeqCst) {
            std::thread::sleep(POLL);
        }
        self.lines_turns.fetch_add(1, Ordering::SeqCst);
        self.lock.lock().expect("model turn")
    }

    /// The line sampler has stopped (its rounds ran dry, or the model failed).
    pub fn lines_done(&self) {
        self.first_window_done();
        self.lines_done.store(true, Ordering::SeqCst);
    }

    /// In its widening rounds the patcher (the source with the lower yield per second) waits
    /// for `lines` more turns of the line sampler between two of its own; false when
    /// `stopped` said stop meanwhile.
    fn yield_to_lines(&self, lines: usize, stopped: &dyn Fn() -> bool) -> bool {
        let until = self.lines_turns.load(Ordering::SeqCst) + lines;
        while self.lines_turns.load(Ordering::SeqCst) < until && !self.lines_done.load(Ordering::SeqCst) {
            if stopped() {
                return false;
            }
            std::thread::sleep(POLL);
        }
        !stopped()
    }

    /// The line sampler finished its first window (or has nothing to sample).
    pub fn first_window_done(&self) {
        self.first_window_done.store(true, Ordering::SeqCst);
    }

    fn patcher_turn(&self) -> MutexGuard<'_, ()> {
        self.patcher_waiting.store(true, Ordering::SeqCst);
        let turn = self.lock.lock().expect("model turn");
        self.patcher_waiting.store(false, Ordering::SeqCst);
        turn
    }

    /// Wait for the line sampler's first window (at most [`MAX_WAIT_FOR_LINES`]); false when
    /// `stopped` said stop meanwhile.
    fn wait_for_lines(&self, stopped: &dyn Fn() -> bool) -> bool {
        let started = Instant::now();
        while !self.first_window_done.load(Ordering::SeqCst) && started.elapsed() < MAX_WAIT_FOR_LINES {
            if stopped() {
                return false;
            }
            std::thread::sleep(POLL);
        }
        !stopped()
    }
}

/// One suspicious function as the patcher sees it, planned on the caller's thread.
#[derive(Debug, Clone)]
struct FunctionPlan {
    /// The file, relative to the project root.
    file: String,
    qualname: String,
    /// The function's own name (a rewrite must define it).
    name: String,
    start_line: usize,
    /// Byte offset of the function's first line.
    offset: usize,
    /// The function's whole lines.
    old: String,
    /// Its decorators and `def` header, without the first line's indentation: what a
    /// decoder's completion starts with.
    lead: String,
    skeleton: String,
    score: f64,
}

impl FunctionPlan {
    /// The plan of `susp`: its skeleton within `budget` tokens, then the trace `note` within
    /// [`TRACE_BUDGET`] (as the pipeline's training rows carry it).
    fn new(
        project: &Project,
        susp: &SuspiciousFunction,
        (count, note): (&dyn Fn(&str) -> usize, &str),
        budget: usize,
    ) -> Option<FunctionPlan> {
        let file = project.file(&susp.file)?;
        let original = file.parsed.text();
        let def = crate::python::functions(&file.parsed)
            .into_iter()
            .find(|d| d.qualname == susp.qualname && d.start_line == susp.start_line)?;
        let skeleton = crate::skeleton::build(&file.parsed, &def, budget, count);
        let skeleton = crate::skeleton::append_trace(&skeleton.text, note, TRACE_BUDGET, count);
        // Whole lines of the function, so indentation can be fixed up.
        let offset = original[..def.byte_range.start].rfind('\n').map_or(0, |i| i + 1);
        let end = original[def.byte_range.end..].find('\n').map_or(original.len(), |i| def.byte_range.end + i + 1);
        let name = def.name.clone();
        // The header: the function's lines before the line its body starts on.
        let header_end = original[..def.body_byte_range.start].rfind('\n').map_or(0, |i| i + 1);
        let lead = header_lead(&original[offset..header_end.max(offset)]);
        Some(FunctionPlan {
            file: file.rel.clone(),
            qualname: def.qualname.clone(),
            name,
            start_line: def.start_line,
            offset,
            old: original[offset..end].to_string(),
            lead,
            skeleton,
            score: susp.score,
        })
    }

    /// Each distinct sample that defines this function (a model may rewrite a neighbour
    /// shown in the skeleton instead), re-indented, as a replacement of its lines.
    fn proposals(&self, run: SampleRun, n: usize) -> Vec<Proposal> {
        let mut out = Vec::new();
        for sample in run.samples {
            // Cut short (by the length limit or the end of the search), or another function.
            if !sample.finished || !defines(&sample.text, &self.name) {
                continue;
            }
            let mut new = reindent(&sample.text, &self.old);
            if !self.old.ends_with('\n') {
                new.pop();
            }
            if new == self.old {
                continue;
            }
            #[allow(clippy::cast_precision_loss)]
            let share = sample.count as f64 / n.max(1) as f64;
            let score = self.score * PATCHER_PRIOR * (0.5 + 0.5 * share);
            let what = format!("({} of {n} samples)", sample.count);
            let parts = parts(&self.old, &new).into_iter().map(|p| (p, "part of a neural rewrite"));
            for (text, kind) in std::iter::once((new.clone(), "neural rewrite")).chain(parts) {
                out.push(Proposal {
                    patch: Patch::single(self.file.clone(), minimal_edit(&self.old, &text, self.offset)),
                    source: Provenance::Neural,
                    line: self.start_line,
                    description: format!("{kind} of {} {what}", self.qualname),
                    score,
                });
            }
        }
        out
    }
}

/// At most this many smaller rewrites per sampled function.
const MAX_PARTS: usize = 6;

/// Smaller rewrites inside a function rewrite: when it changes several places, each alone;
/// when it inserts several lines in one place, each of them alone. A model that writes the
/// fix often writes more beside it (the search's minimal-patch rule then prefers the part).
fn parts(old: &str, new: &str) -> Vec<String> {
    let diff = similar::TextDiff::from_lines(old, new);
    let (old_lines, new_lines): (Vec<&str>, Vec<&str>) =
        (old.split_inclusive('\n').collect(), new.split_inclusive('\n').collect());
    let ops: Vec<_> = diff.ops().iter().map(similar::DiffOp::as_tag_tuple).collect();
    let changes: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].0 != similar::DiffTag::Equal).collect();
    // The text with change `chosen` applied, taking only the new lines `lines` of it.
    let apply = |chosen: usize, lines: std::ops::Range<usize>| -> String {
        let mut text = String::new();
        for (i, (_, o, n)) in ops.iter().enumerate() {
            if i == chosen {
                text.extend(new_lines[n.start + lines.start..(n.start + lines.end).min(n.end)].iter().copied());
            } else {
                text.extend(old_lines[o.clone()].iter().copied());
            }
        }
        text
    };
    let mut out = Vec::new();
    for &i in &changes {
        let (tag, _, n) = &ops[i];
        if changes.len() > 1 {
            out.push(apply(i, 0..n.len()));
        }
        if *tag == similar::DiffTag::Insert && n.len() > 1 {
            out.extend((0..n.len()).map(|k| apply(i, k..k + 1)));
        }
    }
    out.retain(|p| p != old && p != new);
    out.dedup();
    out.truncate(MAX_PARTS);
    out
}

/// The header lines (decorators, `def` up to its colon) without the first line's indentation,
/// as mined functions start, up to the colon; empty when the body shares the `def` line.
fn header_lead(header: &str) -> String {
    let indent = &header[..header.len() - header.trim_start_matches([' ', '\t']).len()];
    let lead: String =
        header.split_inclusive('\n').map(|line| line.strip_prefix(indent).unwrap_or(line.trim_start())).collect();
    // Without its last newline: the tokenizer joins a newline with the next line's indentation,
    // and a prompt ending in a bare newline makes the model end the function right there.
    lead.trim_end().to_string()
}

/// Whether `text`'s first definition (after decorators) is `def name(` or `async def name(`.
fn defines(text: &str, name: &str) -> bool {
    let Some(line) = text.lines().map(str::trim_start).find(|l| !l.is_empty() && !l.starts_with('@')) else {
        return false;
    };
    let line = line.strip_prefix("async ").unwrap_or(line);
    line.strip_prefix("def ")
        .and_then(|rest| rest.strip_prefix(name))
        .is_some_and(|rest| rest.trim_start().starts_with('('))
}

/// The trained patcher (`fix --model`, or the bundled adapter): rewrites of the most
/// suspicious functions, sampled on a background thread and handed to the search as they come.
pub struct PatcherSource;

impl PatcherSource {
    /// Plan the skeletons (with the trace `note`, if any) of the most suspicious `functions`
    /// and start sampling: the first `limits.max_functions` of them, then widening rounds
    /// over more functions at hotter temperatures until the rounds bring nothing new. Returns
    /// the source and where the thread says why sampling stopped, if it failed (read after the
    /// search).
    #[must_use]
    pub fn start(
        project: &Project,
        (functions, note): (&[SuspiciousFunction], &str),
        sampler: Patcher,
        limits: &NeuralLimits,
        turns: Option<Arc<ModelTurns>>,
    ) -> (BackgroundSource, Arc<Mutex<Option<String>>>) {
        let count = |s: &str| sampler.count_tokens(s);
        let plans: Vec<FunctionPlan> = functions
            .iter()
            .filter_map(|f| FunctionPlan::new(project, f, (&count, note), limits.budget))
            .take(limits.max_functions * WIDEN_FUNCTIONS)
            .collect();
        let (feed, BackgroundSender { tx, stop, paused }) = Background::new();
        let error = Arc::new(Mutex::new(None));
        let lines =
            |p: &FunctionPlan| vec![(p.file.clone(), p.start_line, p.start_line + p.old.lines().count().max(1) - 1)];
        let (progress, inbox) = Progress::new(Provenance::Neural, plans.iter().map(lines).collect());
        let worker = Worker { tx, stop, paused, error: Arc::clone(&error), limits: limits.clone(), turns, inbox };
        std::thread::spawn(move || worker.run(sampler, &plans));
        (BackgroundSource::new(SourceKind::Patcher, feed, progress), error)
    }
}

/// The background sampler.
struct Worker {
    tx: Sender<Vec<Proposal>>,
    stop: Arc<AtomicBool>,
    /// Hold the model while the search scores and confirms plausible patches.
    paused: Arc<AtomicBool>,
    error: Arc<Mutex<Option<String>>>,
    /// Credit for the functions whose rewrites made progress (applied before each round).
    inbox: Inbox,
    limits: NeuralLimits,
    turns: Option<Arc<ModelTurns>>,
}

impl Worker {
    /// Round after round of [`Widening`] (the plan's functions, then more of them, hotter),
    /// until the search stops or the rounds bring no new rewrite.
    fn run(&self, mut sampler: Patcher, plans: &[FunctionPlan]) {
        let stopped = || self.stopped();
        if let Some(turns) = &self.turns {
            if !turns.wait_for_lines(&stopped) {
                return;
            }
        }
        let (base, top_p) = (self.limits.max_functions, self.limits.top_p);
        let mut widening = Widening::new(base, base, plans.len(), self.limits.temperature, top_p);
        while let Some(round) = {
            self.inbox.apply(&mut widening);
            widening.next_round()
        } {
            for plan in round.order.iter().map(|&i| &plans[i]) {
                if self.stopped() {
                    return;
                }
                if let (Some(turns), true) = (&self.turns, round.index > 0) {
                    if !turns.yield_to_lines(LINE_TURNS_PER_WIDENED_TURN, &stopped) {
                        return;
                    }
                }
                let turn = self.turns.as_ref().map(|t| t.patcher_turn());
                let run = self.sample(&mut sampler, plan, &round);
                drop(turn);
                let proposals = match run {
                    Ok(run) => plan.proposals(run, self.limits.samples),
                    Err(err) => {
                        *self.error.lock().expect("patcher error") = Some(err.to_string());
                        return;
                    }
                };
                let new: Vec<Proposal> = proposals.into_iter().filter(|p| widening.record(&p.patch)).collect();
                if !new.is_empty() && self.tx.send(new).is_err() {
                    return;
                }
            }
        }
    }

    fn sample(&self, sampler: &mut Patcher, plan: &FunctionPlan, round: &Round) -> Result<SampleRun, ModelError> {
        let options = SampleOptions {
            n: self.limits.samples,
            temperature: round.temperature,
            top_p: round.top_p,
            max_len: sampler.max_target_len(),
            seed: self.limits.seed.wrapping_add(round.salt),
        };
        sampler.sample_until(&plan.skeleton, &plan.lead, &options, &|| self.stopped())
    }

    /// The search is over; while it is paused, waits here.
    fn stopped(&self) -> bool {
        while self.paused.load(Ordering::SeqCst) && !self.stop.load(Ordering::SeqCst) {
            std::thread::sleep(POLL);
        }
        self.stop.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewrite_is_also_proposed_as_each_change_and_each_inserted_line() {
        let old = "def f(a):\n    x = a\n    return x\n";
        let new = "def f(a):\n    x = a + 1\n    x -= 2\n    y = 3\n    return x\n";
        // One change (a replacement of one line by three): no smaller part.
        assert!(parts(old, new).is_empty());
        let old = "def f(a):\n    x = a\n    z = x\n    return x\n";
        let new = "def f(a):\n    x = a\n    x -= 2\n    y = 3\n    z = x\n    return x + 1\n";
        assert_eq!(
            parts(old, new),
            [
                "def f(a):\n    x = a\n    x -= 2\n    y = 3\n    z = x\n    return x\n",
                "def f(a):\n    x = a\n    x -= 2\n    z = x\n    return x\n",
                "def f(a):\n    x = a\n    y = 3\n    z = x\n    return x\n",
                "def f(a):\n    x = a\n    z = x\n    return x + 1\n",
            ]
        );
    }

    #[test]
    fn the_lead_is_the_header_without_its_indentation() {
        assert_eq!(header_lead("    @cached\n    def f(self,\n          x):\n"), "@cached\ndef f(self,\n      x):");
        assert_eq!(header_lead("def g():  \n"), "def g():");
        assert_eq!(header_lead(""), "");
    }

    #[test]
    fn a_rewrite_counts_only_when_it_defines_the_target_function() {
        assert!(defines("def withdraw(self, amount):\n    pass\n", "withdraw"));
        assert!(defines("    @staticmethod\n    async def withdraw (x):\n", "withdraw"));
        assert!(!defines("def statement(self):\n", "withdraw"));
        assert!(!defines("def withdraw_all(self):\n", "withdraw"));
        assert!(!defines("", "withdraw"));
    }

    #[test]
    fn the_patcher_waits_for_the_line_samplers_first_window_and_then_takes_the_next_turn() {
        let order = Arc::new(Mutex::new(Vec::new()));
        let turns = Arc::new(ModelTurns::default());
        let lines = turns.lines_turn();
        let (t, o) = (Arc::clone(&turns), Arc::clone(&order));
        let patcher = std::thread::spawn(move || {
            assert!(t.wait_for_lines(&|| false));
            let _turn = t.patcher_turn();
            o.lock().unwrap().push("patcher");
            std::thread::sleep(Duration::from_millis(30));
        });
        std::thread::sleep(Duration::from_millis(50));
        turns.first_window_done();
        std::thread::sleep(Duration::from_millis(50));
        assert!(order.lock().unwrap().is_empty(), "the line sampler holds the turn");
        drop(lines);
        // The line sampler asks again while the patcher waits: the patcher goes first.
        let again = turns.lines_turn();
        order.lock().unwrap().push("lines");
        drop(again);
        patcher.join().expect("patcher thread");
        assert_eq!(*order.lock().unwrap(), ["patcher", "lines"]);
        assert!(!ModelTurns::default().wait_for_lines(&|| true), "a stopped search stops the wait");
    }
}
