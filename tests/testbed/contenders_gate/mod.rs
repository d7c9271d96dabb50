//! The contenders against the feed contract (contenders/CONTRACT.md), on a throwaway
//! PostgreSQL 15 on the host: the gate suite passes for every contender on both schema
//! variants and fails for every mutant; the `production` variant's suggested section scans
//! `posts` while `indexed` uses an index; contenders drain on SIGTERM and fail fast when the
//! database link is cut. Each test runs for every contender `harness::contenders()` lists
//! (feed-py, and feed-rs once its binary is built). See docs/contenders.md.

mod harness;

use std::thread;
use std::time::{Duration, Instant};

use harness::*;

fn gate_passes_on(variant: &str) {
    let cluster = setup();
    for c in contenders() {
        let db = cluster.database(variant, SMALL);
        let svc = c.start_or_fail(&db.url(), &[]);
        let run = run_gate(&svc, &db, &[]);
        assert!(
            run.passed,
            "the gate fails {} on the {variant} variant:\n{}\n--- its log:\n{}",
            c.name,
            run.output,
            svc.log_tail()
        );
    }
}

pub fn gate_passes_on_indexed() {
    gate_passes_on("indexed");
}

pub fn gate_passes_on_production() {
    gate_passes_on("production");
}

/// FEED_MUTANT=cN drops clause N from every read; the gate must catch each one, in its
/// visibility check, naming the clause.
pub fn every_mutant_fails_the_gate() {
    let cluster = setup();
    for c in contenders() {
        let db = cluster.database("indexed", SMALL);
        for (mutant, clause) in [("c1", "C1"), ("c2", "C2"), ("c3", "C3"), ("c4", "C4")] {
            let svc = c.start_or_fail(&db.url(), &[("FEED_MUTANT", mutant)]);
            let run = run_gate(&svc, &db, &[]);
            assert!(
                !run.passed,
                "the gate passes {} with FEED_MUTANT={mutant}",
                c.name
            );
            assert!(
                run.output.contains("[visibility]") && run.output.contains(&format!("hidden by {clause}")),
                "{} FEED_MUTANT={mutant}: the gate's report does not show a post hidden by {clause} being served:\n{}",
                c.name,
                run.output
            );
        }
    }
}

// --- the index variants -------------------------------------------------------------------------

const PREDICATE: &str = "p.archived_at IS NULL AND (p.author = $1 OR p.state = 'ready') \
    AND (p.author = $1 OR p.audience = 'public' OR (p.audience = 'followers' \
    AND EXISTS (SELECT 1 FROM follows f WHERE f.follower = $1 AND f.followee = p.author))) \
    AND (p.author = $1 OR NOT p.followers_hidden)";

/// The suggested section's reference query (as in contenders/gate/gate.py), `$1` the viewer.
fn suggested_sql() -> String {
    format!(
        "SELECT p.id, p.author, p.body, p.audience, p.created_at FROM posts p \
         WHERE p.author <> $1 AND NOT EXISTS (SELECT 1 FROM follows g WHERE g.follower = $1 AND g.followee = p.author) \
         AND {PREDICATE} ORDER BY p.created_at DESC, p.id DESC LIMIT 20"
    )
}

/// The plan with a literal viewer (a custom plan) and the generic plan of the prepared
/// statement (what a driver's cached statement may get after five executions).
fn plans(db: &Database, viewer: u32) -> (String, String) {
    let custom = db.psql(&format!(
        "EXPLAIN (COSTS OFF) {}",
        suggested_sql().replace("$1", &viewer.to_string())
    ));
    let generic = db.psql(&format!(
        "PREPARE suggested(bigint) AS {}; SET plan_cache_mode = force_generic_plan; EXPLAIN (COSTS OFF) EXECUTE suggested({viewer})",
        suggested_sql()
    ));
    (custom, generic)
}

fn execution_ms(db: &Database, viewer: u32) -> f64 {
    let out = db.psql(&format!(
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) {}",
        suggested_sql().replace("$1", &viewer.to_string())
    ));
    out.lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Execution Time: ")?
                .strip_suffix(" ms")?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no execution time in {out}"))
}

pub fn production_scans_posts_and_indexed_uses_an_index() {
    let cluster = setup();
    let production = cluster.database("production", FULL);
    let indexed = cluster.database("indexed", FULL);
    for viewer in [1, 4242] {
        let (custom, generic) = plans(&production, viewer);
        eprintln!("production, viewer {viewer}, custom plan:\n{custom}\ngeneric plan:\n{generic}");
        for plan in [&custom, &generic] {
            assert!(
                plan.contains("Seq Scan on posts p"),
                "production: expected a sequential scan of posts:\n{plan}"
            );
            assert!(
                !plan.contains("posts_live"),
                "production has no posts_live index:\n{plan}"
            );
        }
        let (custom, generic) = plans(&indexed, viewer);
        eprintln!("indexed, viewer {viewer}, custom plan:\n{custom}\ngeneric plan:\n{generic}");
        for plan in [&custom, &generic] {
            assert!(
                plan.contains("using posts_live_recent on posts p"),
                "indexed: expected an index scan of posts_live_recent:\n{plan}"
            );
            assert!(
                !plan.contains("Seq Scan on posts"),
                "indexed: a sequential scan of posts remains:\n{plan}"
            );
        }
    }

    // The suggested section's latency inside PostgreSQL, over 15 viewers, same run.
    let viewers: Vec<u32> = (0..15).map(|i| 1 + i * 661).collect();
    let mut figures = Vec::new();
    for (name, db) in [("production", &production), ("indexed", &indexed)] {
        execution_ms(db, 1); // warm the cache
        let ms: Vec<f64> = viewers.iter().map(|&v| execution_ms(db, v)).collect();
        let (med, max) = (median(ms.clone()), ms.iter().cloned().fold(0.0, f64::max));
        eprintln!("suggested section, {name} ({} profiles, {} posts): median {med:.2} ms, max {max:.2} ms (EXPLAIN ANALYZE execution time, 15 viewers)", FULL.profiles, FULL.posts);
        figures.push(med);
    }
    assert!(figures[0] > figures[1], "the sequential scan (production, median {:.2} ms) is not slower than the index scan (indexed, median {:.2} ms)", figures[0], figures[1]);

    // And a whole feed page over HTTP, per contender: 200 on both, though on `production` the
    // scans overrun the 400 ms section budget and sections are dropped (the figures are
    // printed, not asserted: ten requests, as the page's latency is no check of this test's,
    // where 35 spent half a minute on production alone).
    for c in contenders() {
        for (name, db) in [("production", &production), ("indexed", &indexed)] {
            let svc = c.start_or_fail(&db.url(), &[]);
            let (mut ms, mut degraded) =
                (Vec::new(), std::collections::BTreeMap::<String, u32>::new());
            for i in 0..10u32 {
                let r = svc.get(&format!("/feed?viewer={}", 1 + i * 283)).unwrap();
                assert_eq!(r.status, 200, "{}: {r:?}", c.name);
                if i >= 2 {
                    ms.push(r.elapsed.as_secs_f64() * 1000.0);
                    for s in r.json()["degraded"].as_array().unwrap() {
                        *degraded.entry(s.as_str().unwrap().to_string()).or_default() += 1;
                    }
                }
            }
            let mut sorted = ms.clone();
            sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
            eprintln!(
                "GET /feed via {} on {name}: median {:.1} ms, p90 {:.1} ms (8 sequential requests); sections dropped: {degraded:?}",
                c.name,
                median(ms),
                sorted[sorted.len() * 9 / 10]
            );
        }
    }
}

// --- operations -------------------------------------------------------------------------------

const PUBLIC_POST: &str = "SELECT min(id) FROM posts WHERE audience = 'public' AND state = 'ready' AND archived_at IS NULL AND NOT followers_hidden";
/// Statements waiting for a lock on this database's posts (pg_locks is cluster-wide, and
/// databases cloned from one template share the table's OID).
const WAITING: &str =
    "SELECT count(*) FROM pg_locks WHERE relation = 'posts'::regclass AND NOT granted \
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";

/// SIGTERM with slow requests in flight (held up by a lock on posts): readiness answers 503
/// draining at once, the listener closes after DRAIN_GRACE_MS, the in-flight requests still
/// complete with 200, and the process exits 0 within 10 s. Then the gate's own drain check.
pub fn drains_on_sigterm_without_failing_in_flight_requests() {
    let cluster = setup();
    for c in contenders() {
        let db = cluster.database("indexed", SMALL);
        let mut svc = c.start_or_fail(&db.url(), &[("DRAIN_GRACE_MS", "300")]);
        let post = db.psql(PUBLIC_POST);
        let mut lock = db.lock_posts();
        let port = svc.port;
        let in_flight: Vec<_> = (0..4)
            .map(|_| {
                let path = format!("/posts/{post}?viewer=0");
                thread::spawn(move || http(port, "GET", &path, None, Duration::from_secs(15)))
            })
            .collect();
        let until = Instant::now() + Duration::from_secs(3);
        while db.psql(WAITING).parse::<u32>().unwrap() < 4 {
            assert!(
                Instant::now() < until,
                "{}: the requests never reached PostgreSQL",
                c.name
            );
            thread::sleep(Duration::from_millis(10));
        }
        let signalled = Instant::now();
        svc.sigterm();
        // The signal reaches the process's handler asynchronously: a request sent in the
        // same instant may still find it ready. Within a quarter second it must not.
        let mut ready = svc.get("/readyz").unwrap();
        while ready.status == 200 && signalled.elapsed() < Duration::from_millis(250) {
            thread::sleep(Duration::from_millis(5));
            ready = svc.get("/readyz").unwrap();
        }
        assert_eq!(
            (ready.status, ready.json()),
            (
                503,
                serde_json::json!({"status": "not_ready", "reason": "draining"})
            ),
            "{}: readiness right after SIGTERM",
            c.name
        );
        // After the 300 ms grace the listener closes, with the requests still in flight.
        thread::sleep(Duration::from_millis(550).saturating_sub(signalled.elapsed()));
        let refused = std::net::TcpStream::connect(("127.0.0.1", port)).is_err();
        lock.release();
        for h in in_flight {
            let r = h.join().unwrap();
            assert!(
                matches!(&r, Ok(r) if r.status == 200),
                "{}: an in-flight request during the drain: {r:?}\n{}",
                c.name,
                svc.log_tail()
            );
        }
        let status = svc.wait_exit(Duration::from_secs(10).saturating_sub(signalled.elapsed()));
        eprintln!(
            "{}: drained in {} ms, exit {status:?}",
            c.name,
            signalled.elapsed().as_millis()
        );
        assert!(
            matches!(status, Some(s) if s.success()),
            "{}: expected exit 0 within 10 s of SIGTERM, got {status:?}\n{}",
            c.name,
            svc.log_tail()
        );
        assert!(
            refused,
            "{}: the listener still accepted connections 550 ms after SIGTERM (DRAIN_GRACE_MS=300)",
            c.name
        );

        // The gate's drain check, which a plan can run with a command that signals the contender.
        let mut svc = c.start_or_fail(&db.url(), &[("DRAIN_GRACE_MS", "300")]);
        let kill = format!("kill -TERM {}", svc.pid());
        let run = run_gate(
            &svc,
            &db,
            &[
                "--only",
                "drain",
                "--drain-command",
                &kill,
                "--drain-grace-ms",
                "300",
            ],
        );
        assert!(
            run.passed,
            "the gate's drain check fails {}:\n{}",
            c.name, run.output
        );
        let status = svc.wait_exit(Duration::from_secs(10));
        assert!(
            matches!(status, Some(s) if s.success()),
            "{}: after the gate's drain check: exit {status:?}",
            c.name
        );
    }
}

/// With the database link cut at the fault proxy, requests get 503 upstream_unavailable within
/// 100 ms, readiness says database_unreachable, and service resumes when the link is back.
pub fn cut_database_link_fails_fast() {
    let cluster = setup();
    for c in contenders() {
        let db = cluster.database("indexed", SMALL);
        let link = Link::start(cluster.port);
        let svc = c.start_or_fail(&db.url_via(link.port()), &[]);
        let post = db.psql(PUBLIC_POST);
        for _ in 0..5 {
            assert_eq!(svc.get("/feed?viewer=1").unwrap().status, 200);
        }
        link.set_enabled(false);
        thread::sleep(Duration::from_millis(200));
        let mut worst = Duration::ZERO;
        for path in [
            "/feed?viewer=1".to_string(),
            format!("/posts/{post}?viewer=0"),
            "/feed?viewer=2".to_string(),
        ]
        .iter()
        .cycle()
        .take(9)
        {
            let r = svc.get(path).unwrap();
            assert_eq!(
                (r.status, r.error_code().as_deref()),
                (503, Some("upstream_unavailable")),
                "{} GET {path} with the link cut: {r:?}",
                c.name
            );
            assert!(
                r.elapsed < Duration::from_millis(100),
                "{} GET {path} with the link cut took {:?}",
                c.name,
                r.elapsed
            );
            worst = worst.max(r.elapsed);
        }
        let until = Instant::now() + Duration::from_millis(1500);
        let ready = loop {
            let r = svc.get("/readyz").unwrap();
            if r.status != 200 || Instant::now() > until {
                break r;
            }
            thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(
            (ready.status, ready.json()),
            (
                503,
                serde_json::json!({"status": "not_ready", "reason": "database_unreachable"})
            ),
            "{}",
            c.name
        );
        link.set_enabled(true);
        let until = Instant::now() + Duration::from_secs(10);
        while svc.get("/feed?viewer=1").unwrap().status != 200 {
            assert!(
                Instant::now() < until,
                "{}: no recovery 10 s after the link came back",
                c.name
            );
            thread::sleep(Duration::from_millis(100));
        }
        eprintln!(
            "{}: with the link cut, 9 requests answered 503 in at most {:.1} ms",
            c.name,
            worst.as_secs_f64() * 1000.0
        );

        // The gate's link-cut check drives the same fault proxy through its Toxiproxy API.
        if let Some(api) = link.toxiproxy_url() {
            let run = run_gate(
                &svc,
                &db,
                &[
                    "--only",
                    "health,link-cut",
                    "--toxiproxy",
                    &api,
                    "--db-link",
                    LINK_NAME,
                ],
            );
            assert!(
                run.passed,
                "the gate's link-cut check fails {}:\n{}",
                c.name, run.output
            );
        }
    }
}

/// With every pooled connection busy, one more request gets 503 after POOL_WAIT_MS instead of
/// queueing (the gate's pool-wait check, told the pool size).
pub fn full_pool_answers_503_after_the_pool_wait() {
    let cluster = setup();
    for c in contenders() {
        let db = cluster.database("indexed", SMALL);
        let svc = c.start_or_fail(&db.url(), &[("POOL_SIZE", "2"), ("POOL_WAIT_MS", "100")]);
        let run = run_gate(
            &svc,
            &db,
            &[
                "--only",
                "pool-wait",
                "--pool-size",
                "2",
                "--pool-wait-ms",
                "100",
            ],
        );
        assert!(
            run.passed,
            "the gate's pool-wait check fails {}:\n{}\n--- its log:\n{}",
            c.name,
            run.output,
            svc.log_tail()
        );
    }
}
