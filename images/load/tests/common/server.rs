//! A small HTTP/1.1 server on 127.0.0.1 for the tests and the benchmark: keep-alive, an
//! optional delay before each response, a fixed status, and a record of what it was sent.
//!
//! The listener is bound to port 0 and kept open for the server's whole life (never closed
//! and bound again, which once let another process take the port).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// How the server answers.
#[derive(Debug, Clone)]
pub struct Behaviour {
    pub delay: Duration,
    pub status: u16,
    pub body: &'static str,
    /// Whether to keep what it is sent (the benchmark does not).
    pub record: bool,
}

impl Default for Behaviour {
    fn default() -> Behaviour {
        Behaviour {
            delay: Duration::ZERO,
            status: 200,
            body: "ok",
            record: true,
        }
    }
}

/// One request as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub content_type: Option<String>,
    pub user_agent: Option<String>,
    pub body: String,
}

/// A running server; stops when dropped.
pub struct Server {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Server {
    pub fn start(behaviour: Behaviour) -> Server {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (stop, stopped) = oneshot::channel();
        let (ready, addr) = std::sync::mpsc::channel();
        let record = seen.clone();
        let thread = thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("server runtime");
            runtime.block_on(serve(behaviour, record, ready, stopped));
        });
        let addr = addr.recv().expect("server address");
        Server {
            addr,
            seen,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("seen").clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(
    behaviour: Behaviour,
    seen: Arc<Mutex<Vec<Seen>>>,
    ready: std::sync::mpsc::Sender<SocketAddr>,
    mut stopped: oneshot::Receiver<()>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    ready
        .send(listener.local_addr().expect("address"))
        .expect("send address");
    let behaviour = Arc::new(behaviour);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(_) => continue,
            },
            _ = &mut stopped => return,
        };
        let _ = stream.set_nodelay(true);
        let (behaviour, seen) = (behaviour.clone(), seen.clone());
        tokio::spawn(async move {
            let service =
                service_fn(move |request| answer(behaviour.clone(), seen.clone(), request));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn answer(
    behaviour: Arc<Behaviour>,
    seen: Arc<Mutex<Vec<Seen>>>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let header = |name| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let (method, path) = (request.method().to_string(), request.uri().to_string());
    let (content_type, user_agent) = (header("content-type"), header("user-agent"));
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
        .unwrap_or_default();
    if behaviour.record {
        seen.lock().expect("seen").push(Seen {
            method,
            path,
            content_type,
            user_agent,
            body,
        });
    }
    if !behaviour.delay.is_zero() {
        tokio::time::sleep(behaviour.delay).await;
    }
    let mut response = Response::new(Full::new(Bytes::from_static(behaviour.body.as_bytes())));
    *response.status_mut() = hyper::StatusCode::from_u16(behaviour.status).expect("status");
    Ok(response)
}

/// How a raw (hand-written) server ends each connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closing {
    /// Answers one request, then closes (without saying `Connection: close`).
    AfterResponse,
    /// Answers one request; closes on reading the next, unanswered: a keep-alive
    /// connection the server gave up on just as the client reused it.
    OnSecondRequest,
}

/// A blocking server on 127.0.0.1 that answers `200 ok` to GETs and closes as told. It runs
/// until the test process ends; its listener stays open all along.
pub fn start_closing(closing: Closing) -> SocketAddr {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                // One byte at a time: a test server, and the request ends at its blank line.
                while !head.ends_with(b"\r\n\r\n") {
                    match stream.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => return,
                    }
                }
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                if closing == Closing::OnSecondRequest {
                    let _ = stream.read(&mut byte);
                }
            });
        }
    });
    addr
}
