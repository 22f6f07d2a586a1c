//! The interface to indicatif is localized here: repository and commit progress bars.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Two bars on stderr: repositories done and commits processed. Hidden when disabled
/// (and by indicatif when stderr is not a terminal).
pub struct Progress {
    repos: ProgressBar,
    commits: ProgressBar,
    _multi: MultiProgress,
}

impl Progress {
    #[must_use]
    pub fn new(enabled: bool, repos: u64) -> Progress {
        let target = if enabled { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let multi = MultiProgress::with_draw_target(target);
        let repo_bar = multi.add(ProgressBar::new(repos));
        repo_bar.set_style(
            ProgressStyle::with_template("{prefix:>8} [{bar:30}] {pos}/{len} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        repo_bar.set_prefix("repos");
        let commits = multi.add(ProgressBar::no_length());
        commits.set_style(
            ProgressStyle::with_template("{prefix:>8} {pos} ({per_sec})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        commits.set_prefix("commits");
        Progress { repos: repo_bar, commits, _multi: multi }
    }

    pub fn commits_done(&self, n: u64) {
        self.commits.inc(n);
    }

    pub fn repo_done(&self, name: &str) {
        self.repos.set_message(name.to_string());
        self.repos.inc(1);
    }

    pub fn finish(&self) {
        self.repos.finish();
        self.commits.finish();
    }
}
