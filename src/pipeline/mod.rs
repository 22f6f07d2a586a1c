//! `deepdebug pipeline`: DeepDebug's training pipeline as resumable stages with a manifest (pairs → bug-creator → packages → inject → rows → patcher → evaluate → report).

pub mod config;
mod evaluate;
mod stages;

pub use config::PipelineConfig;
pub use evaluate::{Evaluation, LossRow, TopK};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Bumped whenever the manifest or the stage outputs change meaning.
pub const PIPELINE_FORMAT_VERSION: u32 = 1;

/// The stages, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Fix pairs from the corpus, split by repository.
    Pairs,
    /// The bug-creator, trained on reversed training pairs.
    BugCreator,
    /// Real packages with their tests (copied or fetched with pip).
    Packages,
    /// Neural and heuristic bugs planted with `inject`, with pytest traces.
    Inject,
    /// The patcher's rows: skeleton (+ trace) → fixed function, split by package.
    Rows,
    /// The patcher, trained on the rows.
    Patcher,
    /// Cross-entropy tables and top-k success on held-out executable bugs.
    Evaluate,
    /// `report.md` and `report.json`.
    Report,
}

impl Stage {
    pub const ALL: [Stage; 8] = [
        Stage::Pairs,
        Stage::BugCreator,
        Stage::Packages,
        Stage::Inject,
        Stage::Rows,
        Stage::Patcher,
        Stage::Evaluate,
        Stage::Report,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Stage::Pairs => "pairs",
            Stage::BugCreator => "bug-creator",
            Stage::Packages => "packages",
            Stage::Inject => "inject",
            Stage::Rows => "rows",
            Stage::Patcher => "patcher",
            Stage::Evaluate => "evaluate",
            Stage::Report => "report",
        }
    }
}

/// What a finished stage left: its wall time and figures (counts, losses, rates).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StageRecord {
    pub seconds: f64,
    pub figures: BTreeMap<String, serde_json::Value>,
}

/// `OUT/manifest.json`: the finished stages. A stage missing from it runs (again) on the next
/// invocation; its own outputs resume where they can (training checkpoints, inject's).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub format_version: u32,
    pub stages: BTreeMap<Stage, StageRecord>,
}

impl Manifest {
    fn path(out: &Path) -> PathBuf {
        out.join("manifest.json")
    }

    /// The manifest of `out`, or an empty one.
    ///
    /// # Errors
    /// When it exists but cannot be read or is of another format.
    pub fn load(out: &Path) -> Result<Manifest, PipelineError> {
        let path = Manifest::path(out);
        if !path.is_file() {
            return Ok(Manifest { format_version: PIPELINE_FORMAT_VERSION, stages: BTreeMap::new() });
        }
        let text = std::fs::read_to_string(&path).map_err(|e| PipelineError::io("read", &path, e))?;
        let manifest: Manifest =
            serde_json::from_str(&text).map_err(|e| PipelineError::Config(format!("{}: {e}", path.display())))?;
        if manifest.format_version != PIPELINE_FORMAT_VERSION {
            return Err(PipelineError::Config(format!(
                "{}: format_version {} (this build writes {PIPELINE_FORMAT_VERSION}); use a new --out",
                path.display(),
                manifest.format_version
            )));
        }
        Ok(manifest)
    }

    fn save(&self, out: &Path) -> Result<(), PipelineError> {
        let path = Manifest::path(out);
        let tmp = path.with_extension("tmp");
        let text = serde_json::to_string_pretty(self).expect("manifest serializes");
        std::fs::write(&tmp, text).map_err(|e| PipelineError::io("write", &tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| PipelineError::io("rename", &tmp, e))
    }
}

/// Errors that stop the pipeline (the stage stays unfinished; a rerun retries it).
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Io(#[from] crate::io_error::PathIoError),
    #[error("pipeline config: {0}")]
    Config(String),
    #[error("stage {stage}: {message}")]
    Stage { stage: &'static str, message: String },
    #[error(transparent)]
    Model(#[from] crate::model::ModelError),
    #[error(transparent)]
    Inject(#[from] crate::inject::InjectError),
    #[error(transparent)]
    Pytest(#[from] crate::pytest::PytestError),
    #[error(transparent)]
    Pairs(#[from] crate::repair::learn::pairs::PairsError),
}

impl PipelineError {
    pub(crate) fn io(action: &'static str, path: &Path, source: std::io::Error) -> PipelineError {
        PipelineError::Io(crate::io_error::PathIoError { action, path: path.to_path_buf(), source })
    }

    pub(crate) fn stage(stage: Stage, message: impl Into<String>) -> PipelineError {
        PipelineError::Stage { stage: stage.name(), message: message.into() }
    }
}

/// Progress of a run.
#[derive(Debug, Clone)]
pub enum PipelineEvent {
    Skipped(Stage),
    Started(Stage),
    Finished(Stage, StageRecord),
    /// A line of detail from inside a stage (training progress, counts).
    Note(String),
}

/// Run every stage not finished yet (or, with `from`, every stage from it on) with outputs
/// under `out`. Returns the manifest.
///
/// # Errors
/// When a stage fails; the stages before it stay finished.
pub fn run(
    cfg: &PipelineConfig,
    out: &Path,
    from: Option<Stage>,
    on_event: &(dyn Fn(PipelineEvent) + Sync),
) -> Result<Manifest, PipelineError> {
    std::fs::create_dir_all(out).map_err(|e| PipelineError::io("create", out, e))?;
    let mut manifest = Manifest::load(out)?;
    if let Some(from) = from {
        manifest.stages.retain(|stage, _| *stage < from);
        manifest.save(out)?;
    }
    for stage in Stage::ALL {
        if manifest.stages.contains_key(&stage) {
            on_event(PipelineEvent::Skipped(stage));
            continue;
        }
        on_event(PipelineEvent::Started(stage));
        let started = Instant::now();
        let figures = stages::run_stage(stage, cfg, out, &manifest, on_event)?;
        let record = StageRecord { seconds: started.elapsed().as_secs_f64(), figures };
        on_event(PipelineEvent::Finished(stage, record.clone()));
        manifest.stages.insert(stage, record);
        manifest.save(out)?;
    }
    Ok(manifest)
}
