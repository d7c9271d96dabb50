//! What wakes the scheduler: a timerfd armed for the next instant, and SIGINT or SIGTERM.
//!
//! The timerfd, not tokio's timer: re-arming a tokio timer from a running task writes the
//! runtime's eventfd and costs a spurious wake-up, per request at a few hundred requests a
//! second, and tokio rounds sleeps up to the millisecond. A timerfd costs one system call
//! to arm and fires to the microsecond.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::signal::unix::{signal, Signal, SignalKind};

use super::error::Error;

/// A one-shot monotonic timer the runtime's epoll watches.
pub struct Timer {
    fd: AsyncFd<OwnedFd>,
}

impl Timer {
    pub fn new() -> Result<Timer, Error> {
        // SAFETY: timerfd_create takes no pointers; a non-negative result is a new fd we own.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(Error::Timer(io::Error::last_os_error()));
        }
        // SAFETY: `raw` is a valid fd that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: the OwnedFd keeps the fd open, and the same, as long as the AsyncFd owns it.
        let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
            .map_err(|e| Error::Timer(e.into()))?;
        Ok(Timer { fd })
    }

    /// Arms the timer to fire at `at` (at once if that has passed). Arming also clears an
    /// expiry not yet waited for: the kernel resets the expiry count.
    pub fn arm(&self, at: Instant) -> Result<(), Error> {
        // A zero it_value would disarm the timer: a past instant fires after 1 ns.
        let left = at
            .saturating_duration_since(Instant::now())
            .max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: left.as_secs().min(i64::MAX as u64) as libc::time_t,
                tv_nsec: left.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: the fd is open; `spec` is a valid itimerspec; the old value is not asked for.
        let rc =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc < 0 {
            return Err(Error::Timer(io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Waits until the armed instant has passed.
    pub async fn fired(&self) -> Result<(), Error> {
        let mut ready = self.fd.readable().await.map_err(Error::Timer)?;
        // The next `arm` resets the kernel's count, so the fd is never read.
        ready.clear_ready();
        Ok(())
    }
}

/// SIGINT and SIGTERM, listened for from before the scenario starts.
pub struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

impl Signals {
    pub fn new() -> Result<Signals, Error> {
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt()).map_err(Error::Signal)?,
            terminate: signal(SignalKind::terminate()).map_err(Error::Signal)?,
        })
    }

    /// Resolves at the next signal. Make it once and poll it across wake-ups: making it
    /// afresh each time costs more than the rest of a wake-up.
    pub async fn recv(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}
