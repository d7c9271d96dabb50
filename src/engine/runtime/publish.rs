//! The one exception to "nothing leaves the run's network": a run placed apart publishes
//! its balancer's frontend on the system engine's stated address (never on every address),
//! through an edge network that is not internal, so that a load generator on another
//! engine reaches it; a run on a system engine other than the coordinator's publishes
//! there the ports the coordinator probes and polls. The port is the engine's choice (an ephemeral one, held by the
//! engine from the start: nothing is bound, closed and bound again), read back once the
//! container runs.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use bollard::models::PortBinding;
use bollard::network::ConnectNetworkOptions;

use super::{Runtime, RuntimeError};

/// Each `port/tcp` published at `host_ip`, on a port the engine picks.
pub(super) fn binding(host_ip: &str, ports: &[u16]) -> HashMap<String, Option<Vec<PortBinding>>> {
    ports
        .iter()
        .map(|port| {
            (
                format!("{port}/tcp"),
                Some(vec![PortBinding {
                    host_ip: Some(host_ip.to_string()),
                    host_port: Some(String::new()),
                }]),
            )
        })
        .collect()
}

impl Runtime {
    /// An edge network of a run: a bridge that is not internal, which publishing needs.
    pub async fn ensure_edge_network(
        &self,
        name: &str,
        labels: &HashMap<String, String>,
    ) -> Result<(), RuntimeError> {
        self.ensure_bridge(name, labels, false).await
    }

    /// Attaches a created container to `network` under `alias`.
    pub(super) async fn join(
        &self,
        name: &str,
        network: &str,
        alias: &str,
    ) -> Result<(), RuntimeError> {
        let options = ConnectNetworkOptions {
            container: name.to_string(),
            endpoint_config: bollard::models::EndpointSettings {
                aliases: Some(vec![alias.to_string()]),
                ..Default::default()
            },
        };
        self.docker
            .connect_network(network, options)
            .await
            .map_err(|source| RuntimeError::Join {
                name: name.into(),
                network: network.into(),
                source: Box::new(source),
            })
    }

    /// Where the running container's `port/tcp` is published on its engine's host.
    pub async fn published(&self, name: &str, port: u16) -> Result<SocketAddr, RuntimeError> {
        let c = self
            .docker
            .inspect_container(name, None)
            .await
            .map_err(|source| RuntimeError::Inspect {
                name: name.into(),
                source,
            })?;
        let key = format!("{port}/tcp");
        let found = c
            .network_settings
            .and_then(|n| n.ports)
            .and_then(|mut p| p.remove(&key))
            .flatten()
            .and_then(|b| b.into_iter().next())
            .and_then(|b| {
                let ip: IpAddr = b.host_ip?.parse().ok()?;
                let port: u16 = b.host_port?.parse().ok()?;
                Some(SocketAddr::new(ip, port))
            });
        found.ok_or_else(|| RuntimeError::NotPublished {
            name: name.into(),
            port,
        })
    }
}
