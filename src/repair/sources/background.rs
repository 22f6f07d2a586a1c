//! The search's end of a background candidate source: proposals drained as they arrive, and the pause and stop flags its thread obeys.

use crate::repair::candidate::Proposal;
use crate::repair::search::Produced;
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
