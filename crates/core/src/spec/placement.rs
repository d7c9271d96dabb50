//! A run placed apart (`placement: {load-generator: apart}`): the load generator on an engine
//! of its own, on that engine's host network, and the balancer's frontend published on the
//! system engine's stated address, the one port that crosses between engines. Everything
//! else stays on the run's internal network.

use std::net::{IpAddr, SocketAddr};

use super::topology::{Attach, Role, RunTopology, BALANCER_PORT};

/// The edge network of a run placed apart: the balancer's second network, not internal, on
/// which its frontend is published.
pub fn edge_network(topology: &RunTopology) -> String {
    format!("{}-edge", topology.network)
}

/// `topology` with its balancer published at `address` (the system engine's, from the
/// engines file) and its load generator on its own engine's host network; the cores the
/// run reserves on the system engine no longer count the load generator's cap. Placing a
/// placed topology again changes nothing.
pub fn apart(topology: &RunTopology, address: IpAddr) -> RunTopology {
    let mut t = topology.clone();
    let edge = edge_network(topology);
    if let Some(lg) = t
        .containers
        .iter()
        .find(|c| c.role == Role::LoadGenerator && c.attach != Attach::Host)
    {
        let left = t.total_cpus - lg.nano_cpus as f64 / 1e9;
        t.total_cpus = (left * 1000.0).round() / 1000.0;
    }
    for c in &mut t.containers {
        match c.role {
            Role::Balancer => {
                c.attach = Attach::Published {
                    network: edge.clone(),
                    host_ip: address.to_string(),
                    port: BALANCER_PORT,
                }
            }
            Role::LoadGenerator => c.attach = Attach::Host,
            _ => {}
        }
    }
    t
}

/// The load generator's target when it runs apart: the balancer's frontend where the
/// system engine published it.
pub fn base_url(published: SocketAddr) -> String {
    format!("http://{published}")
}

/// The networks a topology's containers are attached to beside the run's own.
pub fn extra_networks(topology: &RunTopology) -> Vec<String> {
    let mut out: Vec<String> = topology
        .containers
        .iter()
        .filter_map(|c| match &c.attach {
            Attach::Published { network, .. } => Some(network.clone()),
            _ => None,
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::validate::Context;
    use crate::plan::{expand, load_str};
    use crate::spec::topology::topology;

    #[test]
    fn apart_publishes_the_balancer_alone_and_puts_the_load_generator_on_its_host_network() {
        let text = include_str!("../../../../experiments/smoke.yaml");
        let ctx = Context {
            host_cores: None,
            exists: None,
        };
        let loaded = load_str("smoke.yaml", text, &ctx).unwrap();
        let run = &expand(&loaded.plan)[0];
        let read = |_: &str| Ok(b"-- sql".to_vec());
        let one = topology(&loaded.plan, run, &read).unwrap();
        let placed = apart(&one, "10.99.0.1".parse().unwrap());
        for (a, b) in one.containers.iter().zip(&placed.containers) {
            match b.role {
                Role::Balancer => assert_eq!(
                    b.attach,
                    Attach::Published {
                        network: format!("{}-edge", one.network),
                        host_ip: "10.99.0.1".into(),
                        port: BALANCER_PORT
                    }
                ),
                Role::LoadGenerator => assert_eq!(b.attach, Attach::Host),
                _ => assert_eq!(a, b, "only the balancer and the load generator change"),
            }
        }
        assert_eq!(extra_networks(&placed), vec![edge_network(&one)]);
        // The system engine reserves the caps of what runs on it.
        let lg = one.container(Role::LoadGenerator).unwrap().nano_cpus as f64 / 1e9;
        assert!((placed.total_cpus - (one.total_cpus - lg)).abs() < 1e-9);
        let twice = apart(&placed, "10.99.0.1".parse().unwrap());
        assert_eq!(twice.total_cpus, placed.total_cpus);
        assert_eq!(twice.containers, placed.containers);
        assert!(extra_networks(&one).is_empty());
        assert_eq!(
            base_url("10.99.0.1:32768".parse().unwrap()),
            "http://10.99.0.1:32768"
        );
        assert_eq!(
            base_url("[fd00::1]:80".parse().unwrap()),
            "http://[fd00::1]:80"
        );
    }
}
