//! Language-model candidates, cloze-style: SmolLM2 rewrites suspicious lines, the rest of a line after a cut, and inserts lines, sampled in the background.

use crate::localize::Localization;
use crate::model::smollm::{LineSampling, Prefix, SampledLine, SmolLm, Until};
use crate::model::ModelError;
use crate::patch::{Edit, Patch};
use crate::project::Project;
use crate::repair::candidate::Proposal;
use crate::repair::candidate::Provenance;
use crate::repair::generate::background::{Background, BackgroundSender, BackgroundSource};
use crate::repair::generate::patcher::ModelTurns;
use crate::repair::generate::widen::{Inbox, Progress, Round, Widening};
use crate::repair::search::SourceKind;
use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Instant;

mod edits;

/// Settings of the language-model source.
#[derive(Debug, Clone)]
pub struct ClozeOptions {
    /// The SmolLM2 GGUF file.
    pub gguf: PathBuf,
    /// How many of the most suspicious lines are rewritten.
    pub max_lines: usize,
    /// Samples per prompt (drawn as one batch).
    pub samples: usize,
    pub temperature: f64,
    pub seed: u64,
    /// Put the failing test's message and the locals of its innermost frame in the function
    /// above the prompt (see `skeleton::trace`).
    pub traces: bool,
}

impl ClozeOptions {
    #[must_use]
    pub fn new(gguf: PathBuf) -> ClozeOptions {
        ClozeOptions { gguf, max_lines: 12, samples: 16, temperature: 0.8, seed: 0, traces: true }
    }
}

/// Prior of a language-model line relative to the operators' (see `Operator::prior`).
const LM_PRIOR: f64 = 0.6;
/// Functions longer than this are not shown twice (buggy, then fixed) in the prompt.
const MAX_SHOWN_LINES: usize = 80;
/// Lines of imports kept at the top of a prompt.
const MAX_IMPORT_LINES: usize = 20;
/// Windows of `max_lines` suspicious lines the plan samples in turn (the first, then the next
/// ones) while the search runs.
const WINDOWS: usize = 4;
/// Windows planned in all: the widening rounds take one more each.
const MAX_WINDOWS: usize = 16;

/// One pass of the sampler: which window of lines, in which prompt form, at what sampling,
/// with which seeds.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Pass {
    window: usize,
    form: Form,
    /// Also rewrite spans of [`SPANS`] lines starting at each target line.
    spans: bool,
    temperature: f64,
    top_p: f64,
    salt: u64,
}

/// How the prompt shows the function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// "# Buggy version", the whole function, then "# Fixed version" and the function again up
    /// to the target line: the model sees the line it rewrites (and tends to copy it).
    Paired,
    /// Only the function up to the target line, after the trace note: what the model would
    /// write there without having seen the line.
    Open,
    /// The paired form with every target line of the function masked (`...` at its
    /// indentation) in the buggy version: the model sees the code around the suspect lines but
    /// not the lines themselves, so it cannot copy them.
    Masked,
}

impl Form {
    /// The forms rounds cycle through: round 0 paired, then open, then masked, and again.
    const CYCLE: [Form; 3] = [Form::Paired, Form::Open, Form::Masked];
}

/// The passes of a round: each window it takes, most suspicious first, at its sampling.
/// Round 0 is every planned window at the configured temperature in the paired form; later
/// rounds (see [`Widening`]) resample them hotter with new seeds, add the next window,
/// cycle through the open, masked and paired forms, and from the third on rewrite spans of
/// lines.
fn round_passes(round: &Round) -> Vec<Pass> {
    let form = Form::CYCLE[round.index % Form::CYCLE.len()];
    let spans = round.index >= 2;
    let pass =
        |window| Pass { window, form, spans, temperature: round.temperature, top_p: round.top_p, salt: round.salt };
    round.order.iter().copied().map(pass).collect()
}

/// Tokens a sample may take per line.
const LINE_TOKENS: usize = 40;
/// Lengths of the spans of lines the later rounds rewrite as one sample.
const SPANS: [usize; 2] = [2, 3];

/// What the background sampler did, for reports and the model bench.
#[derive(Debug, Clone, Default)]
pub struct ClozeStats {
    /// Prompt tokens run (prefills and extensions).
    pub prompt_tokens: usize,
    /// Tokens sampled.
    pub sampled_tokens: usize,
    pub seconds: f64,
    /// Set when the model failed (loading or sampling).
    pub error: Option<String>,
    /// New candidates per finished widening round (the last rounds' zeros: it ran dry).
    pub rounds: Vec<usize>,
}

/// The suspicious lines of one function, planned on the caller's thread (owned data only).
#[derive(Debug, Clone)]
struct FunctionJob {
    file: String,
    /// The file's text (edits are byte ranges into it).
    text: String,
    /// 0-based line of `def` (or its first decorator) and one past the last line.
    first: usize,
    end: usize,
    /// 0-based target lines in ascending order, with their suspiciousness.
    targets: Vec<(usize, f64)>,
    /// Imports (and the class line of a method) shown above the function.
    header: String,
}

/// Candidates sampled from SmolLM2 by a background thread, handed to the search as they come.
pub struct ClozeSource;

impl ClozeSource {
    /// Plan the prompts for the most suspicious lines and start sampling in the background;
    /// `note` (the failing test's trace note, or nothing) goes above each function. With
    /// `turns`, it takes turns with the patcher's thread (see [`ModelTurns`]). Returns the
    /// source and a handle on the sampler's statistics (read after the search).
    #[must_use]
    pub fn start(
        project: &Project,
        localization: &Localization,
        options: &ClozeOptions,
        note: &str,
        turns: Option<Arc<ModelTurns>>,
    ) -> (BackgroundSource, Arc<Mutex<ClozeStats>>) {
        let windows: Vec<Vec<FunctionJob>> = (0..MAX_WINDOWS)
            .map(|w| plan(project, localization, w * options.max_lines, options.max_lines))
            .take_while(|jobs| !jobs.is_empty())
            .collect();
        let (feed, BackgroundSender { tx, stop, paused }) = Background::new();
        let stats = Arc::new(Mutex::new(ClozeStats::default()));
        let lines = |jobs: &Vec<FunctionJob>| jobs.iter().map(|j| (j.file.clone(), j.first + 1, j.end)).collect();
        let (progress, inbox) = Progress::new(Provenance::LanguageModel, windows.iter().map(lines).collect());
        let worker = Worker {
            inbox,
            tx,
            stop,
            paused,
            stats: Arc::clone(&stats),
            options: options.clone(),
            started: Instant::now(),
            turns,
            note: note.to_string(),
            widening: RefCell::new(Widening::new(
                WINDOWS,
                1,
                windows.len(),
                options.temperature,
                LineSampling::default().top_p,
            )),
        };
        std::thread::spawn(move || worker.run(&windows));
        (BackgroundSource::new(SourceKind::LanguageModel, feed, progress), stats)
    }
}

/// The function of `job` with each of its target lines replaced by `...` at the line's
/// indentation.
fn masked(lines: &[&str], job: &FunctionJob) -> String {
    (job.first..job.end.min(lines.len()))
        .map(|i| {
            if job.targets.iter().any(|&(t, _)| t == i) {
                let line = lines[i];
                let indent = &line[..line.len() - line.trim_start().len()];
                format!("{indent}...\n")
            } else {
                lines[i].to_string()
            }
        })
        .collect()
}

/// Group `max_lines` suspicious lines (after the `skip` most suspicious) by function, most
/// suspicious function first.
fn plan(project: &Project, localization: &Localization, skip: usize, max_lines: usize) -> Vec<FunctionJob> {
    let mut jobs: Vec<FunctionJob> = Vec::new();
    for susp in localization.lines.iter().skip(skip).take(max_lines) {
        let Some(file) = project.file(&susp.file) else { continue };
        let defs = crate::python::functions(&file.parsed);
        let Some(def) = defs
            .iter()
            .filter(|d| d.start_line <= susp.line && susp.line <= d.end_line)
            .min_by_key(|d| d.end_line - d.start_line)
        else {
            continue;
        };
        let (first, end) = (def.start_line - 1, def.end_line);
        // The `def` header (and decorators) are no place for a fix the model can guess.
        let body_line = file.parsed.text()[..def.body_byte_range.start].matches('\n').count() + 1;
        if susp.line < body_line {
            continue;
        }
        let target = (susp.line - 1, susp.score);
        match jobs.iter_mut().find(|j| j.file == susp.file && j.first == first) {
            Some(job) => job.targets.push(target),
            None => jobs.push(FunctionJob {
                file: susp.file.clone(),
                text: file.parsed.text().to_string(),
                first,
                end,
                targets: vec![target],
                header: header(file.parsed.text(), def.class.as_deref(), first),
            }),
        }
    }
    for job in &mut jobs {
        job.targets.sort_by_key(|t| t.0);
        job.targets.dedup_by_key(|t| t.0);
    }
    jobs
}

/// The file's top-level imports and, for a method, the nearest `class` line above it.
pub(crate) fn header(text: &str, class: Option<&str>, first: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("import ") || l.starts_with("from "))
        .take(MAX_IMPORT_LINES)
        .collect();
    if class.is_some() {
        if let Some(line) = lines[..first.min(lines.len())].iter().rev().find(|l| l.starts_with("class ")) {
            out.push(line);
        }
    }
    let mut header = out.join("\n");
    if !header.is_empty() {
        header.push_str("\n\n");
    }
    header
}

/// The background sampler.
struct Worker {
    tx: Sender<Vec<Proposal>>,
    stop: Arc<AtomicBool>,
    /// Hold the model while the search scores and confirms plausible patches.
    paused: Arc<AtomicBool>,
    stats: Arc<Mutex<ClozeStats>>,
    options: ClozeOptions,
    started: Instant,
    turns: Option<Arc<ModelTurns>>,
    /// The trace note shown above the buggy function.
    note: String,
    /// The rounds, and the candidates proposed so far (duplicates are not sent).
    widening: RefCell<Widening>,
    /// Credit for the windows whose candidates made progress (applied before each round).
    inbox: Inbox,
}

impl Worker {
    /// Round after round over its windows of lines, until the search stops or the rounds
    /// bring no new candidate.
    fn run(&self, windows: &[Vec<FunctionJob>]) {
        let result = SmolLm::load_cpu(&self.options.gguf).and_then(|lm| loop {
            self.inbox.apply(&mut self.widening.borrow_mut());
            let Some(round) = self.widening.borrow_mut().next_round() else { return Ok(()) };
            // The rounds finished so far, readable while this thread still samples.
            self.stats.lock().expect("cloze stats").rounds = self.widening.borrow().history().to_vec();
            for pass in round_passes(&round) {
                for job in &windows[pass.window] {
                    if self.stopped() {
                        return Ok(());
                    }
                    self.function(&lm, job, pass)?;
                }
                if let (0, Some(turns)) = (pass.window, &self.turns) {
                    turns.first_window_done();
                }
            }
        });
        if let Some(turns) = &self.turns {
            turns.lines_done();
        }
        let mut stats = self.stats.lock().expect("cloze stats");
        stats.seconds = self.started.elapsed().as_secs_f64();
        stats.rounds = self.widening.borrow().history().to_vec();
        if let Err(err) = result {
            stats.error = Some(err.to_string());
        }
    }

    /// The search is over; while it is paused, waits here (every step of the model asks).
    fn stopped(&self) -> bool {
        while self.paused.load(Ordering::SeqCst) && !self.stop.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        self.stop.load(Ordering::SeqCst)
    }

    /// Prompt: header, trace note, in the paired form the buggy function and "# Fixed
    /// version", then the function up to each target line in turn (one cache, extended line by
    /// line).
    fn function(&self, lm: &SmolLm, job: &FunctionJob, pass: Pass) -> Result<(), ModelError> {
        let lines: Vec<&str> = job.text.split_inclusive('\n').collect();
        let function: String = lines[job.first..job.end.min(lines.len())].concat();
        let shown = job.end - job.first <= MAX_SHOWN_LINES && pass.form != Form::Open;
        let base = if shown {
            let buggy = if pass.form == Form::Masked { masked(&lines, job) } else { function };
            format!("{}{}# Buggy version\n{}\n\n# Fixed version\n", job.header, self.note, buggy.trim_end())
        } else {
            format!("{}{}", job.header, self.note)
        };
        let Some(mut cursor) = self.extend(lm, None, &base)? else { return Ok(()) };
        let mut at = job.first;
        for &(target, score) in &job.targets {
            if self.stopped() {
                return Ok(());
            }
            let _turn = self.turns.as_ref().map(|t| t.lines_turn());
            let before: String = lines[at..target].concat();
            let Some(next) = self.extend(lm, Some(&cursor), &before)? else { return Ok(()) };
            cursor = next;
            at = target;
            self.line(lm, job, &cursor, &lines, (target, score), pass)?;
        }
        Ok(())
    }

    /// `prefix` (or nothing) continued by `text`; `None` when the search stopped meanwhile.
    fn extend(&self, lm: &SmolLm, prefix: Option<&Prefix>, text: &str) -> Result<Option<Prefix>, ModelError> {
        let stop = || self.stopped();
        let out = match prefix {
            Some(prefix) => lm.extend_until(prefix, text, &stop)?,
            None => lm.extend_until(&lm.empty_prefix()?, text, &stop)?,
        };
        if let Some(out) = &out {
            let added = out.len() - prefix.map_or(0, Prefix::len);
            self.stats.lock().expect("cloze stats").prompt_tokens += added;
        }
        Ok(out)
    }

    /// The variants at one target line: the whole line, the rest after each cut, a new line
    /// after it.
    fn line(
        &self,
        lm: &SmolLm,
        job: &FunctionJob,
        cursor: &Prefix,
        lines: &[&str],
        (target, score): (usize, f64),
        pass: Pass,
    ) -> Result<(), ModelError> {
        let line = lines[target].trim_end_matches('\n');
        let indent = &line[..line.len() - line.trim_start().len()];
        let offset: usize = lines[..target].iter().map(|l| l.len()).sum();
        let following = following(lines, target, offset + lines[target].len());
        let site = Site { job, offset, line, indent, target, score, following };
        // Ending the prompt with the indentation keeps the model on code (not a blank line).
        if let Some(indented) = self.extend(lm, Some(cursor), indent)? {
            self.sample(lm, &indented, &site, Variant::Whole, pass)?;
        }
        for cut in cuts(line) {
            if let Some(prefix) = self.extend(lm, Some(cursor), &line[..cut])? {
                self.sample(lm, &prefix, &site, Variant::After(cut), pass)?;
            }
        }
        if let Some(after) = self.extend(lm, Some(cursor), lines[target])? {
            self.sample(lm, &after, &site, Variant::Insert, pass)?;
        }
        for span in SPANS.into_iter().filter(|&n| pass.spans && target + n <= job.end) {
            if let Some(indented) = self.extend(lm, Some(cursor), indent)? {
                self.sample(lm, &indented, &site, Variant::Span(span), pass)?;
            }
        }
        Ok(())
    }

    fn sample(
        &self,
        lm: &SmolLm,
        prefix: &Prefix,
        site: &Site<'_>,
        variant: Variant,
        pass: Pass,
    ) -> Result<(), ModelError> {
        if self.stopped() {
            return Ok(());
        }
        let options = LineSampling {
            n: self.options.samples,
            max_tokens: LINE_TOKENS * variant.lines(),
            until: Until::Lines(variant.lines()),
            temperature: pass.temperature,
            top_p: pass.top_p,
            seed: self.options.seed.wrapping_add(site.target as u64 * 31 + variant.salt() + pass.salt),
        };
        let stop = || self.stopped();
        let samples = lm.sample_lines(prefix, &options, &stop)?;
        {
            let mut stats = self.stats.lock().expect("cloze stats");
            stats.sampled_tokens += samples.iter().map(|s| s.tokens).sum::<usize>();
            stats.seconds = self.started.elapsed().as_secs_f64();
        }
        let mut widening = self.widening.borrow_mut();
        let proposals: Vec<Proposal> =
            proposals(site, variant, &samples).into_iter().filter(|p| widening.record(&p.patch)).collect();
        if !proposals.is_empty() && self.tx.send(proposals).is_err() {
            // The search is over.
            self.stop.store(true, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// Where a target line is.
struct Site<'j> {
    job: &'j FunctionJob,
    /// Byte offset of the line in the file.
    offset: usize,
    /// The line without its newline.
    line: &'j str,
    indent: &'j str,
    target: usize,
    score: f64,
    /// The first non-blank line after the target.
    following: Option<Following<'j>>,
}

/// A line after the target: its index, byte offset and text (without its newline).
#[derive(Debug, Clone, Copy)]
struct Following<'j> {
    index: usize,
    offset: usize,
    line: &'j str,
}

impl<'j> Following<'j> {
    fn indent(&self) -> &'j str {
        &self.line[..self.line.len() - self.line.trim_start().len()]
    }
}

/// The first non-blank line after `target`, whose lines start at byte `offset`.
fn following<'j>(lines: &[&'j str], target: usize, mut offset: usize) -> Option<Following<'j>> {
    for (index, line) in lines.iter().enumerate().skip(target + 1) {
        let text = line.trim_end_matches(['\n', '\r']);
        if !text.trim().is_empty() {
            return Some(Following { index, offset, line: text });
        }
        offset += line.len();
    }
    None
}

/// What one sample proposes: the edit, the new line, its 1-based line number and what it does.
#[derive(Debug, Clone, PartialEq)]
struct Change {
    edit: Edit,
    new_line: String,
    line: usize,
    what: &'static str,
}

/// What a sample replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// The whole line (its indentation kept).
    Whole,
    /// The line from this byte on.
    After(usize),
    /// A new line after the target.
    Insert,
    /// This many lines from the target on (the first one's indentation kept).
    Span(usize),
}

impl Variant {
    fn salt(self) -> u64 {
        match self {
            Variant::Whole => 1,
            Variant::After(cut) => 2 + cut as u64,
            Variant::Insert => 7,
            Variant::Span(n) => 11 + n as u64,
        }
    }

    /// Lines a sample holds.
    fn lines(self) -> usize {
        match self {
            Variant::Span(n) => n,
            Variant::Whole | Variant::After(_) | Variant::Insert => 1,
        }
    }
}

/// Complete, distinct samples as proposals, each rewrite followed by the smaller rewrites it
/// contains ([`edits::partial_rewrites`]); a sample repeating the line is dropped.
fn proposals(site: &Site<'_>, variant: Variant, samples: &[SampledLine]) -> Vec<Proposal> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for sample in samples.iter().filter(|s| s.complete && !s.text.trim().is_empty()) {
        let Some(text) = without_comment(site, variant, &sample.text) else { continue };
        let Some(change) = edit(site, variant, text) else { continue };
        let per_token = if sample.tokens == 0 { 0.0 } else { (sample.nats / sample.tokens as f64).exp() };
        let score = site.score * LM_PRIOR * (0.3 + 0.7 * per_token);
        let whole_line = matches!(variant, Variant::Whole | Variant::After(_));
        let parts = if whole_line { partial_changes(site, &change) } else { Vec::new() };
        for change in std::iter::once(change).chain(parts) {
            if !seen.insert(change.new_line.clone()) {
                continue;
            }
            out.push(Proposal {
                patch: Patch::single(site.job.file.clone(), change.edit),
                source: Provenance::LanguageModel,
                line: change.line,
                description: format!("{} `{}`", change.what, one_line(&change.new_line)),
                score,
            });
        }
    }
    out
}

/// The smaller rewrites of the target line inside a rewrite `change` of it.
fn partial_changes(site: &Site<'_>, change: &Change) -> Vec<Change> {
    let code_start = site.offset + site.indent.len();
    let line_end = site.offset + site.line.len();
    edits::partial_rewrites(site.line, &change.new_line)
        .into_iter()
        .map(|new_line| Change {
            edit: Edit::replacement(code_start..line_end, new_line.trim()),
            new_line,
            line: site.target + 1,
            what: "rewrite",
        })
        .collect()
}

/// A sample without the comment the model may have appended (it changes nothing, and its
/// tokens cost the patch likelihood in ranking); `None` when nothing but a comment is left.
fn without_comment<'s>(site: &Site<'_>, variant: Variant, sample: &'s str) -> Option<&'s str> {
    let before = match variant {
        Variant::After(cut) => &site.line[..cut],
        Variant::Whole | Variant::Insert | Variant::Span(_) => "",
    };
    let end = comment_start(&format!("{before}{sample}")).map_or(sample.len(), |at| at.saturating_sub(before.len()));
    let code = sample[..end.min(sample.len())].trim_end();
    (!code.trim().is_empty()).then_some(code)
}

/// Byte offset of a `#` comment in one line of Python (outside string literals).
pub(crate) fn comment_start(line: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(_), _) if escaped => escaped = false,
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (None, '\'' | '"') => quote = Some(c),
            (None, '#') => return Some(i),
            _ => {}
        }
    }
    None
}

/// The edit a sample makes, and the new line's text.
fn edit(site: &Site<'_>, variant: Variant, sample: &str) -> Option<Change> {
    let code_start = site.offset + site.indent.len();
    let line_end = site.offset + site.line.len();
    let rewrite = |edit, new_line| Change { edit, new_line, line: site.target + 1, what: "rewrite" };
    match variant {
        Variant::Whole => {
            let new = sample.trim();
            (new != site.line.trim())
                .then(|| rewrite(Edit::replacement(code_start..line_end, new), format!("{}{new}", site.indent)))
        }
        Variant::After(cut) => {
            let glued = |a: Option<char>, b: Option<char>| a.zip(b).is_some_and(|(a, b)| is_word(a) && is_word(b));
            if glued(site.line[..cut].chars().next_back(), sample.chars().next()) {
                return None;
            }
            let new = format!("{}{}", &site.line[..cut], sample.trim_end());
            (new.trim_end() != site.line.trim_end())
                .then(|| rewrite(Edit::replacement(site.offset + cut..line_end, sample.trim_end()), new))
        }
        Variant::Insert => insertion(site, sample),
        Variant::Span(n) => span(site, n, sample),
    }
}

/// The `n` lines from the target on, replaced by the sample's lines (the first at the target's
/// indentation, the others at the model's; comments dropped).
fn span(site: &Site<'_>, n: usize, sample: &str) -> Option<Change> {
    let code_start = site.offset + site.indent.len();
    let old: Vec<&str> = site.job.text[site.offset..].split_inclusive('\n').take(n).collect();
    if old.len() < n {
        return None;
    }
    let end = site.offset + old.concat().trim_end_matches(['\n', '\r']).len();
    let new_lines: Vec<&str> = sample
        .lines()
        .map(|line| line[..comment_start(line).unwrap_or(line.len())].trim_end())
        .filter(|line| !line.trim().is_empty())
        .collect();
    let new = new_lines.join("\n");
    let new = new.trim_start();
    let unchanged = new.trim_end() == site.job.text[code_start..end].trim_end();
    (!new.is_empty() && !unchanged).then(|| Change {
        edit: Edit::replacement(code_start..end, new),
        new_line: format!("{}{new}", site.indent),
        line: site.target + 1,
        what: "rewrite",
    })
}

/// A rewrite's text on one line (a span's lines joined by `; `) for descriptions.
fn one_line(text: &str) -> String {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}

/// A new line after the target. Its indentation is the model's when that opens a block
/// (deeper than the line's) or returns to the next line's level (after a `return` that ends
/// a block), else the line's. A `return`/`raise`/`continue`/`break` inserted before a simple
/// statement at its own level would leave that statement dead: it replaces it instead.
fn insertion(site: &Site<'_>, sample: &str) -> Option<Change> {
    let line_end = site.offset + site.line.len();
    let body = sample.trim_start();
    let given = &sample[..sample.len() - body.len()];
    let spaces = given.chars().all(|c| c == ' ');
    let next_indent = site.following.map(|f| f.indent());
    let indent =
        if spaces && (given.len() >= site.indent.len() || next_indent == Some(given)) { given } else { site.indent };
    let body = body.trim_end();
    let new = format!("{indent}{body}");
    if let Some(next) = site.following.filter(|f| f.indent() == indent && edits::is_terminal(body)) {
        let code = next.line.trim_start();
        if edits::is_simple_statement(code) {
            let start = next.offset + indent.len();
            return (code.trim_end() != body).then(|| Change {
                edit: Edit::replacement(start..next.offset + next.line.len(), body),
                new_line: new,
                line: next.index + 1,
                what: "rewrite",
            });
        }
    }
    Some(Change {
        edit: Edit::replacement(line_end..line_end, format!("\n{new}")),
        new_line: new,
        line: site.target + 2,
        what: "insert",
    })
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Byte offsets inside `line` after which the rest of the line is worth resampling: after
/// the statement's `=`/`return`/`if`/`while`/`elif`, after the last `(` and after the last `.`.
pub(crate) fn cuts(line: &str) -> Vec<usize> {
    let code = line.trim_start();
    let indent = line.len() - code.len();
    let mut out = Vec::new();
    // Cuts fall before a space: the model's tokens carry their leading space.
    for keyword in ["return ", "if ", "elif ", "while ", "yield "] {
        if code.starts_with(keyword) {
            out.push(indent + keyword.len() - 1);
        }
    }
    if let Some(eq) = assignment(code) {
        out.push(indent + eq);
    }
    for ch in ['(', '.'] {
        if let Some(at) = code.rfind(ch) {
            out.push(indent + at + 1);
        }
    }
    out.retain(|&c| c < line.len());
    out.sort_unstable();
    out.dedup();
    out
}

/// Byte offset just past the `=` of a plain or augmented assignment, if `code` is one.
fn assignment(code: &str) -> Option<usize> {
    let bytes = code.as_bytes();
    let mut depth = 0i32;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'\'' | b'"' | b'#' => return None,
            b'=' if depth == 0 => {
                let prev = i.checked_sub(1).map(|p| bytes[p]);
                let next = bytes.get(i + 1).copied();
                if next == Some(b'=') || matches!(prev, Some(b'=' | b'!' | b'<' | b'>')) {
                    return None;
                }
                return Some(i + 1);
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paused_worker_waits_at_its_next_step_until_resumed_or_stopped() {
        let (tx, _rx) = std::sync::mpsc::channel();
        let (stop, paused) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(true)));
        let worker = Worker {
            tx,
            stop: Arc::clone(&stop),
            paused: Arc::clone(&paused),
            stats: Arc::new(Mutex::new(ClozeStats::default())),
            options: ClozeOptions::new(std::path::PathBuf::from("unused.gguf")),
            started: Instant::now(),
            turns: None,
            note: String::new(),
            widening: RefCell::new(Widening::new(WINDOWS, 1, 1, 0.8, 0.95)),
            inbox: Inbox::default(),
        };
        let resume = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(150));
            paused.store(false, Ordering::SeqCst);
        });
        let start = Instant::now();
        assert!(!worker.stopped(), "resumed, not stopped");
        assert!(start.elapsed() >= std::time::Duration::from_millis(150));
        resume.join().unwrap();
        worker.paused.store(true, Ordering::SeqCst);
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            stop.store(true, Ordering::SeqCst);
        });
        assert!(worker.stopped(), "a stop ends the pause");
        stopper.join().unwrap();
    }

    #[test]
    fn comments_the_model_appends_are_dropped_but_hashes_in_strings_stay() {
        assert_eq!(comment_start("x = 1  # one"), Some(7));
        assert_eq!(comment_start("s = '#' + \"#\"  # two"), Some(15));
        assert_eq!(comment_start("s = 'it\\'s # not'"), None);
        let line = "    return f(x, '#')";
        let job = FunctionJob {
            file: "m.py".into(),
            text: format!("{line}\n"),
            first: 0,
            end: 1,
            targets: vec![],
            header: String::new(),
        };
        let site = site(&job, line);
        assert_eq!(without_comment(&site, Variant::Whole, "return g(x)  # better"), Some("return g(x)"));
        assert_eq!(without_comment(&site, Variant::Insert, "# just a note"), None);
        let cut = line.find('(').unwrap() + 1;
        assert_eq!(without_comment(&site, Variant::After(cut), "x, '#')  # ok"), Some("x, '#')"));
    }

    #[test]
    fn the_masked_form_hides_the_target_lines_at_their_indentation() {
        let text = "import os\n\ndef f(a):\n    b = a + 1\n    if b:\n        return b * 2\n    return 0\n";
        let job = FunctionJob {
            file: "m.py".into(),
            text: text.into(),
            first: 2,
            end: 7,
            targets: vec![(3, 0.9), (5, 0.5)],
            header: String::new(),
        };
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        assert_eq!(masked(&lines, &job), "def f(a):\n    ...\n    if b:\n        ...\n    return 0\n");
    }

    #[test]
    fn rounds_take_the_plans_windows_then_resample_them_hotter_and_add_the_next() {
        let mut widening = Widening::new(WINDOWS, 1, 6, 0.8, 0.95);
        let first = round_passes(&widening.next_round().unwrap());
        assert_eq!(first.iter().map(|p| p.window).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!((first[0].temperature, first[0].salt), (0.8, 0));
        let second = round_passes(&widening.next_round().unwrap());
        assert_eq!(second.iter().map(|p| p.window).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        assert!(second[0].temperature > first[0].temperature && second[0].salt != first[0].salt);
        assert!(first.iter().all(|p| p.form == Form::Paired) && second.iter().all(|p| p.form == Form::Open));
        let third = round_passes(&widening.next_round().unwrap());
        assert_eq!(third[0].form, Form::Masked);
        assert_eq!(round_passes(&widening.clone().next_round().unwrap())[0].form, Form::Paired, "then again");
        assert!(!first[0].spans && !second[0].spans && third.iter().all(|p| p.spans), "spans from round 2 on");
        let mut one_window = Widening::new(WINDOWS, 1, 1, 0.8, 0.95);
        assert_eq!(round_passes(&one_window.next_round().unwrap()).len(), 1);
        assert!(round_passes(&Widening::new(WINDOWS, 1, 0, 0.8, 0.95).next_round().unwrap()).is_empty());
    }

    #[test]
    fn cuts_fall_after_the_statement_head_the_last_call_paren_and_the_last_dot() {
        let line = "    total = sum(x.price for x in items)";
        let cuts: Vec<&str> = cuts(line).into_iter().map(|c| &line[c..]).collect();
        assert_eq!(cuts, vec![" sum(x.price for x in items)", "x.price for x in items)", "price for x in items)"]);
        assert_eq!(cuts_of("    return a.strip()"), vec![" a.strip()", "strip()", ")"]);
        assert_eq!(cuts_of("    if a == b:"), vec![" a == b:"]);
        assert!(assignment("x == y").is_none() && assignment("f(a=1)").is_none());
        assert_eq!(assignment("n += 1"), Some(4));
    }

    fn cuts_of(line: &str) -> Vec<&str> {
        cuts(line).into_iter().map(|c| &line[c..]).collect()
    }

    fn site<'j>(job: &'j FunctionJob, line: &'j str) -> Site<'j> {
        let offset = job.text.find(line).unwrap();
        let lines: Vec<&str> = job.text.split_inclusive('\n').collect();
        let target = lines.iter().position(|l| l.trim_end() == line).unwrap();
        let following = following(&lines, target, offset + lines[target].len());
        Site { job, offset, line, indent: "    ", target, score: 1.0, following }
    }

    #[test]
    fn samples_become_edits_of_the_line_keeping_its_indentation() {
        let text = "def f(xs):\n    return xs.keys()\n";
        let job = FunctionJob {
            file: "m.py".into(),
            text: text.into(),
            first: 0,
            end: 2,
            targets: vec![(1, 1.0)],
            header: String::new(),
        };
        let site = site(&job, "    return xs.keys()");
        let apply =
            |variant, sample: &str| edit(&site, variant, sample).map(|c| Patch::single("m.py", c.edit).apply(text));
        assert_eq!(
            apply(Variant::Whole, "  return list(xs.items())").unwrap(),
            "def f(xs):\n    return list(xs.items())\n"
        );
        assert_eq!(apply(Variant::After(14), "values()").unwrap(), "def f(xs):\n    return xs.values()\n");
        assert_eq!(apply(Variant::After(10), " list(xs)").unwrap(), "def f(xs):\n    return list(xs)\n");
        assert_eq!(apply(Variant::After(10), "xs"), None, "a sample glued to the keyword is no candidate");
        assert_eq!(
            apply(Variant::Insert, "    print(xs)").unwrap(),
            "def f(xs):\n    return xs.keys()\n    print(xs)\n"
        );
        assert_eq!(apply(Variant::Whole, "return xs.keys()"), None, "a sample repeating the line is no candidate");
        let samples = [
            SampledLine { text: "return xs.items()".into(), nats: -1.0, tokens: 4, complete: true },
            SampledLine { text: "return xs.items()".into(), nats: -2.0, tokens: 4, complete: true },
            SampledLine { text: "return xs.it".into(), nats: -1.0, tokens: 3, complete: false },
        ];
        let got = proposals(&site, Variant::Whole, &samples);
        assert_eq!(got.len(), 1, "duplicates and cut-off samples are dropped");
        assert!(got[0].score > 0.0 && got[0].score <= LM_PRIOR);
    }

    #[test]
    fn a_span_sample_rewrites_that_many_lines_from_the_target_on() {
        let text = "def f(xs):\n    n = len(xs)\n    m = n - 1\n    return xs[m]\n";
        let job = job(text);
        let site = site(&job, "    n = len(xs)");
        let change = edit(&site, Variant::Span(2), "if not xs:  # empty\n        return None").unwrap();
        assert_eq!(
            Patch::single("m.py", change.edit).apply(text),
            "def f(xs):\n    if not xs:\n        return None\n    return xs[m]\n"
        );
        assert_eq!(one_line(&change.new_line), "if not xs:; return None");
        assert_eq!(edit(&site, Variant::Span(2), "n = len(xs)\n    m = n - 1"), None, "the same lines: no change");
        let three = edit(&site, Variant::Span(3), "return xs[-1]").unwrap();
        assert_eq!(Patch::single("m.py", three.edit).apply(text), "def f(xs):\n    return xs[-1]\n");
        assert_eq!(edit(&site, Variant::Span(4), "pass"), None, "past the end of the text");
        let samples =
            [SampledLine { text: "m = len(xs) - 1\n    return xs[m]".into(), nats: -2.0, tokens: 9, complete: true }];
        let got = proposals(&site, Variant::Span(2), &samples);
        assert_eq!(got.len(), 1, "no smaller rewrites of a span: {got:?}");
    }

    fn job(text: &str) -> FunctionJob {
        let end = text.lines().count();
        FunctionJob { file: "m.py".into(), text: text.into(), first: 0, end, targets: vec![], header: String::new() }
    }

    #[test]
    fn a_return_inserted_before_a_statement_it_would_leave_dead_replaces_that_statement() {
        let text = "def f(d, t):\n    d = min(d, t)\n    return round(d / t * 10, 1)\n";
        let job = job(text);
        let site = site(&job, "    d = min(d, t)");
        let change = edit(&site, Variant::Insert, "    return round(d / t * 100, 1)").unwrap();
        assert_eq!((change.what, change.line), ("rewrite", 3));
        assert_eq!(Patch::single("m.py", change.edit).apply(text), text.replace("* 10,", "* 100,"));
        assert_eq!(edit(&site, Variant::Insert, "    return round(d / t * 10, 1)"), None, "the same line: no change");
        let other = edit(&site, Variant::Insert, "    d = d or 1").unwrap();
        assert_eq!((other.what, other.line), ("insert", 3), "other statements are inserted");
    }

    #[test]
    fn an_insertion_after_a_raise_may_return_to_the_next_lines_level() {
        let text = "def w(self, a):\n    if a > self.b:\n        raise ValueError(a)\n    self.log.append(a)\n";
        let job = job(text);
        let site = Site { indent: "        ", ..site(&job, "        raise ValueError(a)") };
        let change = edit(&site, Variant::Insert, "    self.b -= a").unwrap();
        assert_eq!(
            Patch::single("m.py", change.edit).apply(text),
            "def w(self, a):\n    if a > self.b:\n        raise ValueError(a)\n    self.b -= a\n    self.log.append(a)\n"
        );
        let odd = edit(&site, Variant::Insert, "  x = 1").unwrap();
        assert_eq!(odd.new_line, "        x = 1", "an indentation of no enclosing block is the line's");
    }

    #[test]
    fn a_rewrite_is_proposed_with_the_smaller_rewrites_inside_it() {
        let text = "def s(sub, tax, ship):\n    total = round(sub + tax, 2)\n    return total\n";
        let job = job(text);
        let site = site(&job, "    total = round(sub + tax, 2)");
        let samples = [SampledLine { text: "total = sub + tax + ship".into(), nats: -1.0, tokens: 6, complete: true }];
        let got: Vec<String> = proposals(&site, Variant::Whole, &samples).into_iter().map(|p| p.description).collect();
        assert_eq!(got[0], "rewrite `total = sub + tax + ship`");
        assert!(got.contains(&"rewrite `total = round(sub + tax + ship, 2)`".to_string()), "{got:?}");
    }

    #[test]
    fn a_methods_prompt_header_has_the_imports_and_its_class_line() {
        let text = "import os\nfrom a import b\n\nX = 1\n\nclass Box:\n    def f(self):\n        return 1\n";
        assert_eq!(header(text, Some("Box"), 6), "import os\nfrom a import b\nclass Box:\n\n");
        assert_eq!(header("def f():\n    pass\n", None, 0), "");
    }
}
