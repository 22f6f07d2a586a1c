//! The trained next-state model: training pairs from trajectories, prompt fitting, and `NeuralPredictor` (greedy T5 decoding).

use super::eval::cases;
use super::grammar::{parse_trajectory, special_tokens, GrammarError, ACTION_SEP, CONTEXT_START, FRAME_SEP};
use super::predictor::{NextStatePredictor, PredictError, Prompt};
use crate::model::data::Example;
use crate::model::{t5, CodeTokenizer, ModelDir, ModelError, SampleOptions, Sampler, Task};
use std::path::Path;

mod lm;
pub use lm::{grammar_text, lm_text, trajectory_segments, LmNextState};

/// Errors from loading a next-state model.
#[derive(Debug, thiserror::Error)]
pub enum NeuralError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(
        "{path} holds a {task} model, not a next-state model (train one with `deepdebug train --task next-state`)"
    )]
    WrongTask { path: String, task: &'static str },
    #[error("the model's tokenizer does not keep {0} as one token")]
    SplitToken(&'static str),
}

/// The training pairs of one serialized trajectory (a `trace-dataset` row's `text`): one per
/// action, with the prompt ([`Prompt::text`]: prefix up to the current frame, then
/// `<|action_sep|>ACTION`) as source and the next frame's serialization, which starts with
/// `<|frame_sep|>`, as target. The model is trained to produce exactly what
/// [`NextStatePredictor::predict`] returns.
///
/// # Errors
/// When the text is not a trajectory in the grammar.
pub fn next_state_examples(text: &str) -> Result<Vec<Example>, GrammarError> {
    let trajectory = parse_trajectory(text)?;
    Ok(cases(std::slice::from_ref(&trajectory))
        .into_iter()
        .map(|c| Example {
            source: Prompt { prefix: &c.prefix, action: &c.action }.text(),
            target: c.reference.serialize(),
        })
        .collect())
}

/// [`next_state_examples`] as a [`crate::model::data::Trajectories`], for reading
/// `trace-dataset` rows as training pairs.
///
/// # Errors
/// When the text is not a trajectory in the grammar (the message says why).
pub fn trajectory_examples(text: &str) -> Result<Vec<Example>, crate::model::data::RowError> {
    next_state_examples(text).map_err(|e| crate::model::data::RowError::Trajectory(Box::new(e)))
}

/// The longest suffix of `text` within `budget` tokens.
fn tail(text: &str, budget: usize, count: &dyn Fn(&str) -> usize) -> String {
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
    let (mut lo, mut hi) = (0, bounds.len() - 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if count(&text[bounds[mid]..]) <= budget {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    text[bounds[lo]..].to_string()
}

/// Shorten a prompt to at most `budget` tokens (as counted by `count`), keeping what the
/// next state depends on most, in this order:
///
/// 1. the end: the current frame and the action;
/// 2. the code context (when even code and end do not fit, code lines go from the top);
/// 3. the first frame (the entry state, whose locals are shown in full);
/// 4. as many of the most recent frames as fit.
///
/// Frames are dropped whole, from the middle, so the result still parses as a prompt. When
/// the end alone is over the budget, the longest suffix within it is kept. `count` should be
/// additive at frame and line boundaries, as the model's tokenizer is (`<|frame_sep|>` is an
/// atomic token and newlines are pre-token boundaries); otherwise the result is cut again.
#[must_use]
pub fn fit_prompt(text: &str, budget: usize, count: &dyn Fn(&str) -> usize) -> String {
    if count(text) <= budget {
        return text.to_string();
    }
    let Some(first_sep) = text.find(FRAME_SEP) else {
        return tail(text, budget, count);
    };
    let (header, frames) = text.split_at(first_sep);
    let starts: Vec<usize> = frames.match_indices(FRAME_SEP).map(|(i, _)| i).collect();
    let chunks: Vec<&str> = starts
        .iter()
        .enumerate()
        .map(|(j, &s)| &frames[s..starts.get(j + 1).copied().unwrap_or(frames.len())])
        .collect();
    let (middle, last) = chunks.split_at(chunks.len() - 1);
    let last = last[0];
    let cost_last = count(last);
    let code_start = header.find(CONTEXT_START).map_or(0, |p| p + CONTEXT_START.len());
    let (lead, code) = header.split_at(code_start);
    let cost_lead = count(lead);
    let lines: Vec<&str> = code.split_inclusive('\n').collect();
    let line_costs: Vec<usize> = lines.iter().map(|l| count(l)).collect();
    let mut cost_code: usize = line_costs.iter().sum();
    let mut dropped_lines = 0;
    while cost_lead + cost_code + cost_last > budget && dropped_lines < lines.len() {
        cost_code -= line_costs[dropped_lines];
        dropped_lines += 1;
    }
    if cost_lead + cost_code + cost_last > budget {
        return tail(text, budget, count);
    }
    let mut left = budget - (cost_lead + cost_code + cost_last);
    let keep_first = middle.first().is_some_and(|first| {
        let cost = count(first);
        let fits = cost <= left;
        if fits {
            left -= cost;
        }
        fits
    });
    let mut recent_from = middle.len();
    for i in (usize::from(keep_first)..middle.len()).rev() {
        let cost = count(middle[i]);
        if cost > left {
            break;
        }
        left -= cost;
        recent_from = i;
    }
    let mut out = String::with_capacity(text.len());
    out.push_str(lead);
    lines[dropped_lines..].iter().for_each(|l| out.push_str(l));
    if keep_first {
        out.push_str(middle[0]);
    }
    middle[recent_from..].iter().for_each(|c| out.push_str(c));
    out.push_str(last);
    if count(&out) > budget {
        return tail(&out, budget, count);
    }
    out
}

/// Tokens available for the prompt in a model's encoder (one goes to `</s>`).
#[must_use]
pub fn source_budget(max_source_len: usize) -> usize {
    max_source_len.saturating_sub(1)
}

/// Fit every example's source into the model's encoder with [`fit_prompt`], so that
/// training sees the same inputs as [`NeuralPredictor`].
pub fn fit_examples(examples: &mut [Example], tokenizer: &CodeTokenizer, max_source_len: usize) {
    let count = |s: &str| tokenizer.count(s);
    for e in examples {
        e.source = fit_prompt(&e.source, source_budget(max_source_len), &count);
    }
}

/// Check that every special token of the grammar is one token for `tokenizer`.
///
/// # Errors
/// Names the first token that is split.
pub fn check_tokenizer(tokenizer: &CodeTokenizer) -> Result<(), NeuralError> {
    for token in special_tokens() {
        let id = tokenizer.token_id(token);
        if id.is_none() || tokenizer.encode(token).ok() != id.map(|i| vec![i]) {
            return Err(NeuralError::SplitToken(token));
        }
    }
    Ok(())
}

/// Normalize decoded model output to one frame: cut at an `<|action_sep|>` or a second
/// `<|frame_sep|>`, and start with `<|frame_sep|>` (training targets do, so this only
/// matters for a model that has not learned it).
#[must_use]
pub fn frame_text(decoded: &str) -> String {
    let text = decoded.trim_start();
    let body = text.strip_prefix(FRAME_SEP).unwrap_or(text);
    let end = [body.find(ACTION_SEP), body.find(FRAME_SEP)].into_iter().flatten().min().unwrap_or(body.len());
    format!("{FRAME_SEP}{}", &body[..end])
}

/// A trained next-state model of either family as the debugger drives it: predictions,
/// sampling instead of greedy decoding, and the text it is given for a prompt.
pub trait NextStateModel: NextStatePredictor + std::fmt::Debug {
    /// Sample at `temperature` (top-p 0.95), a new seed per prediction from `seed` on,
    /// instead of decoding greedily: pass@k draws k predictions per task.
    fn with_sampling(&mut self, temperature: f64, seed: u64);

    /// The model's input for a prompt, fitted to the model's prompt length.
    fn model_input(&self, prompt: &Prompt<'_>) -> String;
}

/// A trained [`Task::NextState`] model behind the [`NextStatePredictor`] interface: a T5
/// directory ([`T5NextState`]) or a LoRA adapter on SmolLM2 ([`LmNextState`]), whichever
/// [`NeuralPredictor::load`] finds. Decoding is greedy, so predictions are deterministic,
/// unless [`NeuralPredictor::with_sampling`] asks for samples.
#[derive(Debug)]
pub struct NeuralPredictor {
    model: Box<dyn NextStateModel>,
}

impl NeuralPredictor {
    /// Load the model directory or LoRA adapter `path` (on the CPU when `cpu` is set or CUDA
    /// is not built in; adapters run on the CPU).
    ///
    /// # Errors
    /// When `path` is not a model directory or holds another task's model.
    pub fn load(path: &Path, cpu: bool) -> Result<NeuralPredictor, NeuralError> {
        let model: Box<dyn NextStateModel> = if crate::model::lora::AdapterDir::is_adapter(path) {
            Box::new(LmNextState::load(path)?)
        } else {
            Box::new(T5NextState::load(path, cpu)?)
        };
        Ok(NeuralPredictor { model })
    }

    /// Wrap a loaded T5 model; `path` is only used in messages.
    ///
    /// # Errors
    /// When the model is not a next-state model or its tokenizer splits a grammar token.
    pub fn new(sampler: Sampler, path: &Path) -> Result<NeuralPredictor, NeuralError> {
        Ok(NeuralPredictor { model: Box::new(T5NextState::new(sampler, path)?) })
    }

    /// See [`NextStateModel::with_sampling`].
    pub fn with_sampling(&mut self, temperature: f64, seed: u64) {
        self.model.with_sampling(temperature, seed);
    }

    /// See [`NextStateModel::model_input`].
    #[must_use]
    pub fn model_input(&self, prompt: &Prompt<'_>) -> String {
        self.model.model_input(prompt)
    }
}

impl NextStatePredictor for NeuralPredictor {
    fn predict(&mut self, prompt: &Prompt<'_>) -> Result<String, PredictError> {
        self.model.predict(prompt)
    }
}

/// A T5 next-state model: the prompt fitted to the encoder ([`fit_prompt`]), the next frame
/// decoded.
#[derive(Debug)]
pub struct T5NextState {
    sampler: Box<Sampler>,
    options: SampleOptions,
}

impl T5NextState {
    /// Load the model directory `path` (on the CPU when `cpu` is set or CUDA is not built in).
    ///
    /// # Errors
    /// When `path` is not a model directory or holds another task's model.
    pub fn load(path: &Path, cpu: bool) -> Result<T5NextState, NeuralError> {
        let dir = ModelDir::new(path);
        let config = dir.config()?;
        if config.task != Task::NextState {
            return Err(NeuralError::WrongTask { path: path.display().to_string(), task: config.task.name() });
        }
        let device = t5::device(cpu).map_err(ModelError::from)?;
        Self::new(Sampler::load(&dir, &device)?, path)
    }

    /// Wrap a loaded model; `path` is only used in messages.
    ///
    /// # Errors
    /// When the model is not a next-state model or its tokenizer splits a grammar token.
    pub fn new(sampler: Sampler, path: &Path) -> Result<T5NextState, NeuralError> {
        let config = sampler.config();
        if config.task != Task::NextState {
            return Err(NeuralError::WrongTask { path: path.display().to_string(), task: config.task.name() });
        }
        check_tokenizer(sampler.tokenizer())?;
        let options = SampleOptions { n: 1, temperature: 0.0, top_p: 1.0, max_len: config.max_target_len, seed: 0 };
        Ok(T5NextState { sampler: Box::new(sampler), options })
    }
}

impl NextStateModel for T5NextState {
    fn with_sampling(&mut self, temperature: f64, seed: u64) {
        (self.options.temperature, self.options.top_p, self.options.seed) = (temperature, 0.95, seed);
    }

    fn model_input(&self, prompt: &Prompt<'_>) -> String {
        let tokenizer = self.sampler.tokenizer();
        fit_prompt(&prompt.text(), source_budget(self.sampler.config().max_source_len), &|s| tokenizer.count(s))
    }
}

impl NextStatePredictor for T5NextState {
    fn predict(&mut self, prompt: &Prompt<'_>) -> Result<String, PredictError> {
        let input = self.model_input(prompt);
        let run = self.sampler.sample(&input, &self.options).map_err(|e| PredictError::Model(e.to_string()))?;
        if self.options.temperature > 0.0 {
            self.options.seed = self.options.seed.wrapping_add(1);
        }
        Ok(frame_text(run.samples.first().map_or("", |s| s.text.as_str())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debugger::fixtures::nested_calls;
    use crate::debugger::grammar::{parse_prompt, BEGIN_OF_TEXT};
    use crate::debugger::sampler::step_into_trajectory;

    /// One "token" per byte: exactly additive.
    fn bytes(s: &str) -> usize {
        s.len()
    }

    #[test]
    fn short_prompts_are_kept_whole() {
        let traj = step_into_trajectory(&nested_calls());
        let prompt = traj.prompt(3);
        assert_eq!(fit_prompt(&prompt, prompt.len(), &bytes), prompt);
    }

    #[test]
    fn long_prompts_keep_code_first_frame_and_recent_frames() {
        let traj = step_into_trajectory(&nested_calls());
        let k = traj.actions.len() - 2;
        let prompt = traj.prompt(k);
        let current =
            format!("{}{}", traj.frames[k].serialize(), crate::debugger::grammar::serialize_action(&traj.actions[k]));
        let first = traj.frames[0].serialize();
        let budget = traj.header().len() + first.len() + current.len() + 3 * traj.frames[k - 1].serialize().len();
        let fitted = fit_prompt(&prompt, budget, &bytes);
        assert!(fitted.len() <= budget && fitted.len() < prompt.len(), "{} of {budget}", fitted.len());
        assert!(fitted.starts_with(&format!("{}{first}", traj.header())), "{fitted}");
        assert!(fitted.ends_with(&current), "{fitted}");
        // Whole frames were dropped from the middle: it still parses, and what is left after
        // the first frame is a contiguous run of the most recent frames and actions.
        let (context, frames, actions) = parse_prompt(&fitted).expect("parses");
        assert_eq!(context, traj.context);
        assert!(frames.len() >= 3 && frames.len() < k + 1, "{} frames", frames.len());
        let kept = frames.len() - 1;
        assert_eq!(frames[1..], traj.frames[k + 1 - kept..=k]);
        assert_eq!(actions[1..], traj.actions[k + 1 - kept..=k]);
        // With the same budget, a prompt that fits untouched is returned as is.
        assert_eq!(fit_prompt(&traj.prompt(1), budget, &bytes), traj.prompt(1));
    }

    #[test]
    fn code_lines_go_from_the_top_when_code_and_end_do_not_fit() {
        let traj = step_into_trajectory(&nested_calls());
        let prompt = traj.prompt(5);
        let end = &prompt[prompt.rfind(FRAME_SEP).unwrap()..];
        let budget = BEGIN_OF_TEXT.len() + CONTEXT_START.len() + 40 + end.len();
        let fitted = fit_prompt(&prompt, budget, &bytes);
        assert!(fitted.len() <= budget);
        assert!(fitted.starts_with(&format!("{BEGIN_OF_TEXT}{CONTEXT_START}")), "{fitted}");
        assert!(fitted.ends_with(end), "{fitted}");
        assert!(fitted.contains("    return total([1, -2])"), "the last code lines stay: {fitted}");
        assert!(!fitted.contains("def absolute"), "{fitted}");
        // Nothing but the end fits: its longest suffix within the budget.
        let tiny = fit_prompt(&prompt, 12, &bytes);
        assert!(prompt.ends_with(&tiny) && tiny.len() <= 12 && tiny.len() >= 11, "{tiny:?}");
    }

    #[test]
    fn model_output_is_normalized_to_one_frame() {
        let frame = "<|frame_sep|><|line_sep|><|arg_sep|>{}<|src_sep|>    x = 1";
        assert_eq!(frame_text(frame), frame);
        assert_eq!(frame_text(&frame["<|frame_sep|>".len()..]), frame);
        assert_eq!(frame_text(&format!("{frame}<|action_sep|><|step_into|><|frame_sep|>junk")), frame);
        assert_eq!(frame_text(&format!("{frame}<|frame_sep|>junk")), frame);
        assert_eq!(frame_text(""), "<|frame_sep|>");
    }

    #[test]
    fn examples_pair_each_prompt_with_the_next_frame() {
        let traj = step_into_trajectory(&nested_calls());
        let examples = next_state_examples(&traj.serialize()).expect("parses");
        assert_eq!(examples.len(), traj.actions.len());
        for (k, e) in examples.iter().enumerate() {
            assert_eq!(e.source, traj.prompt(k));
            assert_eq!(e.target, traj.frames[k + 1].serialize());
        }
    }

    #[test]
    fn trajectory_rows_give_one_next_state_example_per_step() {
        let text = concat!(
            "<|begin_of_text|><|trace_context_start|>def f(x):\n    return x\n",
            "<|frame_sep|><|call_sep|><|src_sep|>def f(x):<|arg_sep|>{\"x\": \"1\"}<|action_sep|><|step_into|>",
            "<|frame_sep|><|line_sep|><|arg_sep|>{\"..\": \"..\"}<|src_sep|>    return x<|action_sep|><|continue|>",
            "<|frame_sep|><|exit_normal|><|trace_end|><|end_of_text|>",
        );
        let line = serde_json::json!({"format_version": 1, "source": "r0", "text": text}).to_string();
        // `source` is the dataset's row id there, not an encoder input.
        let examples = crate::model::data::parse_rows(&line, Task::NextState, trajectory_examples).unwrap();
        assert_eq!(examples.len(), 2);
        assert!(examples[0].source.ends_with("{\"x\": \"1\"}<|action_sep|><|step_into|>"), "{}", examples[0].source);
        assert_eq!(examples[0].target, "<|frame_sep|><|line_sep|><|arg_sep|>{\"..\": \"..\"}<|src_sep|>    return x");
        assert_eq!(examples[1].target, "<|frame_sep|><|exit_normal|><|trace_end|><|end_of_text|>");
        assert!(text.starts_with(&examples[1].source));
        assert!(crate::model::data::parse_rows(
            r#"{"before": "x", "after": "y"}"#,
            Task::NextState,
            trajectory_examples
        )
        .is_err());
        assert!(crate::model::data::parse_rows(
            r#"{"text": "<|begin_of_text|>nonsense"}"#,
            Task::NextState,
            trajectory_examples
        )
        .is_err());
    }
}
