//! `deepdebug sandbox build|check` and the `--sandbox` option shared by commands that run tests.

use anyhow::Context;
use deepdebug::exit_code::ExitCode;
use deepdebug::sandbox::check::{self_test, Verdict};
use deepdebug::sandbox::image::{build, BuildOptions};
use deepdebug::sandbox::{DockerConfig, Sandbox, SandboxKind, DEFAULT_IMAGE};
use std::path::PathBuf;
use std::sync::Arc;

/// Where tests run.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Kind {
    /// One locked-down container per run (build the image with `deepdebug sandbox build`).
    Docker,
    /// bubblewrap without network when available, else rlimits + process groups (warned).
    Local,
    /// Plain processes with rlimits and process groups.
    None,
}

#[derive(clap::Args, Clone)]
pub struct SandboxArgs {
    /// Where the Python code runs: docker, local or none.
    #[arg(long, value_enum, default_value = "local")]
    pub sandbox: Kind,
    /// Image for `--sandbox docker`.
    #[arg(long, default_value = DEFAULT_IMAGE, value_name = "TAG")]
    pub image: String,
}

impl SandboxArgs {
    #[must_use]
    pub fn kind(&self) -> SandboxKind {
        match self.sandbox {
            Kind::Docker => SandboxKind::Docker,
            Kind::Local => SandboxKind::Local,
            Kind::None => SandboxKind::None,
        }
    }

    #[must_use]
    pub fn docker(&self) -> DockerConfig {
        DockerConfig { image: self.image.clone(), ..DockerConfig::default() }
    }

    /// Resolve the sandbox and print its warning, if any.
    pub fn resolve(&self) -> anyhow::Result<Arc<Sandbox>> {
        let sandbox = Sandbox::new(self.kind(), &self.docker())?;
        if let Some(warning) = sandbox.warning() {
            eprintln!("warning: {warning}");
        }
        Ok(Arc::new(sandbox))
    }
}

#[derive(clap::Subcommand)]
pub enum SandboxCommand {
    /// Build the Python+pytest image offline: debootstrap a minimal Debian with python3 and
    /// pytest from the host's apt mirror, import it through the Engine API (needs root and
    /// debootstrap). With a registry, `docker build docker/` gives an equivalent image.
    Build {
        #[arg(long, default_value = DEFAULT_IMAGE)]
        tag: String,
        /// Debian mirror (default: the host's apt sources, else deb.debian.org).
        #[arg(long)]
        mirror: Option<String>,
        /// Debian suite (default: the host's codename, else bookworm).
        #[arg(long)]
        suite: Option<String>,
        /// Skip the build when the image already exists.
        #[arg(long)]
        if_missing: bool,
    },
    /// Run the isolation self-test: network blocked, memory and pids limits, hangs killed,
    /// nothing left behind, no root.
    Check {
        #[command(flatten)]
        sandbox: SandboxArgs,
        /// Interpreter inside the sandbox.
        #[arg(long, default_value = "python3")]
        python: PathBuf,
    },
    /// Remove deepdebug containers left by a run that was killed (Ctrl-C, SIGKILL).
    Prune,
}

pub fn run(command: &SandboxCommand) -> anyhow::Result<ExitCode> {
    match command {
        SandboxCommand::Build { tag, mirror, suite, if_missing } => {
            if *if_missing {
                let engine = deepdebug::sandbox::docker::DockerSandbox::connect_engine(DockerConfig::default())?;
                if engine.image_exists(tag)? {
                    eprintln!("{tag} already exists");
                    return Ok(ExitCode::Success);
                }
            }
            let options = BuildOptions {
                tag: tag.clone(),
                mirror: mirror.clone(),
                suite: suite.clone(),
                ..BuildOptions::default()
            };
            let report = build(&options, &|line| eprintln!("sandbox build: {line}")).context("sandbox build failed")?;
            eprintln!(
                "built {} ({} MiB rootfs, {} from {}) in {:.0}s: {}",
                report.tag,
                report.rootfs_bytes >> 20,
                report.suite,
                report.mirror,
                report.elapsed.as_secs_f64(),
                report.pytest_version
            );
            Ok(ExitCode::Success)
        }
        SandboxCommand::Prune => {
            let engine = deepdebug::sandbox::docker::DockerSandbox::connect_engine(DockerConfig::default())?;
            let removed = engine.prune()?;
            eprintln!(
                "removed {} container(s){}",
                removed.len(),
                if removed.is_empty() { String::new() } else { format!(": {}", removed.join(", ")) }
            );
            Ok(ExitCode::Success)
        }
        SandboxCommand::Check { sandbox, python } => {
            let resolved = sandbox.resolve()?;
            let python =
                if resolved.is_container() { deepdebug::sandbox::docker::image_python(python) } else { python };
            println!("sandbox: {} ({})", resolved.kind().name(), resolved.backend_name());
            let checks = self_test(&resolved, python)?;
            let mut failed = 0;
            for check in &checks {
                let mark = match check.verdict {
                    Verdict::Passed => "ok  ",
                    Verdict::Failed => {
                        failed += 1;
                        "FAIL"
                    }
                    Verdict::NotApplicable => "n/a ",
                };
                println!("{mark} {:<20} {}", check.name, check.detail);
            }
            Ok(if failed == 0 { ExitCode::Success } else { ExitCode::Software })
        }
    }
}
