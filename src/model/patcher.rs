//! A patcher of either kind behind one interface: a T5 model directory or a LoRA adapter on SmolLM2.

use super::lora::{AdapterDir, LmPatcher};
use super::sample::SampleRun;
use super::{ModelDir, ModelError, SampleOptions, Sampler};
use std::path::Path;

/// A loaded patcher (`fix --model DIR`, `sample --model DIR`).
#[derive(Debug)]
pub enum Patcher {
    /// A seq2seq model trained from scratch (`config.json`, `tokenizer.json`, `model.safetensors`).
    T5(Box<Sampler>),
    /// A LoRA adapter on the installed SmolLM2 (`adapter_config.json`, `adapter_model.safetensors`).
    Lm(Box<LmPatcher>),
}

impl Patcher {
    /// Load `dir` as an adapter when it holds `adapter_config.json`, else as a T5 model, on the
    /// default device (CUDA when compiled in).
    ///
    /// # Errors
    /// When the directory is neither, or its files (or an adapter's base model) are unusable.
    pub fn load(dir: &Path) -> Result<Patcher, ModelError> {
        Patcher::load_on(dir, &super::t5::device(false)?)
    }

    /// [`Patcher::load`] on `device`.
    ///
    /// # Errors
    /// As [`Patcher::load`].
    pub fn load_on(dir: &Path, device: &candle_core::Device) -> Result<Patcher, ModelError> {
        if AdapterDir::is_adapter(dir) {
            return Ok(Patcher::Lm(Box::new(LmPatcher::load(&AdapterDir::new(dir), device)?)));
        }
        Ok(Patcher::T5(Box::new(Sampler::load(&ModelDir::new(dir), device)?)))
    }

    /// What it was trained to write: fixed (`patch`) or buggy (`bug-create`) functions.
    #[must_use]
    pub fn task(&self) -> super::Task {
        match self {
            Patcher::T5(s) => s.config().task,
            Patcher::Lm(p) => p.config().task(),
        }
    }

    /// Tokens of `text` for the skeleton's budget.
    #[must_use]
    pub fn count_tokens(&self, text: &str) -> usize {
        match self {
            Patcher::T5(s) => s.tokenizer().count(text),
            Patcher::Lm(p) => p.count_tokens(text),
        }
    }

    /// The longest output it was trained for, in tokens.
    #[must_use]
    pub fn max_target_len(&self) -> usize {
        match self {
            Patcher::T5(s) => s.config().max_target_len,
            Patcher::Lm(p) => p.config().max_completion_tokens,
        }
    }

    /// Draw `opts.n` rewrites of the skeleton's target function.
    ///
    /// # Errors
    /// On tensor or tokenizer errors.
    pub fn sample(&mut self, source: &str, opts: &SampleOptions) -> Result<SampleRun, ModelError> {
        self.sample_until(source, "", opts, &|| false)
    }

    /// [`Patcher::sample`]; a decoder's completions start with `lead` (the function's header:
    /// see [`LmPatcher::sample_until`]) and end early (with what they have) once `stop` says
    /// so. A T5 model writes whole functions and samples to the end.
    ///
    /// # Errors
    /// On tensor or tokenizer errors.
    pub fn sample_until(
        &mut self,
        source: &str,
        lead: &str,
        opts: &SampleOptions,
        stop: &dyn Fn() -> bool,
    ) -> Result<SampleRun, ModelError> {
        match self {
            Patcher::T5(s) => s.sample(source, opts),
            Patcher::Lm(p) => p.sample_until(source, lead, opts, stop),
        }
    }
}
