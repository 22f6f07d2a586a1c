//! Patcher / bug-creator models (T5 on candle, LoRA adapters on SmolLM2), their tokenizers, training and sampling.

pub mod bundled;
pub mod config;
pub mod data;
pub mod dir;
pub mod llama;
pub mod lora;
pub mod optim;
pub mod patcher;
pub mod sample;
pub mod smollm;
pub mod spm;
pub mod t5;
pub mod tokenizer;
pub mod trace_note;
pub mod train;
pub(crate) mod train_loop;

pub use config::{ModelConfig, Task};
pub use dir::ModelDir;
pub use patcher::{Patcher, TextModel};
pub use sample::{Sample, SampleOptions, SampleRun, Sampler};
pub use tokenizer::CodeTokenizer;
pub use train::{cross_entropy, train, TrainEvent, TrainOptions, TrainSummary};

/// Errors of the model code.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    #[error("tensor error: {0}")]
    Candle(#[from] candle_core::Error),
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("model config: {0}")]
    Config(String),
    #[error("training data: {0}")]
    Data(String),
    #[error("{0} is not a model directory (needs config.json, tokenizer.json, model.safetensors)")]
    NotAModel(String),
}
