//! One proxy: its settings, its listener task and its toxics.
//!
//! The proxy's port is held from its first enable until it is deleted or moved: besides the
//! listening socket, a second socket bound to the same address (SO_REUSEPORT) never listens.
//! Disabling closes the listening socket, so new connections are refused as Toxiproxy's are,
//! while the port stays ours; enabling binds a new listening socket beside the held one.
//! No other process can take the port in between (the kernel hands out no port in use, and a
//! bind without SO_REUSEPORT fails), so enabling never races for a port number once free.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::chain::ToxicSet;
use crate::error::ApiError;
use crate::link::{self, LinkContext};
use crate::toxic::{Stream, Toxic, ToxicView};

/// A listening proxy's handles: dropping `stop` ends the accept loop and
/// every connection; `task` is awaited so the port is closed on return.
struct Running {
    stop: watch::Sender<()>,
    task: JoinHandle<()>,
}

/// A named TCP proxy from `listen` to `upstream`.
pub struct Proxy {
    name: Arc<str>,
    listen: String,
    upstream: String,
    toxics: ToxicSet,
    toxics_tx: watch::Sender<Arc<ToxicSet>>,
    running: Option<Running>,
    /// Bound, never listening: holds the port between a disable and the next enable.
    held: Option<TcpSocket>,
}

/// The JSON view of a proxy, field for field as Toxiproxy writes it.
#[derive(Serialize)]
pub struct ProxyView<'a> {
    name: &'a str,
    listen: &'a str,
    upstream: &'a str,
    enabled: bool,
    toxics: Vec<ToxicView<'a>>,
}

impl Proxy {
    /// A stopped proxy with no toxics.
    pub fn new(name: &str, listen: &str, upstream: &str) -> Proxy {
        Proxy {
            name: Arc::from(name),
            listen: listen.to_string(),
            upstream: upstream.to_string(),
            toxics: ToxicSet::default(),
            toxics_tx: watch::Sender::new(Arc::new(ToxicSet::default())),
            running: None,
            held: None,
        }
    }

    /// The listen address (the bound one once the proxy has started).
    pub fn listen(&self) -> &str {
        &self.listen
    }

    /// The upstream address.
    pub fn upstream(&self) -> &str {
        &self.upstream
    }

    /// Whether the proxy is listening.
    pub fn enabled(&self) -> bool {
        self.running.is_some()
    }

    /// Binds the listen address and starts accepting; a no-op if running.
    pub async fn start(&mut self) -> Result<(), ApiError> {
        if self.running.is_some() {
            return Ok(());
        }
        let wanted_text = self.listen.clone();
        let fail = |e: std::io::Error| ApiError::Listen {
            addr: wanted_text.clone(),
            reason: e.to_string(),
        };
        let addr = match &self.held {
            Some(held) => held.local_addr().map_err(fail)?,
            None => {
                let wanted = tokio::net::lookup_host(wanted_text.as_str())
                    .await
                    .map_err(fail)?
                    .next()
                    .ok_or_else(|| {
                        fail(std::io::Error::new(
                            std::io::ErrorKind::AddrNotAvailable,
                            "the address resolves to nothing",
                        ))
                    })?;
                let held = port_socket(wanted).map_err(fail)?;
                let addr = held.local_addr().map_err(fail)?;
                self.held = Some(held);
                self.listen = addr.to_string();
                addr
            }
        };
        let listener = port_socket(addr)
            .and_then(|s| s.listen(1024))
            .map_err(fail)?;
        let (stop, stop_rx) = watch::channel(());
        let ctx = LinkContext {
            proxy: Arc::clone(&self.name),
            upstream: Arc::from(self.upstream.as_str()),
            toxics: self.toxics_tx.subscribe(),
            stop: stop_rx,
        };
        let task = tokio::spawn(accept_loop(listener, ctx));
        self.running = Some(Running { stop, task });
        eprintln!(
            "proxy {}: listening on {} -> {}",
            self.name, self.listen, self.upstream
        );
        Ok(())
    }

    /// Releases the port too: for a deleted proxy, or one that moves to another address.
    pub async fn close(&mut self) {
        self.stop().await;
        self.held = None;
    }

    /// Stops listening (new connections are refused) and drops every connection; the port
    /// stays held. A no-op if stopped.
    pub async fn stop(&mut self) {
        if let Some(Running { stop, task }) = self.running.take() {
            drop(stop);
            let _ = task.await;
            eprintln!("proxy {}: stopped", self.name);
        }
    }

    /// Applies a Toxiproxy update: a new address restarts the proxy, then
    /// `enabled` starts or stops it.
    pub async fn update(
        &mut self,
        listen: String,
        upstream: String,
        enabled: bool,
    ) -> Result<(), ApiError> {
        if listen != self.listen || upstream != self.upstream {
            self.close().await;
            self.listen = listen;
            self.upstream = upstream;
        }
        if enabled {
            self.start().await
        } else {
            self.stop().await;
            Ok(())
        }
    }

    /// The toxic with this name, if any.
    pub fn toxic(&self, name: &str) -> Option<&Arc<Toxic>> {
        self.toxics().find(|t| t.name == name)
    }

    /// All toxics, upstream ones first, each direction in order added.
    pub fn toxics(&self) -> impl Iterator<Item = &Arc<Toxic>> {
        self.toxics
            .upstream
            .iter()
            .chain(self.toxics.downstream.iter())
    }

    fn list_mut(&mut self, stream: Stream) -> &mut Vec<Arc<Toxic>> {
        match stream {
            Stream::Upstream => &mut self.toxics.upstream,
            Stream::Downstream => &mut self.toxics.downstream,
        }
    }

    fn publish(&self) {
        self.toxics_tx.send_replace(Arc::new(self.toxics.clone()));
    }

    /// Adds a toxic (its name was checked free) and applies it to live links.
    pub fn add_toxic(&mut self, toxic: Toxic) -> Arc<Toxic> {
        let toxic = Arc::new(toxic);
        self.list_mut(toxic.stream).push(Arc::clone(&toxic));
        self.publish();
        toxic
    }

    /// Replaces the toxic of the same name, keeping its place in the chain.
    pub fn replace_toxic(&mut self, toxic: Toxic) -> Result<Arc<Toxic>, ApiError> {
        let toxic = Arc::new(toxic);
        let list = self.list_mut(toxic.stream);
        let slot = list
            .iter_mut()
            .find(|t| t.name == toxic.name)
            .ok_or(ApiError::ToxicNotFound)?;
        *slot = Arc::clone(&toxic);
        self.publish();
        Ok(toxic)
    }

    /// Removes a toxic by name.
    pub fn remove_toxic(&mut self, name: &str) -> Result<(), ApiError> {
        let before = self.toxics.upstream.len() + self.toxics.downstream.len();
        self.toxics.upstream.retain(|t| t.name != name);
        self.toxics.downstream.retain(|t| t.name != name);
        if self.toxics.upstream.len() + self.toxics.downstream.len() == before {
            return Err(ApiError::ToxicNotFound);
        }
        self.publish();
        Ok(())
    }

    /// Removes every toxic.
    pub fn clear_toxics(&mut self) {
        if self.toxics().next().is_some() {
            self.toxics = ToxicSet::default();
            self.publish();
        }
    }

    /// The JSON view.
    pub fn view(&self) -> ProxyView<'_> {
        ProxyView {
            name: &self.name,
            listen: &self.listen,
            upstream: &self.upstream,
            enabled: self.enabled(),
            toxics: self.toxics().map(|t| t.view()).collect(),
        }
    }
}

/// Accepts clients until the proxy stops, one task per connection.
/// A socket bound to `addr` that shares the port with the proxy's other socket.
fn port_socket(addr: std::net::SocketAddr) -> std::io::Result<TcpSocket> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseport(true)?;
    socket.bind(addr)?;
    Ok(socket)
}

async fn accept_loop(listener: TcpListener, ctx: LinkContext) {
    let mut stop = ctx.stop.clone();
    loop {
        tokio::select! {
            biased;
            _ = stop.changed() => return,
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => {
                    tokio::spawn(link::serve(socket, ctx.clone()));
                }
                Err(e) => {
                    // Typically out of file descriptors: back off briefly.
                    eprintln!("proxy {}: accept failed: {e}", ctx.proxy);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
}
