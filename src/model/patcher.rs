//! Trained text-to-text models behind one trait (`TextModel`: a T5 model directory or a LoRA adapter on SmolLM2), and `Patcher`, the one that loads either.

use super::lora::{AdapterDir, LmPatcher};
use super::sample::SampleRun;
use super::{ModelDir, ModelError, SampleOptions, Sampler, Task};
use std::path::Path;

/// What the repair loop, the pipeline's evaluation and `sample` need of a trained model,
/// whatever its architecture.
pub trait TextModel: Send + std::fmt::Debug {
    /// What it was trained to write: fixed (`patch`) or buggy (`bug-create`) functions.
    fn task(&self) -> Task;

    /// Tokens of `text` for the skeleton's budget.
    fn count_tokens(&self, text: &str) -> usize;

    /// The longest output it was trained for, in tokens.
    fn max_target_len(&self) -> usize;

    /// Draw `opts.n` outputs for `source`; a decoder's completions start with `lead` (the
    /// function's header) and end early (with what they have) once `stop` says so. A T5 model
    /// writes whole functions and samples to the end.
    ///
    /// # Errors
    /// On tensor or tokenizer errors.
    fn sample_until(
        &mut self,
        source: &str,
        lead: &str,
        opts: &SampleOptions,
        stop: &dyn Fn() -> bool,
    ) -> Result<SampleRun, ModelError>;
}

impl TextModel for Sampler {
    fn task(&self) -> Task {
        self.config().task
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.tokenizer().count(text)
    }

    fn max_target_len(&self) -> usize {
        self.config().max_target_len
    }

    fn sample_until(
        &mut self,
        source: &str,
        _: &str,
        opts: &SampleOptions,
        _: &dyn Fn() -> bool,
    ) -> Result<SampleRun, ModelError> {
        self.sample(source, opts)
    }
}

impl TextModel for LmPatcher {
    fn task(&self) -> Task {
        self.config().task()
    }

    fn count_tokens(&self, text: &str) -> usize {
        LmPatcher::count_tokens(self, text)
    }

    fn max_target_len(&self) -> usize {
        self.config().max_completion_tokens
    }

    fn sample_until(
        &mut self,
        source: &str,
        lead: &str,
        opts: &SampleOptions,
        stop: &dyn Fn() -> bool,
    ) -> Result<SampleRun, ModelError> {
        LmPatcher::sample_until(self, source, lead, opts, stop)
    }
}

/// A loaded patcher (`fix --model DIR`, `sample --model DIR`): whichever [`TextModel`] the
/// directory holds.
#[derive(Debug)]
pub struct Patcher(Box<dyn TextModel>);

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
            return Ok(Patcher(Box::new(LmPatcher::load(&AdapterDir::new(dir), device)?)));
        }
        Ok(Patcher(Box::new(Sampler::load(&ModelDir::new(dir), device)?)))
    }

    /// What it was trained to write ([`TextModel::task`]).
    #[must_use]
    pub fn task(&self) -> Task {
        self.0.task()
    }

    /// [`TextModel::count_tokens`].
    #[must_use]
    pub fn count_tokens(&self, text: &str) -> usize {
        self.0.count_tokens(text)
    }

    /// [`TextModel::max_target_len`].
    #[must_use]
    pub fn max_target_len(&self) -> usize {
        self.0.max_target_len()
    }

    /// Draw `opts.n` rewrites of the skeleton's target function.
    ///
    /// # Errors
    /// On tensor or tokenizer errors.
    pub fn sample(&mut self, source: &str, opts: &SampleOptions) -> Result<SampleRun, ModelError> {
        self.0.sample_until(source, "", opts, &|| false)
    }

    /// [`TextModel::sample_until`].
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
        self.0.sample_until(source, lead, opts, stop)
    }
}
