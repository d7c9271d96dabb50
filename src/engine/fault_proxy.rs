//! A client of the fault proxy's Toxiproxy API: create a run's proxies, list them, take a
//! link down and up, add and remove toxics.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};

use super::http::request;
use crate::rundir::readiness::ReadinessRow;
use crate::spec::topology::ProxySpec;

/// A readiness probe to start.
pub struct ProbeSpec<'a> {
    pub name: &'a str,
    pub host: &'a str,
    pub port: u16,
    pub path: &'a str,
    pub interval: Duration,
    pub timeout: Duration,
    pub for_: Duration,
}

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

    /// Starts a readiness probe (feedbench's extension of the API): `GET path` of
    /// `host:port` from inside the run's network every `interval` until a 200 or `for_`.
    pub async fn start_probe(&self, p: &ProbeSpec<'_>) -> Result<(), FaultProxyError> {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        self.call(
            "POST",
            "/feedbench/probes",
            Some(json!({
                "name": p.name, "host": p.host, "port": p.port, "path": p.path,
                "interval_ms": ms(p.interval), "timeout_ms": ms(p.timeout), "for_ms": ms(p.for_),
            })),
            &format!("probe `{}`", p.name),
        )
        .await
        .map(|_| ())
    }

    /// A probe's attempts so far, as readiness.csv rows of `server`, and whether it still
    /// runs.
    pub async fn probe(
        &self,
        name: &str,
        server: &str,
    ) -> Result<(bool, Vec<ReadinessRow>), FaultProxyError> {
        let what = format!("probe `{name}`");
        let v = self
            .call("GET", &format!("/feedbench/probes/{name}"), None, &what)
            .await?;
        let fail = |reason: String| FaultProxyError {
            addr: self.addr,
            what: what.clone(),
            reason,
        };
        let running = v["running"]
            .as_bool()
            .ok_or_else(|| fail(format!("no `running` in {v}")))?;
        let attempts = v["attempts"]
            .as_array()
            .ok_or_else(|| fail(format!("no `attempts` in {v}")))?;
        let rows = attempts
            .iter()
            .map(|a| {
                let ns = |k: &str| a[k].as_u64().map(i128::from);
                Some(ReadinessRow {
                    start_ns: ns("start_ns")?,
                    end_ns: ns("end_ns")?,
                    server: server.to_string(),
                    status: u16::try_from(a["status"].as_u64()?).ok()?,
                    error: a["error"].as_str()?.to_string(),
                })
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| fail(format!("an attempt is not one: {v}")))?;
        Ok((running, rows))
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
