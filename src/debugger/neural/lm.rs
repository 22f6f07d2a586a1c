//! The token grammar as a pretrained LM reads it (short markers, one frame or action per line), whole trajectories as training segments, and `LmNextState`: a LoRA adapter on SmolLM2 predicting next states.

use super::{fit_prompt, frame_text, NeuralError};
use crate::debugger::grammar::{parse_trajectory, pieces, serialize_action, GrammarError, Piece};
use crate::debugger::predictor::{NextStatePredictor, PredictError, Prompt};
use crate::model::lora::{AdapterDir, LmPatcher, Segments};
use crate::model::{SampleOptions, Task};
use std::path::Path;

/// Grammar token names and their markers in the LM text (`<|NAME>`). Frame heads (events,
/// exits, the entry) and actions start a line, and the `frame_sep`/`action_sep` before them
/// is that line break; `frame`/`action` spell a separator that is followed by anything else.
const MARKERS: [(&str, &str); 29] = [
    ("begin_of_text", "bot"),
    ("trace_context_start", "code"),
    ("frame_sep", "frame"),
    ("action_sep", "action"),
    ("src_sep", "src"),
    ("arg_sep", "val"),
    ("trace_end", "end"),
    ("end_of_text", "eot"),
    ("inv_exit_entry", "entry"),
    ("call_sep", "call"),
    ("line_sep", "line"),
    ("return_sep", "return"),
    ("exception_sep", "exception"),
    ("inv_call_sep", "~call"),
    ("inv_line_sep", "~line"),
    ("inv_line_call_sep", "~line_call"),
    ("inv_return_sep", "~return"),
    ("inv_exception_sep", "~exception"),
    ("exit_normal", "exit"),
    ("exit_error", "error"),
    ("exit_never", "never"),
    ("step_into", "into"),
    ("step_over", "over"),
    ("step_return", "out"),
    ("breakpoint", "break"),
    ("continue", "continue"),
    ("inv_step_into", "~into"),
    ("inv_step_over", "~over"),
    ("inv_step_call", "~out"),
];

/// Token names that begin a frame (after `frame_sep`).
fn is_frame_head(name: &str) -> bool {
    name.ends_with("_sep") && !["frame_sep", "action_sep", "src_sep", "arg_sep"].contains(&name)
        || name.starts_with("exit_")
        || name == "inv_exit_entry"
}

/// Token names of actions (after `action_sep`).
fn is_action(name: &str) -> bool {
    name.starts_with("step_") || name.starts_with("inv_step_") || name == "breakpoint" || name == "continue"
}

fn marker(name: &str) -> Option<&'static str> {
    MARKERS.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
}

fn token_of(marker: &str) -> Option<&'static str> {
    MARKERS.iter().find(|(_, m)| *m == marker).map(|(n, _)| *n)
}

/// Grammar text as the LM reads it: each special token becomes its marker `<|NAME>`, and a
/// `frame_sep` or `action_sep` before a frame or an action becomes a line break, so every
/// frame and every action is one line. [`grammar_text`] inverts it (text between tokens is
/// escaped, so it holds no `<|`).
#[must_use]
pub fn lm_text(grammar: &str) -> String {
    let ps = pieces(grammar);
    let mut out = String::with_capacity(grammar.len());
    for (i, piece) in ps.iter().enumerate() {
        match *piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Token(name) => {
                let next = match ps.get(i + 1) {
                    Some(Piece::Token(n)) => *n,
                    _ => "",
                };
                let line_break =
                    (name == "frame_sep" && is_frame_head(next)) || (name == "action_sep" && is_action(next));
                match (line_break, marker(name)) {
                    (true, _) => out.push('\n'),
                    (false, Some(m)) => {
                        out.push_str("<|");
                        out.push_str(m);
                        out.push('>');
                    }
                    (false, None) => {
                        out.push_str("<|");
                        out.push_str(name);
                        out.push_str("|>");
                    }
                }
            }
        }
    }
    out
}

/// The grammar text of LM text ([`lm_text`]'s inverse): markers become tokens again, and the
/// line break before a frame head or an action becomes `frame_sep` or `action_sep`.
#[must_use]
pub fn grammar_text(lm: &str) -> String {
    let mut out = String::with_capacity(lm.len() + lm.len() / 2);
    let mut rest = lm;
    while let Some(pos) = rest.find("<|") {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 2..];
        let token = after.find('>').and_then(|end| token_of(&after[..end]).map(|t| (t, end)));
        let Some((name, end)) = token else {
            out.push_str("<|");
            rest = after;
            continue;
        };
        let sep = if is_frame_head(name) {
            "frame_sep"
        } else if is_action(name) {
            "action_sep"
        } else {
            ""
        };
        if !sep.is_empty() && out.ends_with('\n') {
            out.pop();
            out.push_str(&format!("<|{sep}|>"));
        }
        out.push_str(&format!("<|{name}|>"));
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// One line of LM text for a frame's or an action's grammar text (its separator dropped),
/// ending with the line break that starts the next one.
fn lm_line(grammar: &str) -> String {
    let text = lm_text(grammar);
    format!("{}\n", text.strip_prefix('\n').unwrap_or(&text))
}

/// A serialized trajectory (a `trace-dataset` row's `text`) as one training sequence for a
/// decoder-only model, as the paper trains: the code, the first frame and the first action
/// are the prompt, every later frame is trained on (each line with the line break that ends
/// it, where the model stops), the other actions are given.
///
/// # Errors
/// When the text is not a trajectory in the grammar.
pub fn trajectory_segments(text: &str) -> Result<Segments, GrammarError> {
    let t = parse_trajectory(text)?;
    let mut out = Vec::with_capacity(2 * t.frames.len());
    let first = t.actions.first().map(serialize_action).unwrap_or_default();
    out.push((format!("{}\n", lm_text(&format!("{}{}{first}", t.header(), t.frames[0].serialize()))), false));
    for (k, frame) in t.frames.iter().enumerate().skip(1) {
        out.push((lm_line(&frame.serialize()), true));
        if let Some(action) = t.actions.get(k) {
            out.push((lm_line(&serialize_action(action)), false));
        }
    }
    Ok(Segments(out))
}

/// Tokens a predicted frame may take at most (unless the adapter was trained on longer ones).
const MAX_FRAME_TOKENS: usize = 256;

/// A next-state LoRA adapter on SmolLM2 behind [`NextStatePredictor`]: the prompt is
/// fitted to the adapter's `max_prompt_tokens` ([`fit_prompt`], counted in LM text), written
/// as LM text with the line break that starts the next frame, and the model completes that
/// line (greedy unless [`LmNextState::with_sampling`]).
pub struct LmNextState {
    model: LmPatcher,
    options: SampleOptions,
}

impl std::fmt::Debug for LmNextState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LmNextState({:?})", self.model)
    }
}

impl LmNextState {
    /// Load the adapter in `dir` (over the installed SmolLM2), on the CPU.
    ///
    /// # Errors
    /// When the adapter or its base is missing, or the adapter was trained for another task.
    pub fn load(dir: &Path) -> Result<LmNextState, NeuralError> {
        let model = LmPatcher::load(&AdapterDir::new(dir), &candle_core::Device::Cpu)?;
        let task = model.config().task();
        if task != Task::NextState {
            return Err(NeuralError::WrongTask { path: dir.display().to_string(), task: task.name() });
        }
        // A frame is one line: the model stops at its end. Frames with whole locals (call
        // states, breakpoint targets) can be longer than the trained completion length.
        let max_len = model.config().max_completion_tokens.max(MAX_FRAME_TOKENS);
        Ok(LmNextState { model, options: SampleOptions { n: 1, temperature: 0.0, top_p: 1.0, max_len, seed: 0 } })
    }
}

impl super::NextStateModel for LmNextState {
    fn with_sampling(&mut self, temperature: f64, seed: u64) {
        (self.options.temperature, self.options.top_p, self.options.seed) = (temperature, 0.95, seed);
    }

    /// As LM text, fitted to the adapter's prompt length.
    fn model_input(&self, prompt: &Prompt<'_>) -> String {
        let count = |s: &str| self.model.count_tokens(&lm_text(s));
        // One token is left for the line break that starts the predicted frame.
        let budget = self.model.config().max_prompt_tokens.saturating_sub(1);
        format!("{}\n", lm_text(&fit_prompt(&prompt.text(), budget, &count)))
    }
}

impl NextStatePredictor for LmNextState {
    fn predict(&mut self, prompt: &Prompt<'_>) -> Result<String, PredictError> {
        let input = super::NextStateModel::model_input(self, prompt);
        let lines = self.model.complete_lines(&input, &self.options).map_err(|e| PredictError::Model(e.to_string()))?;
        if self.options.temperature > 0.0 {
            self.options.seed = self.options.seed.wrapping_add(1);
        }
        let line = lines.first().map_or("", |l| l.text.as_str());
        Ok(frame_text(&grammar_text(&format!("\n{line}"))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debugger::fixtures::nested_calls;
    use crate::debugger::grammar::special_tokens;
    use crate::debugger::sampler::step_into_trajectory;

    #[test]
    fn every_grammar_token_has_a_distinct_marker() {
        let mut names: Vec<String> =
            special_tokens().iter().map(|t| t.trim_start_matches("<|").trim_end_matches("|>").to_string()).collect();
        let mut ours: Vec<String> = MARKERS.iter().map(|(n, _)| (*n).to_string()).collect();
        names.sort();
        ours.sort();
        assert_eq!(names, ours);
        let mut markers: Vec<&str> = MARKERS.iter().map(|(_, m)| *m).collect();
        markers.sort_unstable();
        markers.dedup();
        assert_eq!(markers.len(), MARKERS.len());
        assert!(markers.iter().all(|m| !m.contains('>') && !m.contains('|')));
    }

    #[test]
    fn trajectories_round_trip_with_one_frame_or_action_per_line() {
        let traj = step_into_trajectory(&nested_calls());
        let grammar = traj.serialize();
        let lm = lm_text(&grammar);
        assert_eq!(grammar_text(&lm), grammar);
        assert!(!lm.contains("<|frame>") && !lm.contains("<|action>"), "{lm}");
        let after_code = &lm[lm.find("\n<|call>").expect("the first frame starts a line")..];
        for line in after_code.lines().skip(1) {
            assert!(line.starts_with("<|"), "{line:?}");
        }
        assert!(lm.contains("\n<|into>\n<|line><|val>"), "{lm}");
    }

    #[test]
    fn text_that_looks_like_markers_survives() {
        let tricky = "<|begin_of_text|><|trace_context_start|>s = '<|call> <| x>'\nif a >b: pass\n\n\
                      <|frame_sep|><|call_sep|><|src_sep|>def f(s):<|arg_sep|>{\"s\": \"'<|line>'\"}\
                      <|action_sep|><|breakpoint|>    return '<|'";
        let escaped = crate::debugger::grammar::escape("<|x");
        let grammar = tricky.replace("'<|call> <| x>'", &format!("'{escaped}'"));
        let grammar = grammar.replace("\"'<|line>'\"", &format!("\"'{escaped}'\""));
        let grammar = grammar.replace("    return '<|'", &format!("    return '{escaped}'"));
        assert_eq!(grammar_text(&lm_text(&grammar)), grammar);
        // A separator followed by something other than a frame head keeps an explicit marker.
        let odd = "<|frame_sep|>text<|action_sep|><|src_sep|>";
        assert_eq!(lm_text(odd), "<|frame>text<|action><|src>");
        assert_eq!(grammar_text(&lm_text(odd)), odd);
    }

    #[test]
    fn segments_train_on_later_frames_only_and_join_to_the_lm_text() {
        let traj = step_into_trajectory(&nested_calls());
        let Segments(segs) = trajectory_segments(&traj.serialize()).expect("parses");
        assert_eq!(segs.iter().filter(|(_, trained)| *trained).count(), traj.frames.len() - 1);
        assert!(!segs[0].1 && segs[1].1);
        assert!(segs.iter().all(|(text, _)| text.ends_with('\n')));
        let joined: String = segs.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(joined, format!("{}\n", lm_text(&traj.serialize())));
        // The prompt for frame k + 1 is exactly the text before its segment.
        let k = 2;
        let before: String = segs[..=2 * k].iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(before, format!("{}\n", lm_text(&traj.prompt(k))));
        let frame = format!("\n{}", segs[2 * k + 1].0.trim_end_matches('\n'));
        assert_eq!(grammar_text(&frame), traj.frames[k + 1].serialize());
    }
}
