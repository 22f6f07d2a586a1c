//! Quantized llama or Gemma 3 decoder from a GGUF file, with logits for every position and a causal mask on top of the KV cache.

// Adapted from candle-transformers 0.9.2, `src/models/quantized_llama.rs`
// (https://github.com/huggingface/candle), copyright the candle authors, dual-licensed under
// MIT or Apache-2.0. Changes: only dense GGUF models (no `from_ggml`, mixture-of-experts files
// are refused), no tracing spans or Metal SDPA path, `forward_tail` returns the logits of the
// last `n` positions (`forward_all`: every position), the causal mask also covers a
// multi-token forward at `index_pos > 0` (query `i` attends to keys `0..=index_pos + i`), a
// batch-1 cache is shared by every row of a batch, and the matmul weights can be kept in f32
// (`Weights`). Gemma 3 (`general.architecture = gemma3`; its layer layout as in
// candle-transformers' `quantized_gemma3.rs`): scaled embeddings, per-head query/key norms,
// norms after attention and MLP, GELU (tanh) MLP, NeoX rotary embeddings with a local base on
// sliding-window layers, whose window the mask also applies while generating. Q4_1 and Q8_0
// matrices run `deepdebug-kernels`' batched quantized matmul (the query, key and value
// projections in one pass, gate and up in another), a generation step's attention of one new
// position runs its fused kernel, and a forward runs on rayon's pool.

use super::ModelError;
use candle_core::quantized::{gguf_file, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Tensor};
use candle_nn::Embedding;
use candle_transformers::quantized_nn::RmsNorm;
use deepdebug_kernels::{attention, qgemm};

/// Positions for which rotary embeddings are precomputed.
pub const MAX_SEQ_LEN: usize = 4096;

/// Which matmul weights a [`Llama`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights {
    /// The GGUF's quantized weights. Q4_1 and Q8_0 matrices (all of SmolLM2's) run the
    /// batched kernel of `deepdebug-kernels`, which reads each weight block once for all rows
    /// of a forward; other formats run candle's quantized CPU matmul, which costs the same per
    /// row batched or not. The least memory.
    Quantized,
    /// Dequantized f32 weights for everything: one f32 GEMM over all rows, no activation
    /// quantization; about 4 bytes per parameter (the reference the kernels are tested
    /// against, and what a merged LoRA adapter needs).
    F32,
    /// Both: quantized for [`Precision::Fast`] forwards (the batched kernel where it runs the
    /// format; elsewhere, as Gemma's Q4_K and Q6_K, candle's quantized matmul for one position
    /// and f32 for several), f32 for [`Precision::Exact`] ones (scoring).
    Mixed,
}

/// How a forward multiplies by matrices that have both quantized and f32 weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// Quantized weights and 8-bit activations where the batched kernel runs them: generation.
    #[default]
    Fast,
    /// f32 weights and activations: likelihoods that must not depend on how a text is split
    /// into forwards (8-bit activations rounded differently in a prefix run once and in a whole
    /// text moved one alternative's score by 0.8 nats).
    Exact,
}

/// What one forward asks of every matmul.
#[derive(Debug, Clone, Copy)]
struct Route {
    precision: Precision,
    /// The forward runs several positions (an f32 GEMM beats candle's quantized matmul).
    several: bool,
}

/// A LoRA adapter's update of one weight, `scale · B·A`, applied at run time beside the
/// (quantized) weight: `x·Aᵀ·(scale·Bᵀ)`, two thin f32 products (r is small).
#[derive(Debug, Clone)]
pub struct LowRank {
    /// `Aᵀ`, `(in, r)`.
    a_t: Tensor,
    /// `scale · Bᵀ`, `(r, out)`.
    b_t: Tensor,
}

impl LowRank {
    /// From PEFT's `A` `(r, in)` and `B` `(out, r)`.
    ///
    /// # Errors
    /// When `A` and `B` do not share the rank.
    pub fn new(a: &Tensor, b: &Tensor, scale: f64) -> candle_core::Result<LowRank> {
        let (r, _) = a.dims2()?;
        let (_, rb) = b.dims2()?;
        if r != rb {
            candle_core::bail!("LoRA A has rank {r} but B has {rb}");
        }
        let a_t = a.to_dtype(DType::F32)?.t()?.contiguous()?;
        let b_t = (b.to_dtype(DType::F32)?.t()? * scale)?.contiguous()?;
        Ok(LowRank { a_t, b_t })
    }

    fn add_to(&self, xs: &Tensor, y: Tensor) -> candle_core::Result<Tensor> {
        let x = xs.to_dtype(DType::F32)?;
        y + x.broadcast_matmul(&self.a_t)?.broadcast_matmul(&self.b_t)?
    }
}

/// A weight matrix with its quantized and/or f32 matmul.
#[derive(Debug, Clone)]
struct Linear {
    /// The batched 4-/8-bit kernel's copy of a Q4_1 or Q8_0 matrix (CPU only); when present
    /// it serves every forward.
    packed: Option<std::sync::Arc<qgemm::Matrix>>,
    quantized: Option<QMatMul>,
    dense: Option<QMatMul>,
    /// A LoRA adapter's update, added to every product.
    low_rank: Option<LowRank>,
}

impl Linear {
    fn new(t: QTensor, weights: Weights, device: &Device) -> candle_core::Result<Linear> {
        let packed = match weights {
            Weights::F32 => None,
            Weights::Quantized | Weights::Mixed => packed(&t, device)?,
        };
        let dense = match weights {
            Weights::Quantized => None,
            Weights::F32 | Weights::Mixed => Some(QMatMul::Tensor(t.dequantize(device)?)),
        };
        let quantized = match weights {
            Weights::Quantized | Weights::Mixed if packed.is_none() => Some(QMatMul::from_qtensor(t)?),
            _ => None,
        };
        Ok(Linear { packed, quantized, dense, low_rank: None })
    }

    /// The batched kernel's matrix, if this forward should use it.
    fn packed_for(&self, route: Route) -> Option<&qgemm::Matrix> {
        let p = self.packed.as_deref()?;
        (route.precision == Precision::Fast || self.dense.is_none()).then_some(p)
    }

    fn forward(&self, xs: &Tensor, route: Route) -> candle_core::Result<Tensor> {
        let y = self.forward_base(xs, route)?;
        self.with_low_rank(xs, y)
    }

    /// `y` (this weight's product with `xs`) plus the adapter's update, if any.
    fn with_low_rank(&self, xs: &Tensor, y: Tensor) -> candle_core::Result<Tensor> {
        match &self.low_rank {
            Some(l) => l.add_to(xs, y),
            None => Ok(y),
        }
    }

    fn forward_base(&self, xs: &Tensor, route: Route) -> candle_core::Result<Tensor> {
        if let Some(p) = self.packed_for(route) {
            return Ok(packed_forward(&[p], xs)?.remove(0));
        }
        let f32_first = route.several || route.precision == Precision::Exact;
        match (&self.quantized, &self.dense) {
            (Some(q), Some(_)) if !f32_first => q.forward(xs),
            (_, Some(d)) | (Some(d), None) => d.forward(xs),
            (None, None) => candle_core::bail!("a weight without a matmul"),
        }
    }
}

/// The batched kernel's copy of `t` when it is a Q4_1 or Q8_0 matrix on the CPU.
fn packed(t: &QTensor, device: &Device) -> candle_core::Result<Option<std::sync::Arc<qgemm::Matrix>>> {
    use candle_core::quantized::GgmlDType;
    let format = match t.dtype() {
        GgmlDType::Q4_1 => qgemm::Format::Q4_1,
        GgmlDType::Q8_0 => qgemm::Format::Q8_0,
        _ => return Ok(None),
    };
    if !device.is_cpu() {
        return Ok(None);
    }
    let Ok((n, k)) = t.shape().dims2() else { return Ok(None) };
    let m = qgemm::Matrix::from_gguf(format, n, k, &t.data()?).map_err(candle_core::Error::wrap)?;
    Ok(Some(std::sync::Arc::new(m)))
}

/// The f32 values of a contiguous CPU tensor's storage.
fn cpu_f32<'a>(storage: &'a candle_core::Storage, layout: &candle_core::Layout) -> candle_core::Result<&'a [f32]> {
    let candle_core::Storage::Cpu(cpu) = storage else { candle_core::bail!("a CPU tensor was expected") };
    let Some((start, end)) = layout.contiguous_offsets() else {
        candle_core::bail!("a contiguous tensor was expected")
    };
    Ok(&cpu.as_slice::<f32>()?[start..end])
}

/// Rows of `xs` as a matmul sees them (every dimension but the last).
fn rows_of(xs: &Tensor) -> usize {
    xs.elem_count() / xs.dims().last().copied().unwrap_or(1).max(1)
}

/// `xs · Wᵀ` over the last dimension of `xs` for each of `ws` (same input width) with the
/// batched quantized kernel, quantizing `xs` once.
fn packed_forward(ws: &[&qgemm::Matrix], xs: &Tensor) -> candle_core::Result<Vec<Tensor>> {
    let rows = rows_of(xs);
    let x = xs.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
    let mut outs: Vec<Vec<f32>> = ws.iter().map(|w| vec![0f32; rows * w.rows()]).collect();
    let mut slices: Vec<&mut [f32]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
    qgemm::matmul_many(ws, &x, rows, &mut slices, qgemm::Kernel::best()).map_err(candle_core::Error::wrap)?;
    ws.iter()
        .zip(outs)
        .map(|(w, out)| {
            let mut shape = xs.dims().to_vec();
            if let Some(last) = shape.last_mut() {
                *last = w.rows();
            }
            Tensor::from_vec(out, shape, xs.device())
        })
        .collect()
}

/// The products of `xs` with several weights of one input: in one pass of the batched kernel
/// when every one has it, else one by one.
fn forward_many(linears: &[&Linear], xs: &Tensor, route: Route) -> candle_core::Result<Vec<Tensor>> {
    let packed: Option<Vec<&qgemm::Matrix>> = linears.iter().map(|l| l.packed_for(route)).collect();
    match packed {
        Some(ws) => linears.iter().zip(packed_forward(&ws, xs)?).map(|(l, y)| l.with_low_rank(xs, y)).collect(),
        None => linears.iter().map(|l| l.forward(xs, route)).collect(),
    }
}

#[derive(Debug, Clone)]
struct Mlp {
    w1: Linear,
    w2: Linear,
    w3: Linear,
    /// GELU (tanh approximation) instead of SiLU on the gate (Gemma).
    gelu: bool,
}

impl Mlp {
    fn forward(&self, xs: &Tensor, route: Route) -> candle_core::Result<Tensor> {
        let mut both = forward_many(&[&self.w1, &self.w3], xs, route)?.into_iter();
        let (Some(w1), Some(w3)) = (both.next(), both.next()) else { candle_core::bail!("two products expected") };
        let gate = if self.gelu { w1.gelu()? } else { candle_nn::ops::silu(&w1)? };
        self.w2.forward(&(gate * w3)?, route)
    }
}

/// What Gemma 3 adds to a llama layer.
#[derive(Debug, Clone)]
struct GemmaNorms {
    q: RmsNorm,
    k: RmsNorm,
    post_attention: RmsNorm,
    post_ffw: RmsNorm,
}

#[derive(Debug, Clone)]
struct Layer {
    wq: Linear,
    wk: Linear,
    wv: Linear,
    wo: Linear,
    attention_norm: RmsNorm,
    mlp: Mlp,
    ffn_norm: RmsNorm,
    n_head: usize,
    n_kv_head: usize,
    head_dim: usize,
    cos: Tensor,
    sin: Tensor,
    /// NeoX (halves) rather than interleaved rotary embeddings.
    neox: bool,
    gemma: Option<GemmaNorms>,
    /// Keys this far back or further are not attended to (Gemma's sliding-window layers).
    window: Option<usize>,
    neg_inf: Tensor,
    cache: KvCache,
}

/// A layer's keys and values, `(batch, kv heads, positions, head dim)`.
#[derive(Debug, Clone, Default)]
struct KvCache {
    /// A prefix every row continues (batch 1): a cache of one row that a batch of several rows
    /// continued. It is attended to in place, never copied per row; its keys are stored
    /// transposed, `(1, kv heads, head dim, positions)`.
    shared: Option<(Tensor, Tensor)>,
    /// Each row's own positions (after `shared`, if any).
    own: Option<(Tensor, Tensor)>,
}

impl KvCache {
    /// Append the new positions `k`, `v` of `b` rows; a one-row cache continued by several rows
    /// becomes their shared prefix.
    fn push(&mut self, k: Tensor, v: Tensor) -> candle_core::Result<(Tensor, Tensor)> {
        let b = k.dim(0)?;
        if b > 1
            && self.shared.is_none()
            && self.own.as_ref().is_some_and(|(ck, _)| ck.dim(0).is_ok_and(|rows| rows == 1))
        {
            // Keys transposed once, `(1, kv heads, head dim, positions)`: every step multiplies
            // by them, and a strided transpose would be re-packed by the GEMM each time.
            self.shared = match self.own.take() {
                Some((k, v)) => Some((k.transpose(2, 3)?.contiguous()?, v)),
                None => None,
            };
        }
        let own = match self.own.take() {
            Some((ck, cv)) => (Tensor::cat(&[&ck, &k], 2)?, Tensor::cat(&[&cv, &v], 2)?),
            None => (k, v),
        };
        self.own = Some(own.clone());
        Ok(own)
    }
}

impl Layer {
    fn rotary(&self, x: &Tensor, index_pos: usize) -> candle_core::Result<Tensor> {
        let (_b, _h, seq_len, _d) = x.dims4()?;
        let cos = self.cos.narrow(0, index_pos, seq_len)?;
        let sin = self.sin.narrow(0, index_pos, seq_len)?;
        if self.neox {
            candle_nn::rotary_emb::rope(&x.contiguous()?, &cos, &sin)
        } else {
            candle_nn::rotary_emb::rope_i(&x.contiguous()?, &cos, &sin)
        }
    }

    fn attention(
        &mut self,
        x: &Tensor,
        mask: Option<&Tensor>,
        index_pos: usize,
        route: Route,
    ) -> candle_core::Result<Tensor> {
        let (b, seq_len, _) = x.dims3()?;
        let mut qkv = forward_many(&[&self.wq, &self.wk, &self.wv], x, route)?.into_iter();
        let (Some(q), Some(k), Some(v)) = (qkv.next(), qkv.next(), qkv.next()) else {
            candle_core::bail!("three products expected")
        };
        let q = q.reshape((b, seq_len, self.n_head, self.head_dim))?.transpose(1, 2)?;
        let k = k.reshape((b, seq_len, self.n_kv_head, self.head_dim))?.transpose(1, 2)?;
        let (q, k) = match &self.gemma {
            Some(g) => (g.q.forward(&q.contiguous()?)?, g.k.forward(&k.contiguous()?)?),
            None => (q, k),
        };
        let v = v.reshape((b, seq_len, self.n_kv_head, self.head_dim))?.transpose(1, 2)?.contiguous()?;
        let q = self.rotary(&q, index_pos)?;
        let k = self.rotary(&k, index_pos)?;
        if index_pos == 0 {
            self.cache = KvCache::default();
        }
        let own = self.cache.push(k, v)?;
        let y = if seq_len == 1 && mask.is_none() && q.device().is_cpu() && q.dtype() == DType::F32 {
            self.attend_one(&q, &own)?
        } else {
            let y = self.attend(&q, &own, mask)?;
            y.transpose(1, 2)?.reshape((b, seq_len, self.n_head * self.head_dim))?
        };
        self.wo.forward(&y, route)
    }

    /// One decoder layer: attention and MLP blocks with their residuals; `masks`: for full
    /// attention and for the sliding window.
    fn forward(&mut self, h: &Tensor, masks: &Masks, index_pos: usize, route: Route) -> candle_core::Result<Tensor> {
        let mask = if self.window.is_some() { masks.window.as_ref() } else { masks.causal.as_ref() };
        let attn = self.attention(&self.attention_norm.forward(h)?, mask, index_pos, route)?;
        let attn = match &self.gemma {
            Some(g) => g.post_attention.forward(&attn)?,
            None => attn,
        };
        let h1 = (attn + h)?;
        let mlp = self.mlp.forward(&self.ffn_norm.forward(&h1)?, route)?;
        let mlp = match &self.gemma {
            Some(g) => g.post_ffw.forward(&mlp)?,
            None => mlp,
        };
        mlp + h1
    }

    /// [`Layer::attend`] of one new position per row by the fused CPU kernel, with no mask;
    /// returns `(b, 1, heads · d)`.
    fn attend_one(&self, q: &Tensor, own: &(Tensor, Tensor)) -> candle_core::Result<Tensor> {
        let (b, heads, _, dim) = q.dims4()?;
        let (q, own_k, own_v) = (q.contiguous()?, own.0.contiguous()?, own.1.contiguous()?);
        let shared = match &self.cache.shared {
            Some((kt, v)) => Some((kt.contiguous()?, v.contiguous()?)),
            None => None,
        };
        let (q_s, q_l) = q.storage_and_layout();
        let (ok_s, ok_l) = own_k.storage_and_layout();
        let (ov_s, ov_l) = own_v.storage_and_layout();
        let own = attention::Own { keys: cpu_f32(&ok_s, ok_l)?, values: cpu_f32(&ov_s, ov_l)?, len: own_k.dim(2)? };
        let shared_len = match &shared {
            Some((kt, _)) => kt.dim(3)?,
            None => 0,
        };
        let guards = shared.as_ref().map(|(kt, v)| (kt.storage_and_layout(), v.storage_and_layout()));
        let shared = match &guards {
            Some(((kt_s, kt_l), (v_s, v_l))) => {
                Some(attention::Shared { keys_t: cpu_f32(kt_s, kt_l)?, values: cpu_f32(v_s, v_l)?, len: shared_len })
            }
            None => None,
        };
        let shape = attention::Shape { rows: b, heads, kv_heads: self.n_kv_head, dim };
        let mut out = vec![0f32; b * heads * dim];
        attention::attend_one(shape, cpu_f32(&q_s, q_l)?, shared, own, &mut out).map_err(candle_core::Error::wrap)?;
        Tensor::from_vec(out, (b, 1, heads * dim), q.device())
    }

    /// Grouped-query attention of `q` `(b, heads, L, d)` over the shared prefix (batch 1, read
    /// in place for every row) and each row's own keys: the query heads of one KV head are
    /// stacked as extra rows of one matmul, so neither the prefix nor the KV heads are copied.
    fn attend(&self, q: &Tensor, own: &(Tensor, Tensor), mask: Option<&Tensor>) -> candle_core::Result<Tensor> {
        let (b, _, l, d) = q.dims4()?;
        let (kv, g) = (self.n_kv_head, self.n_head / self.n_kv_head);
        #[allow(clippy::cast_precision_loss)]
        let q = (q.contiguous()?.reshape((b, kv, g * l, d))? / (d as f64).sqrt())?;
        let own_scores = q.matmul(&own.0.t()?)?;
        let shared = self.cache.shared.as_ref();
        let scores = match shared {
            Some((skt, _)) => {
                let p = skt.dim(3)?;
                let rows = q.transpose(0, 1)?.contiguous()?.reshape((kv, b * g * l, d))?;
                let shared_scores = rows.matmul(&skt.squeeze(0)?)?.reshape((kv, b, g * l, p))?.transpose(0, 1)?;
                Tensor::cat(&[&shared_scores, &own_scores], 3)?
            }
            None => own_scores,
        };
        let scores = match mask {
            None => scores,
            Some(mask) => {
                let keys = mask.dim(1)?;
                let mask =
                    mask.unsqueeze(0)?.expand((g, l, keys))?.reshape((g * l, keys))?.broadcast_as(scores.shape())?;
                mask.where_cond(&self.neg_inf.broadcast_as(scores.shape())?, &scores)?
            }
        };
        let att = candle_nn::ops::softmax_last_dim(&scores.contiguous()?)?;
        let y = match shared {
            Some((_, sv)) => {
                let p = sv.dim(2)?;
                let rows = att.narrow(3, 0, p)?.transpose(0, 1)?.contiguous()?.reshape((kv, b * g * l, p))?;
                let from_shared = rows.matmul(&sv.squeeze(0)?)?.reshape((kv, b, g * l, d))?.transpose(0, 1)?;
                let s = own.1.dim(2)?;
                (from_shared + att.narrow(3, p, s)?.contiguous()?.matmul(&own.1)?)?
            }
            None => att.matmul(&own.1)?,
        };
        y.reshape((b, self.n_head, l, d))
    }
}

/// A llama-architecture (or Gemma 3) decoder with quantized weights and a KV cache. Cloning
/// is cheap (the weights are shared) and copies the cache, so a cached prefix can be continued
/// several ways.
#[derive(Debug, Clone)]
pub struct Llama {
    embeddings: Embedding,
    /// Embeddings are multiplied by this (Gemma: √hidden size).
    embedding_scale: Option<f64>,
    layers: Vec<Layer>,
    norm: RmsNorm,
    output: Linear,
    /// Sliding-window size of the layers that have one.
    window: Option<usize>,
    precision: Precision,
}

/// The masks of one forward (`None`: nothing to mask).
struct Masks {
    causal: Option<Tensor>,
    window: Option<Tensor>,
}

/// RoPE's cos and sin tables for every position up to [`MAX_SEQ_LEN`] (shared with the
/// trainable model of `lora`).
pub(crate) fn rope_tables(head_dim: usize, freq_base: f32, device: &Device) -> candle_core::Result<(Tensor, Tensor)> {
    #[allow(clippy::cast_precision_loss)]
    let theta: Vec<f32> = (0..head_dim).step_by(2).map(|i| 1f32 / freq_base.powf(i as f32 / head_dim as f32)).collect();
    let theta = Tensor::new(theta.as_slice(), device)?;
    let idx_theta = Tensor::arange(0, MAX_SEQ_LEN as u32, device)?
        .to_dtype(DType::F32)?
        .reshape((MAX_SEQ_LEN, 1))?
        .matmul(&theta.reshape((1, theta.elem_count()))?)?;
    Ok((idx_theta.cos()?, idx_theta.sin()?))
}

/// `mask[i][j]` is 1 where query `i` (at position `index_pos + i`) must not see key `j`: a
/// later key, or one `window` or more positions back. `None` when nothing is masked.
fn causal_mask(
    seq_len: usize,
    index_pos: usize,
    window: Option<usize>,
    device: &Device,
) -> candle_core::Result<Option<Tensor>> {
    let keys = index_pos + seq_len;
    let window = window.filter(|&w| keys > w);
    if seq_len == 1 && window.is_none() {
        return Ok(None);
    }
    let hidden = |i: usize, j: usize| j > index_pos + i || window.is_some_and(|w| index_pos + i >= j + w);
    let mask: Vec<u8> = (0..seq_len).flat_map(|i| (0..keys).map(move |j| u8::from(hidden(i, j)))).collect();
    Tensor::from_slice(&mask, (seq_len, keys), device).map(Some)
}

impl Llama {
    /// Load a dense llama GGUF (`llama.*` metadata, `blk.N.*` tensors) with its quantized
    /// weights; see [`Llama::from_gguf_with`].
    ///
    /// # Errors
    /// On missing metadata or tensors, and for mixture-of-experts models.
    pub fn from_gguf<R: std::io::Seek + std::io::Read>(
        ct: &gguf_file::Content,
        reader: &mut R,
        device: &Device,
    ) -> Result<Llama, ModelError> {
        Llama::from_gguf_with(ct, reader, device, Weights::Quantized)
    }

    /// Load a dense llama GGUF keeping the matmul weights as `weights` says.
    ///
    /// # Errors
    /// On missing metadata or tensors, and for mixture-of-experts models.
    pub fn from_gguf_with<R: std::io::Seek + std::io::Read>(
        ct: &gguf_file::Content,
        reader: &mut R,
        device: &Device,
        weights: Weights,
    ) -> Result<Llama, ModelError> {
        Llama::from_gguf_adapted(ct, reader, device, weights, &std::collections::HashMap::new())
    }

    /// [`Llama::from_gguf_with`] with a LoRA adapter: each weight named in `adapter` (by GGUF
    /// tensor name, `blk.N.attn_v.weight`) keeps its (quantized) matmul and adds its low-rank
    /// update at run time, so an adapted model runs the batched kernels as the base does.
    ///
    /// # Errors
    /// As [`Llama::from_gguf_with`]; an update of the wrong shape fails at the first forward.
    pub fn from_gguf_adapted<R: std::io::Seek + std::io::Read>(
        ct: &gguf_file::Content,
        reader: &mut R,
        device: &Device,
        weights: Weights,
        adapter: &std::collections::HashMap<String, LowRank>,
    ) -> Result<Llama, ModelError> {
        let arch = match ct.metadata.get("general.architecture").map(gguf_file::Value::to_string) {
            Some(Ok(a)) => a.clone(),
            _ => "llama".to_string(),
        };
        let gemma = match arch.as_str() {
            "llama" => false,
            "gemma3" => true,
            other => {
                return Err(ModelError::Config(format!("GGUF architecture `{other}` is not supported (llama, gemma3)")))
            }
        };
        let md = |key: &str| {
            let key = format!("{arch}.{key}");
            ct.metadata.get(&key).ok_or_else(|| ModelError::Config(format!("GGUF metadata lacks {key}")))
        };
        let experts = md("expert_count").and_then(|v| Ok(v.to_u32()?)).unwrap_or(0);
        if experts > 1 {
            return Err(ModelError::Config(format!(
                "mixture-of-experts GGUF ({arch}.expert_count = {experts}) is not supported"
            )));
        }
        let n_head = md("attention.head_count")?.to_u32()? as usize;
        let n_kv_head = md("attention.head_count_kv")?.to_u32()? as usize;
        let block_count = md("block_count")?.to_u32()? as usize;
        let embedding_length = md("embedding_length")?.to_u32()? as usize;
        let head_dim = match md("attention.key_length") {
            Ok(v) => v.to_u32()? as usize,
            Err(_) => embedding_length / n_head,
        };
        let rope_dim = md("rope.dimension_count").and_then(|v| Ok(v.to_u32()? as usize)).unwrap_or(head_dim);
        let rms_norm_eps = f64::from(md("attention.layer_norm_rms_epsilon")?.to_f32()?);
        let rope_freq_base = md("rope.freq_base").and_then(|m| Ok(m.to_f32()?)).unwrap_or(10000f32);
        let (cos, sin) = rope_tables(rope_dim, rope_freq_base, device)?;
        // Gemma 3: five sliding-window layers (local rotary base) for each global one.
        let window = if gemma { Some(md("attention.sliding_window")?.to_u32()? as usize) } else { None };
        let local_base = md("rope.local_freq_base").and_then(|m| Ok(m.to_f32()?)).unwrap_or(10000f32);
        let local_every = md("attention.sliding_window_type").and_then(|m| Ok(m.to_u32()? as usize)).unwrap_or(6);
        let (local_cos, local_sin) =
            if gemma { rope_tables(rope_dim, local_base, device)? } else { (cos.clone(), sin.clone()) };
        let neg_inf = Tensor::new(f32::NEG_INFINITY, device)?;
        let mut tensor = |name: &str| ct.tensor(reader, name, device);
        let embeddings_q = tensor("token_embd.weight")?;
        let embeddings = embeddings_q.dequantize(device)?;
        let norm = RmsNorm::from_qtensor(tensor("output_norm.weight")?, rms_norm_eps)?;
        let output = match tensor("output.weight") {
            Ok(t) => t,
            Err(_) => embeddings_q,
        };
        let mut layers = Vec::with_capacity(block_count);
        for i in 0..block_count {
            let mut q = |name: &str| {
                let full = format!("blk.{i}.{name}.weight");
                let mut linear = Linear::new(tensor(&full)?, weights, device)?;
                linear.low_rank = adapter.get(&full).cloned();
                Ok::<_, candle_core::Error>(linear)
            };
            let (wq, wk, wv, wo) = (q("attn_q")?, q("attn_k")?, q("attn_v")?, q("attn_output")?);
            let mlp = Mlp { w1: q("ffn_gate")?, w2: q("ffn_down")?, w3: q("ffn_up")?, gelu: gemma };
            let mut rms = |name: &str| RmsNorm::from_qtensor(tensor(&format!("blk.{i}.{name}.weight"))?, rms_norm_eps);
            let (attention_norm, ffn_norm) = (rms("attn_norm")?, rms("ffn_norm")?);
            let norms = if gemma {
                Some(GemmaNorms {
                    q: rms("attn_q_norm")?,
                    k: rms("attn_k_norm")?,
                    post_attention: rms("post_attention_norm")?,
                    post_ffw: rms("post_ffw_norm")?,
                })
            } else {
                None
            };
            let sliding = gemma && (i + 1) % local_every.max(1) != 0;
            let (cos, sin) = if sliding { (local_cos.clone(), local_sin.clone()) } else { (cos.clone(), sin.clone()) };
            layers.push(Layer {
                wq,
                wk,
                wv,
                wo,
                attention_norm,
                mlp,
                ffn_norm,
                n_head,
                n_kv_head,
                head_dim,
                cos,
                sin,
                neox: gemma,
                gemma: norms,
                window: window.filter(|_| sliding),
                neg_inf: neg_inf.clone(),
                cache: KvCache::default(),
            });
        }
        #[allow(clippy::cast_precision_loss)]
        let embedding_scale = gemma.then(|| (embedding_length as f64).sqrt());
        Ok(Llama {
            embeddings: Embedding::new(embeddings, embedding_length),
            embedding_scale,
            layers,
            norm,
            output: Linear::new(output, weights, device)?,
            window,
            precision: Precision::Fast,
        })
    }

    /// Run tokens `x` (`(batch, seq_len)`) at positions `index_pos..`, appending to the KV cache
    /// (`index_pos == 0` starts a new one; a cache of batch 1 is shared by all rows), and return
    /// the logits of the last `n` positions, `(batch, n, vocab)`.
    ///
    /// # Errors
    /// On shape errors, `n > seq_len`, or positions past [`MAX_SEQ_LEN`].
    pub fn forward_tail(&mut self, x: &Tensor, index_pos: usize, n: usize) -> candle_core::Result<Tensor> {
        // On one of rayon's threads, so the kernels' parallel parts run beside it rather than
        // waking the pool and putting this thread to sleep a few hundred times per step.
        rayon::scope(|_| self.forward_in_pool(x, index_pos, n))
    }

    fn forward_in_pool(&mut self, x: &Tensor, index_pos: usize, n: usize) -> candle_core::Result<Tensor> {
        let (b, seq_len) = x.dims2()?;
        // Matrices without the batched kernel (Gemma's formats), with `Weights::Mixed`: candle's
        // quantized matmul for one position of one row, f32 otherwise (its quantized steps of
        // 2, 4 or 8 rows are slower than one f32 GEMM).
        let route = Route { precision: self.precision, several: b * seq_len > 1 };
        if n > seq_len {
            candle_core::bail!("asked for the logits of {n} positions of {seq_len}");
        }
        let masks = Masks {
            causal: causal_mask(seq_len, index_pos, None, x.device())?,
            window: match self.window {
                Some(w) => causal_mask(seq_len, index_pos, Some(w), x.device())?,
                None => None,
            },
        };
        let mut h = self.embeddings.forward(x)?;
        if let Some(scale) = self.embedding_scale {
            h = (h * scale)?;
        }
        for layer in &mut self.layers {
            h = layer.forward(&h, &masks, index_pos, route)?;
        }
        let h = self.norm.forward(&h.narrow(1, seq_len - n, n)?)?;
        self.output.forward(&h, route)
    }

    /// How later forwards multiply (clones keep it).
    pub fn set_precision(&mut self, precision: Precision) {
        self.precision = precision;
    }

    /// Logits of every position, `(batch, seq_len, vocab)`; see [`Llama::forward_tail`].
    ///
    /// # Errors
    /// As [`Llama::forward_tail`].
    pub fn forward_all(&mut self, x: &Tensor, index_pos: usize) -> candle_core::Result<Tensor> {
        self.forward_tail(x, index_pos, x.dim(1)?)
    }

    /// Logits of the last position, `(batch, vocab)`, for generation; see [`Llama::forward_tail`].
    ///
    /// # Errors
    /// As [`Llama::forward_tail`].
    pub fn forward(&mut self, x: &Tensor, index_pos: usize) -> candle_core::Result<Tensor> {
        self.forward_tail(x, index_pos, 1)?.squeeze(1)
    }

    /// Keep only these rows of a batch's cache (in this order), e.g. the samples still running;
    /// a shared prefix stays shared.
    ///
    /// # Errors
    /// On a row index out of range.
    pub fn retain_rows(&mut self, rows: &[u32]) -> candle_core::Result<()> {
        let Some(first) = self.layers.first() else { return Ok(()) };
        let Some((k, _)) = &first.cache.own else { return Ok(()) };
        let index = Tensor::new(rows, k.device())?;
        for layer in &mut self.layers {
            if let Some((k, v)) = &layer.cache.own {
                layer.cache.own = Some((k.index_select(&index, 0)?, v.index_select(&index, 0)?));
            }
        }
        Ok(())
    }
}
