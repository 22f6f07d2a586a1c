//! Next-state evaluation: exact match overall and per component (src, event, locals, arg).

use super::grammar::{parse_frame, Arg, Frame, Trajectory};
use super::predictor::{NextStatePredictor, Prompt};
use super::sampler::{sample_trajectories, SamplerConfig};
use super::trace::Trace;
use super::tree::{Action, ActionKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of [`NextStateReport`].
pub const EVAL_FORMAT_VERSION: u32 = 1;

/// Correct predictions out of the cases where the component exists in the reference.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Count {
    pub correct: usize,
    pub total: usize,
}

impl Count {
    fn add(&mut self, applicable: bool, correct: bool) {
        if applicable {
            self.total += 1;
            self.correct += usize::from(correct);
        }
    }

    /// Fraction correct, `None` ("N/A") when the component never applied.
    #[must_use]
    pub fn rate(&self) -> Option<f64> {
        (self.total > 0).then(|| self.correct as f64 / self.total as f64)
    }
}

/// Metrics for one action kind (or all actions).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metrics {
    /// Whole next state matches exactly.
    pub exact: Count,
    pub src: Count,
    pub event: Count,
    pub locals: Count,
    /// Return / exception value.
    pub arg: Count,
    /// Predictions that failed or did not parse (counted wrong everywhere).
    pub unparsed: usize,
}

/// The report of `deepdebug eval-next-state`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextStateReport {
    pub format_version: u32,
    pub overall: Metrics,
    pub per_action: BTreeMap<String, Metrics>,
}

impl Metrics {
    /// Score one prediction against the reference frame. `predicted` is `None` when the
    /// predictor failed or its text did not parse.
    pub fn score(&mut self, reference: &Frame, predicted: Option<&Frame>) {
        if predicted.is_none() {
            self.unparsed += 1;
        }
        self.exact.add(true, predicted == Some(reference));
        match reference {
            Frame::State { event, src, arg } => {
                let (p_event, p_src, p_arg) = match predicted {
                    Some(Frame::State { event, src, arg }) => (Some(event), Some(src), Some(arg)),
                    _ => (None, None, None),
                };
                self.event.add(true, p_event == Some(event));
                self.src.add(true, p_src == Some(src));
                let is_locals = matches!(arg, Arg::Locals(_));
                self.locals.add(is_locals, p_arg == Some(arg));
                self.arg.add(!is_locals, p_arg == Some(arg));
            }
            // An exit or entry frame has only its event.
            Frame::Exit { .. } | Frame::Entry => self.event.add(true, predicted == Some(reference)),
        }
    }
}

/// One next-state prediction case.
#[derive(Debug, Clone)]
pub struct Case {
    pub prefix: String,
    pub action: Action,
    pub reference: Frame,
}

/// Every (prefix, action, next frame) triple of the trajectories.
#[must_use]
pub fn cases(trajectories: &[Trajectory]) -> Vec<Case> {
    let mut out = Vec::new();
    for t in trajectories {
        for (k, action) in t.actions.iter().enumerate() {
            out.push(Case { prefix: t.prefix(k), action: action.clone(), reference: t.frames[k + 1].clone() });
        }
    }
    out
}

/// Cases from trajectories sampled exactly as `trace-dataset` samples them (same seed, same
/// trajectories), so a held-out JSONL evaluates like a validation split.
#[must_use]
pub fn sample_cases(traces: &[Trace], per_trace: usize, seed: u64, config: &SamplerConfig) -> Vec<Case> {
    let trajectories: Vec<Trajectory> = traces
        .iter()
        .enumerate()
        .flat_map(|(i, t)| sample_trajectories(t, i, per_trace, seed, config))
        .map(|(_, s)| s.trajectory)
        .collect();
    cases(&trajectories)
}

/// Evaluate a predictor on cases: exact match and per-component match, per action kind.
pub fn evaluate(predictor: &mut dyn NextStatePredictor, cases: &[Case]) -> NextStateReport {
    let mut overall = Metrics::default();
    let mut per_action: BTreeMap<ActionKind, Metrics> = BTreeMap::new();
    for case in cases {
        let prompt = Prompt { prefix: &case.prefix, action: &case.action };
        let predicted = predictor.predict(&prompt).ok().and_then(|text| parse_frame(&text).ok());
        overall.score(&case.reference, predicted.as_ref());
        per_action.entry(case.action.kind()).or_default().score(&case.reference, predicted.as_ref());
    }
    NextStateReport {
        format_version: EVAL_FORMAT_VERSION,
        overall,
        per_action: per_action.into_iter().map(|(k, m)| (k.as_str().to_string(), m)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debugger::trace::ExitKind;
    use crate::debugger::tree::NodeKind;

    fn line(src: &str, locals: &[(&str, &str)]) -> Frame {
        Frame::State {
            event: NodeKind::Line,
            src: src.into(),
            arg: Arg::Locals(locals.iter().map(|(a, b)| ((*a).into(), (*b).into())).collect()),
        }
    }

    #[test]
    fn components_are_scored_separately_and_na_when_absent() {
        let mut m = Metrics::default();
        let reference = line("x = 1", &[("a", "1")]);
        m.score(&reference, Some(&line("x = 1", &[("a", "2")])));
        m.score(&reference, Some(&line("y = 1", &[("a", "1")])));
        m.score(&reference, None);
        assert_eq!(m.exact, Count { correct: 0, total: 3 });
        assert_eq!(m.src, Count { correct: 1, total: 3 });
        assert_eq!(m.event, Count { correct: 2, total: 3 });
        assert_eq!(m.locals, Count { correct: 1, total: 3 });
        assert_eq!(m.arg.rate(), None);
        assert_eq!(m.unparsed, 1);
        let exit = Frame::Exit { exit: ExitKind::Normal };
        m.score(&exit, Some(&exit));
        assert_eq!(m.exact, Count { correct: 1, total: 4 });
        assert_eq!(m.src.total, 3);
    }
}
