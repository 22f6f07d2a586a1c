//! Batches: several hot-swapped requests validated one after another in one forked child.

use super::{exit_of, session_from, ForkServer, Reply, Request, Transport, BACKSTOP_GRACE};
use crate::process::{kill_group, Exit};
use crate::pytest::{PytestError, Session};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What one request of a batch came to.
#[derive(Debug)]
pub enum BatchItem {
    /// It ran: its session (the time is the request's own, from the end of the one before).
    Ran(Session),
    /// It was not run in the batch: it needs the patched file on disk or a cold session, or
    /// the batch's time was up. Run it alone if it still matters.
    NotRun,
}

impl ForkServer {
    /// Run `requests` (hot swaps of the same scratch copy, whose files stay unpatched) in as
    /// few children as it takes: a child runs them one after another, restoring the swapped
    /// code after each, and the server hands the rest to a fresh child when one times out,
    /// crashes or leaves state behind (see `forkserver.py`). No request starts after `until`.
    /// Each request keeps its own deadline; the host backs each one up as [`ForkServer::run`]
    /// does.
    ///
    /// # Errors
    /// When the server died or stopped answering.
    pub fn run_batch(&mut self, requests: &[Request<'_>], until: Duration) -> Result<Vec<BatchItem>, PytestError> {
        let id = self.next_request()?;
        let reports: Vec<PathBuf> =
            (0..requests.len()).map(|i| self.reports.path().join(format!("report-{id}-{i}.jsonl"))).collect();
        let items: Vec<serde_json::Value> = requests.iter().zip(&reports).map(|(r, p)| r.to_json(p)).collect();
        let message = serde_json::json!({"id": id, "batch": items, "until": until.as_secs_f64()});
        self.transport
            .send(&message.to_string())
            .map_err(|_| PytestError::ServerUnavailable("the fork server closed its input".into()))?;
        let mut follow = Follow { pid: None, killed: false, since: Instant::now(), items: Vec::new() };
        while follow.items.len() < requests.len() {
            let index = follow.items.len();
            let backstop = requests[index].run.session_timeout + BACKSTOP_GRACE;
            let wait =
                if follow.killed { Duration::from_secs(10) } else { backstop.saturating_sub(follow.since.elapsed()) };
            match self.reply(wait)? {
                Some(Reply::Started { id: got, pid }) if got == id => follow.pid = Some(pid),
                Some(Reply::Item { id: got, index: at, status, timed_out, ran }) if got == id && at == index => {
                    let item = if ran {
                        let exit = exit_of(status, timed_out || follow.killed);
                        BatchItem::Ran(session_from(&reports[index], exit, follow.since.elapsed()))
                    } else {
                        let _ = std::fs::remove_file(&reports[index]);
                        BatchItem::NotRun
                    };
                    follow.next(item);
                }
                Some(Reply::Done { id: got, .. }) if got == id => break,
                Some(_) => {}
                None if !follow.killed => {
                    if !self.backstop(&mut follow, &reports) {
                        return Ok(follow.finish(requests.len()));
                    }
                }
                None => return Err(PytestError::ServerUnavailable("a killed child was not reaped".into())),
            }
        }
        if follow.items.len() == requests.len() {
            // The closing `done` of the batch.
            while let Some(reply) = self.reply(Duration::from_secs(10))? {
                if matches!(reply, Reply::Done { id: got, .. } if got == id) {
                    break;
                }
            }
        }
        Ok(follow.finish(requests.len()))
    }

    /// The server let a request's deadline pass without a word: kill the child's group (local
    /// server; the server then reports the request) and return true, or remove the container
    /// (the current request timed out, the rest did not run) and return false.
    fn backstop(&mut self, follow: &mut Follow, reports: &[PathBuf]) -> bool {
        match (&self.transport, follow.pid) {
            (Transport::Local { .. }, Some(pid)) => {
                kill_group(pid, libc::SIGKILL);
                follow.killed = true;
                true
            }
            _ => {
                self.abandon("the fork server ignored a deadline");
                let index = follow.items.len();
                let _ = std::fs::remove_file(&reports[index]);
                follow.next(BatchItem::Ran(Session::empty(Exit::Timeout, follow.since.elapsed())));
                false
            }
        }
    }
}

/// The host's view of a batch under way.
struct Follow {
    /// The current child (a host pid for a local server).
    pid: Option<i32>,
    /// The host killed the current child itself (the server missed its deadline).
    killed: bool,
    /// When the current request began (the previous one's answer).
    since: Instant,
    items: Vec<BatchItem>,
}

impl Follow {
    fn next(&mut self, item: BatchItem) {
        self.items.push(item);
        self.killed = false;
        self.since = Instant::now();
    }

    /// The items, the unanswered ones as not run.
    fn finish(mut self, len: usize) -> Vec<BatchItem> {
        self.items.resize_with(len, || BatchItem::NotRun);
        self.items
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ServerMode, Swap};
    use super::*;
    use crate::pytest::{Pytest, TestOutcome, TestRun};
    use std::path::Path;

    fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            std::fs::write(dir.path().join(rel), text).unwrap();
        }
        dir
    }

    fn server(dir: &Path) -> ForkServer {
        let pytest = Pytest::new(Path::new("python3")).unwrap();
        let server = pytest.fork_server(dir, &[], Duration::from_secs(30)).unwrap();
        assert_eq!(server.mode(), ServerMode::Warm, "{}", server.why());
        assert!(server.batches(), "the server cannot check batches");
        server
    }

    fn request<'a>(nodeids: &'a [String], swap: Swap) -> Request<'a> {
        let run = TestRun {
            exit_first: true,
            per_test_timeout: Some(Duration::from_secs(5)),
            ..TestRun::new(Some(nodeids), Duration::from_secs(20))
        };
        Request { run, swap: Some(swap), frames: false }
    }

    /// The swap of `function` (defined at `line` of `file`) to the statements `source`.
    fn swap(file: &str, function: &str, line: usize, source: &str) -> Swap {
        Swap { file: file.into(), functions: vec![(function.into(), line)], source: Some((line, source.into())) }
    }

    fn outcome(item: &BatchItem) -> TestOutcome {
        match item {
            BatchItem::Ran(session) => session.tests[0].outcome,
            BatchItem::NotRun => panic!("not run"),
        }
    }

    /// The pids the project's tests wrote to `pids.txt`, one per test run.
    fn pids(dir: &Path) -> Vec<String> {
        std::fs::read_to_string(dir.join("pids.txt")).unwrap_or_default().lines().map(str::to_string).collect()
    }

    const CLAMP: &str = "def clamp(x):\n    return min(x, 10)\n";
    const CLAMP_TESTS: &str =
        "import os\nfrom calc import clamp\n\ndef test_clamp():\n    open('pids.txt', 'a').write(f'{os.getpid()}\\n')\n    assert clamp(50) == 20\n";

    #[test]
    fn one_child_runs_each_swap_of_a_batch_against_the_original_code() {
        let dir = project(&[("calc.py", CLAMP), ("test_calc.py", CLAMP_TESTS)]);
        let mut server = server(dir.path());
        let test = vec!["test_calc.py::test_clamp".to_string()];
        let fixed = swap("calc.py", "clamp", 1, "def clamp(x):\n    return min(x, 20)\n");
        let same = swap("calc.py", "clamp", 1, CLAMP);
        let requests = [request(&test, fixed.clone()), request(&test, same), request(&test, fixed)];
        let items = server.run_batch(&requests, Duration::from_secs(60)).unwrap();
        let outcomes: Vec<TestOutcome> = items.iter().map(outcome).collect();
        assert_eq!(outcomes, [TestOutcome::Passed, TestOutcome::Failed, TestOutcome::Passed]);
        let pids = pids(dir.path());
        assert_eq!(pids.len(), 3);
        assert!(pids.iter().all(|p| *p == pids[0]), "more than one child: {pids:?}");
        // The server serves single requests as before.
        let single = server.run(&requests[1]).unwrap();
        assert_eq!(single.tests[0].outcome, TestOutcome::Failed);
    }

    #[test]
    fn fixtures_a_request_stopped_at_its_first_failure_left_set_up_are_torn_down_before_the_next() {
        // Stopped inside test_two.py, a request leaves that module set up; the next request
        // starts in test_one.py, which pytest refuses to set up on top of it.
        let one = "from calc import clamp\n\ndef test_five():\n    assert clamp(5) == 5\n";
        let two = "import pytest\nfrom calc import clamp\n\n@pytest.fixture(scope='module')\ndef limit():\n    yield 20\n\ndef test_clamp(limit):\n    assert clamp(50) == limit\n\ndef test_small(limit):\n    assert clamp(3) == 3\n";
        let dir = project(&[("calc.py", CLAMP), ("test_one.py", one), ("test_two.py", two)]);
        let mut server = server(dir.path());
        let tests: Vec<String> =
            ["test_one.py::test_five", "test_two.py::test_clamp", "test_two.py::test_small"].map(String::from).to_vec();
        let fixed = swap("calc.py", "clamp", 1, "def clamp(x):\n    return min(x, 20)\n");
        let same = swap("calc.py", "clamp", 1, CLAMP);
        let requests = [request(&tests, same.clone()), request(&tests, fixed), request(&tests, same)];
        let items = server.run_batch(&requests, Duration::from_secs(60)).unwrap();
        let outcomes: Vec<Vec<TestOutcome>> = items
            .iter()
            .map(|i| match i {
                BatchItem::Ran(s) => s.tests.iter().map(|t| t.outcome).collect(),
                BatchItem::NotRun => panic!("not run"),
            })
            .collect();
        let (pass, fail) = (TestOutcome::Passed, TestOutcome::Failed);
        assert_eq!(outcomes, [vec![pass, fail], vec![pass, pass, pass], vec![pass, fail]]);
    }

    /// Three requests of one batch, each swapping `function` (its `def` on line `line` of
    /// `calc.py`) to its own code, on `test`, which writes its pid to `pids.txt`: whether
    /// every request passed, and the pids of the children that ran them.
    fn three_requests(module: &str, tests: &str, test: &str, function: &str, line: usize) -> (bool, Vec<String>) {
        let dir = project(&[("calc.py", module), ("test_calc.py", tests)]);
        let mut server = server(dir.path());
        let test = vec![format!("test_calc.py::{test}")];
        let body = module.split_inclusive('\n').skip(line - 1).collect::<String>();
        let requests: Vec<Request<'_>> =
            (0..3).map(|_| request(&test, swap("calc.py", function, line, &body))).collect();
        let items = server.run_batch(&requests, Duration::from_secs(60)).unwrap();
        (items.iter().all(|i| outcome(i) == TestOutcome::Passed), pids(dir.path()))
    }

    #[test]
    fn state_a_request_changes_is_put_back_before_the_next_request_in_the_same_child() {
        // A module-level list and memo, a class attribute and a function attribute: a fresh
        // child would see them as the server has them, and so does the next request.
        let module = "SEEN = []\nMEMO = {}\n\nclass Counter:\n    calls = 0\n\ndef note(x):\n    SEEN.append(x)\n    MEMO[x] = len(SEEN)\n    Counter.calls += 1\n    Counter.last = x\n    note.hits = getattr(note, 'hits', 0) + 1\n    return len(SEEN) + len(MEMO) + Counter.calls + note.hits\n";
        let tests = "import os\nfrom calc import note\n\ndef test_note():\n    open('pids.txt', 'a').write(f'{os.getpid()}\\n')\n    assert note(1) == 4\n";
        let (passed, pids) = three_requests(module, tests, "test_note", "note", 7);
        assert!(passed, "a request saw what the one before it left");
        assert_eq!(pids.len(), 3);
        assert!(pids.iter().all(|p| *p == pids[0]), "the state was put back, yet the child changed: {pids:?}");
    }

    #[test]
    fn state_that_cannot_be_put_back_sends_the_rest_of_the_batch_to_a_fresh_child() {
        let module = "import os\n\ndef mark():\n    os.environ['DEEPDEBUG_MARK'] = os.environ.get('DEEPDEBUG_MARK', '') + 'x'\n    return os.environ['DEEPDEBUG_MARK']\n";
        let tests = "import os\nfrom calc import mark\n\ndef test_mark():\n    open('pids.txt', 'a').write(f'{os.getpid()}\\n')\n    assert mark() == 'x'\n";
        let (passed, pids) = three_requests(module, tests, "test_mark", "mark", 3);
        // Each request sees the environment fresh, as in a child of its own.
        assert!(passed, "a request saw what the one before it left");
        assert_eq!(pids.len(), 3);
        assert!(pids[0] != pids[1] && pids[1] != pids[2], "state leaked within one child: {pids:?}");
    }

    #[test]
    fn a_hanging_request_times_out_and_one_that_cannot_be_swapped_is_left_to_a_single_run() {
        let module = "def spin(n):\n    while n > 0:\n        n += 1\n    return n\n";
        let tests = "from calc import spin\n\ndef test_spin():\n    assert spin(0) == 0\n";
        let dir = project(&[("calc.py", module), ("test_calc.py", tests)]);
        let mut server = server(dir.path());
        let test = vec!["test_calc.py::test_spin".to_string()];
        let hang = swap("calc.py", "spin", 1, &module.replace("n > 0", "n >= 0"));
        let unknown = swap("calc.py", "nowhere", 1, module);
        let same = swap("calc.py", "spin", 1, module);
        let requests = [
            {
                let mut request = request(&test, hang);
                request.run.session_timeout = Duration::from_secs(1);
                request
            },
            request(&test, unknown),
            request(&test, same),
        ];
        let items = server.run_batch(&requests, Duration::from_secs(60)).unwrap();
        assert!(matches!(&items[0], BatchItem::Ran(s) if s.exit.is_timeout()), "{:?}", items[0]);
        assert!(matches!(items[1], BatchItem::NotRun), "{:?}", items[1]);
        assert_eq!(outcome(&items[2]), TestOutcome::Passed);
    }
}
