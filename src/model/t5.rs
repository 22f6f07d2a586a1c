//! Trainable T5 encoder-decoder ("Exploring the Limits of Transfer Learning with a Unified
//! Text-to-Text Transformer", Raffel et al. 2020) whose parameters are named exactly as in
//! Hugging Face checkpoints, so `candle_transformers::models::t5` loads what we train.
//!
//! The forward pass mirrors candle-transformers' T5 numerically (same relative-position
//! buckets, pre-norm RMS layer norms, unscaled attention) but returns logits for every
//! target position and masks encoder padding, which training needs.

use super::config::ModelConfig;
use candle_core::{DType, Device, Module, Result, Shape, Tensor, Var, D};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::{init::Init, Activation, VarBuilder, VarMap};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Additive attention mask value (finite, so fully masked rows stay finite).
const NEG: f64 = -1e9;

fn linear(vb: &VarBuilder, d_in: usize, d_out: usize, name: &str, std: f64) -> Result<Tensor> {
    vb.pp(name).get_with_hints((d_out, d_in), "weight", Init::Randn { mean: 0.0, stdev: std })
}

fn apply(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    x.broadcast_matmul(&w.t()?)
}

#[derive(Debug, Clone)]
struct RmsNorm {
    weight: Tensor,
    eps: f64,
}

impl RmsNorm {
    fn new(vb: &VarBuilder, d: usize, eps: f64) -> Result<Self> {
        Ok(RmsNorm { weight: vb.pp("layer_norm").get_with_hints(d, "weight", Init::Const(1.0))?, eps })
    }

    fn named(vb: &VarBuilder, d: usize, eps: f64) -> Result<Self> {
        Ok(RmsNorm { weight: vb.get_with_hints(d, "weight", Init::Const(1.0))?, eps })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let var = x.sqr()?.mean_keepdim(D::Minus1)?;
        x.broadcast_div(&(var + self.eps)?.sqrt()?)?.broadcast_mul(&self.weight)
    }
}

#[derive(Debug, Clone)]
struct Attention {
    q: Tensor,
    k: Tensor,
    v: Tensor,
    o: Tensor,
    relative_bias: Option<Tensor>,
    heads: usize,
    d_kv: usize,
}

impl Attention {
    fn new(vb: &VarBuilder, cfg: &ModelConfig, relative_bias: bool) -> Result<Self> {
        let inner = cfg.num_heads * cfg.d_kv;
        let f = cfg.initializer_factor;
        let d = cfg.d_model as f64;
        Ok(Attention {
            q: linear(vb, cfg.d_model, inner, "q", f * (d * cfg.d_kv as f64).powf(-0.5))?,
            k: linear(vb, cfg.d_model, inner, "k", f * d.powf(-0.5))?,
            v: linear(vb, cfg.d_model, inner, "v", f * d.powf(-0.5))?,
            o: linear(vb, inner, cfg.d_model, "o", f * (inner as f64).powf(-0.5))?,
            relative_bias: if relative_bias {
                Some(vb.pp("relative_attention_bias").get_with_hints(
                    (cfg.relative_attention_num_buckets, cfg.num_heads),
                    "weight",
                    Init::Randn { mean: 0.0, stdev: f * d.powf(-0.5) },
                )?)
            } else {
                None
            },
            heads: cfg.num_heads,
            d_kv: cfg.d_kv,
        })
    }

    fn split(&self, x: &Tensor) -> Result<Tensor> {
        let (b, t, _) = x.dims3()?;
        x.reshape((b, t, self.heads, self.d_kv))?.transpose(1, 2)?.contiguous()
    }

    /// `mask` and `bias` are additive and broadcast to (b, heads, q, kv).
    fn forward(&self, x: &Tensor, kv: &Tensor, mask: Option<&Tensor>, bias: Option<&Tensor>) -> Result<Tensor> {
        let (b, t, _) = x.dims3()?;
        let q = self.split(&apply(x, &self.q)?)?;
        let k = self.split(&apply(kv, &self.k)?)?;
        let v = self.split(&apply(kv, &self.v)?)?;
        let mut scores = q.matmul(&k.t()?)?;
        if let Some(mask) = mask {
            scores = scores.broadcast_add(mask)?;
        }
        if let Some(bias) = bias {
            scores = scores.broadcast_add(bias)?;
        }
        let weights = candle_nn::ops::softmax(&scores, D::Minus1)?;
        let out = weights.matmul(&v)?.transpose(1, 2)?.reshape((b, t, self.heads * self.d_kv))?;
        apply(&out, &self.o)
    }
}

/// Relative position buckets exactly as candle-transformers computes them (bidirectional
/// buckets in both stacks), for query positions `q_start..q_start+q_len` and `kv_len` keys.
pub(crate) fn relative_buckets(
    q_start: usize,
    q_len: usize,
    kv_len: usize,
    num_buckets: usize,
    max_distance: usize,
) -> Vec<u32> {
    let half = num_buckets as u32 / 2;
    let max_exact = half / 2;
    let mut out = Vec::with_capacity(q_len * kv_len);
    for i in q_start as u32..(q_start + q_len) as u32 {
        for j in 0..kv_len as u32 {
            let bucket = if i < j {
                if j - i < max_exact {
                    j - i + half
                } else {
                    let b = f32::log((j - i) as f32 / max_exact as f32, max_distance as f32 / max_exact as f32)
                        * (half - max_exact) as f32;
                    u32::min(max_exact + half + b as u32, num_buckets as u32 - 1)
                }
            } else if i - j < max_exact {
                i - j
            } else {
                let b = f32::log((i - j) as f32 / max_exact as f32, max_distance as f32 / max_exact as f32)
                    * (half - max_exact) as f32;
                u32::min(max_exact + b as u32, half - 1)
            };
            out.push(bucket);
        }
    }
    out
}

#[derive(Debug, Clone)]
enum FeedForward {
    Plain { wi: Tensor, wo: Tensor, act: Activation },
    Gated { wi_0: Tensor, wi_1: Tensor, wo: Tensor, act: Activation },
}

impl FeedForward {
    fn new(vb: &VarBuilder, cfg: &ModelConfig) -> Result<Self> {
        let t5 = cfg.t5().map_err(|e| candle_core::Error::Msg(e.to_string()))?;
        let vb = vb.pp("DenseReluDense");
        let f = cfg.initializer_factor;
        let s_in = f * (cfg.d_model as f64).powf(-0.5);
        let s_out = f * (cfg.d_ff as f64).powf(-0.5);
        let act = t5.feed_forward_proj.activation;
        Ok(if t5.feed_forward_proj.gated {
            FeedForward::Gated {
                wi_0: linear(&vb, cfg.d_model, cfg.d_ff, "wi_0", s_in)?,
                wi_1: linear(&vb, cfg.d_model, cfg.d_ff, "wi_1", s_in)?,
                wo: linear(&vb, cfg.d_ff, cfg.d_model, "wo", s_out)?,
                act,
            }
        } else {
            FeedForward::Plain {
                wi: linear(&vb, cfg.d_model, cfg.d_ff, "wi", s_in)?,
                wo: linear(&vb, cfg.d_ff, cfg.d_model, "wo", s_out)?,
                act,
            }
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            FeedForward::Plain { wi, wo, act } => apply(&act.forward(&apply(x, wi)?)?, wo),
            FeedForward::Gated { wi_0, wi_1, wo, act } => {
                let h = act.forward(&apply(x, wi_0)?)?.mul(&apply(x, wi_1)?)?;
                apply(&h, wo)
            }
        }
    }
}

#[derive(Debug, Clone)]
struct Block {
    self_attn: Attention,
    self_norm: RmsNorm,
    cross: Option<(Attention, RmsNorm)>,
    ff: FeedForward,
    ff_norm: RmsNorm,
}

impl Block {
    fn new(vb: &VarBuilder, cfg: &ModelConfig, first: bool, decoder: bool) -> Result<Self> {
        let vb = vb.pp("layer");
        let eps = cfg.layer_norm_epsilon;
        let l0 = vb.pp("0");
        let self_attn = Attention::new(&l0.pp("SelfAttention"), cfg, first)?;
        let self_norm = RmsNorm::new(&l0, cfg.d_model, eps)?;
        let cross = if decoder {
            let l1 = vb.pp("1");
            Some((Attention::new(&l1.pp("EncDecAttention"), cfg, false)?, RmsNorm::new(&l1, cfg.d_model, eps)?))
        } else {
            None
        };
        let lf = vb.pp(if decoder { "2" } else { "1" });
        Ok(Block {
            self_attn,
            self_norm,
            cross,
            ff: FeedForward::new(&lf, cfg)?,
            ff_norm: RmsNorm::new(&lf, cfg.d_model, eps)?,
        })
    }
}

#[derive(Debug, Clone)]
struct Stack {
    blocks: Vec<Block>,
    final_norm: RmsNorm,
    decoder: bool,
    num_buckets: usize,
    max_distance: usize,
}

impl Stack {
    fn new(vb: &VarBuilder, cfg: &ModelConfig, decoder: bool) -> Result<Self> {
        let layers = if decoder { cfg.num_decoder_layers } else { cfg.num_layers };
        let blocks = (0..layers)
            .map(|i| Block::new(&vb.pp(format!("block.{i}")), cfg, i == 0, decoder))
            .collect::<Result<Vec<_>>>()?;
        Ok(Stack {
            blocks,
            final_norm: RmsNorm::named(&vb.pp("final_layer_norm"), cfg.d_model, cfg.layer_norm_epsilon)?,
            decoder,
            num_buckets: cfg.relative_attention_num_buckets,
            max_distance: cfg.relative_attention_max_distance,
        })
    }

    fn forward(
        &self,
        x: &Tensor,
        self_mask: Option<&Tensor>,
        enc: Option<(&Tensor, Option<&Tensor>)>,
    ) -> Result<Tensor> {
        let t = x.dim(1)?;
        let buckets = relative_buckets(0, t, t, self.num_buckets, self.max_distance);
        let buckets = Tensor::from_vec(buckets, (t, t), x.device())?;
        let table = self.blocks[0].self_attn.relative_bias.as_ref().expect("block 0 has the relative bias");
        let bias = table.embedding(&buckets.flatten_all()?)?.reshape((t, t, ()))?.permute((2, 0, 1))?.unsqueeze(0)?;
        let mut h = x.clone();
        for block in &self.blocks {
            let n = block.self_norm.forward(&h)?;
            h = (&h + block.self_attn.forward(&n, &n, self_mask, Some(&bias))?)?;
            if let (Some((attn, norm)), Some((enc_out, enc_mask))) = (&block.cross, enc) {
                let n = norm.forward(&h)?;
                h = (&h + attn.forward(&n, enc_out, enc_mask, None)?)?;
            }
            let n = block.ff_norm.forward(&h)?;
            h = (&h + block.ff.forward(&n)?)?;
        }
        debug_assert_eq!(self.decoder, enc.is_some());
        self.final_norm.forward(&h)
    }
}

/// The trainable network. Build it from a `VarMap`-backed `VarBuilder` to train.
#[derive(Debug, Clone)]
pub struct Seq2Seq {
    shared: Tensor,
    encoder: Stack,
    decoder: Stack,
    lm_head: Tensor,
    pad_id: u32,
}

impl Seq2Seq {
    /// Create (or load) every parameter through `vb`.
    ///
    /// # Errors
    /// On shape mismatches with the variables already in `vb`.
    pub fn new(cfg: &ModelConfig, vb: VarBuilder) -> Result<Self> {
        let f = cfg.initializer_factor;
        Ok(Seq2Seq {
            shared: vb.pp("shared").get_with_hints(
                (cfg.vocab_size, cfg.d_model),
                "weight",
                Init::Randn { mean: 0.0, stdev: f },
            )?,
            encoder: Stack::new(&vb.pp("encoder"), cfg, false)?,
            decoder: Stack::new(&vb.pp("decoder"), cfg, true)?,
            lm_head: linear(&vb, cfg.d_model, cfg.vocab_size, "lm_head", f * (cfg.d_model as f64).powf(-0.5))?,
            pad_id: cfg.pad_token_id as u32,
        })
    }

    /// Load the weights of a model directory (for evaluation and reference decoding).
    ///
    /// # Errors
    /// When files are missing or shapes disagree with `config.json`.
    pub fn load(
        dir: &super::ModelDir,
        device: &Device,
    ) -> std::result::Result<(Seq2Seq, ModelConfig), super::ModelError> {
        let cfg = dir.config()?;
        let bytes = std::fs::read(dir.weights_path())
            .map_err(|e| super::ModelError::Io(dir.weights_path().display().to_string(), e))?;
        let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, device)?;
        Ok((Seq2Seq::new(&cfg, vb)?, cfg))
    }

    /// Greedy decoding without a KV cache (the whole prefix is re-run each step): a slow
    /// reference for the cached sampler. Returns the ids before `</s>`.
    ///
    /// # Errors
    /// On tensor errors.
    pub fn greedy(&self, src: &[u32], start_id: u32, eos_id: u32, max_len: usize) -> Result<Vec<u32>> {
        let device = self.shared.device().clone();
        let src = Tensor::new(src, &device)?.unsqueeze(0)?;
        let (enc, mask) = self.encode(&src)?;
        let mut ids = vec![start_id];
        for _ in 0..max_len {
            let dec = Tensor::new(ids.as_slice(), &device)?.unsqueeze(0)?;
            let logits = self.decode(&dec, &enc, &mask)?;
            let last = logits.get(0)?.get(ids.len() - 1)?;
            let next = last.argmax(D::Minus1)?.to_scalar::<u32>()?;
            if next == eos_id {
                break;
            }
            ids.push(next);
        }
        ids.remove(0);
        Ok(ids)
    }

    fn padding_mask(&self, ids: &Tensor) -> Result<Tensor> {
        // (b, 1, 1, t): 0 for tokens, NEG for padding.
        let (b, t) = ids.dims2()?;
        let is_pad = ids.eq(self.pad_id)?.to_dtype(DType::F32)?;
        (is_pad * NEG)?.reshape((b, 1, 1, t))
    }

    /// Encoder states for `src` (b, s) (right-padded with the pad id) and the padding mask.
    ///
    /// # Errors
    /// On tensor errors.
    pub fn encode(&self, src: &Tensor) -> Result<(Tensor, Tensor)> {
        let mask = self.padding_mask(src)?;
        let x = self.shared.embedding(&src.flatten_all()?)?.reshape((src.dim(0)?, src.dim(1)?, ()))?;
        Ok((self.encoder.forward(&x, Some(&mask), None)?, mask))
    }

    /// Logits (b, t, vocab) for every decoder position.
    ///
    /// # Errors
    /// On tensor errors.
    pub fn decode(&self, dec_in: &Tensor, enc: &Tensor, enc_mask: &Tensor) -> Result<Tensor> {
        let (b, t) = dec_in.dims2()?;
        let causal: Vec<f32> = (0..t).flat_map(|i| (0..t).map(move |j| if j > i { NEG as f32 } else { 0.0 })).collect();
        let causal = Tensor::from_vec(causal, (1, 1, t, t), dec_in.device())?;
        let x = self.shared.embedding(&dec_in.flatten_all()?)?.reshape((b, t, ()))?;
        let h = self.decoder.forward(&x, Some(&causal), Some((enc, Some(enc_mask))))?;
        apply(&h, &self.lm_head)
    }

    /// Mean cross-entropy (nats per target token) of `labels` given `src`; the decoder input
    /// is `labels` shifted right behind the start token. Pad labels are ignored.
    ///
    /// # Errors
    /// On tensor errors.
    pub fn loss(&self, src: &Tensor, dec_in: &Tensor, labels: &Tensor) -> Result<Tensor> {
        let (enc, mask) = self.encode(src)?;
        let logits = self.decode(dec_in, &enc, &mask)?;
        masked_cross_entropy(&logits, labels, self.pad_id)
    }
}

/// Cross-entropy over non-pad labels: logits (b, t, v), labels (b, t) u32.
///
/// # Errors
/// On tensor errors.
pub fn masked_cross_entropy(logits: &Tensor, labels: &Tensor, pad_id: u32) -> Result<Tensor> {
    let logp = candle_nn::ops::log_softmax(logits, D::Minus1)?;
    let picked = logp.gather(&labels.unsqueeze(2)?, 2)?.squeeze(2)?;
    let keep = labels.ne(pad_id)?.to_dtype(DType::F32)?;
    let total = keep.sum_all()?;
    (picked.mul(&keep)?.sum_all()?.neg()? / total.to_scalar::<f32>()?.max(1.0) as f64)?.to_dtype(DType::F32)
}

/// The device: CUDA device 0 when built with `--features cuda` and not asked for the CPU
/// (`--cpu`); the CPU otherwise. A CUDA build on a machine without a usable GPU fails here
/// (no silent fallback), so `--cpu` is the way to run such a build on the CPU.
///
/// # Errors
/// When CUDA is compiled in but unusable.
pub fn device(cpu: bool) -> Result<Device> {
    if cpu {
        return Ok(Device::Cpu);
    }
    #[cfg(feature = "cuda")]
    {
        Device::new_cuda(0)
    }
    #[cfg(not(feature = "cuda"))]
    {
        Ok(Device::Cpu)
    }
}

/// A `VarBuilder` that creates missing variables in `varmap` from the `Init` hints T5 uses
/// (`Randn`, `Const`, `Uniform`), drawing each variable's values from a `StdRng` seeded by
/// `seed` and the variable's name: the same seed gives the same weights, whatever the order
/// of creation, on every device (values are drawn on the host, then copied).
#[must_use]
pub fn seeded_var_builder<'a>(varmap: &VarMap, seed: u64, dtype: DType, device: &Device) -> VarBuilder<'a> {
    VarBuilder::from_backend(Box::new(SeededInit { varmap: varmap.clone(), seed }), dtype, device.clone())
}

struct SeededInit {
    varmap: VarMap,
    seed: u64,
}

/// FNV-1a of the name, mixed with the seed (splitmix64 finalizer).
fn name_seed(seed: u64, name: &str) -> u64 {
    let h = crate::hash::fnv1a(name.bytes());
    let mut z = h ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SimpleBackend for SeededInit {
    fn get(&self, shape: Shape, name: &str, init: Init, dtype: DType, dev: &Device) -> Result<Tensor> {
        let mut vars = self.varmap.data().lock().expect("varmap lock");
        if let Some(var) = vars.get(name) {
            if var.shape() != &shape {
                candle_core::bail!("shape mismatch on {name}: {shape:?} <> {:?}", var.shape());
            }
            return Ok(var.as_tensor().clone());
        }
        let n = shape.elem_count();
        let mut rng = StdRng::seed_from_u64(name_seed(self.seed, name));
        let values: Vec<f64> = match init {
            Init::Const(c) => vec![c; n],
            Init::Randn { mean, stdev } => (0..n)
                .map(|_| {
                    // Box–Muller; 1 - u keeps the logarithm's argument in (0, 1].
                    let u1: f64 = 1.0 - rng.random::<f64>();
                    let u2: f64 = rng.random::<f64>();
                    mean + stdev * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
                })
                .collect(),
            Init::Uniform { lo, up } => (0..n).map(|_| lo + (up - lo) * rng.random::<f64>()).collect(),
            Init::Kaiming { .. } => candle_core::bail!("seeded init does not implement Kaiming ({name})"),
        };
        let tensor = Tensor::from_vec(values, shape, &Device::Cpu)?.to_dtype(dtype)?.to_device(dev)?;
        let var = Var::from_tensor(&tensor)?;
        let out = var.as_tensor().clone();
        vars.insert(name.to_string(), var);
        Ok(out)
    }

    fn get_unchecked(&self, name: &str, _dtype: DType, _dev: &Device) -> Result<Tensor> {
        candle_core::bail!("seeded init needs a shape for {name}")
    }

    fn contains_tensor(&self, name: &str) -> bool {
        self.varmap.data().lock().expect("varmap lock").contains_key(name)
    }
}
