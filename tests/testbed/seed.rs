//! A run's database started from its seeded snapshot, on the real engine: seeded once per
//! seeding input and found after, the same rows as from its init scripts (a query's result
//! compared), the run's copy removed at teardown, and a template cut short seeded again.

use crate::common;

use std::time::Duration;

use feedbench::engine::deploy::{deploy_with, teardown, Seeding};
use feedbench::engine::runtime::Runtime;
use feedbench::engine::seed;
use feedbench::plan::{expand, load_file};
use feedbench::spec::topology::{of_loaded, Role, RunTopology};

const PLAN: &str = "tests/plans/docker/seed.yaml";
/// Every row of the seeded tables, as one digest each, with their counts.
const QUERY: &str = "select (select count(*) from profiles), (select count(*) from posts), \
    (select count(*) from follows), \
    (select md5(string_agg(p::text, ',' order by id)) from posts p), \
    (select md5(string_agg(f::text, ',' order by follower, followee)) from follows f)";

async fn rows(rt: &Runtime, topo: &RunTopology) -> String {
    let db = topo.container(Role::Database).unwrap();
    let argv: Vec<String> = ["psql", "-U", "feed", "-d", "feed", "-Atc", QUERY]
        .map(String::from)
        .to_vec();
    let (code, out) = rt.exec(&db.name, &argv).await.unwrap();
    assert_eq!(code, 0, "{out}");
    out.trim().to_string()
}

async fn deployed(
    rt: &Runtime,
    topo: &RunTopology,
    seeding: Seeding,
) -> (Option<feedbench_core::spec::seed::Snapshot>, String) {
    let d = deploy_with(rt, topo, Duration::from_secs(240), None, seeding)
        .await
        .unwrap_or_else(|e| panic!("{seeding:?}: {e}"));
    let r = rows(rt, topo).await;
    teardown(rt, topo).await.unwrap();
    (d.snapshot, r)
}

pub fn a_database_from_its_snapshot_holds_the_rows_its_scripts_make() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    rt.block_on(common::plan_images(PLAN));
    let loaded = load_file(&common::repo().join(PLAN), None).unwrap();
    let run = expand(&loaded.plan).remove(0);
    let topo = of_loaded(
        &loaded,
        &run,
        &feedbench::spec::topology::Instance::for_tests(),
    )
    .unwrap();
    let db = topo.container(Role::Database).unwrap().name.clone();
    rt.block_on(async {
        let (first, from_snapshot) = deployed(&engine, &topo, Seeding::Snapshot).await;
        let first = first.expect("the database has init scripts: it starts from a snapshot");
        let (none, from_scripts) = deployed(&engine, &topo, Seeding::Scripts).await;
        assert!(none.is_none());
        let (again, from_snapshot_again) = deployed(&engine, &topo, Seeding::Snapshot).await;
        let again = again.unwrap();
        assert_eq!(again.digest, first.digest);
        assert!(!again.seeded_now, "seeded once per input, then found");

        let counts: Vec<&str> = from_scripts.split('|').collect();
        assert_eq!(&counts[..2], ["200", "2000"], "{from_scripts}");
        assert_eq!(from_snapshot, from_scripts);
        assert_eq!(from_snapshot_again, from_scripts);
        // The run's copy went with the run; the template stays.
        assert!(engine
            .volume_labels(&feedbench_core::spec::seed::run_volume(&db))
            .await
            .unwrap()
            .is_none());
        assert!(engine
            .volume_labels(&first.template)
            .await
            .unwrap()
            .is_some());

        // A template whose seeding was cut short (no marker) is seeded again.
        engine
            .remove_volume(&seed::marker(&first.template))
            .await
            .unwrap();
        let (reseeded, rows_reseeded) = deployed(&engine, &topo, Seeding::Snapshot).await;
        assert!(reseeded.unwrap().seeded_now);
        assert_eq!(rows_reseeded, from_scripts);

        assert_eq!(
            common::leftovers(&engine, "test-seed").await,
            (vec![], vec![])
        );
    });
}
