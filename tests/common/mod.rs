//! Helpers shared by the tests that need the Docker engine.
#![allow(dead_code)]

pub mod audit;
pub mod journal;
pub mod report;

use std::path::PathBuf;

use feedbench::engine::runtime::Runtime;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The engine. A test that calls this is tier 2's, in tests/testbed (run it with
/// `-- --include-ignored`, as scripts/test does); when the engine is unavailable it fails.
pub async fn engine() -> Runtime {
    Runtime::connect().await.unwrap_or_else(|e| {
        panic!(
            "this test needs the Docker engine, which is unavailable ({e}); \
             install and start Docker (dockerd), or leave the test ignored"
        )
    })
}

/// Builds the infrastructure images that are missing or stale (a no-op when current).
pub async fn infrastructure_images() {
    let root = repo();
    feedbench::images::build_all(
        &feedbench::images::builtin_recipes(&root),
        &feedbench::images::BuildOptions::for_repo(&root),
    )
    .await
    .unwrap_or_else(|e| panic!("building the infrastructure images failed: {e}"));
}

/// Names of containers and networks still carrying the study's label.
pub async fn leftovers(rt: &Runtime, study: &str) -> (Vec<String>, Vec<String>) {
    use bollard::container::ListContainersOptions;
    use bollard::network::ListNetworksOptions;
    use std::collections::HashMap;
    let filters: HashMap<String, Vec<String>> = [(
        "label".to_string(),
        vec![format!("feedbench.study={study}")],
    )]
    .into();
    let containers = rt
        .docker()
        .list_containers(Some(ListContainersOptions {
            all: true,
            filters: filters.clone(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_iter()
        .flat_map(|c| c.names.unwrap_or_default())
        .collect();
    let networks = rt
        .docker()
        .list_networks(Some(ListNetworksOptions { filters }))
        .await
        .unwrap()
        .into_iter()
        .filter_map(|n| n.name)
        .collect();
    (containers, networks)
}

/// Builds every image a plan declares (and the infrastructure images), as
/// `feedbench images build PLAN` does.
pub async fn plan_images(plan: &str) {
    let root = repo();
    let extra = feedbench::cli::images::plan_recipes(&root.join(plan))
        .unwrap_or_else(|e| panic!("the plan's image recipes: {}", e.render()));
    let recipes = feedbench::cli::images::with_builtins(&root, extra);
    feedbench::images::build_all(&recipes, &feedbench::images::BuildOptions::for_repo(&root))
        .await
        .unwrap_or_else(|e| panic!("building the plan's images failed: {e}"));
}

/// One number of a run's probed link (run.json's `link`), or a failure that shows the
/// whole record.
pub fn link_figure(record: &serde_json::Value, k: &str) -> f64 {
    record["link"][k]
        .as_f64()
        .unwrap_or_else(|| panic!("link figure {k} missing: {record:#}"))
}

/// The delay a probed link's fault added, in ms, once the probes are shown to have answered
/// at least three times on each side of the fault's start (fewer would judge nothing).
pub fn link_answered(record: &serde_json::Value) -> f64 {
    for side in ["answered_before", "answered_during"] {
        assert!(
            link_figure(record, side) >= 3.0,
            "{side}: {}",
            record["link"]
        );
    }
    link_figure(record, "added_ms")
}
