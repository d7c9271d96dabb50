//! Routes, request parsing and the error table of CONTRACT.md. Every answer is JSON, and
//! every request runs under `REQUEST_DEADLINE_MS`.

use std::convert::Infallible;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use serde::Deserialize;
use tokio::time::{timeout_at, Instant};

use crate::feed::{self, Page};
use crate::{db, App};

/// The largest `POST /posts` body accepted.
const MAX_BODY: usize = 64 * 1024;

/// A response; the body is JSON.
pub type Reply = Response<Full<Bytes>>;

fn json(status: StatusCode, body: impl Into<Bytes>) -> Reply {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn error(status: StatusCode, code: &str, message: &str) -> Reply {
    let body = serde_json::json!({"error": {"code": code, "message": message}});
    json(status, body.to_string())
}

fn bad_request(message: &str) -> Reply {
    error(StatusCode::BAD_REQUEST, "bad_request", message)
}

/// The one `404`: unknown routes, viewers and posts, and posts the viewer may not see.
fn not_found() -> Reply {
    error(StatusCode::NOT_FOUND, "not_found", "not found")
}

fn unavailable() -> Reply {
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        "upstream_unavailable",
        "the database is unavailable",
    )
}

fn method_not_allowed(allow: &'static str) -> Reply {
    let mut reply = error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "method not allowed",
    );
    reply
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    reply
}

/// Serves one request.
pub async fn serve(app: &App, request: Request<Incoming>) -> Result<Reply, Infallible> {
    let deadline = Instant::now() + app.config.request_deadline;
    Ok(timeout_at(deadline, route(app, request, deadline))
        .await
        .unwrap_or_else(|_| unavailable()))
}

async fn route(app: &App, request: Request<Incoming>, deadline: Instant) -> Reply {
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or("").to_owned();
    let method = request.method().clone();
    let get = method == Method::GET;
    match path.as_str() {
        "/healthz" if get => json(StatusCode::OK, r#"{"status":"ok"}"#),
        "/readyz" if get => app.readiness().await,
        "/feed" if get => get_feed(app, &query, deadline).await,
        "/posts" if method == Method::POST => create_post(app, request, deadline).await,
        "/healthz" | "/readyz" | "/feed" => method_not_allowed("GET"),
        "/posts" => method_not_allowed("POST"),
        _ => match path.strip_prefix("/posts/") {
            Some(id) if !id.contains('/') => {
                if get {
                    get_post(app, id, &query, deadline).await
                } else {
                    method_not_allowed("GET")
                }
            }
            _ => not_found(),
        },
    }
}

/// The `viewer` query parameter: `Ok(None)` when absent, an error when malformed or repeated.
fn viewer_param(query: &str) -> Result<Option<i64>, &'static str> {
    let mut viewer = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if percent_decode(key).as_deref() != Some("viewer") {
            continue;
        }
        let parsed = percent_decode(value)
            .and_then(|v| parse_id(&v))
            .ok_or("viewer must be an integer")?;
        if viewer.replace(parsed).is_some() {
            return Err("viewer is given more than once");
        }
    }
    Ok(viewer)
}

/// An id: an optional `-` and ASCII digits that fit an `i64`.
fn parse_id(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Decodes `%XX` escapes and `+`; `None` for invalid escapes or UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

async fn get_feed(app: &App, query: &str, deadline: Instant) -> Reply {
    let viewer = match viewer_param(query) {
        Ok(Some(viewer)) => viewer,
        Ok(None) => return bad_request("viewer is required"),
        Err(message) => return bad_request(message),
    };
    match feed::page(app, viewer, deadline).await {
        Ok(Page::Ok(body)) => json(StatusCode::OK, body),
        Ok(Page::UnknownViewer) => not_found(),
        Err(_) => unavailable(),
    }
}

async fn get_post(app: &App, id: &str, query: &str, deadline: Instant) -> Reply {
    let Some(id) = percent_decode(id).and_then(|id| parse_id(&id)) else {
        return bad_request("the post id must be an integer");
    };
    let viewer = match viewer_param(query) {
        Ok(viewer) => viewer.unwrap_or(0),
        Err(message) => return bad_request(message),
    };
    match db::post(&app.pool, &app.statements, deadline, viewer, id).await {
        Ok(Some(post)) => match serde_json::to_vec(&post) {
            Ok(body) => json(StatusCode::OK, body),
            Err(_) => unavailable(),
        },
        Ok(None) => not_found(),
        Err(_) => unavailable(),
    }
}

#[derive(Deserialize)]
struct NewPost {
    author: i64,
    body: String,
    audience: String,
}

/// Checks a `POST /posts` body.
fn parse_new_post(bytes: &[u8]) -> Result<NewPost, &'static str> {
    let post: NewPost = serde_json::from_slice(bytes)
        .map_err(|_| "the body must be {\"author\": id, \"body\": text, \"audience\": ...}")?;
    if !matches!(post.audience.as_str(), "public" | "followers" | "private") {
        return Err("audience must be public, followers or private");
    }
    if post.body.contains('\0') {
        return Err("body must not contain NUL");
    }
    Ok(post)
}

async fn create_post(app: &App, request: Request<Incoming>, deadline: Instant) -> Reply {
    let bytes = match Limited::new(request.into_body(), MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return bad_request("the body is unreadable or too large"),
    };
    let new = match parse_new_post(&bytes) {
        Ok(new) => new,
        Err(message) => return bad_request(message),
    };
    match db::create_post(&app.pool, deadline, new.author, &new.body, &new.audience).await {
        Ok(Some(post)) => match serde_json::to_vec(&post) {
            Ok(body) => json(StatusCode::CREATED, body),
            Err(_) => unavailable(),
        },
        Ok(None) => error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_author",
            "the author does not exist",
        ),
        Err(_) => unavailable(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viewer_parameter() {
        assert_eq!(viewer_param("viewer=7").ok(), Some(Some(7)));
        assert_eq!(viewer_param("a=b&viewer=%37").ok(), Some(Some(7)));
        assert_eq!(viewer_param("").ok(), Some(None));
        assert_eq!(viewer_param("other=1").ok(), Some(None));
        assert_eq!(viewer_param("viewer=-3").ok(), Some(Some(-3)));
        for bad in [
            "viewer=",
            "viewer",
            "viewer=x",
            "viewer=1.5",
            "viewer=+1",
            "viewer=%zz",
            "viewer=99999999999999999999",
            "viewer=1&viewer=2",
            "viewer=1%20",
        ] {
            assert!(viewer_param(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn new_post_bodies() {
        assert!(parse_new_post(br#"{"author":1,"body":"hi","audience":"public"}"#).is_ok());
        for bad in [
            &br#"{"author":1,"body":"hi","audience":"friends"}"#[..],
            br#"{"author":"1","body":"hi","audience":"public"}"#,
            br#"{"author":1.5,"body":"hi","audience":"public"}"#,
            br#"{"author":1,"audience":"public"}"#,
            br#"{"author":1,"body":7,"audience":"public"}"#,
            br#"{"author":1,"body":"a\u0000b","audience":"public"}"#,
            br#"[1,2]"#,
            b"",
            b"not json",
        ] {
            assert!(
                parse_new_post(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn the_404_body_is_exact() {
        let reply = not_found();
        assert_eq!(reply.status(), StatusCode::NOT_FOUND);
        assert_eq!(reply.headers()[CONTENT_TYPE], "application/json");
    }
}
