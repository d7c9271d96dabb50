//! A small PostgreSQL connection pool: at most `POOL_SIZE` connections, a checkout that waits
//! at most `POOL_WAIT_MS`, new connections bounded by `CONNECT_TIMEOUT_MS`, and broken
//! connections discarded so the pool recovers by itself when the database link returns.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{timeout_at, Instant};
use tokio_postgres::{Client, NoTls};

/// Why a database step failed; every kind answers `503 upstream_unavailable`.
#[derive(Debug)]
pub enum DbError {
    /// No pooled connection was free within the pool wait.
    PoolWait,
    /// A new connection failed or timed out.
    Connect(String),
    /// The caller's deadline (the request's, or a section's budget) ran out first.
    Deadline,
    /// A statement was cancelled by `statement_timeout`.
    StatementTimeout,
    /// Any other failure of a statement or of the link.
    Statement(String),
}

impl From<tokio_postgres::Error> for DbError {
    fn from(e: tokio_postgres::Error) -> DbError {
        if e.code() == Some(&tokio_postgres::error::SqlState::QUERY_CANCELED) {
            DbError::StatementTimeout
        } else {
            DbError::Statement(e.to_string())
        }
    }
}

/// The pool. Idle connections are reused newest first.
pub struct Pool {
    config: tokio_postgres::Config,
    idle: Mutex<Vec<Client>>,
    permits: Arc<Semaphore>,
    wait: Duration,
    connect_timeout: Duration,
}

impl Pool {
    pub fn new(
        url: &str,
        size: usize,
        wait: Duration,
        connect_timeout: Duration,
    ) -> Result<Arc<Pool>, String> {
        let mut config: tokio_postgres::Config =
            url.parse().map_err(|e| format!("DATABASE_URL: {e}"))?;
        config.application_name("feed-rs");
        config.connect_timeout(connect_timeout.max(Duration::from_millis(1)));
        Ok(Arc::new(Pool {
            config,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(size.min(Semaphore::MAX_PERMITS))),
            wait,
            connect_timeout,
        }))
    }

    /// Opens a new connection, bounded by the connect timeout and by `deadline`.
    pub async fn connect(&self, deadline: Instant) -> Result<Client, DbError> {
        let limit = Instant::now() + self.connect_timeout;
        let (client, connection) = timeout_at(limit.min(deadline), self.config.connect(NoTls))
            .await
            .map_err(|_| {
                timed_out(limit, deadline, || {
                    DbError::Connect("connect timed out".into())
                })
            })?
            .map_err(|e| DbError::Connect(e.to_string()))?;
        tokio::spawn(connection);
        Ok(client)
    }

    /// Checks out a connection: waits for a free slot at most the pool wait (and never past
    /// `deadline`), then reuses an idle connection or opens a new one.
    pub async fn checkout(self: &Arc<Self>, deadline: Instant) -> Result<Conn, DbError> {
        let limit = Instant::now() + self.wait;
        let permit =
            match timeout_at(limit.min(deadline), self.permits.clone().acquire_owned()).await {
                Ok(Ok(permit)) => permit,
                _ => return Err(timed_out(limit, deadline, || DbError::PoolWait)),
            };
        let client = match self.take_idle() {
            Some(client) => client,
            None => self.connect(deadline).await?,
        };
        Ok(Conn {
            client: Some(client),
            permit: Some(permit),
            pool: self.clone(),
            idle: false,
        })
    }

    fn take_idle(&self) -> Option<Client> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(client) = idle.pop() {
            if !client.is_closed() {
                return Some(client);
            }
        }
        None
    }

    fn put_idle(&self, client: Client) {
        if !client.is_closed() {
            self.idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(client);
        }
    }
}

/// A checked-out connection. Call [`Conn::finish`] once the work on it is done; a connection
/// dropped without it (an error, or a cancelled section) is rolled back in the background
/// and only then pooled again, keeping its slot until it is.
pub struct Conn {
    client: Option<Client>,
    permit: Option<OwnedSemaphorePermit>,
    pool: Arc<Pool>,
    idle: bool,
}

/// How long a dropped connection may take to become idle before it is discarded.
const RECOVER: Duration = Duration::from_secs(2);

impl Conn {
    pub fn client(&mut self) -> &mut Client {
        self.client
            .as_mut()
            .expect("a checked-out connection holds a client")
    }

    /// Marks the connection idle (no statement or transaction in progress) for reuse.
    pub fn finish(mut self) {
        self.idle = true;
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let Some(client) = self.client.take() else {
            return;
        };
        let permit = self.permit.take();
        if client.is_closed() {
            return;
        }
        if self.idle {
            self.pool.put_idle(client);
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let pool = self.pool.clone();
        runtime.spawn(async move {
            // Queued behind whatever was in flight; ROLLBACK outside a transaction is a no-op.
            if let Ok(Ok(())) =
                tokio::time::timeout(RECOVER, client.batch_execute("ROLLBACK")).await
            {
                pool.put_idle(client);
            }
            drop(permit);
        });
    }
}

/// The error of a wait that ended at `limit` or at the caller's `deadline`, whichever came
/// first: running out of the caller's time is [`DbError::Deadline`] (for a feed section, an
/// overrun), not a failure of the database.
fn timed_out(limit: Instant, deadline: Instant, error: impl FnOnce() -> DbError) -> DbError {
    if deadline <= limit {
        DbError::Deadline
    } else {
        error()
    }
}

/// Milliseconds left until `deadline`, rounded up, as a `statement_timeout` value; an error
/// when nothing is left (0 would disable the timeout).
pub fn remaining_ms(deadline: Instant) -> Result<u64, DbError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(DbError::Deadline);
    }
    Ok(left.as_micros().div_ceil(1000).max(1) as u64)
}
