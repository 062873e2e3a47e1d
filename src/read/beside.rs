//! Work that runs beside `cmstore ingest` on a thread of its own, over its own pool of the
//! store (so ingest's connection is never shared), until it is stopped: the continuous OTLP
//! export and the continuous push.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::store::{self, Store};

/// Why the work could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The store could not be opened.
    #[error("store")]
    Store(#[from] store::Error),
    /// The thread could not be made.
    #[error("thread: {0}")]
    Thread(#[from] std::io::Error),
}

/// A running piece of work and the flag that stops it.
pub struct Beside<T> {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<T>>,
}

impl<T: Send + 'static> Beside<T> {
    /// Opens the store at `db` and runs `work` over it on a thread named `name`, until it
    /// returns (it watches `stop`); the store is closed after it.
    pub fn start(
        name: &str,
        db: &Path,
        stop: Arc<AtomicBool>,
        work: impl FnOnce(&Store, &AtomicBool) -> T + Send + 'static,
    ) -> Result<Beside<T>, StartError> {
        let store = store::open(db)?;
        let own_stop = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                let done = work(&store, &own_stop);
                store.close();
                done
            })?;
        Ok(Beside {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops the work and waits for what it returns; `None` when it panicked.
    pub fn finish(mut self) -> Option<T> {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.take().and_then(|h| h.join().ok())
    }
}
