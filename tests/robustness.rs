//! Environment robustness and hostile suites (issue 18, item 5): `fix` on the fixture projects
//! of `tests/fixtures/env` (pytest configuration, layouts, conftests, venvs, slow imports) and
//! `tests/fixtures/hostile` (fork bomb, memory hog, huge output, escaping writes, network).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;
use common::snapshot;

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The budget every run here gets: small suites, so a fix takes a few seconds.
const TIMEOUT_S: u64 = 30;

fn fixtures(group: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(group).join(name)
}

/// A copy of a fixture in a temp dir (`<tmp>/<name>`): the user's repository of the test.
fn copy_fixture(group: &str, name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new().prefix("deepdebug-robust-").tempdir().unwrap();
    let root = dir.path().join(name);
    let source = fixtures(group, name);
    for entry in walkdir::WalkDir::new(&source) {
        let entry = entry.unwrap();
        let target = root.join(entry.path().strip_prefix(&source).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
    (dir, root)
}

fn fix(root: &Path, env: &[(&str, String)], budget_s: u64) -> (Output, Duration) {
    let start = Instant::now();
    let out = Command::new(common::cli::BIN)
        .args(["fix", "--json", "--lm", "none", "--rank", "none", "--test-timeout", "30s", "--timeout"])
        .arg(format!("{budget_s}s"))
        .arg("--repo")
        .arg(root)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out, start.elapsed())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `git apply` the diff in `root`, then run the suite there with `python`: it must pass.
fn apply_and_test(root: &Path, diff: &str, python: &Path) {
    let mut child = Command::new("git").args(["apply", "-"]).current_dir(root).stdin(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), diff.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success(), "git apply rejected the diff:\n{diff}");
    let tests = Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .current_dir(root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    assert!(tests.status.success(), "tests fail after applying:\n{}{}", text(&tests.stdout), text(&tests.stderr));
}

/// Run `fix` on the copy at `root`: it must find a patch of `file` whose diff contains
/// `expected` (the buggy line, removed: several fixes may be right), leave the copy exactly as
/// it was, and the diff must apply and make the suite pass there.
fn assert_fixed_in_place(root: &Path, python: &Path, file: &str, expected: &str) {
    let before = snapshot(root);
    let (out, elapsed) = fix(root, &[], TIMEOUT_S);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{}: stdout:\n{}\nstderr:\n{stderr}", root.display(), text(&out.stdout));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["patch"]["file"], file, "{report:#}");
    let diff = report["patch"]["diff"].as_str().unwrap();
    assert!(diff.contains(expected), "the diff lacks `{expected}`:\n{diff}");
    assert_eq!(snapshot(root), before, "`fix` without --apply changed the repository");
    eprintln!("{}: fixed in {:.1}s", root.display(), elapsed.as_secs_f64());
    apply_and_test(root, diff, python);
}

fn assert_fixture_fixed(name: &str, file: &str, expected: &str) {
    let (_dir, root) = copy_fixture("env", name);
    assert_fixed_in_place(&root, Path::new("python3"), file, expected);
}

#[test]
fn pyproject_testpaths_addopts_strict_markers_and_a_local_plugin_are_honoured_in_pyproject_options() {
    // A decoy outside `testpaths`, a test deselected by `-m` in addopts, a marker that
    // `--strict-markers` accepts only from the `markers` list, a fixture from `-p pricing_plugin`:
    // any of them ignored makes the suite unfixable.
    assert_fixture_fixed("pyproject_options", "pricing.py", "-    if percent < 100:");
}

#[test]
fn addopts_naming_a_missing_plugin_is_reported_as_an_environment_error_in_missing_plugin() {
    let (_dir, root) = copy_fixture("env", "missing_plugin");
    let before = snapshot(&root);
    let (out, _) = fix(&root, &[], TIMEOUT_S);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("unrecognized arguments: --shipping-cov=shipping"), "{stderr}");
    assert!(stderr.contains("plugin that is not installed"), "{stderr}");
    assert_eq!(snapshot(&root), before);
}

#[test]
fn setup_cfg_testpaths_and_custom_test_names_are_honoured_in_setup_cfg_options() {
    // Tests live in `checks/check_*.py` as `check_*` functions; they must not be taken for
    // project code to patch, and `test_*` functions there are not tests.
    assert_fixture_fixed("setup_cfg_options", "stats.py", "-    return sum(values) / (len(values) + 1)");
}

#[test]
fn tox_ini_pytest_section_with_importlib_mode_is_honoured_in_tox_ini_options() {
    assert_fixture_fixed("tox_ini_options", "inventory.py", "-    return count < minimum - 1");
}

#[test]
fn src_layout_with_pythonpath_setting_is_fixed_in_src_layout() {
    assert_fixture_fixed("src_layout", "src/geometry/shapes.py", "-        return 2 * (self.width + self.height) + 1");
}

#[test]
fn conftests_at_three_levels_with_an_overridden_fixture_are_used_in_conftest_levels() {
    assert_fixture_fixed("conftest_levels", "shop/order.py", "-        return net * (1 - self.tax_rate)");
}

#[test]
fn namespace_package_without_init_files_is_fixed_in_namespace_package() {
    assert_fixture_fixed(
        "namespace_package",
        "acme/textutil/words.py",
        "-    return \"\".join(part[0].upper() for part in name.split()[1:])",
    );
}

#[test]
fn tests_writing_into_the_working_directory_leave_the_repository_untouched_in_writes_to_cwd() {
    assert_fixture_fixed("writes_to_cwd", "report.py", "-        return len(json.load(f)) - 1");
}

#[test]
fn a_slow_import_at_collection_and_a_skipped_optional_dependency_are_tolerated_in_heavy_optional_import() {
    assert_fixture_fixed("heavy_optional_import", "squares.py", "-    return sum(k * k for k in range(1, n))");
}

/// A `.venv` in `root` (system site packages, for pytest) where `units` is installed editable:
/// a `.pth` file naming `root/src`, as `pip install -e .` writes for a src layout.
fn make_editable_venv(root: &Path) -> Option<PathBuf> {
    let made = Command::new("python3")
        .args(["-m", "venv", "--system-site-packages", "--without-pip", ".venv"])
        .current_dir(root)
        .status()
        .ok()?;
    if !made.success() {
        return None;
    }
    let python = root.join(".venv/bin/python");
    let purelib = Command::new(&python)
        .args(["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
        .output()
        .ok()?;
    let site = PathBuf::from(text(&purelib.stdout).trim());
    std::fs::write(site.join("__editable__.units-0.1.0.pth"), format!("{}\n", root.join("src").display())).ok()?;
    Some(python)
}

#[test]
fn the_venv_interpreter_and_its_editable_install_are_used_and_patched_in_editable_venv() {
    let (_dir, root) = copy_fixture("env", "editable_venv");
    let Some(python) = make_editable_venv(&root) else {
        eprintln!("python3 -m venv is unavailable: skipping the editable-install test");
        return;
    };
    // Only the venv finds the package: plain python3 cannot import it.
    let plain = Command::new("python3").args(["-c", "import units"]).current_dir(&root).output().unwrap();
    assert!(!plain.status.success());
    let (out, _) = fix(&root, &[], TIMEOUT_S);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(report["python"], python.display().to_string(), "{}", text(&out.stderr));
    assert_fixed_in_place(&root, &python, "src/units/convert.py", "-    return celsius * 9 / 5 + 31");
}

// ---------------------------------------------------------------------------------------------
// Hostile suites: each has a real bug (`clock.py`, one `+ 1` too many) and one hostile test that
// passes whatever the sandbox refuses it, so a contained run still finds the patch.

fn bwrap_installed() -> bool {
    deepdebug::sandbox::local::find_in_path("bwrap").is_some()
}

/// Processes whose environment holds `HOSTILE_TAG=tag` (deepdebug's and the suite's).
fn tagged_processes(tag: &str) -> Vec<u32> {
    let needle = format!("HOSTILE_TAG={tag}\0");
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let mut environ = Vec::new();
            std::fs::File::open(format!("/proc/{pid}/environ")).and_then(|mut f| f.read_to_end(&mut environ)).is_ok()
                && environ.windows(needle.len()).any(|w| w == needle.as_bytes())
        })
        .collect()
}

/// `field` (`VmRSS`, `VmSize`) of a Python process `pid` in bytes (0 for other processes, and
/// once it is gone).
fn python_memory(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    if !status.lines().next().is_some_and(|l| l.contains("python")) {
        return 0;
    }
    let value = status.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':'));
    value.and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok()).unwrap_or(0) * 1024
}

/// The most the tagged processes ever were at once while a run went on, sampled every 50 ms.
#[derive(Debug, Default, Clone, Copy)]
struct Peak {
    processes: usize,
    /// Largest resident memory of one Python process.
    rss: u64,
    /// Largest address space of one Python process.
    size: u64,
}

fn watch(tag: String, done: Arc<std::sync::atomic::AtomicBool>) -> std::thread::JoinHandle<Peak> {
    std::thread::spawn(move || {
        let mut peak = Peak::default();
        while !done.load(Ordering::SeqCst) {
            let pids = tagged_processes(&tag);
            peak.processes = peak.processes.max(pids.len());
            for pid in pids {
                peak.rss = peak.rss.max(python_memory(pid, "VmRSS"));
                peak.size = peak.size.max(python_memory(pid, "VmSize"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        peak
    })
}

fn unique_tag() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{}-{nanos}", std::process::id())
}

/// One hostile suite at a time: each may take gigabytes or hundreds of processes.
static HOSTILE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What a contained run of a hostile fixture left to check.
struct Contained {
    root: PathBuf,
    _dir: tempfile::TempDir,
    tag: String,
    peak: Peak,
}

/// Run `fix` on a copy of the hostile fixture `name` with `env` (plus a unique `HOSTILE_TAG`
/// and `HOSTILE_ORIGIN`, the copy's path) and a budget of `budget_s`: it must end with the patch
/// of `clock.py` (exit 0) within the budget plus 10 s, leave the copy untouched and no tagged
/// process behind. `None` (skipped) without bubblewrap: the local sandbox then contains little.
fn assert_contained(name: &str, env: &[(&str, String)], budget_s: u64) -> Option<Contained> {
    if !bwrap_installed() {
        eprintln!("bwrap is not installed: the local sandbox does not contain {name}, skipping");
        return None;
    }
    let _one_at_a_time = HOSTILE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (dir, root) = copy_fixture("hostile", name);
    let tag = unique_tag();
    let mut env = env.to_vec();
    env.push(("HOSTILE_TAG", tag.clone()));
    env.push(("HOSTILE_ORIGIN", root.display().to_string()));
    let before = snapshot(&root);
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = watch(tag.clone(), Arc::clone(&done));
    let (out, elapsed) = fix(&root, &env, budget_s);
    done.store(true, Ordering::SeqCst);
    let peak = watcher.join().unwrap();
    eprintln!(
        "{name}: exit {:?} after {:.1}s, at most {} processes, one Python process at most {} MiB resident, {} MiB mapped\n{}",
        out.status.code(),
        elapsed.as_secs_f64(),
        peak.processes,
        peak.rss >> 20,
        peak.size >> 20,
        text(&out.stderr)
    );
    assert!(elapsed < Duration::from_secs(budget_s + 10), "{name}: ran {elapsed:?} on a {budget_s}s budget");
    assert_eq!(out.status.code(), Some(0), "{name}: stderr:\n{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["patch"]["file"], "clock.py", "{report:#}");
    assert!(report["patch"]["diff"].as_str().unwrap().contains("-    return (h2 * 60 + m2) - (h1 * 60 + m1) + 1"));
    assert_eq!(snapshot(&root), before, "{name}: the repository changed");
    std::thread::sleep(Duration::from_millis(300));
    let left = tagged_processes(&tag);
    for pid in &left {
        // SAFETY: plain syscall on a pid that carries our tag.
        unsafe { libc::kill(i32::try_from(*pid).unwrap(), libc::SIGKILL) };
    }
    assert!(left.is_empty(), "{name}: {} processes of the suite outlived `fix`: {left:?}", left.len());
    Some(Contained { root, _dir: dir, tag, peak })
}

#[test]
fn a_fork_bomb_is_stopped_by_the_pids_limit_and_leaves_no_process_in_fork_bomb() {
    // 2,000 forks that leave the process group and sleep 20 s: without containment they would
    // all start and still be alive when `fix` ends.
    let forks = 2000;
    let env = [("HOSTILE_FORKS", forks.to_string()), ("HOSTILE_SLEEP", "20".into())];
    let Some(run) = assert_contained("fork_bomb", &env, 60) else { return };
    if deepdebug::sandbox::cgroup::available() {
        // Each sandboxed process tree (baseline, a fork server, a confirmation run) has its own
        // limit; at most three run the bomb at once.
        let limit = deepdebug::sandbox::cgroup::CgroupLimits::default().pids as usize;
        assert!(
            run.peak.processes <= 3 * limit && run.peak.processes < forks,
            "{} processes at once",
            run.peak.processes
        );
    } else {
        eprintln!("no cgroup can be made here: the fork bomb is not limited, only cleaned up");
    }
}

#[test]
fn a_memory_hog_is_stopped_by_the_memory_limit_in_memory_hog() {
    // The hog maps up to 8 GiB (and touches 512 MiB of it); RLIMIT_AS (4 GiB) refuses the rest.
    let Some(run) = assert_contained("memory_hog", &[], TIMEOUT_S) else { return };
    let limit = deepdebug::process::Limits::default().memory_bytes.unwrap();
    assert!(run.peak.size <= limit, "one process of the suite mapped {} MiB", run.peak.size >> 20);
    assert!(run.peak.rss >= 256 << 20, "the hog never ran: {} MiB resident at most", run.peak.rss >> 20);
}

#[test]
fn a_test_printing_gigabytes_is_capped_in_huge_output() {
    // pytest captures the output in a temporary file: RLIMIT_FSIZE (1 GiB) ends the writes.
    assert_contained("huge_output", &[], 120);
}

/// The paths `escape_writes` tries outside its copy, for `tag`, `home` and the checkout `origin`.
fn escape_targets(tag: &str, home: &Path, origin: &Path) -> Vec<PathBuf> {
    vec![
        home.join(format!("deepdebug-escape-{tag}")),
        home.join(format!("deepdebug-escape-link-{tag}")),
        PathBuf::from(format!("/tmp/deepdebug-escape-{tag}")),
        PathBuf::from(format!("/var/tmp/deepdebug-escape-{tag}")),
        PathBuf::from(format!("/dev/shm/deepdebug-escape-{tag}")),
        origin.join(format!("escaped-{tag}")),
    ]
}

/// The ones of `paths` that exist, removed.
fn remove_existing(paths: &[PathBuf]) -> Vec<PathBuf> {
    let found: Vec<PathBuf> = paths.iter().filter(|p| p.exists()).cloned().collect();
    for path in &found {
        let _ = std::fs::remove_file(path);
    }
    found
}

#[test]
fn writes_outside_the_scratch_copy_do_not_land_in_escape_writes() {
    // The control: unsandboxed (with a throwaway HOME), the hostile test does write them all.
    let (control_dir, control) = copy_fixture("hostile", "escape_writes");
    let home = control_dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let tag = unique_tag();
    let direct = Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_hostile.py"])
        .current_dir(&control)
        .env("HOME", &home)
        .env("HOSTILE_TAG", &tag)
        .env("HOSTILE_ORIGIN", &control)
        .output()
        .unwrap();
    assert!(direct.status.success(), "{}", text(&direct.stdout));
    let targets = escape_targets(&tag, &home, &control);
    assert_eq!(remove_existing(&targets), targets, "the unsandboxed control did not write everywhere");

    let Some(run) = assert_contained("escape_writes", &[], TIMEOUT_S) else { return };
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()));
    let escaped = remove_existing(&escape_targets(&run.tag, &home, &run.root));
    assert!(escaped.is_empty(), "the suite wrote outside its scratch copy: {escaped:?}");
}

/// A listener on the host's loopback that counts the connections it accepts.
fn counting_listener() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            if stream.is_ok() {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    (port, count)
}

#[test]
fn network_connections_from_the_suite_do_not_arrive_in_network() {
    let (port, count) = counting_listener();
    // The control: run unsandboxed, the hostile test does reach the listener.
    let (_control_dir, control) = copy_fixture("hostile", "network");
    let direct = Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_hostile.py"])
        .current_dir(&control)
        .env("HOSTILE_PORT", port.to_string())
        .output()
        .unwrap();
    assert!(direct.status.success(), "{}", text(&direct.stdout));
    assert_eq!(count.load(Ordering::SeqCst), 1, "the unsandboxed control did not connect");
    if assert_contained("network", &[("HOSTILE_PORT", port.to_string())], TIMEOUT_S).is_some() {
        assert_eq!(count.load(Ordering::SeqCst), 1, "a sandboxed test reached the host's loopback");
    }
}
