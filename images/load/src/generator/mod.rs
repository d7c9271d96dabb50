//! The generator: set-up (plan, host, output file), then the schedule on a current-thread
//! runtime, the cheapest per request.

pub mod cli;
mod conn;
mod error;
mod http;
mod output;
mod request;
mod schedule;
mod seconds;
mod shared;
mod wake;

use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use feedbench_load::arrivals;
use feedbench_load::plan::{BaseUrl, LoadPlan};
use feedbench_load::stream::{write_header, write_start, Reason};

pub use error::Error;

use cli::Options;
use output::Output;
use seconds::Seconds;
use shared::{Clock, Ctx, Flights, Shared, State};
use wake::{Signals, Timer};

/// This build's version (also in the `User-Agent` header).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Runs a plan to its end (or to SIGINT/SIGTERM).
pub fn run(opts: &Options) -> Result<Reason, Error> {
    let plan = LoadPlan::read(&opts.plan).map_err(Error::Plan)?;
    let check = |source| Error::Check {
        path: opts.plan.clone(),
        source,
    };
    plan.check().map_err(check)?;
    let base = plan.base().map_err(check)?;
    raise_open_files_limit();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(Error::Runtime)?;
    runtime.block_on(async {
        let addr = resolve(&base, &opts.plan).await?;
        let file = File::create(&opts.out).map_err(|source| Error::Create {
            path: opts.out.clone(),
            source,
        })?;
        let signals = Signals::new()?;
        let timer = Timer::new()?;
        let seconds = Seconds::new(arrivals::duration_s(&plan.schedule));
        let ctx = Ctx {
            addr,
            authority: base.authority.clone(),
            timeout: Duration::from_millis(plan.timeout_ms),
            max_lag: Duration::from_millis(plan.max_lag_ms),
            // The scenario starts now, right after set-up.
            clock: Clock::start(),
            plan,
        };
        let mut out = Vec::with_capacity(1 << 16);
        write_start(&mut out, ctx.clock.start_ns);
        write_header(&mut out);
        let shared = Arc::new(Shared {
            ctx,
            state: Mutex::new(State {
                idle: Vec::new(),
                in_flight: 0,
                out,
                requests: 0,
                errors: 0,
                dropped: 0,
                seconds,
                closed: false,
                flights: Flights::default(),
            }),
            drained: Notify::new(),
        });
        let output = Output {
            file,
            path: &opts.out,
        };
        schedule::run(shared, output, signals, timer).await
    })
}

/// The base_url's address, resolved once.
async fn resolve(base: &BaseUrl, plan_path: &Path) -> Result<SocketAddr, Error> {
    let unresolved = || Error::Resolve {
        host: base.host.clone(),
        path: plan_path.to_path_buf(),
    };
    let mut addrs = tokio::net::lookup_host((base.host.as_str(), base.port))
        .await
        .map_err(|_| unresolved())?;
    addrs.next().ok_or_else(unresolved)
}

/// Lifts the soft limit on open files to the hard one, as Go's runtime (so k6) does: each
/// connection is a file, and the default soft limit (often 1024) is below a realistic cap.
fn raise_open_files_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                let _ = writeln!(
                    std::io::stderr(),
                    "feedbench-load: cannot raise the open files limit"
                );
            }
        }
    }
}
