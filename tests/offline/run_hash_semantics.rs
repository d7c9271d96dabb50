//! Run hashes across the executor's changes of semantics: a step ramp with `stop-on-breach`
//! now stops its load at the knee, so its runs (and the runs that take their rates from
//! it) hash differently from those of a ramp that runs every step, as round 1's did. The
//! round-1 hashes below were printed by `feedbench plan` of round 1 on
//! experiments/smoke.yaml, as written and with `stop-on-breach: false`. Since the inputs
//! digest, every run's hash also covers its input files (init scripts, build contexts), and
//! since windows are judged by schedule it carries that rule (`judged_by`), neither of
//! which round 1 hashed: no run keeps a round-1 hash, even of the plan alone.

use std::path::PathBuf;

use assert_cmd::Command;

fn run_hashes(plan_text: &str) -> Vec<(String, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // Beside the original, so that its relative paths (init scripts, build contexts) hold
    // as written: they are part of what is hashed.
    let file = tempfile::Builder::new()
        .prefix(".run-hash-")
        .suffix(".yaml")
        .tempfile_in(root.join("experiments"))
        .unwrap();
    std::fs::write(file.path(), plan_text).unwrap();
    let path = file.path().to_path_buf();
    let out = Command::cargo_bin("feedbench")
        .unwrap()
        .args(["plan", "--format", "json"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_string(),
                r["run_hash"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

const RAMP: &str = "step-ramp: {start: 10, step: 10, step-duration: 10s, max: 40, warmup: 5s}";
/// The post route's declared 4xx share, added to the smoke plan after round 1: without it,
/// the plan is round 1's as far as hashes go.
const DECLARED_4XX: &str = ", expected-4xx: 68.41%";

#[test]
fn ramps_that_stop_hash_differently_from_round_one_and_ramps_that_do_not_keep_their_hash() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let smoke = std::fs::read_to_string(root.join("experiments/smoke.yaml")).unwrap();
    assert!(
        smoke.contains(RAMP) && smoke.contains(DECLARED_4XX),
        "the smoke plan's ramp or post route changed: update this test"
    );
    let smoke = smoke.replace(DECLARED_4XX, "");

    let round1_stopping = [
        (
            "feed-rs/ramp/r1",
            "9acfdfc660276a4ebe0e55df8257a8c352cb779cda6f2e731e4e656823a227a1",
        ),
        (
            "feed-rs/baseline+db-latency/r1",
            "2ddb2ae7794d410682bf964040990df7d761a0570f18ba0cfaa2dd882a6c63b2",
        ),
        (
            "feed-rs/baseline+replica-kill/r1",
            "96d76b5f5c5de601b6c8dd7b802ebaf08315a29710ffab3ed8ecccfabc980ea5",
        ),
    ];
    let now = run_hashes(&smoke);
    assert_eq!(now.len(), 3, "{now:?}");
    for ((id, hash), (id1, hash1)) in now.iter().zip(round1_stopping) {
        assert_eq!(id, id1);
        assert_ne!(
            hash, hash1,
            "{id}: a stopping ramp (or a run rated from it) kept its round-1 hash"
        );
    }

    let every_step = smoke.replace(
        RAMP,
        &RAMP.replace("warmup: 5s}", "warmup: 5s, stop-on-breach: false}"),
    );
    let round1_every_step = [
        (
            "feed-rs/ramp/r1",
            "c00baff1cca98d55ba552ca982325bbff6b789836dcd333a5e711cda02f1cbf2",
        ),
        (
            "feed-rs/baseline+db-latency/r1",
            "be27838e310b6b7b7b0bb5e778211fbf2aa55ed321ae2b76e25cde7649342b96",
        ),
        (
            "feed-rs/baseline+replica-kill/r1",
            "738087bb351677cba43fa72c1a24a4452941d14364d1e27aa09c41162144d27d",
        ),
    ];
    let kept: Vec<(String, String)> = round1_every_step
        .iter()
        .map(|(i, h)| (i.to_string(), h.to_string()))
        .collect();
    // With the inputs, as `feedbench plan` hashes: no run keeps its round-1 hash.
    let with_inputs = run_hashes(&every_step);
    assert!(with_inputs
        .iter()
        .zip(&kept)
        .all(|(a, b)| a.0 == b.0 && a.1 != b.1));
    // The plan alone, as round 1 hashed: the rule windows are judged by is in every
    // run's hash, so none keeps round 1's; the stopping ramp and the runs rated from it
    // still hash apart from the ramp that runs every step.
    let alone = |text: &str| -> Vec<(String, String)> {
        let ctx = feedbench_core::plan::validate::Context {
            host_cores: None,
            exists: None,
        };
        let loaded = feedbench_core::plan::load_str("smoke.yaml", text, &ctx)
            .unwrap_or_else(|e| panic!("{e}"));
        feedbench_core::plan::expand(&loaded.plan)
            .into_iter()
            .map(|r| (r.id, r.run_hash))
            .collect()
    };
    let (every, stopping) = (alone(&every_step), alone(&smoke));
    assert_eq!(every.len(), kept.len());
    for ((now, then), stops) in every.iter().zip(&kept).zip(&stopping) {
        assert_eq!((&now.0, &stops.0), (&then.0, &then.0));
        assert_ne!(
            now.1, then.1,
            "{}: judged by schedule, hashed as round 1",
            now.0
        );
        assert_ne!(now.1, stops.1, "{}: stopping or not, one hash", now.0);
    }
}
