//! Model configuration: T5 hyper-parameters with named presets, stored as an HF-style `config.json`.

use super::ModelError;
use candle_transformers::models::t5;
use serde::{Deserialize, Serialize};

/// Version of the `config.json` layout written by this crate.
pub const CONFIG_FORMAT_VERSION: u32 = 1;

/// What a seq2seq model was trained to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Task {
    /// Buggy function (plus skeleton) → fixed function.
    Patch,
    /// Fixed function (plus skeleton) → buggy function (reversed commits, for neural bugs).
    BugCreate,
    /// Neural debugger: trajectory prompt (code, frames, action) → next frame in the token
    /// grammar of `debugger::grammar`.
    NextState,
}

impl Task {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Task::Patch => "patch",
            Task::BugCreate => "bug-create",
            Task::NextState => "next-state",
        }
    }
}

/// T5 (v1.1 style: gated-GELU, untied head) hyper-parameters. The field names are those of
/// Hugging Face's `T5Config`, so `config.json` also deserializes into
/// [`candle_transformers::models::t5::Config`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    pub format_version: u32,
    pub model_type: String,
    pub task: Task,
    pub vocab_size: usize,
    pub d_model: usize,
    pub d_kv: usize,
    pub d_ff: usize,
    pub num_layers: usize,
    pub num_decoder_layers: usize,
    pub num_heads: usize,
    pub relative_attention_num_buckets: usize,
    pub relative_attention_max_distance: usize,
    pub dropout_rate: f64,
    pub layer_norm_epsilon: f64,
    pub initializer_factor: f64,
    /// `gated-gelu`, `gated-silu`, `relu` or `gelu_new`.
    pub feed_forward_proj: String,
    pub tie_word_embeddings: bool,
    pub is_encoder_decoder: bool,
    pub use_cache: bool,
    pub pad_token_id: usize,
    pub eos_token_id: usize,
    pub decoder_start_token_id: usize,
    /// Longest encoder input (skeleton + trace) in tokens; longer inputs are truncated.
    pub max_source_len: usize,
    /// Longest decoder output in tokens.
    pub max_target_len: usize,
}

impl ModelConfig {
    fn preset(d_model: usize, d_kv: usize, d_ff: usize, layers: usize, heads: usize) -> ModelConfig {
        ModelConfig {
            format_version: CONFIG_FORMAT_VERSION,
            model_type: "t5".into(),
            task: Task::Patch,
            vocab_size: 1024,
            d_model,
            d_kv,
            d_ff,
            num_layers: layers,
            num_decoder_layers: layers,
            num_heads: heads,
            relative_attention_num_buckets: 32,
            relative_attention_max_distance: 128,
            dropout_rate: 0.0,
            layer_norm_epsilon: 1e-6,
            initializer_factor: 1.0,
            feed_forward_proj: "gated-gelu".into(),
            tie_word_embeddings: false,
            is_encoder_decoder: true,
            use_cache: true,
            pad_token_id: super::tokenizer::PAD_ID as usize,
            eos_token_id: super::tokenizer::EOS_ID as usize,
            decoder_start_token_id: super::tokenizer::PAD_ID as usize,
            max_source_len: 1024 + 896,
            max_target_len: 512,
        }
    }

    /// For CPU tests: d_model 64, 2+2 layers, 4 heads.
    #[must_use]
    pub fn tiny() -> ModelConfig {
        ModelConfig { max_source_len: 512, max_target_len: 256, ..Self::preset(64, 16, 128, 2, 4) }
    }

    /// A CPU-trainable model: d_model 256, 4+4 layers, 8 heads (≈ 10M parameters at 8k vocab).
    #[must_use]
    pub fn small() -> ModelConfig {
        Self::preset(256, 32, 1024, 4, 8)
    }

    /// T5 v1.1 base dimensions: d_model 768, 12+12 layers, 12 heads (GPU).
    #[must_use]
    pub fn base() -> ModelConfig {
        Self::preset(768, 64, 2048, 12, 12)
    }

    /// A preset by name: `tiny`, `small` or `base`.
    ///
    /// # Errors
    /// For an unknown name.
    pub fn by_name(name: &str) -> Result<ModelConfig, ModelError> {
        match name {
            "tiny" => Ok(Self::tiny()),
            "small" => Ok(Self::small()),
            "base" => Ok(Self::base()),
            other => Err(ModelError::Config(format!("unknown preset `{other}` (tiny, small, base)"))),
        }
    }

    #[must_use]
    pub fn with_vocab_size(mut self, vocab_size: usize) -> ModelConfig {
        self.vocab_size = vocab_size;
        self
    }

    #[must_use]
    pub fn with_task(mut self, task: Task) -> ModelConfig {
        self.task = task;
        self
    }

    /// The candle-transformers view of this configuration (same JSON).
    ///
    /// # Errors
    /// When the activation name is unknown to candle.
    pub fn t5(&self) -> Result<t5::Config, ModelError> {
        let value = serde_json::to_value(self).map_err(|e| ModelError::Config(e.to_string()))?;
        serde_json::from_value(value).map_err(|e| ModelError::Config(e.to_string()))
    }

    /// Check the version and internal consistency after reading `config.json`.
    ///
    /// # Errors
    /// On an unsupported `format_version` or inconsistent dimensions.
    pub fn validate(&self) -> Result<(), ModelError> {
        if self.format_version != CONFIG_FORMAT_VERSION {
            return Err(ModelError::Config(format!(
                "config.json has format_version {} but this build reads {CONFIG_FORMAT_VERSION}",
                self.format_version
            )));
        }
        if self.tie_word_embeddings {
            return Err(ModelError::Config(
                "tied word embeddings are not supported (set tie_word_embeddings: false)".into(),
            ));
        }
        if self.num_decoder_layers != self.num_layers {
            return Err(ModelError::Config("num_decoder_layers must equal num_layers".into()));
        }
        if self.vocab_size == 0 || self.d_model == 0 || self.num_heads == 0 || self.d_kv == 0 {
            return Err(ModelError::Config("dimensions must be positive".into()));
        }
        self.t5().map(|_| ())
    }

    /// Number of trainable parameters.
    #[must_use]
    pub fn parameter_count(&self) -> usize {
        let inner = self.num_heads * self.d_kv;
        let attn = 4 * self.d_model * inner;
        let ff = if self.feed_forward_proj.starts_with("gated") { 3 } else { 2 } * self.d_model * self.d_ff;
        let enc = self.num_layers * (attn + ff + 2 * self.d_model);
        let dec = self.num_decoder_layers * (2 * attn + ff + 3 * self.d_model);
        let bias = 2 * self.relative_attention_num_buckets * self.num_heads;
        2 * self.vocab_size * self.d_model + enc + dec + bias + 2 * self.d_model
    }
}
