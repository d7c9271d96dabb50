//! The set of proxies and the operations of Toxiproxy's API on it.

use std::collections::{BTreeMap, HashSet};

use serde::Deserialize;
use tokio::sync::Mutex;

use crate::error::ApiError;
use crate::proxy::Proxy;
use crate::toxic::parse_json;

/// Default listen address when a request gives none (loopback, any port).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:0";

/// The fields of a proxy in create, update and populate bodies.
#[derive(Deserialize, Default)]
pub struct ProxyInput {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    listen: Option<String>,
    #[serde(default)]
    upstream: Option<String>,
    #[serde(default)]
    enabled: Option<bool>,
}

/// A create request after validation.
struct NewProxy {
    name: String,
    listen: String,
    upstream: String,
    enabled: bool,
}

impl ProxyInput {
    /// Validates a create request; `which` names the proxy in populate errors.
    fn validate(self, which: Option<usize>) -> Result<NewProxy, ApiError> {
        let suffix = which.map(|i| format!(" at proxy {i}")).unwrap_or_default();
        let name = self.name.filter(|n| !n.is_empty());
        let name = name.ok_or_else(|| ApiError::MissingField(format!("name{suffix}")))?;
        let upstream = self.upstream.filter(|u| !u.is_empty());
        let upstream =
            upstream.ok_or_else(|| ApiError::MissingField(format!("upstream{suffix}")))?;
        let listen = self
            .listen
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| DEFAULT_LISTEN.into());
        Ok(NewProxy {
            name,
            listen,
            upstream,
            enabled: self.enabled.unwrap_or(true),
        })
    }
}

/// All proxies by name, behind one lock (API calls are rare; data never
/// takes this lock).
#[derive(Default)]
pub struct Collection {
    proxies: Mutex<BTreeMap<String, Proxy>>,
}

impl Collection {
    /// Runs `f` with the proxy map locked.
    pub async fn with<R>(&self, f: impl FnOnce(&mut BTreeMap<String, Proxy>) -> R) -> R {
        f(&mut *self.proxies.lock().await)
    }

    /// `POST /proxies`: creates (and by default starts) a proxy.
    pub async fn create(&self, body: &[u8]) -> Result<serde_json::Value, ApiError> {
        let input: ProxyInput = parse_json(body)?;
        let new = input.validate(None)?;
        let mut proxies = self.proxies.lock().await;
        if proxies.contains_key(&new.name) {
            return Err(ApiError::ProxyAlreadyExists);
        }
        let mut proxy = Proxy::new(&new.name, &new.listen, &new.upstream);
        if new.enabled {
            proxy.start().await?;
        }
        let view = to_value(proxy.view());
        proxies.insert(new.name, proxy);
        Ok(view)
    }

    /// `POST /populate`: creates or replaces many proxies; a proxy whose
    /// listen and upstream are unchanged is kept as it is. Returns the views
    /// of the proxies touched, and the error that stopped the run, if any.
    pub async fn populate(&self, body: &[u8]) -> (Vec<serde_json::Value>, Option<ApiError>) {
        let inputs: Vec<ProxyInput> = match parse_json(body) {
            Ok(i) => i,
            Err(e) => return (Vec::new(), Some(e)),
        };
        let mut valid = Vec::with_capacity(inputs.len());
        let mut names = HashSet::new();
        for (i, input) in inputs.into_iter().enumerate() {
            match input.validate(Some(i + 1)) {
                Ok(new) if !names.insert(new.name.clone()) => {
                    return (Vec::new(), Some(ApiError::DuplicateProxyName(new.name)));
                }
                Ok(new) => valid.push(new),
                Err(e) => return (Vec::new(), Some(e)),
            }
        }
        let mut proxies = self.proxies.lock().await;
        let mut views = Vec::with_capacity(valid.len());
        for new in valid {
            if let Some(existing) = proxies.get_mut(&new.name) {
                if existing.listen() == new.listen && existing.upstream() == new.upstream {
                    views.push(to_value(existing.view()));
                    continue;
                }
                existing.close().await;
            }
            let mut proxy = Proxy::new(&new.name, &new.listen, &new.upstream);
            if new.enabled {
                if let Err(e) = proxy.start().await {
                    proxies.remove(&new.name);
                    return (views, Some(e));
                }
            }
            views.push(to_value(proxy.view()));
            proxies.insert(new.name, proxy);
        }
        (views, None)
    }

    /// `POST /proxies/{name}`: updates listen, upstream and enabled.
    pub async fn update(&self, name: &str, body: &[u8]) -> Result<serde_json::Value, ApiError> {
        let mut proxies = self.proxies.lock().await;
        let proxy = proxies.get_mut(name).ok_or(ApiError::ProxyNotFound)?;
        let input: ProxyInput = parse_json(body)?;
        let listen = input.listen.unwrap_or_else(|| proxy.listen().to_string());
        let upstream = input
            .upstream
            .unwrap_or_else(|| proxy.upstream().to_string());
        let enabled = input.enabled.unwrap_or(proxy.enabled());
        proxy.update(listen, upstream, enabled).await?;
        Ok(to_value(proxy.view()))
    }

    /// `DELETE /proxies/{name}`: stops and removes a proxy.
    pub async fn delete(&self, name: &str) -> Result<(), ApiError> {
        let mut proxies = self.proxies.lock().await;
        let mut proxy = proxies.remove(name).ok_or(ApiError::ProxyNotFound)?;
        proxy.close().await;
        Ok(())
    }

    /// `POST /reset`: enables every proxy and removes every toxic.
    pub async fn reset(&self) -> Result<(), ApiError> {
        let mut proxies = self.proxies.lock().await;
        for proxy in proxies.values_mut() {
            proxy.start().await?;
            proxy.clear_toxics();
        }
        Ok(())
    }
}

/// Serialises a view; views hold only strings, numbers and bools, so this
/// cannot fail, and `Null` is a harmless fallback.
pub fn to_value<T: serde::Serialize>(view: T) -> serde_json::Value {
    serde_json::to_value(view).unwrap_or(serde_json::Value::Null)
}
