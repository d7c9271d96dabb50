//! The HTTP API (Toxiproxy's routes, bodies and status codes) on hyper 1.

use std::convert::Infallible;
use std::sync::Arc;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE, USER_AGENT};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::collection::{to_value, Collection};
use crate::error::ApiError;
use crate::probe::Probes;
use crate::toxic::Toxic;

/// Largest request body accepted.
const MAX_BODY: usize = 1 << 20;

/// The version reported by `GET /version`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A successful reply: status and JSON body (empty for 204).
struct Reply {
    status: u16,
    body: Vec<u8>,
}

impl Reply {
    fn json(status: u16, value: &impl serde::Serialize) -> Reply {
        Reply {
            status,
            body: serde_json::to_vec(value).unwrap_or_default(),
        }
    }

    fn no_content() -> Reply {
        Reply {
            status: 204,
            body: Vec::new(),
        }
    }
}

/// Serves the API on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, proxies: Arc<Collection>, probes: Arc<Probes>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                eprintln!("api: accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let proxies = Arc::clone(&proxies);
        let probes = Arc::clone(&probes);
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let proxies = Arc::clone(&proxies);
                let probes = Arc::clone(&probes);
                async move { Ok::<_, Infallible>(handle(&proxies, &probes, req).await) }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn handle(
    proxies: &Collection,
    probes: &Probes,
    req: Request<Incoming>,
) -> Response<Full<Bytes>> {
    // Toxiproxy refuses browsers, so a web page cannot drive the proxy.
    let browser = req
        .headers()
        .get(USER_AGENT)
        .is_some_and(|ua| ua.as_bytes().starts_with(b"Mozilla/"));
    if browser {
        return response(
            403,
            "text/plain; charset=utf-8",
            b"User agent not allowed\n".to_vec(),
        );
    }
    let method = req.method().clone();
    let segments: Vec<String> = req
        .uri()
        .path()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect();
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => return error_response(&ApiError::BadRequestBody(e.to_string())),
    };
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    if method == Method::GET && segments == ["version"] {
        let body = format!("{{\"version\": \"{VERSION}\"}}\n").into_bytes();
        return response(200, "application/json;charset=utf-8", body);
    }
    if method == Method::POST && segments == ["populate"] {
        let (views, err) = proxies.populate(&body).await;
        let mut value = serde_json::json!({ "proxies": views });
        let status = match err {
            Some(e) => {
                value["error"] = e.to_string().into();
                value["status"] = e.status().into();
                e.status()
            }
            None => 201,
        };
        return json_response(status, serde_json::to_vec(&value).unwrap_or_default());
    }
    // feedbench's readiness probes, beside Toxiproxy's routes.
    let probed = match (&method, segments.as_slice()) {
        (&Method::POST, ["feedbench", "probes"]) => Some(probes.start(&body).map(|v| (201, v))),
        (&Method::GET, ["feedbench", "probes", name]) => Some(probes.view(name).map(|v| (200, v))),
        (_, ["feedbench", "probes", ..]) => Some(Err(ApiError::MethodNotAllowed)),
        _ => None,
    };
    if let Some(result) = probed {
        return match result {
            Ok((status, v)) => json_response(status, serde_json::to_vec(&v).unwrap_or_default()),
            Err(e) => error_response(&e),
        };
    }
    match route(proxies, &method, &segments, &body).await {
        Ok(reply) if reply.status == 204 => response(204, "application/json", Vec::new()),
        Ok(reply) => json_response(reply.status, reply.body),
        Err(e) => error_response(&e),
    }
}

async fn route(
    proxies: &Collection,
    method: &Method,
    path: &[&str],
    body: &[u8],
) -> Result<Reply, ApiError> {
    let update = method == Method::POST || method == Method::PATCH;
    match path {
        ["reset"] if method == Method::POST => {
            proxies.reset().await?;
            Ok(Reply::no_content())
        }
        ["proxies"] if method == Method::GET => {
            let all = proxies
                .with(|map| {
                    map.iter()
                        .map(|(name, p)| (name.clone(), to_value(p.view())))
                        .collect::<serde_json::Map<_, _>>()
                })
                .await;
            Ok(Reply::json(200, &all))
        }
        ["proxies"] if method == Method::POST => Ok(Reply::json(201, &proxies.create(body).await?)),
        ["proxies", name] if method == Method::GET => {
            let view = proxies
                .with(|map| map.get(*name).map(|p| to_value(p.view())))
                .await
                .ok_or(ApiError::ProxyNotFound)?;
            Ok(Reply::json(200, &view))
        }
        ["proxies", name] if update => Ok(Reply::json(200, &proxies.update(name, body).await?)),
        ["proxies", name] if method == Method::DELETE => {
            proxies.delete(name).await?;
            Ok(Reply::no_content())
        }
        ["proxies", name, "toxics"] if method == Method::GET => {
            let list = proxies
                .with(|map| {
                    let proxy = map.get(*name).ok_or(ApiError::ProxyNotFound)?;
                    Ok::<_, ApiError>(
                        proxy
                            .toxics()
                            .map(|t| to_value(t.view()))
                            .collect::<Vec<_>>(),
                    )
                })
                .await?;
            Ok(Reply::json(200, &list))
        }
        ["proxies", name, "toxics"] if method == Method::POST => {
            let toxic = proxies
                .with(|map| {
                    let proxy = map.get_mut(*name).ok_or(ApiError::ProxyNotFound)?;
                    let toxic = Toxic::from_create_body(body, |n| proxy.toxic(n).is_some())?;
                    Ok::<_, ApiError>(to_value(proxy.add_toxic(toxic).view()))
                })
                .await?;
            Ok(Reply::json(200, &toxic))
        }
        ["proxies", name, "toxics", toxic] if method == Method::GET => {
            let view = proxies
                .with(|map| {
                    let proxy = map.get(*name).ok_or(ApiError::ProxyNotFound)?;
                    let toxic = proxy.toxic(toxic).ok_or(ApiError::ToxicNotFound)?;
                    Ok::<_, ApiError>(to_value(toxic.view()))
                })
                .await?;
            Ok(Reply::json(200, &view))
        }
        ["proxies", name, "toxics", toxic] if update => {
            let view = proxies
                .with(|map| {
                    let proxy = map.get_mut(*name).ok_or(ApiError::ProxyNotFound)?;
                    let current = proxy.toxic(toxic).ok_or(ApiError::ToxicNotFound)?;
                    let updated = current.updated(body)?;
                    Ok::<_, ApiError>(to_value(proxy.replace_toxic(updated)?.view()))
                })
                .await?;
            Ok(Reply::json(200, &view))
        }
        ["proxies", name, "toxics", toxic] if method == Method::DELETE => {
            proxies
                .with(|map| {
                    map.get_mut(*name)
                        .ok_or(ApiError::ProxyNotFound)?
                        .remove_toxic(toxic)
                })
                .await?;
            Ok(Reply::no_content())
        }
        ["reset"]
        | ["proxies"]
        | ["proxies", _]
        | ["proxies", _, "toxics"]
        | ["proxies", _, "toxics", _]
        | ["version"]
        | ["populate"] => Err(ApiError::MethodNotAllowed),
        _ => Err(ApiError::RouteNotFound),
    }
}

fn response(status: u16, content_type: &'static str, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

fn json_response(status: u16, body: Vec<u8>) -> Response<Full<Bytes>> {
    response(status, "application/json", body)
}

fn error_response(e: &ApiError) -> Response<Full<Bytes>> {
    let mut body = e.body().to_string().into_bytes();
    body.push(b'\n');
    json_response(e.status(), body)
}

/// Decodes `%XX` escapes in a path segment; invalid escapes stay as they are.
fn percent_decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::percent_decode;

    #[test]
    fn decodes_escapes() {
        assert_eq!(percent_decode("a%20b"), "a b");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%4"), "%4");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
