//! Which engine path validated each candidate, why it left the fast path, and the totals per path.

use crate::pytest::Session;
use crate::python::Parsed;
use crate::repair::candidate::Candidate;
use std::collections::BTreeMap;
use std::time::Duration;

/// How a candidate's first session ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EnginePath {
    /// Hot-swapped in a child that validated several candidates one after another.
    Batch,
    /// Hot-swapped in a child forked for this candidate alone.
    Warm,
    /// A fresh pytest session in a child of the fork server (the project re-imported).
    Cold,
    /// One pytest process (no fork server, or it failed).
    Process,
    /// One container per session (Docker without a fork server).
    Container,
}

impl EnginePath {
    /// Every path, in report order.
    pub const ALL: [EnginePath; 5] =
        [EnginePath::Batch, EnginePath::Warm, EnginePath::Cold, EnginePath::Process, EnginePath::Container];

    /// The name in reports.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            EnginePath::Batch => "batch",
            EnginePath::Warm => "warm",
            EnginePath::Cold => "cold",
            EnginePath::Process => "process",
            EnginePath::Container => "container",
        }
    }

    /// The hot-swap paths, which skip re-importing the project.
    #[must_use]
    pub fn is_fast(self) -> bool {
        matches!(self, EnginePath::Batch | EnginePath::Warm)
    }
}

/// Why a candidate was not hot-swapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OffPath {
    /// The edit is in a module-level statement, outside every function.
    ModuleLevel,
    /// The edit is in a class body, outside its methods.
    ClassBody,
    /// The edited function runs while its module is imported (a decorator factory, a call at
    /// module level): swapping its code after the import changes nothing.
    ImportTime,
    /// The fork server could not collect the suite (or the project starts threads at import),
    /// so every request re-collects.
    ServerCold,
    /// The patched function was not found in the compiled statements.
    NotFound,
    /// No live object at the function's qualified name (defined conditionally, or rebound).
    NotLive,
    /// A decorator replaced the function by an object that does not lead back to it
    /// (no `__wrapped__`).
    Decorator,
    /// Several live functions of that name.
    Ambiguous,
    /// The patched function closes over other variables than the live one.
    Closure,
    /// A test of the request was not collected by the server.
    TestNotCollected,
    /// No fork server: one was not asked for, could not start, or failed.
    NoServer,
    /// A reason this binary does not know (an older or newer server script).
    Other,
}

impl OffPath {
    /// The name in reports.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            OffPath::ModuleLevel => "module-level",
            OffPath::ClassBody => "class-body",
            OffPath::ImportTime => "import-time",
            OffPath::ServerCold => "server-cold",
            OffPath::NotFound => "not-found",
            OffPath::NotLive => "not-live",
            OffPath::Decorator => "decorator",
            OffPath::Ambiguous => "ambiguous",
            OffPath::Closure => "closure",
            OffPath::TestNotCollected => "test-not-collected",
            OffPath::NoServer => "no-server",
            OffPath::Other => "other",
        }
    }

    /// The reason the fork server's child gave (`forkserver.py`'s `prepare`); `None` for
    /// `no-swap`, whose reason the host knows better.
    #[must_use]
    pub fn from_server(why: &str) -> Option<OffPath> {
        Some(match why {
            "no-swap" => return None,
            "server-cold" => OffPath::ServerCold,
            "not-found" => OffPath::NotFound,
            "not-live" => OffPath::NotLive,
            "decorator" => OffPath::Decorator,
            "ambiguous" => OffPath::Ambiguous,
            "closure" => OffPath::Closure,
            "test-not-collected" => OffPath::TestNotCollected,
            _ => OffPath::Other,
        })
    }
}

/// Why a candidate without a [`crate::repair::candidate::Focus`] (an edit outside every
/// function body) cannot be hot-swapped: its first edit lies in a class body or elsewhere at
/// module level.
#[must_use]
pub fn outside_functions(candidate: &Candidate) -> OffPath {
    let Some(edit) = candidate.patch.edits().first() else { return OffPath::ModuleLevel };
    let parsed = Parsed::new(candidate.patched_text.clone());
    let start = edit.range.start.min(parsed.text().len());
    let mut node = parsed.root().descendant_for_byte_range(start, start);
    while let Some(n) = node {
        if n.kind() == "class_definition" {
            return OffPath::ClassBody;
        }
        node = n.parent();
    }
    OffPath::ModuleLevel
}

/// How one candidate was validated: its first session's path and, off the fast path, why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathTaken {
    pub path: EnginePath,
    pub off_path: Option<OffPath>,
}

impl PathTaken {
    /// In a batch child.
    pub const BATCH: PathTaken = PathTaken { path: EnginePath::Batch, off_path: None };

    /// The path of a single `session`: a fork server's child reports warm or cold (and why);
    /// otherwise it was a process or container of its own. `host_why` is the host's reason
    /// when it sent no swap (the edit is outside functions, or runs at import).
    #[must_use]
    pub fn of_session(session: &Session, container: bool, host_why: Option<OffPath>) -> PathTaken {
        match session.warm {
            Some(true) => PathTaken { path: EnginePath::Warm, off_path: None },
            Some(false) => {
                let server = session.cold_why.as_deref().and_then(OffPath::from_server);
                PathTaken { path: EnginePath::Cold, off_path: server.or(host_why).or(Some(OffPath::Other)) }
            }
            None => PathTaken {
                path: if container { EnginePath::Container } else { EnginePath::Process },
                off_path: Some(host_why.unwrap_or(OffPath::NoServer)),
            },
        }
    }
}

/// Candidates and seconds per path, and how often each reason kept candidates off the fast path.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PathTotals {
    pub by_path: BTreeMap<EnginePath, (usize, f64)>,
    pub off_path: BTreeMap<OffPath, usize>,
}

impl PathTotals {
    /// Count one candidate validated in `elapsed`.
    pub fn add(&mut self, taken: PathTaken, elapsed: Duration) {
        let entry = self.by_path.entry(taken.path).or_insert((0, 0.0));
        entry.0 += 1;
        entry.1 += elapsed.as_secs_f64();
        if let Some(why) = taken.off_path {
            *self.off_path.entry(why).or_insert(0) += 1;
        }
    }

    /// Candidates counted.
    #[must_use]
    pub fn candidates(&self) -> usize {
        self.by_path.values().map(|(n, _)| n).sum()
    }

    /// Share of the candidates that took a hot-swap path (0 when there were none).
    #[must_use]
    pub fn fast_share(&self) -> f64 {
        let fast: usize = self.by_path.iter().filter(|(p, _)| p.is_fast()).map(|(_, (n, _))| n).sum();
        #[allow(clippy::cast_precision_loss)]
        let share = fast as f64 / self.candidates().max(1) as f64;
        share
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::Exit;

    fn session(warm: Option<bool>, why: Option<&str>) -> Session {
        let mut s = Session::empty(Exit::Success, Duration::ZERO);
        s.warm = warm;
        s.cold_why = why.map(str::to_string);
        s
    }

    #[test]
    fn a_cold_session_takes_the_servers_reason_and_the_hosts_when_it_sent_no_swap() {
        let closure = PathTaken::of_session(&session(Some(false), Some("closure")), false, None);
        assert_eq!(closure, PathTaken { path: EnginePath::Cold, off_path: Some(OffPath::Closure) });
        let module = PathTaken::of_session(&session(Some(false), Some("no-swap")), false, Some(OffPath::ModuleLevel));
        assert_eq!(module.off_path, Some(OffPath::ModuleLevel));
        let unknown = PathTaken::of_session(&session(Some(false), Some("new-reason")), false, None);
        assert_eq!(unknown.off_path, Some(OffPath::Other));
        let warm = PathTaken::of_session(&session(Some(true), None), false, None);
        assert_eq!(warm, PathTaken { path: EnginePath::Warm, off_path: None });
    }

    #[test]
    fn sessions_without_a_server_are_processes_or_containers() {
        let process = PathTaken::of_session(&session(None, None), false, None);
        assert_eq!(process, PathTaken { path: EnginePath::Process, off_path: Some(OffPath::NoServer) });
        let container = PathTaken::of_session(&session(None, None), true, Some(OffPath::ClassBody));
        assert_eq!(container, PathTaken { path: EnginePath::Container, off_path: Some(OffPath::ClassBody) });
    }

    #[test]
    fn edits_outside_functions_are_told_apart_by_the_class_around_them() {
        use crate::patch::{Edit, Patch};
        let text = "LIMIT = 3\n\nclass A:\n    size = 2\n\n    def f(self):\n        return 1\n";
        let candidate = |at: &str, content: &str| {
            let start = text.find(at).unwrap();
            let patch = Patch::single("m.py", Edit::replacement(start..start + at.len(), content));
            Candidate {
                id: crate::repair::candidate::CandidateId(0),
                patched_text: patch.apply(text),
                patch,
                source: crate::repair::candidate::Provenance::LanguageModel,
                line: 1,
                description: String::new(),
                score: 1.0,
                edit_size: 2,
                deleted_calls: 0,
                focus: None,
            }
        };
        assert_eq!(outside_functions(&candidate("3", "4")), OffPath::ModuleLevel);
        assert_eq!(outside_functions(&candidate("2", "5")), OffPath::ClassBody);
    }

    #[test]
    fn totals_count_candidates_seconds_and_reasons() {
        let mut totals = PathTotals::default();
        totals.add(PathTaken::BATCH, Duration::from_millis(10));
        totals.add(PathTaken::BATCH, Duration::from_millis(30));
        totals
            .add(PathTaken { path: EnginePath::Cold, off_path: Some(OffPath::Decorator) }, Duration::from_millis(200));
        assert_eq!(totals.candidates(), 3);
        assert_eq!(totals.by_path[&EnginePath::Batch].0, 2);
        assert!((totals.by_path[&EnginePath::Batch].1 - 0.04).abs() < 1e-9);
        assert_eq!(totals.off_path[&OffPath::Decorator], 1);
        assert!((totals.fast_share() - 2.0 / 3.0).abs() < 1e-9);
    }
}
