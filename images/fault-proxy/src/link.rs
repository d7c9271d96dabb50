//! One proxied connection: dials the upstream and runs both directions.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::chain::ToxicSet;
use crate::pump::{Outcome, Pump};
use crate::toxic::Stream;

/// Everything a connection needs from its proxy.
#[derive(Clone)]
pub struct LinkContext {
    /// The proxy's name, for log lines.
    pub proxy: Arc<str>,
    /// Address to dial for each client.
    pub upstream: Arc<str>,
    /// The proxy's toxics, updated live.
    pub toxics: watch::Receiver<Arc<ToxicSet>>,
    /// Fires (sender dropped) when the proxy is disabled or removed.
    pub stop: watch::Receiver<()>,
}

/// Serves one accepted client until either side ends or the proxy stops.
pub async fn serve(mut client: TcpStream, mut ctx: LinkContext) {
    let mut server = tokio::select! {
        dialed = TcpStream::connect(&*ctx.upstream) => match dialed {
            Ok(s) => s,
            Err(e) => {
                eprintln!("proxy {}: cannot reach upstream {}: {e}", ctx.proxy, ctx.upstream);
                return;
            }
        },
        _ = ctx.stop.changed() => return,
    };
    // Small request/response traffic must not wait for Nagle's algorithm.
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);

    let outcome = {
        let (client_read, client_write) = client.split();
        let (server_read, server_write) = server.split();
        let up = Pump::new(
            Stream::Upstream,
            client_read,
            server_write,
            ctx.toxics.clone(),
        )
        .run();
        let down = Pump::new(
            Stream::Downstream,
            server_read,
            client_write,
            ctx.toxics.clone(),
        )
        .run();
        tokio::pin!(up, down);
        let (mut up_done, mut down_done) = (false, false);
        loop {
            tokio::select! {
                o = &mut up, if !up_done => match o {
                    Outcome::Finished => up_done = true,
                    other => break other,
                },
                o = &mut down, if !down_done => match o {
                    Outcome::Finished => down_done = true,
                    other => break other,
                },
                _ = ctx.stop.changed() => break Outcome::Close,
            }
            if up_done && down_done {
                break Outcome::Finished;
            }
        }
    };
    if outcome == Outcome::Reset {
        // A zero linger makes the close send RST instead of FIN.
        for stream in [&client, &server] {
            let _ = socket_linger_zero(stream);
        }
    }
}

#[allow(deprecated)]
fn socket_linger_zero(stream: &TcpStream) -> std::io::Result<()> {
    stream.set_linger(Some(Duration::ZERO))
}
