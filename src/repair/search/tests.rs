//! Tests of the search: ids, scheduling, widening, exhaustion.
use super::*;
use crate::patch::Edit;
use crate::repair::candidate::Provenance;
use crate::repair::validate::CandidateOutcome;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const MODULE: &str = "def f(a, b):\n    x = a + b\n    y = a - b\n    z = a * b\n    return x + y + z\n";

fn project() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("m.py"), MODULE).unwrap();
    let project = Project::load(dir.path()).unwrap();
    (dir, project)
}

/// A proposal replacing the first occurrence of `from` in the module by `to`.
fn proposal(from: &str, to: &str, score: f64) -> Proposal {
    let at = MODULE.find(from).unwrap();
    Proposal {
        patch: Patch::single("m.py", Edit::replacement(at..at + from.len(), to)),
        source: Provenance::LanguageModel,
        line: MODULE[..at].matches('\n').count() + 1,
        description: format!("{from} -> {to}"),
        score,
    }
}

/// Hands out its batches in order, then `after` (Exhausted or Pending); counts calls.
struct Fake {
    kind: SourceKind,
    batches: Vec<Vec<Proposal>>,
    bound: f64,
    pending_at_end: bool,
    calls: Arc<AtomicUsize>,
}

impl Fake {
    fn new(kind: SourceKind, batches: Vec<Vec<Proposal>>) -> Fake {
        Fake { kind, batches, bound: 0.0, pending_at_end: false, calls: Arc::default() }
    }
}

impl CandidateSource for Fake {
    fn kind(&self) -> SourceKind {
        self.kind
    }
    fn bound(&self) -> f64 {
        if self.batches.is_empty() {
            0.0
        } else {
            self.bound
        }
    }
    fn next(&mut self, _view: &View<'_>) -> Produced {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.batches.is_empty() {
            return if self.pending_at_end { Produced::Pending } else { Produced::Exhausted };
        }
        Produced::Batch(self.batches.remove(0))
    }
}

fn take(search: &mut Search<'_>) -> Arc<Candidate> {
    match search.next_candidate() {
        Next::Candidate(c) => c,
        Next::Wait => panic!("expected a candidate, got Wait"),
        Next::Done => panic!("expected a candidate, got Done"),
    }
}

fn failed(search: &mut Search<'_>, c: &Candidate) {
    let outcome = CandidateOutcome::StillFailing { failing: vec!["t".into()], fixed: 0 };
    search.record(&Validated {
        candidate_id: c.id,
        outcome,
        elapsed: Duration::from_millis(10),
        path: crate::repair::validate::PathTaken::BATCH,
    });
}

fn later() -> Instant {
    Instant::now() + Duration::from_secs(3600)
}

#[test]
fn sources_are_drawn_in_one_stream_by_score_and_ids_stay_stable() {
    let (_dir, project) = project();
    let a =
        Fake::new(SourceKind::Operators, vec![vec![proposal("a + b", "a - b", 0.9), proposal("a - b", "a + b", 0.5)]]);
    let b = Fake::new(SourceKind::Templates, vec![vec![proposal("a * b", "a ** b", 0.7)]]);
    let mut search = Search::new(&project, vec![Box::new(a), Box::new(b)], later());
    let order: Vec<Arc<Candidate>> = (0..3).map(|_| take(&mut search)).collect();
    let scores: Vec<f64> = order.iter().map(|c| c.score).collect();
    assert_eq!(scores, vec![0.9, 0.7, 0.5]);
    // Ids are admission (draw) order and index the store, whatever the validation order.
    for c in &order {
        assert_eq!(search.candidate(c.id).description, c.description);
    }
    assert_eq!(order[1].id, CandidateId(1));
    for c in &order {
        failed(&mut search, c);
    }
    assert!(matches!(search.next_candidate(), Next::Done));
}

#[test]
fn a_source_whose_candidates_keep_failing_gets_less_of_the_stream() {
    let (_dir, project) = project();
    // 60 operator candidates at 0.6 each (distinct texts), one template candidate at 0.3.
    let many: Vec<Proposal> = (0..60).map(|i| proposal("a * b", &format!("a * b + {i}"), 0.6)).collect();
    let a = Fake::new(SourceKind::Operators, vec![many]);
    let b = Fake::new(SourceKind::Templates, vec![vec![proposal("a - b", "b - a", 0.3)]]);
    let mut search = Search::new(&project, vec![Box::new(a), Box::new(b)], later());
    let mut position = None;
    for i in 0..61 {
        let c = take(&mut search);
        if c.source == Provenance::LanguageModel && c.score == 0.3 {
            position = Some(i);
            break;
        }
        failed(&mut search, &c);
    }
    // Weight after n failures: 1 / (0.02 n + 1); 0.6 w < 0.3 once n > 50.
    let position = position.expect("the template candidate was drawn");
    assert!((45..=55).contains(&position), "drawn at {position}");
}

#[test]
fn generation_is_lazy_a_source_is_asked_only_while_it_may_beat_what_waits() {
    let (_dir, project) = project();
    let batches: Vec<Vec<Proposal>> = (0..50).map(|i| vec![proposal("a * b", &format!("a * b * {i}"), 0.5)]).collect();
    let mut lazy = Fake::new(SourceKind::Operators, batches);
    lazy.bound = 0.5;
    let calls = Arc::clone(&lazy.calls);
    let mut search = Search::new(&project, vec![Box::new(lazy)], later());
    take(&mut search);
    let asked = calls.load(Ordering::SeqCst);
    assert!(asked <= LOW_WATER + 1, "asked {asked} times for the first candidate");
    assert!(asked >= LOW_WATER, "keeps {LOW_WATER} waiting");
}

#[test]
fn a_pending_source_makes_workers_wait_and_in_flight_work_keeps_the_search_open() {
    let (_dir, project) = project();
    let mut pending = Fake::new(SourceKind::LanguageModel, Vec::new());
    pending.pending_at_end = true;
    let mut search = Search::new(&project, vec![Box::new(pending)], later());
    assert!(matches!(search.next_candidate(), Next::Wait));

    let one = Fake::new(SourceKind::Operators, vec![vec![proposal("a + b", "a - b", 0.9)]]);
    let mut combos = Fake::new(SourceKind::Combinations, Vec::new());
    combos.pending_at_end = true;
    let mut search = Search::new(&project, vec![Box::new(one), Box::new(combos)], later());
    let c = take(&mut search);
    // Combinations wait for results: while one is in flight the search is not done.
    assert!(matches!(search.next_candidate(), Next::Wait));
    failed(&mut search, &c);
    assert!(matches!(search.next_candidate(), Next::Done));
}

#[test]
fn proposals_are_deduplicated_across_sources_and_unparseable_ones_dropped() {
    let (_dir, project) = project();
    let a =
        Fake::new(SourceKind::Operators, vec![vec![proposal("a + b", "a - b", 0.9), proposal("a + b", "a +", 0.8)]]);
    let b = Fake::new(SourceKind::Templates, vec![vec![proposal("a + b", "a  -  b", 0.7)]]);
    let mut search = Search::new(&project, vec![Box::new(a), Box::new(b)], later());
    let c = take(&mut search);
    // The other two are checked when drawn, and dropped.
    assert!(matches!(search.next_candidate(), Next::Wait));
    failed(&mut search, &c);
    assert!(matches!(search.next_candidate(), Next::Done));
    let stats = search.stats();
    assert_eq!((stats[0].1.generated, stats[0].1.unparseable), (1, 1));
    assert_eq!((stats[1].1.generated, stats[1].1.duplicates), (0, 1));
    assert_eq!(search.candidates().len(), 1);
}

#[test]
fn combinations_that_only_inherit_their_seeds_partial_fix_do_not_pump_their_source() {
    let (_dir, project) = project();
    // A combination lane whose 70 candidates all fix the one test their seed already fixed,
    // and an operator lane whose better-scored head must not starve behind them.
    let seeded = |i: usize| Proposal {
        source: Provenance::Combined { edits: 2, seed_fixed: 1 },
        ..proposal("a * b", &format!("a * b + {i}"), 0.2)
    };
    let combos = Fake::new(SourceKind::Combinations, vec![(0..70).map(seeded).collect()]);
    let ops = Fake::new(SourceKind::Operators, vec![vec![proposal("a - b", "b - a", 0.1)]]);
    let mut search = Search::new(&project, vec![Box::new(combos), Box::new(ops)], later());
    let mut position = None;
    for i in 0..71 {
        let c = take(&mut search);
        if c.source != (Provenance::Combined { edits: 2, seed_fixed: 1 }) {
            position = Some(i);
            break;
        }
        let outcome = CandidateOutcome::StillFailing { failing: vec!["t2".into()], fixed: 1 };
        assert!(!outcome.is_partial_fix(c.source), "no progress over the seed");
        search.record(&Validated {
            candidate_id: c.id,
            outcome,
            elapsed: Duration::from_millis(10),
            path: crate::repair::validate::PathTaken::BATCH,
        });
    }
    // Counted as failures, the combinations' weight 1 / (0.02 n + 1) falls below 0.1 / 0.2
    // after 50 of them; counted as hits it would rise with each one and the operator would
    // wait behind all 70.
    let position = position.expect("the operator candidate was drawn");
    assert!((45..=55).contains(&position), "drawn at {position}");
    let stats = search.stats();
    assert_eq!(stats[0].1.partial, 0);
}

/// A generative source that learns, as `ClozeSource` and `PatcherSource` do, from the results
/// it sees in `next`.
struct Learner {
    fake: Fake,
    progress: crate::repair::generate::widen::Progress,
}

impl CandidateSource for Learner {
    fn kind(&self) -> SourceKind {
        self.fake.kind()
    }
    fn bound(&self) -> f64 {
        self.fake.bound()
    }
    fn next(&mut self, view: &View<'_>) -> Produced {
        self.progress.observe(view);
        self.fake.next(view)
    }
}

#[test]
fn a_generative_source_learns_which_of_its_targets_made_progress() {
    use crate::repair::generate::widen::{Progress, Widening};
    let (_dir, project) = project();
    // Target 0 holds line 2, target 1 lines 3-4.
    let targets = vec![vec![("m.py".to_string(), 2, 2)], vec![("m.py".to_string(), 3, 4)]];
    let (progress, inbox) = Progress::new(Provenance::LanguageModel, targets);
    let batches = vec![vec![proposal("a + b", "b + a", 0.5), proposal("a * b", "a * a", 0.4)], Vec::new()];
    // Still sampling (pending) at the end, as a background source is: it is asked again.
    let fake = Fake { pending_at_end: true, ..Fake::new(SourceKind::LanguageModel, batches) };
    let learner = Learner { fake, progress };
    let mut search = Search::new(&project, vec![Box::new(learner)], later());
    let first = take(&mut search);
    assert_eq!(first.line, 2);
    failed(&mut search, &first);
    let second = take(&mut search);
    assert_eq!(second.line, 4);
    search.record(&Validated {
        candidate_id: second.id,
        outcome: CandidateOutcome::StillFailing { failing: vec!["t2".into()], fixed: 1 },
        elapsed: Duration::from_millis(10),
        path: crate::repair::validate::PathTaken::BATCH,
    });
    let _ = search.next_candidate(); // the source reads the results
    let mut widening = Widening::new(2, 1, 2, 0.8, 0.95);
    inbox.apply(&mut widening);
    assert_eq!(widening.next_round().unwrap().order, [1, 0], "the partial fix's target first");
}
