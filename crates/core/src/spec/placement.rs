//! A run placed apart (`placement: {load-generator: apart}`): the load generator on an engine
//! of its own, on that engine's host network, and the balancer's frontend published on the
//! system engine's stated address, the one port that crosses between engines for the load.
//! A run whose system engine is not the coordinator's (a second group of engines) also
//! publishes there the ports the coordinator probes and polls (`controlled`). Everything
//! else stays on the run's internal network.

use std::net::{IpAddr, SocketAddr};

use super::topology::{Attach, ContainerSpec, Readiness, Role, RunTopology, BALANCER_PORT};

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
            Role::Balancer => publish(c, &edge, address, &[BALANCER_PORT]),
            Role::LoadGenerator => c.attach = Attach::Host,
            _ => {}
        }
    }
    t
}

/// `topology` for a system engine whose run networks the coordinator cannot reach (another
/// machine's bridges, or another network namespace's): the port each container is probed
/// on for readiness (a replica's, the fault proxy's API, the balancer's statistics, which
/// the coordinator also polls each second) is published at `address`, the system engine's
/// stated one, and so are the fault proxy's database links, which the coordinator probes
/// each second (`rundir::links`). The containers keep their place on the run's network; the
/// database, probed by a command in it, and the load generator, never probed, publish
/// nothing. Applying it again changes nothing.
pub fn controlled(topology: &RunTopology, address: IpAddr) -> RunTopology {
    let mut t = topology.clone();
    let edge = edge_network(topology);
    let links: Vec<u16> = topology.database_links().iter().map(|l| l.1).collect();
    for c in &mut t.containers {
        let mut ports: Vec<u16> = control_port(c).into_iter().collect();
        if c.role == Role::FaultProxy {
            ports.extend(&links);
        }
        if !ports.is_empty() {
            publish(c, &edge, address, &ports);
        }
    }
    t
}

/// The port the coordinator reaches a container on, if any: its readiness probe's.
pub fn control_port(c: &ContainerSpec) -> Option<u16> {
    match &c.readiness {
        Readiness::Tcp(port)
        | Readiness::Http { port, .. }
        | Readiness::AllServersUp { port, .. } => Some(*port),
        Readiness::Command(_) | Readiness::NotStarted => None,
    }
}

/// Adds `ports` to what `c` publishes at `address` on `edge`.
fn publish(c: &mut ContainerSpec, edge: &str, address: IpAddr, ports: &[u16]) {
    let mut all = match &c.attach {
        Attach::Published { ports, .. } => ports.clone(),
        _ => Vec::new(),
    };
    for p in ports {
        if !all.contains(p) {
            all.push(*p);
        }
    }
    all.sort_unstable();
    c.attach = Attach::Published {
        network: edge.to_string(),
        host_ip: address.to_string(),
        ports: all,
    };
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
        let one = topology(
            &loaded.plan,
            run,
            &crate::spec::instance::Instance::for_tests(),
            &read,
        )
        .unwrap();
        let placed = apart(&one, "10.99.0.1".parse().unwrap());
        for (a, b) in one.containers.iter().zip(&placed.containers) {
            match b.role {
                Role::Balancer => assert_eq!(
                    b.attach,
                    Attach::Published {
                        network: format!("{}-edge", one.network),
                        host_ip: "10.99.0.1".into(),
                        ports: vec![BALANCER_PORT]
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

    #[test]
    fn controlled_publishes_each_probed_port_and_leaves_the_rest_on_the_run_network() {
        use crate::spec::topology::{FAULT_PROXY_API_PORT, STATS_PORT};
        let text = include_str!("../../../../experiments/smoke.yaml");
        let ctx = Context {
            host_cores: None,
            exists: None,
        };
        let loaded = load_str("smoke.yaml", text, &ctx).unwrap();
        let run = &expand(&loaded.plan)[0];
        let read = |_: &str| Ok(b"-- sql".to_vec());
        let one = topology(
            &loaded.plan,
            run,
            &crate::spec::instance::Instance::for_tests(),
            &read,
        )
        .unwrap();
        let address: IpAddr = "10.99.0.2".parse().unwrap();
        let placed = controlled(&one, address);
        let ports = |c: &ContainerSpec| match &c.attach {
            Attach::Published {
                ports,
                host_ip,
                network,
            } => {
                assert_eq!(host_ip, "10.99.0.2");
                assert_eq!(network, &edge_network(&one));
                ports.clone()
            }
            _ => Vec::new(),
        };
        for c in &placed.containers {
            match c.role {
                Role::Balancer => assert_eq!(ports(c), vec![STATS_PORT]),
                // The API, and the database link its probes reach (smoke.yaml's `db`).
                Role::FaultProxy => assert_eq!(ports(c), vec![FAULT_PROXY_API_PORT, 15432]),
                Role::Replica(_) => assert_eq!(ports(c), vec![control_port(c).unwrap()]),
                Role::Database | Role::LoadGenerator => assert_eq!(c.attach, Attach::Run),
                _ => {}
            }
        }
        assert!(placed
            .containers
            .iter()
            .any(|c| matches!(c.role, Role::Replica(_))));
        assert_eq!(placed.total_cpus, one.total_cpus);
        // With the load generator apart too, the balancer publishes both ports, once each.
        let both = controlled(&apart(&one, address), address);
        let b = both.container(Role::Balancer).unwrap();
        assert_eq!(ports(b), vec![BALANCER_PORT, STATS_PORT]);
        assert_eq!(controlled(&both, address).containers, both.containers);
    }
}
