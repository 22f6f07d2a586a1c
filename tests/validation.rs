//! The validation engine's limits seen through `deepdebug fix`: CPU-time limits reject busy
//! loops quickly without losing a correct patch that does more work than the buggy code.

mod common;
use common::cli::run;
use common::project;

const PRIMES: &str = "def count_primes(limit):\n    if limit > 0:\n        return 0\n    count = 0\n    for n in range(2, limit):\n        if all(n % d for d in range(2, int(n ** 0.5) + 1)):\n            count += 1\n    return count\n";

const TESTS: &str = "import time\nfrom primes import count_primes\n\n\ndef test_count():\n    assert count_primes(200000) == 17984\n\n\ndef test_waits():\n    time.sleep(0.5)\n";

#[test]
fn a_fix_that_needs_more_cpu_than_the_buggy_code_is_rechecked_and_found() {
    // The buggy `count_primes` returns at once; the fix (`limit < 0`) then counts primes for
    // ~0.2-0.5 s of CPU: far over the tight CPU limit (the suite's tests use almost none),
    // under the wall-clock one (the sleeping test makes it over 2 s).
    let dir = project(&[("primes.py", PRIMES), ("test_primes.py", TESTS)]);
    let repo = dir.path().to_str().unwrap();
    let out = run(&["fix", "--repo", repo, "--timeout", "120s", "--json"], "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let diff = report["patch"]["diff"].as_str().unwrap_or_default();
    assert!(diff.contains("+    if limit < 0:") || diff.contains("+    if limit <= 0:"), "{diff}");
    assert!(report["tried"].as_array().is_some_and(|t| !t.is_empty()), "{stdout}");
    // The repository itself is untouched.
    assert!(std::fs::read_to_string(dir.path().join("primes.py")).unwrap().contains("if limit > 0:"));
}
