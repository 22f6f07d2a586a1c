//! The Python unit tests of the embedded scripts (`tests/python/`, pytest) run as part of
//! `cargo test`: `python3 -m pytest -q tests/python`.

use std::path::Path;
use std::process::Command;

#[test]
fn python_unit_tests_of_the_embedded_scripts_pass() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let has_pytest = Command::new("python3").args(["-c", "import pytest"]).output().is_ok_and(|o| o.status.success());
    if !has_pytest {
        eprintln!("skipped: python3 cannot import pytest (`python3 -m pip install pytest`)");
        return;
    }
    let output = Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/python"])
        .current_dir(root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run python3 -m pytest");
    assert!(
        output.status.success(),
        "python3 -m pytest -q tests/python failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
