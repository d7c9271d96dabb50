//! Requests that make something in the engine (a network, a container, a volume), carried
//! to their answer even when their caller is dropped. An interrupt drops a run's future in
//! the middle of such a request; the engine has the request and completes it anyway, and
//! `clean`, listing what carries the study's label a moment later, would miss what it made.
//! So each such request runs as a task of its own, counted until the engine answers, and
//! `clean` waits for the count to reach zero before it lists.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bollard::errors::Error as DockerError;
use tokio::sync::watch;

/// How long `clean` waits at most for requests in flight: past the engine client's own
/// timeout (120 s), by which every request has been answered or has failed.
const SETTLE_LIMIT: Duration = Duration::from_secs(130);

/// The count of making requests the engine has not answered, shared by a runtime's clones.
#[derive(Clone)]
pub(super) struct InFlight(Arc<watch::Sender<usize>>);

impl Default for InFlight {
    fn default() -> Self {
        InFlight(Arc::new(watch::Sender::new(0)))
    }
}

/// One request's place in the count, given back when the request's task ends however it
/// ends (answered, failed, or panicked).
struct Counted(Arc<watch::Sender<usize>>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

impl InFlight {
    /// Runs `request` to its answer on a task of its own, counted from before it is sent.
    pub(super) async fn answered<T, F>(&self, request: F) -> Result<T, DockerError>
    where
        F: Future<Output = Result<T, DockerError>> + Send + 'static,
        T: Send + 'static,
    {
        self.0.send_modify(|n| *n += 1);
        let counted = Counted(self.0.clone());
        let task = tokio::spawn(async move {
            let _counted = counted;
            request.await
        });
        match task.await {
            Ok(answer) => answer,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // Cancelled: only when the async runtime itself is shutting down.
            Err(e) => Err(DockerError::IOError {
                err: std::io::Error::other(format!("the request's task was cancelled: {e}")),
            }),
        }
    }

    /// Resolves once no making request is unanswered (or after `SETTLE_LIMIT`, when the
    /// engine client has given up on any that is).
    pub(super) async fn settled(&self) {
        let mut rx = self.0.subscribe();
        let _ = tokio::time::timeout(SETTLE_LIMIT, rx.wait_for(|n| *n == 0)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_whose_caller_is_dropped_is_answered_before_settled_resolves() {
        let inflight = InFlight::default();
        let (answer_tx, answer_rx) = tokio::sync::oneshot::channel::<()>();
        let (made_tx, mut made_rx) = tokio::sync::oneshot::channel::<()>();
        let caller = {
            let inflight = inflight.clone();
            tokio::spawn(async move {
                inflight
                    .answered(async move {
                        let _ = answer_rx.await;
                        let _ = made_tx.send(());
                        Ok(())
                    })
                    .await
            })
        };
        // The caller is dropped mid-request, as an interrupt drops a run.
        tokio::task::yield_now().await;
        while *inflight.0.borrow() == 0 {
            tokio::task::yield_now().await;
        }
        caller.abort();
        let _ = caller.await;
        let settled = inflight.settled();
        tokio::pin!(settled);
        // Not settled while the engine has not answered.
        tokio::select! {
            biased;
            _ = &mut settled => panic!("settled before the request was answered"),
            _ = tokio::task::yield_now() => {}
        }
        assert!(made_rx.try_recv().is_err());
        answer_tx.send(()).unwrap();
        settled.await;
        assert!(made_rx.try_recv().is_ok(), "the request ran to its answer");
        assert_eq!(*inflight.0.borrow(), 0);
    }

    #[tokio::test]
    async fn an_answer_is_passed_back_and_settled_is_immediate_with_nothing_in_flight() {
        let inflight = InFlight::default();
        let got = inflight.answered(async { Ok(7) }).await.unwrap();
        assert_eq!(got, 7);
        inflight.settled().await;
    }
}
