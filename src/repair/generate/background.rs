//! Background candidate sources (the line sampler, the patcher): the search's end of the thread, proposals drained as they arrive, the pause and stop flags its thread obeys, and what validation said fed back to its widening.

use crate::repair::candidate::Proposal;
use crate::repair::generate::widen::Progress;
use crate::repair::search::{CandidateSource, Produced, SourceKind, View};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::Arc;

/// Held by the source; dropping it tells the thread to stop at its next step (nobody waits).
pub struct Background {
    rx: Receiver<Vec<Proposal>>,
    stop: Arc<AtomicBool>,
    paused: Arc<AtomicBool>,
}

/// Held by the thread.
pub struct BackgroundSender {
    pub tx: Sender<Vec<Proposal>>,
    pub stop: Arc<AtomicBool>,
    /// Set while the search scores and confirms plausible patches: hold the model.
    pub paused: Arc<AtomicBool>,
}

impl Background {
    #[must_use]
    pub fn new() -> (Background, BackgroundSender) {
        let (tx, rx) = mpsc::channel();
        let (stop, paused) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let sender = BackgroundSender { tx, stop: Arc::clone(&stop), paused: Arc::clone(&paused) };
        (Background { rx, stop, paused }, sender)
    }

    pub fn pause(&self, paused: bool) {
        self.paused.store(paused, Ordering::SeqCst);
    }

    /// Everything sent so far; `Pending` when nothing is, `Exhausted` once the thread is done.
    #[must_use]
    pub fn drain(&self) -> Produced {
        let mut batch = Vec::new();
        loop {
            match self.rx.try_recv() {
                Ok(proposals) => batch.extend(proposals),
                Err(TryRecvError::Empty) if batch.is_empty() => return Produced::Pending,
                Err(TryRecvError::Disconnected) if batch.is_empty() => return Produced::Exhausted,
                Err(_) => return Produced::Batch(batch),
            }
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// A source whose proposals a background thread samples: it hands the search what the
/// thread has sent, and feeds what validation said of its candidates back to the thread's
/// widening ([`Progress`]).
pub struct BackgroundSource {
    kind: SourceKind,
    feed: Background,
    progress: Progress,
}

impl BackgroundSource {
    #[must_use]
    pub fn new(kind: SourceKind, feed: Background, progress: Progress) -> BackgroundSource {
        BackgroundSource { kind, feed, progress }
    }
}

impl CandidateSource for BackgroundSource {
    fn kind(&self) -> SourceKind {
        self.kind
    }

    fn bound(&self) -> f64 {
        0.0
    }

    fn pause(&self, paused: bool) {
        self.feed.pause(paused);
    }

    fn next(&mut self, view: &View<'_>) -> Produced {
        self.progress.observe(view);
        self.feed.drain()
    }
}
