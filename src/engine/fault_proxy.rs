//! A client of the fault proxy's Toxiproxy API: create a run's proxies, list them, take a
//! link down and up, add and remove toxics.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};

use super::http::request;
use crate::spec::topology::ProxySpec;

const TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
#[error("fault proxy at {addr}: {what}: {reason}")]
pub struct FaultProxyError {
    pub addr: SocketAddr,
    pub what: String,
    pub reason: String,
}

pub struct FaultProxy {
    pub addr: SocketAddr,
}

impl FaultProxy {
    async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        what: &str,
    ) -> Result<Value, FaultProxyError> {
        let fail = |reason: String| FaultProxyError {
            addr: self.addr,
            what: what.to_string(),
            reason,
        };
        let bytes = body.map(|b| b.to_string().into_bytes());
        let r = request(self.addr, method, path, bytes.as_deref(), TIMEOUT)
            .await
            .map_err(|e| fail(e.to_string()))?;
        if !(200..300).contains(&r.status) {
            return Err(fail(format!("status {}: {}", r.status, r.text().trim())));
        }
        if r.body.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&r.body).map_err(|e| fail(format!("not JSON: {e}")))
    }

    pub async fn version(&self) -> Result<String, FaultProxyError> {
        let fail = |reason: String| FaultProxyError {
            addr: self.addr,
            what: "version".into(),
            reason,
        };
        let r = request(self.addr, "GET", "/version", None, TIMEOUT)
            .await
            .map_err(|e| fail(e.to_string()))?;
        if r.status != 200 {
            return Err(fail(format!("status {}", r.status)));
        }
        Ok(r.text().trim().to_string())
    }

    /// Creates (or replaces) the proxies in one call.
    pub async fn populate(&self, proxies: &[ProxySpec]) -> Result<(), FaultProxyError> {
        let body: Vec<Value> = proxies
            .iter()
            .map(|p| json!({"name": p.name, "listen": p.listen, "upstream": p.upstream, "enabled": p.enabled}))
            .collect();
        self.call(
            "POST",
            "/populate",
            Some(Value::Array(body)),
            "create proxies",
        )
        .await
        .map(|_| ())
    }

    /// The proxies' names.
    pub async fn list(&self) -> Result<Vec<String>, FaultProxyError> {
        let v = self.call("GET", "/proxies", None, "list proxies").await?;
        let mut names: Vec<String> = v
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        names.sort();
        Ok(names)
    }

    /// Takes a link down (existing connections dropped) or brings it back.
    pub async fn set_enabled(&self, proxy: &str, enabled: bool) -> Result<(), FaultProxyError> {
        let what = if enabled { "enable" } else { "disable" };
        self.call(
            "POST",
            &format!("/proxies/{proxy}"),
            Some(json!({"enabled": enabled})),
            &format!("{what} `{proxy}`"),
        )
        .await
        .map(|_| ())
    }

    /// Adds a toxic: `attributes` as Toxiproxy names them.
    pub async fn add_toxic(
        &self,
        proxy: &str,
        name: &str,
        kind: &str,
        stream: &str,
        toxicity: f64,
        attributes: Value,
    ) -> Result<(), FaultProxyError> {
        let body = json!({"name": name, "type": kind, "stream": stream, "toxicity": toxicity, "attributes": attributes});
        self.call(
            "POST",
            &format!("/proxies/{proxy}/toxics"),
            Some(body),
            &format!("add toxic `{name}` to `{proxy}`"),
        )
        .await
        .map(|_| ())
    }

    pub async fn remove_toxic(&self, proxy: &str, name: &str) -> Result<(), FaultProxyError> {
        self.call(
            "DELETE",
            &format!("/proxies/{proxy}/toxics/{name}"),
            None,
            &format!("remove toxic `{name}` from `{proxy}`"),
        )
        .await
        .map(|_| ())
    }
}
