//! The `NextStatePredictor` interface, an oracle that replays recorded traces, a baseline.

use super::grammar::{parse_frame, parse_prompt, serialize_action, Arg, EmitState, Frame, GrammarError};
use super::sampler::{context_for, entry_points, tree_for};
use super::trace::Trace;
use super::tree::{Action, Direction, NodeKind, StateTree, Target};
use std::collections::HashMap;

/// A prediction request: the serialized trajectory so far (context and frames, ending with
/// the current frame) and the action to take from the current frame.
#[derive(Debug, Clone, Copy)]
pub struct Prompt<'a> {
    /// `<|begin_of_text|><|trace_context_start|>CODE<|frame_sep|>…` up to the current frame.
    pub prefix: &'a str,
    pub action: &'a Action,
}

impl Prompt<'_> {
    /// The full model input: prefix + `<|action_sep|>ACTION`.
    #[must_use]
    pub fn text(&self) -> String {
        format!("{}{}", self.prefix, serialize_action(self.action))
    }
}

/// Errors from a predictor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PredictError {
    /// The predictor cannot answer this prompt (e.g. the oracle has no matching trace).
    #[error("no prediction: {0}")]
    Unavailable(String),
    #[error("malformed prompt: {0}")]
    Prompt(#[from] GrammarError),
    /// The model failed to run (tensor or tokenizer error).
    #[error("model: {0}")]
    Model(String),
}

/// Predicts the next debugger state. A neural model implements this by generating from
/// `prompt.text()` until `<|action_sep|>` or `<|end_of_text|>`.
pub trait NextStatePredictor {
    /// The predicted next frame as grammar text, starting with `<|frame_sep|>`.
    ///
    /// # Errors
    /// Fails if no prediction can be made.
    fn predict(&mut self, prompt: &Prompt<'_>) -> Result<String, PredictError>;

    /// [`NextStatePredictor::predict`], parsed.
    ///
    /// # Errors
    /// Fails if no prediction can be made or the text is not a frame.
    fn predict_frame(&mut self, prompt: &Prompt<'_>) -> Result<Frame, PredictError> {
        Ok(parse_frame(&self.predict(prompt)?)?)
    }
}

/// Answers from recorded traces: finds the trace and entry point whose replay of the
/// prompt's actions reproduces the prompt exactly, and returns the recorded next frame.
/// It sees nothing but the prompt text, so it scores 100% exactly when the serializer, the
/// tree semantics and the metrics agree.
pub struct OraclePredictor {
    traces: Vec<Trace>,
    trees: HashMap<(usize, usize, Direction), Option<StateTree>>,
}

impl OraclePredictor {
    #[must_use]
    pub fn new(traces: Vec<Trace>) -> OraclePredictor {
        OraclePredictor { traces, trees: HashMap::new() }
    }
}

impl NextStatePredictor for OraclePredictor {
    fn predict(&mut self, prompt: &Prompt<'_>) -> Result<String, PredictError> {
        let (context, frames, actions) = parse_prompt(&prompt.text())?;
        let Some(first) = frames.first() else {
            return Err(PredictError::Unavailable("prompt has no frame".into()));
        };
        let direction = first.direction();
        for t in 0..self.traces.len() {
            if context_for(&self.traces[t], direction) != context {
                continue;
            }
            for entry in entry_points(&self.traces[t], direction) {
                let trace = &self.traces[t];
                // Cheap exact filter: a forward trajectory starts at its entry's call frame.
                if direction == Direction::Forward {
                    let e = &trace.events[entry];
                    let call =
                        Frame::State { event: NodeKind::Call, src: e.src.clone(), arg: Arg::Locals(e.locals.clone()) };
                    if call != *first {
                        continue;
                    }
                }
                let tree = self.trees.entry((t, entry, direction)).or_insert_with(|| tree_for(trace, entry, direction));
                let Some(tree) = tree.as_ref() else { continue };
                if EmitState::default().frame(tree, Target::Node(0), true) != *first {
                    continue;
                }
                let Ok(traj) = super::grammar::replay(tree, &context, 0, &actions) else { continue };
                if traj.frames.len() == frames.len() + 1 && traj.frames[..frames.len()] == frames[..] {
                    if let Some(next) = traj.frames.last() {
                        return Ok(next.serialize());
                    }
                }
            }
        }
        Err(PredictError::Unavailable("no recorded trace reproduces this prompt".into()))
    }
}

/// Baseline: predicts that nothing changes (repeats the current frame). Scores well below
/// the oracle; used to show that the metrics measure something.
pub struct CopyLastPredictor;

impl NextStatePredictor for CopyLastPredictor {
    fn predict(&mut self, prompt: &Prompt<'_>) -> Result<String, PredictError> {
        let (_, frames, _) = parse_prompt(&prompt.text())?;
        frames.last().map(Frame::serialize).ok_or_else(|| PredictError::Unavailable("prompt has no frame".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debugger::eval::{cases, evaluate};
    use crate::debugger::fixtures::nested_calls;
    use crate::debugger::sampler::{sample_trajectory, SamplerConfig};
    use crate::rng::Rng;

    fn trajectories(n: usize) -> Vec<crate::debugger::grammar::Trajectory> {
        let trace = nested_calls();
        let mut rng = Rng::new(11);
        (0..n)
            .filter_map(|_| sample_trajectory(&trace, &mut rng, &SamplerConfig::standard()))
            .map(|s| s.trajectory)
            .collect()
    }

    #[test]
    fn the_oracle_scores_everything_and_copy_last_does_not() {
        let cases = cases(&trajectories(40));
        assert!(cases.len() > 100, "{}", cases.len());
        let report = evaluate(&mut OraclePredictor::new(vec![nested_calls()]), &cases);
        assert_eq!(report.overall.exact.correct, cases.len());
        assert_eq!(report.overall.unparsed, 0);
        // Both directions and several action kinds were exercised.
        for kind in ["step_into", "step_over", "step_return", "inv_step_into", "inv_step_call"] {
            assert!(report.per_action.contains_key(kind), "{kind} missing: {:?}", report.per_action.keys());
        }
        let baseline = evaluate(&mut CopyLastPredictor, &cases);
        assert!(baseline.overall.exact.correct < cases.len() / 2, "{:?}", baseline.overall);
    }

    #[test]
    fn the_oracle_refuses_prompts_of_unknown_programs() {
        let traj = &trajectories(1)[0];
        let prefix = traj.prefix(0).replace("total", "totl");
        let mut oracle = OraclePredictor::new(vec![nested_calls()]);
        let action = traj.actions[0].clone();
        assert!(matches!(
            oracle.predict(&Prompt { prefix: &prefix, action: &action }),
            Err(PredictError::Unavailable(_))
        ));
        assert!(matches!(oracle.predict(&Prompt { prefix: "garbage", action: &action }), Err(PredictError::Prompt(_))));
    }
}
