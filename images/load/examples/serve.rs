//! A fast local HTTP server for measuring the generator (see bench.sh): prints its address,
//! then serves until killed. `serve [DELAY_MS]` holds each response that long.

#[allow(dead_code)]
#[path = "../tests/common/server.rs"]
mod server;

use std::time::Duration;

fn main() {
    let delay_ms: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("DELAY_MS: a number"))
        .unwrap_or(0);
    let server = server::Server::start(server::Behaviour {
        delay: Duration::from_millis(delay_ms),
        record: false,
        ..server::Behaviour::default()
    });
    println!("{}", server.url());
    loop {
        std::thread::park();
    }
}
