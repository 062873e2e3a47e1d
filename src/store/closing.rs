//! The connections of a pool still open, so that closing a store can wait for the last one.
//!
//! SQLite removes the WAL when the last connection to the database closes, after a final
//! checkpoint. A pool closes its connections when its last handle goes, and that need not be
//! on the thread that closes the store: r2d2 opens connections on a helper thread, which holds
//! the pool a moment after handing a new connection over. Should that moment outlast the
//! command, the helper closes the connections while the process exits, and the WAL stays.
//! Each connection therefore holds a token, and [`OpenConnections::wait_closed`] waits until
//! every token is gone.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rusqlite::functions::FunctionFlags;
use rusqlite::Connection;

/// The SQL function whose closure holds a connection's token (it answers 1).
const TOKEN_FUNCTION: &str = "cmstore_connection_open";

/// How many connections of one pool are open.
#[derive(Debug, Default)]
pub struct OpenConnections {
    count: Mutex<usize>,
    closed: Condvar,
}

impl OpenConnections {
    /// Counts `conn` as open until SQLite closes it.
    pub fn track(self: &Arc<Self>, conn: &Connection) -> rusqlite::Result<()> {
        let token = Token::new(self);
        // SQLite has no hook on a connection's close, but it drops a function's closure then,
        // after the final checkpoint and the WAL's removal (and at once should registering
        // fail): the token goes with it.
        conn.create_scalar_function(TOKEN_FUNCTION, 0, FunctionFlags::SQLITE_UTF8, move |_| {
            let _ = &token;
            Ok(1)
        })
    }

    /// Waits until no connection is open, at most `within`. False when some still are.
    pub fn wait_closed(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        let mut count = self.lock();
        while *count > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            count = match self.closed.wait_timeout(count, left) {
                Ok((count, _)) => count,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        true
    }

    fn lock(&self) -> MutexGuard<'_, usize> {
        // A plain counter: a panic elsewhere cannot leave it half-updated.
        self.count.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One open connection, counted in its pool's [`OpenConnections`].
struct Token(Arc<OpenConnections>);

impl Token {
    fn new(open: &Arc<OpenConnections>) -> Token {
        *open.lock() += 1;
        Token(Arc::clone(open))
    }
}

impl Drop for Token {
    fn drop(&mut self) {
        let mut count = self.0.lock();
        *count = count.saturating_sub(1);
        self.0.closed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_counts_until_it_is_closed() {
        let open = Arc::new(OpenConnections::default());
        let conn = Connection::open_in_memory().unwrap();
        open.track(&conn).unwrap();
        assert!(!open.wait_closed(Duration::from_millis(10)));
        let closer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(conn);
        });
        assert!(open.wait_closed(Duration::from_secs(10)));
        assert!(open.wait_closed(Duration::ZERO));
        closer.join().unwrap();
    }

    /// The pool's last connection goes back from another thread after `close` began: close
    /// waits for it, and the WAL is gone when it returns.
    #[test]
    fn closing_a_store_waits_for_its_last_connection_and_the_wal_goes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let store = crate::store::open(&path).unwrap();
        let conn = store.conn().unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1)")
            .unwrap();
        let wal = dir.path().join("c.db-wal");
        assert!(wal.exists());
        let late = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(conn);
        });
        assert!(store.close());
        assert!(!wal.exists());
        late.join().unwrap();
    }
}
