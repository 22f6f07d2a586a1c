//! Seeded sampling from a trained model with candle-transformers' T5 (KV-cached decoder):
//! one encoder pass per input, `n` samples decoded as one batch, temperature and nucleus
//! (top-p) sampling, duplicates merged.

use super::t5::device as pick_device;
use super::tokenizer::{EOS_ID, PAD_ID};
use super::train::source_ids;
use super::{CodeTokenizer, ModelConfig, ModelDir, ModelError};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::t5::T5ForConditionalGeneration;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::time::Instant;

/// How to sample.
#[derive(Debug, Clone)]
pub struct SampleOptions {
    /// Samples drawn (before deduplication).
    pub n: usize,
    /// 0 = greedy.
    pub temperature: f64,
    /// Nucleus mass in (0, 1]; 1 = plain sampling.
    pub top_p: f64,
    /// Longest output in tokens (capped by the model's `max_target_len`).
    pub max_len: usize,
    pub seed: u64,
}

impl Default for SampleOptions {
    fn default() -> Self {
        SampleOptions { n: 8, temperature: 0.8, top_p: 0.95, max_len: 512, seed: 0 }
    }
}

/// A distinct output.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub text: String,
    /// How many of the `n` draws produced it.
    pub count: usize,
    /// Log-likelihood (nats, untempered) of its first draw.
    pub log_prob: f64,
    /// False when it hit `max_len` before `</s>`.
    pub finished: bool,
}

/// Distinct samples (most frequent first, then most likely) and throughput.
#[derive(Debug, Clone)]
pub struct SampleRun {
    pub samples: Vec<Sample>,
    /// Decoder tokens generated across the batch.
    pub tokens: usize,
    pub seconds: f64,
}

impl SampleRun {
    #[must_use]
    pub fn tokens_per_second(&self) -> f64 {
        self.tokens as f64 / self.seconds.max(1e-9)
    }
}

/// A loaded model ready to sample.
pub struct Sampler {
    model: T5ForConditionalGeneration,
    tokenizer: CodeTokenizer,
    config: ModelConfig,
    device: Device,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sampler({:?}, d_model={})", self.config.task, self.config.d_model)
    }
}

impl Sampler {
    /// Load a model directory on `device`.
    ///
    /// # Errors
    /// When a file is missing or malformed.
    pub fn load(dir: &ModelDir, device: &Device) -> Result<Sampler, ModelError> {
        if !dir.is_complete() {
            return Err(ModelError::NotAModel(dir.path.display().to_string()));
        }
        let config = dir.config()?;
        let tokenizer = dir.tokenizer()?;
        let bytes = std::fs::read(dir.weights_path())
            .map_err(|e| ModelError::Io(dir.weights_path().display().to_string(), e))?;
        let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, device)?;
        let model = T5ForConditionalGeneration::load(vb, &config.t5()?)?;
        Ok(Sampler { model, tokenizer, config, device: device.clone() })
    }

    /// Load on the default device (CUDA if compiled in, else CPU).
    ///
    /// # Errors
    /// As [`Sampler::load`].
    pub fn load_default(dir: &ModelDir) -> Result<Sampler, ModelError> {
        Self::load(dir, &pick_device(false)?)
    }

    #[must_use]
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    #[must_use]
    pub fn tokenizer(&self) -> &CodeTokenizer {
        &self.tokenizer
    }

    /// Draw `opts.n` outputs for `source`.
    ///
    /// # Errors
    /// On tensor or tokenizer errors.
    pub fn sample(&mut self, source: &str, opts: &SampleOptions) -> Result<SampleRun, ModelError> {
        let started = Instant::now();
        let n = opts.n.max(1);
        let max_len = opts.max_len.min(self.config.max_target_len).max(1);
        let vocab = self.tokenizer.vocab_size().min(self.config.vocab_size);
        let src = source_ids(&self.tokenizer, source, self.config.max_source_len)?;
        let src = Tensor::new(src.as_slice(), &self.device)?.unsqueeze(0)?;
        self.model.clear_kv_cache();
        let enc = self.model.encode(&src)?;
        let enc = enc.repeat((n, 1, 1))?;
        let mut rng = StdRng::seed_from_u64(opts.seed);
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut done = vec![false; n];
        let mut log_prob = vec![0.0f64; n];
        let mut last = vec![self.config.decoder_start_token_id as u32; n];
        let mut tokens = 0usize;
        for _ in 0..max_len {
            let input = Tensor::from_vec(last.clone(), (n, 1), &self.device)?;
            let logits = self.model.decode(&input, &enc)?.to_dtype(DType::F32)?.to_vec2::<f32>()?;
            for i in 0..n {
                if done[i] {
                    last[i] = PAD_ID;
                    continue;
                }
                let row = &logits[i][..vocab];
                let (tok, lp) = choose(row, opts.temperature, opts.top_p, &mut rng);
                log_prob[i] += lp;
                tokens += 1;
                last[i] = tok;
                if tok == EOS_ID {
                    done[i] = true;
                } else {
                    rows[i].push(tok);
                }
            }
            if done.iter().all(|d| *d) {
                break;
            }
        }
        self.model.clear_kv_cache();
        let mut samples: Vec<Sample> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        for i in 0..n {
            let text = self.tokenizer.decode(&rows[i])?;
            if let Some(&k) = index.get(&text) {
                samples[k].count += 1;
            } else {
                index.insert(text.clone(), samples.len());
                samples.push(Sample { text, count: 1, log_prob: log_prob[i], finished: done[i] });
            }
        }
        samples.sort_by(|a, b| b.count.cmp(&a.count).then(b.log_prob.total_cmp(&a.log_prob)));
        Ok(SampleRun { samples, tokens, seconds: started.elapsed().as_secs_f64() })
    }
}

/// Pick a token from `logits`; returns it with its untempered log-probability.
fn choose(logits: &[f32], temperature: f64, top_p: f64, rng: &mut StdRng) -> (u32, f64) {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let log_z = f64::from(max) + logits.iter().map(|&l| f64::from(l - max).exp()).sum::<f64>().ln();
    let log_p = |i: usize| f64::from(logits[i]) - log_z;
    let argmax = logits.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map_or(0, |(i, _)| i);
    if temperature <= 0.0 {
        return (argmax as u32, log_p(argmax));
    }
    let mut probs: Vec<(usize, f64)> =
        logits.iter().enumerate().map(|(i, &l)| (i, (f64::from(l - max) / temperature).exp())).collect();
    let z: f64 = probs.iter().map(|p| p.1).sum();
    probs.iter_mut().for_each(|p| p.1 /= z);
    probs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut kept = 0usize;
    let mut mass = 0.0;
    for p in &probs {
        kept += 1;
        mass += p.1;
        if mass >= top_p.clamp(1e-6, 1.0) {
            break;
        }
    }
    let r = rng.random::<f64>() * mass;
    let mut acc = 0.0;
    for p in &probs[..kept] {
        acc += p.1;
        if r < acc {
            return (p.0 as u32, log_p(p.0));
        }
    }
    let i = probs[kept - 1].0;
    (i as u32, log_p(i))
}
