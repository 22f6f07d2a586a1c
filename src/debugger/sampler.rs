//! Seeded trajectory sampling with the paper's action mixture, and dataset rows.

use super::grammar::{replay, Trajectory};
use super::trace::Trace;
use super::tree::{Action, Direction, StateTree, Target};
use serde::{Deserialize, Serialize};

/// Version of the dataset rows written by `deepdebug trace-dataset`.
pub const SAMPLE_FORMAT_VERSION: u32 = 1;

use crate::rng::Rng;

/// Sampling parameters.
#[derive(Debug, Clone)]
pub struct SamplerConfig {
    /// Most actions in one trajectory (trajectories also end at an exit).
    pub max_actions: usize,
    /// Probability of sampling an inverse trajectory.
    pub inverse_fraction: f64,
    /// Probability that a breakpoint targets a line of a future state (else any line of the
    /// scope, which may never be hit again and then yields the exit).
    pub breakpoint_future_fraction: f64,
}

impl SamplerConfig {
    #[must_use]
    pub fn standard() -> SamplerConfig {
        SamplerConfig { max_actions: 32, inverse_fraction: 0.5, breakpoint_future_fraction: 0.8 }
    }
}

/// Forward mixture component 1 (Table A.1, as parsed: sums to 0.8, normalized here):
/// step_into, step_over, step_return, breakpoint, continue.
const FORWARD_WEIGHTS: [f64; 5] = [0.35, 0.10, 0.20, 0.10, 0.05];
/// Inverse analogue: inv_step_into, inv_step_over, inv_step_call.
const INVERSE_WEIGHTS: [f64; 3] = [0.35, 0.10, 0.20];

/// Draw the next action at node `at`: with probability 1/2 from the full action
/// distribution, else step_into/step_over with 1/2 each (keeps trajectories long).
pub fn sample_action(tree: &StateTree, at: usize, rng: &mut Rng, config: &SamplerConfig) -> Action {
    let full = rng.unit() < 0.5;
    match tree.direction {
        Direction::Forward => {
            let k = if full { rng.weighted(&FORWARD_WEIGHTS) } else { rng.below(2) };
            match k {
                0 => Action::StepInto,
                1 => Action::StepOver,
                2 => Action::StepReturn,
                3 => Action::Breakpoint(breakpoint_line(tree, at, rng, config)),
                _ => Action::Continue,
            }
        }
        Direction::Inverse => {
            let k = if full { rng.weighted(&INVERSE_WEIGHTS) } else { rng.below(2) };
            match k {
                0 => Action::InvStepInto,
                1 => Action::InvStepOver,
                _ => Action::InvStepCall,
            }
        }
    }
}

fn breakpoint_line(tree: &StateTree, at: usize, rng: &mut Rng, config: &SamplerConfig) -> String {
    let n = tree.nodes.len();
    let node = if at + 1 < n && rng.unit() < config.breakpoint_future_fraction {
        at + 1 + rng.below(n - at - 1)
    } else {
        rng.below(n)
    };
    tree.event_of(node).src.clone()
}

/// Entry points: forward trajectories may start at any call; inverse ones at any call below
/// the generated `main` (whose source would reveal the inputs).
#[must_use]
pub fn entry_points(trace: &Trace, direction: Direction) -> Vec<usize> {
    trace
        .call_indices()
        .into_iter()
        .filter(|&i| direction == Direction::Forward || trace.events[i].depth >= 1)
        .collect()
}

/// The grammar context for a direction: the full program forward, the user code only in
/// inverse mode.
#[must_use]
pub fn context_for(trace: &Trace, direction: Direction) -> String {
    match direction {
        Direction::Forward => format!("{}\n", trace.program.trim_end()),
        Direction::Inverse => format!("{}\n", trace.code.trim_end()),
    }
}

/// Build the tree for entry `call_index` in `direction`.
#[must_use]
pub fn tree_for(trace: &Trace, call_index: usize, direction: Direction) -> Option<StateTree> {
    let scope = trace.scope(call_index)?;
    Some(match direction {
        Direction::Forward => StateTree::forward(&scope),
        Direction::Inverse => StateTree::inverse(&scope),
    })
}

/// The whole trace as one forward trajectory of `step_into` actions (the recorded order).
#[must_use]
pub fn step_into_trajectory(trace: &Trace) -> Trajectory {
    let scope = trace.whole();
    let tree = StateTree::forward(&scope);
    let context = context_for(trace, Direction::Forward);
    if tree.nodes.is_empty() {
        return Trajectory {
            context,
            direction: Direction::Forward,
            frames: vec![super::grammar::Frame::Exit { exit: scope.exit }],
            actions: Vec::new(),
            targets: vec![Target::Exit(scope.exit)],
        };
    }
    let steps = vec![Action::StepInto; tree.nodes.len()];
    // step_into never fails on a forward tree, and it reaches the exit after one step per node.
    replay(&tree, &context, 0, &steps).unwrap_or_else(|_| Trajectory {
        context: String::new(),
        direction: Direction::Forward,
        frames: Vec::new(),
        actions: Vec::new(),
        targets: Vec::new(),
    })
}

/// A sampled trajectory with its entry point.
#[derive(Debug, Clone)]
pub struct Sampled {
    pub entry_call: usize,
    pub trajectory: Trajectory,
}

/// Sample one trajectory from `trace`, or `None` if it has no usable entry point.
pub fn sample_trajectory(trace: &Trace, rng: &mut Rng, config: &SamplerConfig) -> Option<Sampled> {
    let mut direction = if rng.unit() < config.inverse_fraction { Direction::Inverse } else { Direction::Forward };
    let mut entries = entry_points(trace, direction);
    if entries.is_empty() {
        direction = Direction::Forward;
        entries = entry_points(trace, direction);
    }
    if entries.is_empty() {
        return None;
    }
    let entry_call = entries[rng.below(entries.len())];
    let tree = tree_for(trace, entry_call, direction)?;
    let mut actions = Vec::new();
    let mut at = 0;
    while actions.len() < config.max_actions {
        let action = sample_action(&tree, at, rng, config);
        let target = tree.apply(at, &action).ok()?;
        actions.push(action);
        match target {
            Target::Node(j) => at = j,
            Target::Exit(_) | Target::Entry => break,
        }
    }
    let trajectory = replay(&tree, &context_for(trace, direction), 0, &actions).ok()?;
    Some(Sampled { entry_call, trajectory })
}

/// One input row: a function and an argument list (CruxEval rows fit).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FunctionRow {
    pub code: String,
    /// Argument list spliced as `ENTRY(INPUT)`.
    pub input: String,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub output: Option<String>,
    /// Function to call; defaults to `f`.
    #[serde(default)]
    pub entry: Option<String>,
}

impl FunctionRow {
    #[must_use]
    pub fn call(&self) -> String {
        format!("{}({})", self.entry.as_deref().unwrap_or("f"), self.input)
    }
}

/// One dataset row: a serialized trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleRow {
    pub format_version: u32,
    /// Id of the source function row.
    pub source: String,
    /// Index of the sample for that source.
    pub sample: usize,
    pub direction: Direction,
    /// Index of the entry call event in the source's trace.
    pub entry_call: usize,
    pub actions: Vec<Action>,
    /// The trajectory in the token grammar.
    pub text: String,
}

/// Sample up to `per_trace` trajectories from one trace (with their sample numbers). The RNG
/// is derived from `seed` and `source_index`, so results do not depend on processing order.
#[must_use]
pub fn sample_trajectories(
    trace: &Trace,
    source_index: usize,
    per_trace: usize,
    seed: u64,
    config: &SamplerConfig,
) -> Vec<(usize, Sampled)> {
    let mut rng = Rng::new(seed ^ (source_index as u64).wrapping_mul(0xA076_1D64_78BD_642F));
    (0..per_trace).filter_map(|sample| Some((sample, sample_trajectory(trace, &mut rng, config)?))).collect()
}

/// Sample `per_trace` dataset rows from one trace (see [`sample_trajectories`]).
#[must_use]
pub fn sample_rows(
    trace: &Trace,
    source: &str,
    source_index: usize,
    per_trace: usize,
    seed: u64,
    config: &SamplerConfig,
) -> Vec<SampleRow> {
    sample_trajectories(trace, source_index, per_trace, seed, config)
        .into_iter()
        .map(|(sample, s)| SampleRow {
            format_version: SAMPLE_FORMAT_VERSION,
            source: source.to_string(),
            sample,
            direction: s.trajectory.direction,
            entry_call: s.entry_call,
            actions: s.trajectory.actions.clone(),
            text: s.trajectory.serialize(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_weighted_draws_follow_weights() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        assert_eq!((0..5).map(|_| a.next_u64()).collect::<Vec<_>>(), (0..5).map(|_| b.next_u64()).collect::<Vec<_>>());
        let mut r = Rng::new(1);
        let mut counts = [0usize; 5];
        for _ in 0..20_000 {
            counts[r.weighted(&FORWARD_WEIGHTS)] += 1;
        }
        // step_into (0.35/0.8) is about 7x continue (0.05/0.8).
        assert!(counts[0] > 5 * counts[4] && counts[0] < 9 * counts[4], "{counts:?}");
        assert!(counts.iter().all(|&c| c > 0));
    }
}

#[cfg(test)]
mod sampling_tests {
    use super::*;
    use crate::debugger::fixtures::nested_calls;

    #[test]
    fn same_seed_same_rows_and_different_seed_different_rows() {
        let trace = nested_calls();
        let config = SamplerConfig::standard();
        let a = sample_rows(&trace, "t", 0, 8, 42, &config);
        let b = sample_rows(&trace, "t", 0, 8, 42, &config);
        let c = sample_rows(&trace, "t", 0, 8, 43, &config);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.len(), 8);
    }

    #[test]
    fn inverse_trajectories_never_show_main_and_end_at_entry_or_cap() {
        let trace = nested_calls();
        let config = SamplerConfig { inverse_fraction: 1.0, max_actions: 200, ..SamplerConfig::standard() };
        let mut rng = Rng::new(3);
        for _ in 0..20 {
            let s = sample_trajectory(&trace, &mut rng, &config).expect("sample");
            assert_eq!(s.trajectory.direction, Direction::Inverse);
            let text = s.trajectory.serialize();
            assert!(!text.contains("def main"), "{text}");
            assert!(text.ends_with("<|inv_exit_entry|><|trace_end|><|end_of_text|>"), "{text}");
        }
    }

    #[test]
    fn forward_trajectories_end_with_the_exit_of_their_scope() {
        let trace = nested_calls();
        let config = SamplerConfig { inverse_fraction: 0.0, max_actions: 200, ..SamplerConfig::standard() };
        let mut rng = Rng::new(5);
        let mut entries = std::collections::BTreeSet::new();
        for _ in 0..30 {
            let s = sample_trajectory(&trace, &mut rng, &config).expect("sample");
            entries.insert(s.entry_call);
            assert!(s.trajectory.serialize().ends_with("<|exit_normal|><|trace_end|><|end_of_text|>"));
        }
        // Entry points are drawn from all four calls.
        assert_eq!(entries.len(), 4, "{entries:?}");
    }
}
