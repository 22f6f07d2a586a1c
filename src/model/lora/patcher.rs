//! A trained LoRA adapter as a patcher: the base GGUF's quantized weights with the adapter's low-rank updates beside them, whole functions sampled as a batch on one shared prompt cache.

use super::train::prompt_text;
use super::{block_count, AdapterDir, LoraConfig};
use crate::model::sample::SampleRun;
use crate::model::smollm::{LineSampling, SampledLine, SmolLm, Until};
use crate::model::{ModelError, Sample, SampleOptions};
use candle_core::quantized::gguf_file;
use candle_core::Device;
use std::time::Instant;

/// A loaded adapter and its base model.
pub struct LmPatcher {
    lm: SmolLm,
    config: LoraConfig,
}

impl std::fmt::Debug for LmPatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LmPatcher(r={}, {:?})", self.config.r, self.config.target_modules)
    }
}

impl LmPatcher {
    /// Load the adapter in `dir` over its base GGUF (found like SmolLM2's).
    ///
    /// # Errors
    /// When the adapter or its base model is missing or malformed.
    pub fn load(dir: &AdapterDir, device: &Device) -> Result<LmPatcher, ModelError> {
        let config = dir.config()?;
        let base = dir.base(&config)?;
        let mut file = std::fs::File::open(&base).map_err(|e| ModelError::Io(base.display().to_string(), e))?;
        let ct = gguf_file::Content::read(&mut file)?;
        let adapter = dir.low_ranks(&config, block_count(&ct)?, device)?;
        let lm = SmolLm::load_adapted(&base, &adapter, device)?;
        Ok(LmPatcher { lm, config })
    }

    #[must_use]
    pub fn config(&self) -> &LoraConfig {
        &self.config
    }

    /// Tokens of `text` under the base model's tokenizer (0 on a tokenizer error).
    #[must_use]
    pub fn count_tokens(&self, text: &str) -> usize {
        self.lm.encode(text).map_or(0, |ids| ids.len())
    }

    /// `opts.n` continuations of `prompt` as it is (no skeleton framing: a next-state
    /// adapter's prompt is built by the debugger), each up to its first newline or
    /// `opts.max_len` tokens, drawn as one batch on the prompt's cache; at `opts.temperature`
    /// 0 the most likely token each step.
    ///
    /// # Errors
    /// On tensor or tokenizer errors, or an empty prompt.
    pub fn complete_lines(&self, prompt: &str, opts: &SampleOptions) -> Result<Vec<SampledLine>, ModelError> {
        let prefix = self.lm.prefix(prompt)?;
        let options = LineSampling {
            n: opts.n.max(1),
            max_tokens: opts.max_len.max(1),
            temperature: if opts.temperature <= 0.0 { 1e-6 } else { opts.temperature },
            top_p: opts.top_p,
            seed: opts.seed,
            until: Until::Newline,
        };
        self.lm.sample_lines(&prefix, &options, &|| false)
    }

    /// The prompt for `source`, its start cut so at most `max_prompt_tokens` remain.
    fn prompt(&self, source: &str) -> Result<String, ModelError> {
        let text = prompt_text(source, self.config.task());
        let ids = self.lm.encode(&text)?;
        if ids.len() <= self.config.max_prompt_tokens {
            return Ok(text);
        }
        self.lm.decode(&ids[ids.len() - self.config.max_prompt_tokens..])
    }

    /// Draw `opts.n` versions of the skeleton's target function, as one batch on the prompt's
    /// cache; identical outputs are merged (most frequent first, then most likely).
    ///
    /// # Errors
    /// On tensor or tokenizer errors.
    pub fn sample(&self, source: &str, opts: &SampleOptions) -> Result<SampleRun, ModelError> {
        self.sample_until(source, "", opts, &|| false)
    }

    /// [`LmPatcher::sample`] with each completion starting with `lead` (the function's
    /// unchanged header, so the model writes the target rather than a neighbour shown in the
    /// skeleton; the samples include it), ending early once `stop` says so.
    ///
    /// # Errors
    /// On tensor or tokenizer errors.
    pub fn sample_until(
        &self,
        source: &str,
        lead: &str,
        opts: &SampleOptions,
        stop: &dyn Fn() -> bool,
    ) -> Result<SampleRun, ModelError> {
        let started = Instant::now();
        let prefix = self.lm.prefix(&format!("{}{lead}", self.prompt(source)?))?;
        let options = LineSampling {
            n: opts.n.max(1),
            max_tokens: opts.max_len.min(self.config.max_completion_tokens).max(1),
            temperature: if opts.temperature <= 0.0 { 1e-6 } else { opts.temperature },
            top_p: opts.top_p,
            seed: opts.seed,
            until: Until::EndOfText,
        };
        let drawn = self.lm.sample_lines(&prefix, &options, stop)?;
        let tokens = drawn.iter().map(|d| d.tokens).sum();
        let mut samples: Vec<Sample> = Vec::new();
        for d in drawn {
            let text = format!("{lead}{}", d.text).trim_end().to_string();
            match samples.iter_mut().find(|s| s.text == text) {
                Some(s) => s.count += 1,
                None => samples.push(Sample { text, count: 1, log_prob: d.nats, finished: d.complete }),
            }
        }
        samples.sort_by(|a, b| b.count.cmp(&a.count).then(b.log_prob.total_cmp(&a.log_prob)));
        Ok(SampleRun { samples, tokens, seconds: started.elapsed().as_secs_f64() })
    }
}
