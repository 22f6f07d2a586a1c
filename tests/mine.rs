//! Integration tests for `deepdebug mine` on real git repositories built with the git CLI.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use deepdebug::mine::{mine, Checkpoint, MineConfig, MineError, MineReport, PairRow, RepoOutcome, Shard};
use std::path::{Path, PathBuf};
use std::process::Command;
use tempfile::TempDir;

/// A scratch git repository driven through the `git` CLI with a hermetic configuration.
struct Repo {
    path: PathBuf,
    tick: u32,
}

fn git_command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com");
    cmd
}

fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = git_command(dir).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl Repo {
    fn init(path: PathBuf) -> Repo {
        std::fs::create_dir_all(&path).unwrap();
        git_in(&path, &["init", "-q", "-b", "main"]);
        Repo { path, tick: 0 }
    }

    fn write(&self, file: &str, content: impl AsRef<[u8]>) -> &Repo {
        let p = self.path.join(file);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
        self
    }

    fn git(&self, args: &[&str]) -> String {
        git_in(&self.path, args)
    }

    /// Stage everything and commit with `message` at the next fake timestamp; returns the id.
    fn add_commit(&mut self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.tick += 1;
        let date = format!("2020-01-01T00:{:02}:{:02}+00:00", self.tick / 60, self.tick % 60);
        let out = git_command(&self.path)
            .args(["commit", "-q", "--allow-empty", "-m", message])
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        self.git(&["rev-parse", "HEAD"])
    }
}

const V1: &str = "import os\n\nclass Account:\n    def deposit(self, amount):\n        # add money\n        self.balance += amount\n        return self.balance\n\n    def withdraw(self, amount):\n        self.balance += amount\n        return self.balance\n\ndef helper(x):\n    return x * 2\n";

/// Fix in `withdraw` (`+=` to `-=`) plus a comment-and-spacing-only change in `deposit`.
const V2_FIX: &str = "import os\n\nclass Account:\n    def deposit(self, amount):\n        # add money to the account\n        self.balance  +=  amount\n        return self.balance\n\n    def withdraw(self, amount):\n        self.balance -= amount\n        return self.balance\n\ndef helper(x):\n    return x * 2\n";

/// A repository with: initial commit, a non-fix edit, a fix commit with one real fix.
fn basic_repo(dir: &Path, name: &str) -> (Repo, String) {
    let mut repo = Repo::init(dir.join(name));
    repo.write("bank/account.py", V1);
    repo.add_commit("Initial import");
    repo.write("bank/account.py", V1.replace("x * 2", "x * 3"));
    repo.add_commit("Tweak helper");
    repo.write("bank/account.py", V2_FIX.replace("x * 2", "x * 3"));
    let fix = repo.add_commit("Fix withdraw adding instead of subtracting");
    (repo, fix)
}

fn config(out: &Path, repos: &[&Path]) -> MineConfig {
    MineConfig {
        repos: repos.iter().map(|p| p.to_path_buf()).collect(),
        out_dir: out.to_path_buf(),
        threads: Some(2),
        ..MineConfig::default()
    }
}

fn read_rows(report: &MineReport) -> Vec<PairRow> {
    std::fs::read_to_string(&report.jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is a PairRow"))
        .collect()
}

fn sorted_lines(path: &str) -> Vec<String> {
    let mut lines: Vec<String> = std::fs::read_to_string(path).unwrap().lines().map(str::to_string).collect();
    lines.sort();
    lines
}

#[test]
fn fix_commit_yields_only_its_nontrivial_function_edit() {
    let tmp = TempDir::new().unwrap();
    let (repo, fix) = basic_repo(tmp.path(), "bank");
    let report = mine(&config(&tmp.path().join("out"), &[&repo.path])).unwrap();
    let rows = read_rows(&report);
    assert_eq!(rows.len(), 1, "{rows:#?}");
    let row = &rows[0];
    assert_eq!(row.format_version, 1);
    assert_eq!(row.commit, fix);
    assert_eq!(row.path, "bank/account.py");
    assert_eq!(row.old_path, "bank/account.py");
    assert_eq!(row.function, "Account.withdraw");
    assert_eq!(row.class.as_deref(), Some("Account"));
    assert_eq!(row.before, "def withdraw(self, amount):\n        self.balance += amount\n        return self.balance");
    assert_eq!(row.after, "def withdraw(self, amount):\n        self.balance -= amount\n        return self.balance");
    assert_eq!((row.before_line, row.after_line), (9, 9));
    assert_eq!(row.message, "Fix withdraw adding instead of subtracting");
    assert!(row.context.contains("import os") && row.context.contains("# target edit"), "{}", row.context);
    let t = report.totals;
    assert_eq!(
        (t.commits_walked, t.fix_commits, t.functions_edited, t.trivial_edits_dropped, t.pairs_written),
        (3, 1, 2, 1, 1)
    );
    assert_eq!(report.repos[0].outcome, RepoOutcome::Mined);
}

#[test]
fn merge_commits_are_skipped_but_fixes_on_merged_branches_are_mined() {
    let tmp = TempDir::new().unwrap();
    let mut repo = Repo::init(tmp.path().join("merge"));
    repo.write("m.py", V1);
    repo.add_commit("init");
    repo.git(&["checkout", "-q", "-b", "topic"]);
    repo.write("m.py", V2_FIX);
    let fix = repo.add_commit("fix withdraw");
    repo.git(&["checkout", "-q", "main"]);
    repo.write("other.py", "def z():\n    return 1\n");
    repo.add_commit("unrelated");
    repo.git(&["merge", "-q", "--no-ff", "-m", "Merge branch topic (fixes #1)", "topic"]);
    let report = mine(&config(&tmp.path().join("out"), &[&repo.path])).unwrap();
    let rows = read_rows(&report);
    assert_eq!(rows.iter().map(|r| r.commit.as_str()).collect::<Vec<_>>(), [fix.as_str()]);
    assert_eq!(report.totals.merges_skipped, 1);
    assert_eq!(report.totals.commits_walked, 4);
}

#[test]
fn renamed_file_reports_old_and_new_paths() {
    let tmp = TempDir::new().unwrap();
    let mut repo = Repo::init(tmp.path().join("rename"));
    repo.write("old_name.py", V1);
    repo.add_commit("init");
    repo.git(&["mv", "old_name.py", "new_name.py"]);
    repo.write("new_name.py", V2_FIX);
    repo.add_commit("Move module and fix withdraw");
    let report = mine(&config(&tmp.path().join("out"), &[&repo.path])).unwrap();
    let rows = read_rows(&report);
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!((rows[0].old_path.as_str(), rows[0].path.as_str()), ("old_name.py", "new_name.py"));
}

#[test]
fn binary_and_non_utf8_python_files_are_skipped_without_losing_other_files() {
    let tmp = TempDir::new().unwrap();
    let mut repo = Repo::init(tmp.path().join("odd"));
    repo.write("a.py", V1)
        .write("blob.py", b"def f():\n    return 1\n\x00\x01binary")
        .write("latin.py", b"# -*- coding: latin-1 -*-\ndef f():\n    return '\xe9'\n")
        .write("logo.png", b"\x89PNG\r\n\x1a\n\x00\x00");
    repo.add_commit("init");
    repo.write("a.py", V2_FIX)
        .write("blob.py", b"def f():\n    return 2\n\x00\x02binary")
        .write("latin.py", b"# -*- coding: latin-1 -*-\ndef f():\n    return '\xe8' + x\n")
        .write("logo.png", b"\x89PNG\r\n\x1a\n\x00\x01");
    repo.add_commit("fix everything");
    let report = mine(&config(&tmp.path().join("out"), &[&repo.path])).unwrap();
    let t = report.totals;
    assert_eq!((t.python_files_compared, t.binary_files_skipped, t.non_utf8_files_skipped), (3, 1, 1));
    assert_eq!(read_rows(&report).iter().map(|r| r.path.as_str()).collect::<Vec<_>>(), ["a.py"]);
}

#[test]
fn empty_repository_is_mined_with_zero_commits() {
    let tmp = TempDir::new().unwrap();
    let repo = Repo::init(tmp.path().join("empty"));
    let report = mine(&config(&tmp.path().join("out"), &[&repo.path])).unwrap();
    assert_eq!(report.repos[0].outcome, RepoOutcome::Mined);
    assert_eq!(report.totals.commits_walked, 0);
    assert_eq!(report.rows, 0);
    if cfg!(feature = "parquet") {
        assert!(Path::new(report.parquet.as_deref().unwrap()).exists());
    }
}

#[test]
fn shallow_clone_skips_the_boundary_commit_and_mines_commits_with_parents() {
    let tmp = TempDir::new().unwrap();
    let (repo, fix) = basic_repo(tmp.path(), "deep");
    let url = format!("file://{}", repo.path.display());
    let depth1 = tmp.path().join("depth1");
    let depth2 = tmp.path().join("depth2");
    git_in(tmp.path(), &["clone", "-q", "--depth", "1", &url, depth1.to_str().unwrap()]);
    git_in(tmp.path(), &["clone", "-q", "--depth", "2", &url, depth2.to_str().unwrap()]);

    let one = mine(&config(&tmp.path().join("out1"), &[&depth1])).unwrap();
    assert_eq!(one.repos[0].outcome, RepoOutcome::Mined);
    assert_eq!((one.totals.commits_walked, one.totals.fix_commits, one.totals.parentless_skipped), (1, 1, 1));
    assert_eq!(one.rows, 0);

    let two = mine(&config(&tmp.path().join("out2"), &[&depth2])).unwrap();
    assert_eq!(two.totals.commits_walked, 2);
    assert_eq!(read_rows(&two).iter().map(|r| r.commit.as_str()).collect::<Vec<_>>(), [fix.as_str()]);
}

#[test]
fn bare_clone_yields_the_same_pairs_as_its_work_tree() {
    let tmp = TempDir::new().unwrap();
    let (repo, _) = basic_repo(tmp.path(), "src");
    let bare = tmp.path().join("bare.git");
    git_in(tmp.path(), &["clone", "-q", "--bare", repo.path.to_str().unwrap(), bare.to_str().unwrap()]);
    let a = read_rows(&mine(&config(&tmp.path().join("out_a"), &[&repo.path])).unwrap());
    let b = read_rows(&mine(&config(&tmp.path().join("out_b"), &[&bare])).unwrap());
    assert_eq!(a.len(), 1);
    let strip =
        |rows: Vec<PairRow>| rows.into_iter().map(|r| (r.commit, r.function, r.before, r.after)).collect::<Vec<_>>();
    assert_eq!(strip(a), strip(b));
}

/// Three repositories with distinct fixes; the third edits one more function.
fn three_repos(dir: &Path) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for (i, name) in ["r0", "r1", "r2"].iter().enumerate() {
        let mut repo = Repo::init(dir.join(name));
        // Distinct identifiers per repository, so no edit is a duplicate of another's.
        let balance = format!("balance{i}");
        repo.write("m.py", V1.replace("x * 2", &format!("x * y{i}")).replace("balance", &balance));
        repo.add_commit("init");
        let mut v2 = V2_FIX.replace("x * 2", &format!("x + y{i}")).replace("balance", &balance);
        if i == 2 {
            v2 = v2.replace(&format!("self.{balance}  +=  amount"), &format!("self.{balance} += amount * rate"));
        }
        repo.write("m.py", v2);
        repo.add_commit("bugfix");
        paths.push(repo.path);
    }
    paths
}

#[test]
fn crash_mid_repository_then_resume_matches_a_clean_run() {
    let tmp = TempDir::new().unwrap();
    let repos = three_repos(tmp.path());
    let refs: Vec<&Path> = repos.iter().map(PathBuf::as_path).collect();
    let clean = mine(&config(&tmp.path().join("clean"), &refs)).unwrap();
    assert_eq!(clean.rows, 2 + 2 + 3, "{clean:#?}");

    let out = tmp.path().join("crashy");
    let crashing = MineConfig { fail_after_repos: Some(2), threads: Some(1), ..config(&out, &refs) };
    assert!(matches!(mine(&crashing), Err(MineError::InjectedFault)));
    let stem = Shard::default().file_stem();
    let checkpoint: Checkpoint =
        serde_json::from_slice(&std::fs::read(out.join(format!("checkpoint-{stem}.json"))).unwrap()).unwrap();
    assert_eq!(checkpoint.completed.len(), 2);
    let jsonl = out.join(format!("pairs-v1-{stem}.jsonl"));
    let len = std::fs::metadata(&jsonl).unwrap().len();
    assert!(len > checkpoint.jsonl_bytes, "the crash left a partial repository behind");

    let resumed = mine(&config(&out, &refs)).unwrap();
    let outcomes: Vec<_> = resumed.repos.iter().map(|r| r.outcome.clone()).collect();
    assert_eq!(outcomes.iter().filter(|o| **o == RepoOutcome::Resumed).count(), 2);
    assert_eq!(outcomes.iter().filter(|o| **o == RepoOutcome::Mined).count(), 1);
    assert_eq!(sorted_lines(&resumed.jsonl), sorted_lines(&clean.jsonl));
    assert_eq!(resumed.totals, clean.totals);
}

#[test]
fn identical_fixes_in_two_repositories_are_written_once() {
    let tmp = TempDir::new().unwrap();
    let (repo, _) = basic_repo(tmp.path(), "orig");
    let fork = tmp.path().join("fork");
    git_in(tmp.path(), &["clone", "-q", repo.path.to_str().unwrap(), fork.to_str().unwrap()]);
    let report = mine(&config(&tmp.path().join("out"), &[&repo.path, &fork])).unwrap();
    assert_eq!(report.rows, 1);
    assert_eq!(report.totals.duplicates_dropped, 1);
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_copy_has_the_same_rows_as_the_jsonl_shard() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let tmp = TempDir::new().unwrap();
    let repos = three_repos(tmp.path());
    let refs: Vec<&Path> = repos.iter().map(PathBuf::as_path).collect();
    let report = mine(&config(&tmp.path().join("out"), &refs)).unwrap();
    let rows = read_rows(&report);
    let file = std::fs::File::open(report.parquet.as_deref().unwrap()).unwrap();
    let reader = SerializedFileReader::new(file).unwrap();
    assert_eq!(reader.metadata().file_metadata().num_rows(), rows.len() as i64);
    let names: Vec<String> =
        reader.metadata().file_metadata().schema_descr().columns().iter().map(|c| c.name().to_string()).collect();
    assert_eq!(names.len(), 15, "{names:?}");
    let functions: Vec<String> = reader
        .get_row_iter(None)
        .unwrap()
        .map(|row| {
            let row = row.unwrap();
            let (_, value) = row.get_column_iter().find(|(name, _)| name.as_str() == "function").unwrap();
            value.to_string().trim_matches('"').to_string()
        })
        .collect();
    assert_eq!(functions, rows.iter().map(|r| r.function.clone()).collect::<Vec<_>>());
}

fn cli(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_deepdebug"));
    cmd.args(args)
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("SLURM_ARRAY_TASK_MIN");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn shard_index_comes_from_kubernetes_or_slurm_environment() {
    let tmp = TempDir::new().unwrap();
    let repos = three_repos(tmp.path());
    let out = tmp.path().join("out");
    let mut args: Vec<String> = vec!["mine".into(), "-q".into(), "--shard".into(), "3".into()];
    args.extend(["--out".into(), out.display().to_string()]);
    for r in &repos {
        args.extend(["--repo".into(), r.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    let k8s = cli(&args, &[("JOB_COMPLETION_INDEX", "1")]);
    assert!(k8s.status.success(), "{}", String::from_utf8_lossy(&k8s.stderr));
    let slurm = cli(&args, &[("SLURM_ARRAY_TASK_ID", "3"), ("SLURM_ARRAY_TASK_MIN", "1")]);
    assert!(slurm.status.success(), "{}", String::from_utf8_lossy(&slurm.stderr));
    let repos_in = |shard: &str| -> Vec<String> {
        let text = std::fs::read_to_string(out.join(format!("pairs-v1-shard-{shard}.jsonl"))).unwrap();
        let mut names: Vec<String> = text.lines().map(|l| serde_json::from_str::<PairRow>(l).unwrap().repo).collect();
        names.dedup();
        names
    };
    assert_eq!(repos_in("00001-of-00003"), [repos[1].display().to_string()]);
    assert_eq!(repos_in("00002-of-00003"), [repos[2].display().to_string()]);
    assert!(!out.join("pairs-v1-shard-00000-of-00003.jsonl").exists());

    let no_env = cli(&args, &[]);
    assert_eq!(no_env.status.code(), Some(2), "{}", String::from_utf8_lossy(&no_env.stderr));
}

#[test]
fn cli_exit_codes_distinguish_usage_errors_from_failed_repositories() {
    let tmp = TempDir::new().unwrap();
    let out = tmp.path().join("out").display().to_string();
    let missing = cli(&["mine", "-q", "--repo", "/nonexistent/repo", "--out", &out], &[]);
    assert_eq!(missing.status.code(), Some(2));
    let plain_dir = tmp.path().join("not-a-repo");
    std::fs::create_dir(&plain_dir).unwrap();
    let failed = cli(&["mine", "-q", "--repo", plain_dir.to_str().unwrap(), "--out", &out], &[]);
    assert_eq!(failed.status.code(), Some(1), "{}", String::from_utf8_lossy(&failed.stderr));
    let report_path = tmp.path().join("out/report-shard-00000-of-00001.json");
    let report: MineReport = serde_json::from_slice(&std::fs::read(report_path).unwrap()).unwrap();
    assert!(report.repos[0].outcome.is_failed(), "{report:#?}");
}

#[test]
fn repos_from_file_skips_comments_and_blank_lines() {
    let tmp = TempDir::new().unwrap();
    let repos = three_repos(tmp.path());
    let list = tmp.path().join("repos.txt");
    let text = format!("# corpus\n{}\n\n  {}  \n{}\n", repos[0].display(), repos[1].display(), repos[2].display());
    std::fs::write(&list, text).unwrap();
    let out = tmp.path().join("out");
    let run = cli(
        &["mine", "-q", "--no-parquet", "--repos-from", list.to_str().unwrap(), "--out", out.to_str().unwrap()],
        &[],
    );
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let report: MineReport =
        serde_json::from_slice(&std::fs::read(out.join("report-shard-00000-of-00001.json")).unwrap()).unwrap();
    assert_eq!(report.repos.len(), 3);
    assert_eq!(report.rows, 7);
    assert_eq!(report.parquet, None);
    assert!(!out.join("pairs-v1-shard-00000-of-00001.parquet").exists());
}

#[test]
fn a_long_history_is_mined_in_chunks_in_walk_order() {
    // More fix commits than one parallel chunk (256): the rows still come out in walk order
    // (newest first), none lost or repeated at the chunk boundary.
    const FIXES: usize = 300;
    let tmp = TempDir::new().unwrap();
    let repo = Repo::init(tmp.path().join("long"));
    let mut stream = String::new();
    for k in 0..=FIXES {
        let body = format!("def f(a, v{k}):\n    return a + v{k}\n");
        let message = if k == 0 { "init".to_string() } else { format!("fix {k}") };
        let parent = if k == 0 { String::new() } else { format!("from :{k}\n") };
        stream.push_str(&format!(
            "commit refs/heads/main\nmark :{}\ncommitter t <t@example.com> {} +0000\ndata {}\n{message}\n{parent}M 644 inline calc.py\ndata {}\n{body}\n",
            k + 1,
            1_600_000_000 + k,
            message.len() + 1,
            body.len(),
        ));
    }
    let mut import =
        git_command(&repo.path).args(["fast-import", "--quiet"]).stdin(std::process::Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(import.stdin.as_mut().unwrap(), stream.as_bytes()).unwrap();
    drop(import.stdin.take());
    assert!(import.wait().unwrap().success());
    let report = mine(&config(&tmp.path().join("out"), &[&repo.path])).unwrap();
    let rows = read_rows(&report);
    let afters: Vec<String> = rows.iter().map(|r| r.after.lines().next().unwrap_or_default().to_string()).collect();
    let expected: Vec<String> = (1..=FIXES).rev().map(|k| format!("def f(a, v{k}):")).collect();
    assert_eq!(afters, expected);
    assert_eq!(report.totals.pairs_written, FIXES as u64);
}
