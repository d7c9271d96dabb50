//! A person's request to stop (Ctrl-C, SIGTERM), latched: a signal that arrives between two
//! runs is still seen before the next one starts, not lost.

use tokio::sync::watch;

/// A latched stop request. `wait` resolves once it has been raised; `raised` asks now.
#[derive(Debug, Clone)]
pub struct Interrupt {
    rx: watch::Receiver<bool>,
}

impl Interrupt {
    /// An interrupt raised by the returned sender (for tests, and for `on_signals`).
    pub fn channel() -> (watch::Sender<bool>, Interrupt) {
        let (tx, rx) = watch::channel(false);
        (tx, Interrupt { rx })
    }

    /// An interrupt raised by Ctrl-C or SIGTERM from now on. Needs a tokio runtime.
    pub fn on_signals() -> std::io::Result<Interrupt> {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let (tx, me) = Interrupt::channel();
        tokio::spawn(async move {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            tx.send_replace(true);
            // Keep the sender (and the handlers) alive: later signals stay caught.
            std::future::pending::<()>().await;
        });
        Ok(me)
    }

    /// Whether a stop was requested.
    pub fn raised(&self) -> bool {
        *self.rx.borrow()
    }

    /// Resolves once a stop is requested (at once if it already was).
    pub async fn wait(&mut self) {
        if self.rx.wait_for(|raised| *raised).await.is_err() {
            // Every sender is gone: nobody can raise it any more.
            std::future::pending::<()>().await;
        }
    }
}
