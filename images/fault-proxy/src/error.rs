//! API errors, shaped like Toxiproxy's `{"error": "...", "status": N}` bodies.

use thiserror::Error;

/// An error the HTTP API reports to its client, with the status code
/// Toxiproxy uses for the same condition.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ApiError {
    /// The request body is not valid JSON or has a wrong field type.
    #[error("bad request body: {0}")]
    BadRequestBody(String),
    /// A required field (name, upstream, ...) is absent or empty.
    #[error("missing required field: {0}")]
    MissingField(String),
    /// No proxy has that name.
    #[error("proxy not found")]
    ProxyNotFound,
    /// A proxy with that name exists already.
    #[error("proxy already exists")]
    ProxyAlreadyExists,
    /// The `stream` field is neither `upstream` nor `downstream`.
    #[error("stream was invalid, can be either upstream or downstream")]
    InvalidStream,
    /// The `type` field names no toxic this proxy implements.
    #[error("invalid toxic type")]
    InvalidToxicType,
    /// A toxic with that name exists already on the proxy.
    #[error("toxic already exists")]
    ToxicAlreadyExists,
    /// The proxy has no toxic with that name.
    #[error("toxic not found")]
    ToxicNotFound,
    /// Listening on the proxy's address failed (500, as in Toxiproxy).
    #[error("listen tcp {addr}: {reason}")]
    Listen {
        /// The address that could not be bound.
        addr: String,
        /// The operating system's reason.
        reason: String,
    },
    /// Two proxies of one populate request share a name (500, as in Toxiproxy).
    #[error("duplicate proxy name \"{0}\"")]
    DuplicateProxyName(String),
    /// No route matches the request path.
    #[error("not found")]
    RouteNotFound,
    /// The route exists but not for this HTTP method.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// No readiness probe has that name (feedbench's extension).
    #[error("probe not found")]
    ProbeNotFound,
    /// A readiness probe with that name exists already (feedbench's extension).
    #[error("probe already exists")]
    ProbeAlreadyExists,
}

impl ApiError {
    /// The HTTP status code of this error.
    pub fn status(&self) -> u16 {
        match self {
            ApiError::BadRequestBody(_)
            | ApiError::MissingField(_)
            | ApiError::InvalidStream
            | ApiError::InvalidToxicType => 400,
            ApiError::ProxyNotFound
            | ApiError::ToxicNotFound
            | ApiError::RouteNotFound
            | ApiError::ProbeNotFound => 404,
            ApiError::MethodNotAllowed => 405,
            ApiError::ProxyAlreadyExists
            | ApiError::ToxicAlreadyExists
            | ApiError::ProbeAlreadyExists => 409,
            ApiError::Listen { .. } | ApiError::DuplicateProxyName(_) => 500,
        }
    }

    /// The JSON body Toxiproxy sends for an error: `{"error":"...","status":N}`.
    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({ "error": self.to_string(), "status": self.status() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_match_toxiproxy() {
        assert_eq!(
            ApiError::ProxyNotFound.body().to_string(),
            r#"{"error":"proxy not found","status":404}"#
        );
        assert_eq!(ApiError::ToxicAlreadyExists.status(), 409);
        assert_eq!(
            ApiError::MissingField("upstream".into()).to_string(),
            "missing required field: upstream"
        );
    }
}
