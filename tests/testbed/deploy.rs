//! Deployment on the real engine: a run's topology comes up with the planned caps, every
//! replica UP behind HAProxy, one proxy per link, and nothing is left afterwards, also when
//! feedbench is killed mid-deploy.

use crate::common;

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use feedbench::engine::balancer;
use feedbench::engine::deploy::{deploy, teardown};
use feedbench::engine::fault_proxy::FaultProxy;
use feedbench::engine::http::request;
use feedbench::plan::{expand, load_file};
use feedbench::spec::topology::{
    topology, Role, RunTopology, BALANCER_PORT, FAULT_PROXY_API_PORT, STATS_PORT,
};

const PLAN: &str = "tests/plans/docker/probe.yaml";
const STUDY: &str = "test-probe";

fn probe() -> (feedbench::plan::LoadedPlan, RunTopology) {
    let loaded = load_file(&common::repo().join(PLAN), None).unwrap();
    let run = expand(&loaded.plan).remove(0);
    let base = loaded.base_dir.clone();
    let read = move |rel: &str| std::fs::read(base.join(rel)).map_err(|e| e.to_string());
    let topo = topology(
        &loaded.plan,
        &run,
        &feedbench::spec::topology::Instance::for_tests(),
        &read,
    )
    .unwrap();
    (loaded, topo)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
pub async fn the_probe_topology_deploys_with_its_caps_and_tears_down() {
    let rt = common::engine().await;
    common::infrastructure_images().await;
    rt.clean(&feedbench::engine::runtime::Scope::study(STUDY))
        .await
        .unwrap();
    let (loaded, topo) = probe();
    let deployed = deploy(&rt, &topo, Duration::from_secs(120), None).await;
    let checks = async {
        let d = deployed.as_ref().map_err(|e| e.to_string())?;
        let caps = &loaded.plan.caps;
        for c in &topo.containers {
            let planned = match c.role {
                Role::Replica(_) => caps.replica,
                Role::Database => caps.database.ok_or("the probe plan caps no database")?,
                Role::FaultProxy => caps.fault_proxy,
                Role::Balancer => caps.balancer,
                Role::LoadGenerator => caps.load_generator,
                other => return Err(format!("unexpected role {other:?}")),
            };
            let applied = rt.caps(&c.name).await.map_err(|e| e.to_string())?;
            if applied.nano_cpus != (planned.cpus * 1e9).round() as i64
                || applied.memory_bytes != planned.memory.bytes as i64
                || applied.memory_swap_bytes != applied.memory_bytes
            {
                return Err(format!("{}: applied {applied:?}, planned {planned:?}", c.name));
            }
        }
        let stats = balancer::stats(d.addr(Role::Balancer, STATS_PORT).unwrap(), Duration::from_secs(2)).await?;
        let up: Vec<&str> = stats.iter().filter(|s| s.status == "UP").map(|s| s.server.as_str()).collect();
        if up != ["replica-1", "replica-2"] {
            return Err(format!("servers UP: {up:?}"));
        }
        let fp = FaultProxy { addr: d.addr(Role::FaultProxy, FAULT_PROXY_API_PORT).unwrap() };
        let links: Vec<String> = loaded.plan.topology.links.keys().map(|k| k.to_string()).collect();
        if fp.list().await.map_err(|e| e.to_string())? != links {
            return Err("the fault proxy does not list one proxy per link".into());
        }
        // Requests through the balancer reach both replicas.
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..6 {
            let r = request(d.addr(Role::Balancer, BALANCER_PORT).unwrap(), "GET", "/hostname", None, Duration::from_secs(2))
                .await
                .map_err(|e| e.to_string())?;
            if r.status != 200 {
                return Err(format!("GET /hostname through the balancer: {}", r.status));
            }
            seen.insert(r.text().trim().to_string());
        }
        if seen.len() != 2 {
            return Err(format!("the balancer reached {seen:?}"));
        }
        // A replica reaches PostgreSQL only through the fault proxy's link, and the seed is there.
        let argv: Vec<String> = [
            "python3", "-c",
            "import asyncio, asyncpg\nasync def m():\n c = await asyncpg.connect('postgres://feed:feed@fault-proxy:15432/feed')\n print(await c.fetchval('select count(*) from posts'))\nasyncio.run(m())",
        ]
        .map(String::from)
        .to_vec();
        let (code, out) = rt.exec(&topo.container(Role::Replica(1)).unwrap().name, &argv).await.map_err(|e| e.to_string())?;
        if code != 0 || out.trim() != "1000" {
            return Err(format!("query through the fault proxy: exit {code}: {out}"));
        }
        eprintln!("deploy to ready: {:.1} s", d.ready_after.as_secs_f64());
        Ok(())
    }
    .await;
    teardown(&rt, &topo).await.unwrap();
    let left = common::leftovers(&rt, STUDY).await;
    checks.unwrap();
    assert_eq!(left, (vec![], vec![]), "left behind after teardown");
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
pub async fn killing_feedbench_mid_deploy_then_clean_leaves_nothing() {
    let rt = common::engine().await;
    common::infrastructure_images().await;
    rt.clean(&feedbench::engine::runtime::Scope::study(STUDY))
        .await
        .unwrap();
    let (_, topo) = probe();
    let mut child = Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .current_dir(common::repo())
        .args(["deploy", PLAN, "--run", &topo.run_id])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once the deploy is under way: some containers exist, the balancer is not up.
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let (containers, _) = common::leftovers(&rt, STUDY).await;
        if !containers.is_empty() || Instant::now() > until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let (before, _) = common::leftovers(&rt, STUDY).await;
    assert!(
        !before.is_empty(),
        "the kill came before any container existed"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .args(["clean", "--study", STUDY])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(common::leftovers(&rt, STUDY).await, (vec![], vec![]));
    let _ = SocketAddr::from(([127, 0, 0, 1], 0));
}

/// The smoke plan's topology with the real contender: a request through HAProxy reaches a
/// replica that reads PostgreSQL through the fault proxy (cutting the link turns the same
/// request into a 503 `upstream_unavailable`).
#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
pub async fn the_smoke_topology_serves_the_feed_through_the_fault_proxy() {
    let rt = common::engine().await;
    common::plan_images("experiments/smoke.yaml").await;
    rt.clean(&feedbench::engine::runtime::Scope::study("smoke"))
        .await
        .unwrap();
    let loaded = load_file(&common::repo().join("experiments/smoke.yaml"), None).unwrap();
    let run = expand(&loaded.plan).remove(0);
    let base = loaded.base_dir.clone();
    let read = move |rel: &str| std::fs::read(base.join(rel)).map_err(|e| e.to_string());
    let topo = topology(
        &loaded.plan,
        &run,
        &feedbench::spec::topology::Instance::for_tests(),
        &read,
    )
    .unwrap();
    let deployed = deploy(&rt, &topo, Duration::from_secs(180), None).await;
    let checks = async {
        let d = deployed.as_ref().map_err(|e| e.to_string())?;
        for c in &topo.containers {
            let applied = rt.caps(&c.name).await.map_err(|e| e.to_string())?;
            if (applied.nano_cpus, applied.memory_bytes) != (c.nano_cpus, c.memory_bytes) {
                return Err(format!(
                    "{}: applied {applied:?}, planned {} / {}",
                    c.name, c.nano_cpus, c.memory_bytes
                ));
            }
        }
        let balancer = d.addr(Role::Balancer, BALANCER_PORT).unwrap();
        let feed = request(
            balancer,
            "GET",
            "/feed?viewer=7",
            None,
            Duration::from_secs(5),
        )
        .await
        .map_err(|e| e.to_string())?;
        if feed.status != 200 || !feed.text().contains("\"sections\"") {
            return Err(format!("GET /feed: {} {}", feed.status, feed.text()));
        }
        let fp = FaultProxy {
            addr: d.addr(Role::FaultProxy, FAULT_PROXY_API_PORT).unwrap(),
        };
        fp.set_enabled("db", false)
            .await
            .map_err(|e| e.to_string())?;
        let cut = request(
            balancer,
            "GET",
            "/posts/1?viewer=7",
            None,
            Duration::from_secs(5),
        )
        .await
        .map_err(|e| e.to_string())?;
        fp.set_enabled("db", true)
            .await
            .map_err(|e| e.to_string())?;
        if cut.status != 503 || !cut.text().contains("upstream_unavailable") {
            return Err(format!("with the link down: {} {}", cut.status, cut.text()));
        }
        Ok(())
    }
    .await;
    teardown(&rt, &topo).await.unwrap();
    let left = common::leftovers(&rt, "smoke").await;
    checks.unwrap();
    assert_eq!(left, (vec![], vec![]));
}

/// A volume the engine says is in use (409) while `clean` runs: held by a container that is
/// removed a moment later (as when a killed feedbench's last requests complete after the
/// first pass), `clean` waits for it and removes the volume; held by a container that never
/// goes (it lacks the study's label, so `clean` may not remove it), `clean` fails naming the
/// volume after its passes, rather than leaving it silently.
#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
pub async fn clean_waits_for_a_volume_still_held_and_names_one_that_stays_held() {
    use bollard::container::{Config, CreateContainerOptions, RemoveContainerOptions};
    use bollard::models::HostConfig;
    use bollard::volume::CreateVolumeOptions;
    const HELD: &str = "test-clean-held";
    let rt = common::engine().await;
    common::infrastructure_images().await;
    let docker = rt.docker().clone();
    let holder = format!("{HELD}-holder");
    let volume = format!("{HELD}-data");
    let remove_holder = |docker: bollard::Docker, name: String| async move {
        let options = RemoveContainerOptions {
            force: true,
            ..Default::default()
        };
        let _ = docker.remove_container(&name, Some(options)).await;
    };
    remove_holder(docker.clone(), holder.clone()).await;
    rt.clean(&feedbench::engine::runtime::Scope::study(HELD))
        .await
        .unwrap();
    let hold = || async {
        let labels = [(
            feedbench::spec::topology::LABEL_STUDY.to_string(),
            HELD.to_string(),
        )]
        .into();
        docker
            .create_volume(CreateVolumeOptions {
                name: volume.clone(),
                labels,
                ..Default::default()
            })
            .await
            .unwrap();
        // Created, not started: it holds the volume all the same. No study label.
        let config = Config {
            image: Some("feedbench/stress:0.15".to_string()),
            host_config: Some(HostConfig {
                binds: Some(vec![format!("{volume}:/data")]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let options = CreateContainerOptions {
            name: holder.clone(),
            platform: None,
        };
        docker
            .create_container(Some(options), config)
            .await
            .unwrap();
    };

    hold().await;
    let release = tokio::spawn({
        let (docker, holder) = (docker.clone(), holder.clone());
        async move {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            remove_holder(docker, holder).await;
        }
    });
    let cleaned = rt
        .clean(&feedbench::engine::runtime::Scope::study(HELD))
        .await;
    release.await.unwrap();
    let removed = cleaned.unwrap_or_else(|e| panic!("clean failed on a volume released: {e}"));
    assert_eq!(removed.volumes, vec![volume.clone()]);
    assert!(rt.volume_labels(&volume).await.unwrap().is_none());

    hold().await;
    let stuck = rt
        .clean(&feedbench::engine::runtime::Scope::study(HELD))
        .await;
    remove_holder(docker.clone(), holder.clone()).await;
    rt.clean(&feedbench::engine::runtime::Scope::study(HELD))
        .await
        .unwrap();
    let err = stuck
        .expect_err("a volume held throughout was reported removed")
        .to_string();
    assert!(
        err.contains(&volume) && err.contains("in use"),
        "the error names neither the volume nor why: {err}"
    );
}

/// The engine names its data root, and it is on this host: the disk-floor guard watches it
/// beside the results directory, with no warning that it goes unguarded.
#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
pub async fn the_disk_guard_reads_the_engines_data_root_on_this_host() {
    let rt = common::engine().await;
    let facts = rt.facts().await.unwrap();
    let root = facts
        .data_root
        .clone()
        .expect("the engine names a data root");
    assert!(
        std::path::Path::new(&root).is_dir(),
        "{root} is not a directory here"
    );
    let results = tempfile::tempdir().unwrap();
    let (probe, warning) = feedbench::run::guards::HostProbe::of(facts.data_root, results.path());
    assert_eq!(warning, None);
    assert_eq!(
        probe.engine_root.as_deref(),
        Some(std::path::Path::new(&root))
    );
    let r = probe.read().unwrap();
    let (read_root, free) = r.engine_disk.expect("the engine's disk is read");
    assert_eq!(read_root, std::path::PathBuf::from(&root));
    assert!(free > 0);
}
