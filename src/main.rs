//! Command-line entry point: parses arguments and dispatches to subcommands.

mod cli;

use clap::{Parser, Subcommand};
use deepdebug::exit_code::ExitCode;

#[derive(Parser)]
#[command(name = "deepdebug", version, about = "Automatic repair of Python programs", args_override_self = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Find a patch that makes the failing pytest tests pass, and print it as a diff.
    Fix(cli::fix::FixArgs),
    /// Learn repair-operator priors from mined fix pairs (JSONL with `before`/`after`).
    Priors(cli::priors::PriorsArgs),
    #[command(flatten)]
    Debugger(cli::debugger::DebuggerCommand),
    /// Sandboxes for test runs: build the Docker image, run the isolation self-test.
    #[command(subcommand)]
    Sandbox(cli::sandbox::SandboxCommand),
}

fn main() -> std::process::ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() { ExitCode::Usage.into() } else { ExitCode::Success.into() };
        }
    };
    let result = match cli.command {
        Command::Fix(args) => cli::fix::run(&args),
        Command::Priors(args) => cli::priors::run(&args),
        Command::Debugger(command) => cli::debugger::run(command).map(|()| ExitCode::Success),
        Command::Sandbox(command) => cli::sandbox::run(&command),
    };
    match result {
        Ok(code) => code.into(),
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::Software.into()
        }
    }
}
