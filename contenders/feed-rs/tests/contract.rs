//! feed-rs against a real PostgreSQL: routes and errors, the 404 identity, visibility against
//! an independent row check (and every mutant failing it), degraded sections, deadlines, the
//! pool wait, the cache, a cut database link, and the drain on SIGTERM. Every test needs
//! PostgreSQL on the host, so each is `#[ignore]`d: `cargo test -p feed-rs -- --include-ignored`
//! runs them (scripts/test does), and fails one when PostgreSQL is missing.

mod support;

use std::collections::{HashMap, HashSet};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{postgres, request, Forwarder, Postgres, Service, SHARED};

/// Starts the service on `db`. Budgets are generous unless `extra` sets them, so a loaded
/// machine does not degrade pages in tests about something else.
fn service(pg: &Postgres, db: &str, extra: &[(&str, &str)]) -> Service {
    let url = pg.url(db);
    let mut env = vec![
        ("DATABASE_URL", url.as_str()),
        ("SECTION_BUDGET_MS", "5000"),
        ("REQUEST_DEADLINE_MS", "10000"),
    ];
    env.extend_from_slice(extra);
    Service::start(&env)
}

/// Holds an ACCESS EXCLUSIVE lock on `table` in `db` for `seconds`; returns once it is held.
fn hold_lock(pg: &Postgres, db: &str, table: &str, seconds: f64) -> std::process::Child {
    let child = pg.psql_background(
        db,
        &format!("BEGIN; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep({seconds}); COMMIT;"),
    );
    let check = format!(
        "SELECT count(*) FROM pg_locks WHERE relation = '{table}'::regclass \
         AND mode = 'AccessExclusiveLock' AND granted"
    );
    let started = Instant::now();
    while pg.psql(db, &check).trim() != "1" {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the lock was not taken"
        );
        thread::sleep(Duration::from_millis(20));
    }
    child
}

fn assert_post_shape(post: &Value) {
    let keys: Vec<&str> = post
        .as_object()
        .expect("a post object")
        .keys()
        .map(|k| k.as_str())
        .collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        ["audience", "author", "body", "created_at", "id"],
        "{post}"
    );
    let created = post["created_at"].as_str().expect("created_at");
    let b = created.as_bytes();
    assert!(
        b.len() == 20 && b[4] == b'-' && b[10] == b'T' && b[13] == b':' && b[19] == b'Z',
        "created_at {created}"
    );
}

#[test]
#[ignore = "needs PostgreSQL on the host (apt-get install postgresql)"]
fn routes_and_error_codes() {
    let pg = postgres();
    let db = pg.copy();
    let svc = service(pg, &db, &[]);

    let r = svc.get("/healthz");
    assert_eq!((r.status, r.text().as_str()), (200, r#"{"status":"ok"}"#));
    let r = svc.await_ready();
    assert_eq!(r.text(), r#"{"status":"ready"}"#);

    let r = svc.get("/feed?viewer=7");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(
        r.text().starts_with(r#"{"viewer":7,"sections":{"own":["#),
        "{}",
        r.text()
    );
    let page = r.json();
    assert_eq!(page["degraded"], serde_json::json!([]));
    let sections = page["sections"].as_object().unwrap();
    assert_eq!(
        sections.keys().collect::<Vec<_>>(),
        ["followed", "own", "suggested"]
    );
    for (_, posts) in sections {
        let posts = posts.as_array().unwrap();
        assert!(posts.len() <= 20);
        posts.iter().for_each(assert_post_shape);
        let order: Vec<(String, i64)> = posts
            .iter()
            .map(|p| {
                (
                    p["created_at"].as_str().unwrap().to_owned(),
                    p["id"].as_i64().unwrap(),
                )
            })
            .collect();
        assert!(
            order.windows(2).all(|w| w[0] > w[1]),
            "newest first: {order:?}"
        );
    }
    assert!(page["sections"]["own"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["author"] == 7));

    let r = svc.get("/posts/1?viewer=0");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_post_shape(&r.json());
    assert_eq!(r.json()["id"], 1);
    assert_eq!(svc.get("/posts/1").text(), r.text(), "viewer defaults to 0");

    let cases: &[(&str, &str, Option<&str>, u16, &str)] = &[
        ("GET", "/feed", None, 400, "bad_request"),
        ("GET", "/feed?viewer=", None, 400, "bad_request"),
        ("GET", "/feed?viewer=abc", None, 400, "bad_request"),
        ("GET", "/feed?viewer=1.5", None, 400, "bad_request"),
        (
            "GET",
            "/feed?viewer=99999999999999999999",
            None,
            400,
            "bad_request",
        ),
        ("GET", "/feed?viewer=987654", None, 404, "not_found"),
        ("GET", "/feed?viewer=0", None, 404, "not_found"),
        ("GET", "/posts/abc", None, 400, "bad_request"),
        ("GET", "/posts/1?viewer=x", None, 400, "bad_request"),
        ("GET", "/posts/987654321", None, 404, "not_found"),
        ("GET", "/nowhere", None, 404, "not_found"),
        ("GET", "/posts/1/extra", None, 404, "not_found"),
        ("POST", "/feed?viewer=1", None, 405, "method_not_allowed"),
        ("DELETE", "/posts/1", None, 405, "method_not_allowed"),
        ("GET", "/posts", None, 405, "method_not_allowed"),
        ("POST", "/healthz", None, 405, "method_not_allowed"),
        ("PUT", "/readyz", None, 405, "method_not_allowed"),
        ("POST", "/posts", Some("not json"), 400, "bad_request"),
        ("POST", "/posts", Some(""), 400, "bad_request"),
        (
            "POST",
            "/posts",
            Some(r#"{"author":1,"body":"x","audience":"friends"}"#),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/posts",
            Some(r#"{"author":"1","body":"x","audience":"public"}"#),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/posts",
            Some(r#"{"author":1,"audience":"public"}"#),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/posts",
            Some(r#"{"author":1,"body":"a\u0000b","audience":"public"}"#),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/posts",
            Some(r#"{"author":424242,"body":"x","audience":"public"}"#),
            422,
            "unknown_author",
        ),
    ];
    let count_before = pg.psql(&db, "SELECT count(*) FROM posts");
    for (method, path, body, status, code) in cases {
        let r = svc.send(method, path, *body);
        assert_eq!(
            (r.status, r.code()),
            (*status, code.to_string()),
            "{method} {path} {body:?}: {}",
            r.text()
        );
        assert_eq!(
            r.header("content-type"),
            Some("application/json"),
            "{method} {path}"
        );
    }
    assert_eq!(
        pg.psql(&db, "SELECT count(*) FROM posts"),
        count_before,
        "nothing written"
    );

    let r = svc.send(
        "POST",
        "/posts",
        Some(r#"{"author":3,"body":"hello \"world\"","audience":"followers"}"#),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let created = r.json();
    assert_post_shape(&created);
    assert_eq!(
        (created["author"].as_i64(), created["body"].as_str()),
        (Some(3), Some("hello \"world\""))
    );
    assert_eq!(created["audience"], "followers");
    let id = created["id"].as_i64().unwrap();
    assert!(id > 20000);
    let row = pg.psql(
        &db,
        &format!("SELECT state, followers_hidden, archived_at IS NULL FROM posts WHERE id = {id}"),
    );
    assert_eq!(row.trim(), "ready\tf\tt");
    let r = svc.get(&format!("/posts/{id}?viewer=3"));
    assert_eq!((r.status, r.json()), (200, created.clone()));
    let page = svc.get("/feed?viewer=3").json();
    assert_eq!(
        page["sections"]["own"][0], created,
        "the new post tops the author's own section"
    );
    assert_eq!(
        svc.get(&format!("/posts/{id}")).status,
        404,
        "followers-only: hidden from anonymous"
    );
}

#[test]
#[ignore = "needs PostgreSQL on the host (apt-get install postgresql)"]
fn hidden_and_missing_posts_answer_identical_404s() {
    let pg = postgres();
    let svc = service(pg, SHARED, &[]);
    let private = pg.psql(
        SHARED,
        "SELECT id, author FROM posts WHERE audience = 'private' AND archived_at IS NULL LIMIT 1",
    );
    let (id, author) = private.trim().split_once('\t').unwrap();
    let owner = svc.get(&format!("/posts/{id}?viewer={author}"));
    assert_eq!(owner.status, 200, "the author sees a private post");
    let hidden = svc.get(&format!("/posts/{id}?viewer=0"));
    let missing = svc.get("/posts/123456789?viewer=0");
    assert_eq!(hidden.status, 404);
    assert_eq!(
        hidden.body,
        br#"{"error":{"code":"not_found","message":"not found"}}"#
    );
    assert_eq!(hidden.body, missing.body);
    let without_date = |r: &support::Reply| {
        r.headers
            .iter()
            .filter(|(k, _)| k != "date")
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(without_date(&hidden), without_date(&missing));
}

/// The test's own copy of the data and its own row check.
struct Model {
    posts: HashMap<i64, PostRow>,
    follows: HashSet<(i64, i64)>,
}

#[derive(Debug)]
struct PostRow {
    id: i64,
    author: i64,
    audience: String,
    state: String,
    hidden: bool,
    archived: bool,
    created_at: String,
}

impl Model {
    fn load(pg: &Postgres) -> Model {
        let posts = pg
            .psql(
                SHARED,
                "SELECT id, author, audience, state, followers_hidden, archived_at IS NOT NULL, \
                 to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM posts",
            )
            .lines()
            .map(|line| {
                let f: Vec<&str> = line.split('\t').collect();
                let row = PostRow {
                    id: f[0].parse().unwrap(),
                    author: f[1].parse().unwrap(),
                    audience: f[2].into(),
                    state: f[3].into(),
                    hidden: f[4] == "t",
                    archived: f[5] == "t",
                    created_at: f[6].into(),
                };
                (row.id, row)
            })
            .collect();
        let follows = pg
            .psql(SHARED, "SELECT follower, followee FROM follows")
            .lines()
            .map(|line| {
                let (a, b) = line.split_once('\t').unwrap();
                (a.parse().unwrap(), b.parse().unwrap())
            })
            .collect();
        Model { posts, follows }
    }

    /// The contract's four clauses, written independently of the service.
    fn visible(&self, p: &PostRow, v: i64) -> bool {
        let own = p.author == v;
        let c1 = !p.archived;
        let c2 = own || p.state == "ready";
        let c3 = own
            || p.audience == "public"
            || (p.audience == "followers" && self.follows.contains(&(v, p.author)));
        let c4 = own || !p.hidden;
        c1 && c2 && c3 && c4
    }

    /// Expected post ids of each section for `viewer`.
    fn feed(&self, v: i64) -> [Vec<i64>; 3] {
        let mut sections: [Vec<&PostRow>; 3] = Default::default();
        for p in self.posts.values().filter(|p| self.visible(p, v)) {
            let index = if p.author == v {
                0
            } else if self.follows.contains(&(v, p.author)) {
                1
            } else {
                2
            };
            sections[index].push(p);
        }
        sections.map(|mut posts| {
            posts.sort_by(|a, b| (&b.created_at, b.id).cmp(&(&a.created_at, a.id)));
            posts.iter().take(20).map(|p| p.id).collect()
        })
    }

    /// Sampled (viewer, post) pairs: pseudo-random ones, plus pairs that only one clause
    /// decides, plus authors reading their own posts.
    fn pairs(&self) -> Vec<(i64, i64)> {
        let mut seed: u64 = 0x9e3779b97f4a7c15;
        let mut next = move |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let mut pairs: Vec<(i64, i64)> = (0..300)
            .map(|_| (next(1001) as i64, 1 + next(20000) as i64))
            .collect();
        let mut ids: Vec<&PostRow> = self.posts.values().collect();
        ids.sort_by_key(|p| p.id);
        let only = |archived: bool, state: &'static str, audience: &'static str, hidden: bool| {
            ids.iter()
                .filter(move |p| {
                    p.archived == archived
                        && p.state == state
                        && p.audience == audience
                        && p.hidden == hidden
                })
                .take(3)
                .map(|p| (0, p.id))
                .collect::<Vec<_>>()
        };
        pairs.extend(only(true, "ready", "public", false)); // c1 alone
        pairs.extend(only(false, "draft", "public", false)); // c2 alone
        pairs.extend(only(false, "ready", "followers", false)); // c3 alone
        pairs.extend(only(false, "ready", "private", false)); // c3 alone
        pairs.extend(only(false, "ready", "public", true)); // c4 alone
                                                            // followers-only posts read by a follower, and own hidden drafts
        for p in ids
            .iter()
            .filter(|p| p.audience == "followers" && !p.archived && p.state == "ready")
            .take(20)
        {
            if let Some((f, _)) = self.follows.iter().find(|(_, e)| *e == p.author) {
                pairs.push((*f, p.id));
            }
        }
        for p in ids
            .iter()
            .filter(|p| p.state == "draft" && p.hidden)
            .take(3)
        {
            pairs.push((p.author, p.id));
        }
        pairs.push((1, 987654)); // missing
        pairs
    }

    /// How many of `pairs` and of some viewers' feeds the service at `port` answers wrongly.
    fn disagreements(&self, port: u16, pairs: &[(i64, i64)]) -> Vec<String> {
        let mut wrong = Vec::new();
        for &(v, id) in pairs {
            let expected = self.posts.get(&id).is_some_and(|p| self.visible(p, v));
            let r = request(port, "GET", &format!("/posts/{id}?viewer={v}"), None);
            assert!(matches!(r.status, 200 | 404), "{}", r.text());
            if (r.status == 200) != expected {
                wrong.push(format!(
                    "post {id} viewer {v}: {} (expected visible {expected})",
                    r.status
                ));
            }
        }
        for v in [1, 2, 3, 17, 500, 999, 1000] {
            let page = request(port, "GET", &format!("/feed?viewer={v}"), None).json();
            let expected = self.feed(v);
            for (i, name) in ["own", "followed", "suggested"].iter().enumerate() {
                let got: Vec<i64> = page["sections"][name]
                    .as_array()
                    .unwrap_or_else(|| panic!("{name} missing: {page}"))
                    .iter()
                    .map(|p| p["id"].as_i64().unwrap())
                    .collect();
                if got != expected[i] {
                    wrong.push(format!("feed {v} {name}: {got:?} != {:?}", expected[i]));
                }
            }
        }
        wrong
    }
}

#[test]
#[ignore = "needs PostgreSQL on the host (apt-get install postgresql)"]
fn visibility_agrees_with_a_row_check_and_every_mutant_breaks_it() {
    let pg = postgres();
    let model = Model::load(pg);
    let pairs = model.pairs();
    let visible = pairs
        .iter()
        .filter(|(v, id)| model.posts.get(id).is_some_and(|p| model.visible(p, *v)))
        .count();
    assert!(
        visible > 50 && pairs.len() - visible > 50,
        "a mixed sample: {visible} of {}",
        pairs.len()
    );
    let svc = service(pg, SHARED, &[]);
    let wrong = model.disagreements(svc.port, &pairs);
    assert!(
        wrong.is_empty(),
        "{} disagreements: {:#?}",
        wrong.len(),
        &wrong[..wrong.len().min(10)]
    );
    eprintln!(
        "visibility: {} pairs ({visible} visible) and 7 feeds agree",
        pairs.len()
    );
    for mutant in ["c1", "c2", "c3", "c4"] {
        let svc = service(pg, SHARED, &[("FEED_MUTANT", mutant)]);
        let wrong = model.disagreements(svc.port, &pairs);
        assert!(
            !wrong.is_empty(),
            "mutant {mutant} passed the visibility check"
        );
        eprintln!(
            "mutant {mutant}: {} disagreements, e.g. {}",
            wrong.len(),
            wrong[0]
        );
    }
}

fn degraded(page: &Value) -> Vec<String> {
    page["degraded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap().to_owned())
        .collect()
}

fn assert_sections_consistent(page: &Value) {
    let gone = degraded(page);
    let all = ["own", "followed", "suggested"];
    let order: Vec<&str> = all
        .iter()
        .copied()
        .filter(|s| gone.iter().any(|g| g == s))
        .collect();
    assert_eq!(gone, order, "degraded in contract order");
    for name in all {
        let present = page["sections"].get(name).is_some();
        assert_eq!(present, !gone.iter().any(|g| g == name), "{page}");
    }
}

#[test]
#[ignore = "needs PostgreSQL on the host (apt-get install postgresql)"]
fn sections_over_budget_are_dropped_and_named() {
    let pg = postgres();
    // Each section dropped at its 1 ms budget keeps its pool slot until its ROLLBACK is
    // done; on a loaded host ten pages in a row can hold all 16 slots for longer than the
    // 100 ms pool wait, and the next page's profile lookup would answer 503, as the contract
    // says it must. The pool wait and deadline are raised so that this test sees only what
    // it is about: sections over their budget.
    let svc = service(
        pg,
        SHARED,
        &[
            ("SECTION_BUDGET_MS", "1"),
            ("POOL_WAIT_MS", "5000"),
            ("REQUEST_DEADLINE_MS", "10000"),
        ],
    );
    let mut seen = Vec::new();
    for _ in 0..10 {
        let r = svc.get("/feed?viewer=5");
        assert_eq!(r.status, 200, "{}", r.text());
        let page = r.json();
        assert_sections_consistent(&page);
        seen.push(degraded(&page));
    }
    let degraded_pages = seen.iter().filter(|d| !d.is_empty()).count();
    eprintln!("1 ms budget: degraded {seen:?}");
    // How many sections finish within 1 ms is the host's speed, not the contract: a quiet
    // CI host ran every section of 3 pages in 10 under it (7 degraded; 8 were asked once).
    // A budget not enforced drops none; which section overran, and that the page is whole,
    // is asserted on every page above, and the lock below makes every section overrun.
    assert!(
        degraded_pages >= 1,
        "no page of 10 degraded with a 1 ms budget: the budget is not enforced"
    );

    // Every section blocked by a lock: each overruns its 300 ms budget, the page is still 200.
    let db = pg.copy();
    let svc = service(pg, &db, &[("SECTION_BUDGET_MS", "300")]);
    assert_eq!(svc.get("/feed?viewer=5").status, 200);
    let mut lock = hold_lock(pg, &db, "follows", 1.5);
    let started = Instant::now();
    let r = svc.get("/feed?viewer=5");
    let took = started.elapsed();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.text(),
        r#"{"viewer":5,"sections":{},"degraded":["own","followed","suggested"]}"#
    );
    // Under the 1,000 ms request deadline that would otherwise end the page, and under the
    // 1.5 s lock: far enough from both for a loaded host.
    assert!(
        took >= Duration::from_millis(290) && took < Duration::from_millis(900),
        "{took:?}"
    );
    eprintln!("all sections over a 300 ms budget: answered in {took:?}");
    let _ = lock.wait();
    assert_eq!(
        degraded(&svc.get("/feed?viewer=5").json()),
        Vec::<String>::new()
    );
}

#[test]
#[ignore = "needs PostgreSQL on the host (apt-get install postgresql)"]
fn a_slow_database_cannot_hold_a_request_past_its_deadline() {
    let pg = postgres();
    let db = pg.copy();
    let svc = service(pg, &db, &[("REQUEST_DEADLINE_MS", "300")]);
    let mut lock = hold_lock(pg, &db, "profiles", 1.5);
    let started = Instant::now();
    let r = svc.get("/feed?viewer=5");
    let took = started.elapsed();
    assert_eq!(
        (r.status, r.code().as_str()),
        (503, "upstream_unavailable"),
        "{}",
        r.text()
    );
    // Ended by the 300 ms deadline, not by the 1.5 s lock: the bound leaves a loaded host room.
    assert!(took < Duration::from_millis(1000), "{took:?}");
    // The statement was cancelled in PostgreSQL too: nothing of ours still waits on the lock
    // while the lock is still held. A cancel request reaches its backend asynchronously (a
    // signal, after the 503 is sent), so the check waits for it, never past the lock's hold.
    let probe = "SELECT (SELECT count(*) FROM pg_stat_activity WHERE application_name = 'feed-rs' \
                 AND wait_event_type = 'Lock') || ',' || (SELECT count(*) FROM pg_locks \
                 WHERE relation = 'profiles'::regclass AND mode = 'AccessExclusiveLock' AND granted)";
    loop {
        let seen = pg.psql(&db, probe);
        let (waiting, held) = seen.trim().split_once(',').expect("two counts");
        assert_eq!(
            held, "1",
            "the lock was released while feed-rs still waited on it ({waiting} waiting, {:?} after the request)",
            started.elapsed()
        );
        if waiting == "0" {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    let _ = lock.wait();
    assert_eq!(svc.get("/feed?viewer=5").status, 200);
}

#[test]
#[ignore = "needs PostgreSQL on the host (apt-get install postgresql)"]
fn pool_checkout_waits_at_most_the_pool_wait() {
    let pg = postgres();
    let db = pg.copy();
    let svc = service(
        pg,
        &db,
        &[
            ("POOL_SIZE", "1"),
            ("POOL_WAIT_MS", "50"),
            ("REQUEST_DEADLINE_MS", "5000"),
        ],
    );
    assert_eq!(svc.get("/posts/1").status, 200);
    let mut lock = hold_lock(pg, &db, "profiles", 3.0);
    let port = svc.port;
    let holder = thread::spawn(move || request(port, "GET", "/feed?viewer=5", None));
    // The one slot is taken once the held request waits on the lock in PostgreSQL.
    let waiting = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'feed-rs' \
                   AND wait_event_type = 'Lock' AND datname = current_database()";
    let asked = Instant::now();
    while pg.psql(&db, waiting).trim() != "1" {
        assert!(
            asked.elapsed() < Duration::from_secs(2),
            "the held request never waited on the lock"
        );
        thread::sleep(Duration::from_millis(10));
    }
    let started = Instant::now();
    let r = svc.get("/posts/1");
    let took = started.elapsed();
    assert_eq!((r.status, r.code().as_str()), (503, "upstream_unavailable"));
    // Ended by the 50 ms pool wait, not by the 5 s deadline.
    assert!(
        took >= Duration::from_millis(45) && took < Duration::from_millis(1000),
        "{took:?}"
    );
    eprintln!("pool exhausted: 503 after {took:?} (POOL_WAIT_MS=50)");
    assert_eq!(
        holder.join().unwrap().status,
        200,
        "the held request completes"
    );
    let _ = lock.wait();
}

#[test]
#[ignore = "needs PostgreSQL on the host (apt-get install postgresql)"]
fn a_cut_database_link_fails_fast_and_recovers() {
    let pg = postgres();
    let mut link = Forwarder::start(pg.port);
    let url = pg.url_via(link.port, SHARED);
    let svc = Service::start(&[("DATABASE_URL", &url)]);
    for _ in 0..5 {
        assert_eq!(svc.get("/feed?viewer=9").status, 200);
    }
    svc.await_ready();

    link.cut();
    let mut slowest = Duration::ZERO;
    for i in 0..20 {
        let path = if i % 2 == 0 {
            "/feed?viewer=9"
        } else {
            "/posts/2?viewer=9"
        };
        let started = Instant::now();
        let r = svc.get(path);
        let took = started.elapsed();
        slowest = slowest.max(took);
        assert_eq!(
            (r.status, r.code().as_str()),
            (503, "upstream_unavailable"),
            "{path}: {}",
            r.text()
        );
        // Failed at once, not after the 500 ms connect timeout or the 1 s deadline.
        assert!(took < Duration::from_millis(400), "{path} took {took:?}");
    }
    let r = svc.send(
        "POST",
        "/posts",
        Some(r#"{"author":1,"body":"x","audience":"public"}"#),
    );
    assert_eq!((r.status, r.code().as_str()), (503, "upstream_unavailable"));
    eprintln!("link cut: slowest 503 in {slowest:?}");
    thread::sleep(Duration::from_millis(1100));
    let r = svc.get("/readyz");
    assert_eq!(
        (r.status, r.text().as_str()),
        (
            503,
            r#"{"status":"not_ready","reason":"database_unreachable"}"#
        )
    );

    link.restore();
    let started = Instant::now();
    while svc.get("/feed?viewer=9").status != 200 {
        assert!(started.elapsed() < Duration::from_secs(3), "no recovery");
        thread::sleep(Duration::from_millis(20));
    }
    eprintln!("link restored: serving again after {:?}", started.elapsed());
    svc.await_ready();
}

#[test]
#[ignore = "needs PostgreSQL on the host (apt-get install postgresql)"]
fn the_cache_keeps_pages_five_seconds_in_this_process_only() {
    let pg = postgres();
    let db = pg.copy();
    let cached = service(pg, &db, &[("CACHE", "on")]);
    let uncached = service(pg, &db, &[]);
    let own_ids = |svc: &Service| -> Vec<i64> {
        let page = svc.get("/feed?viewer=11").json();
        page["sections"]["own"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_i64().unwrap())
            .collect()
    };
    let before = own_ids(&cached);
    let post = |body: &str| {
        let r = uncached.send(
            "POST",
            "/posts",
            Some(&format!(
                r#"{{"author":11,"body":"{body}","audience":"private"}}"#
            )),
        );
        assert_eq!(r.status, 201);
        r.json()["id"].as_i64().unwrap()
    };
    let first = post("one");
    assert_eq!(own_ids(&uncached)[0], first);
    assert_eq!(own_ids(&cached), before, "served from the cache");
    let cached = cached.restart();
    let after_restart = own_ids(&cached);
    assert_eq!(after_restart[0], first, "a restarted replica starts cold");
    let second = post("two");
    let built = Instant::now();
    assert_eq!(own_ids(&cached), after_restart);
    thread::sleep(Duration::from_millis(5100).saturating_sub(built.elapsed()));
    assert_eq!(own_ids(&cached)[0], second, "expired after 5 s");
}

#[test]
#[ignore = "needs PostgreSQL on the host (apt-get install postgresql)"]
fn sigterm_drains_without_failing_in_flight_requests() {
    let pg = postgres();
    let db = pg.copy();
    let mut svc = service(
        pg,
        &db,
        &[("DRAIN_GRACE_MS", "1000"), ("REQUEST_DEADLINE_MS", "8000")],
    );
    svc.await_ready();
    // Held 4 s from when the lock is seen taken (which a loaded host may report late):
    // the request below stays in flight past the 1 s grace period whatever that delay.
    let mut lock = hold_lock(pg, &db, "profiles", 4.0);
    let port = svc.port;
    let in_flight = thread::spawn(move || {
        let started = Instant::now();
        (
            request(port, "GET", "/feed?viewer=5", None),
            started.elapsed(),
            Instant::now(),
        )
    });
    thread::sleep(Duration::from_millis(300));

    let signalled = Instant::now();
    svc.terminate();
    thread::sleep(Duration::from_millis(20));
    let r = svc.get("/readyz");
    assert_eq!(
        (r.status, r.text().as_str()),
        (503, r#"{"status":"not_ready","reason":"draining"}"#)
    );
    thread::sleep(Duration::from_millis(400));
    assert_eq!(
        svc.get("/healthz").status,
        200,
        "still serving during the grace period"
    );
    assert_eq!(
        svc.get("/posts/1").status,
        200,
        "still serving during the grace period"
    );
    thread::sleep(
        Duration::from_millis(1000).saturating_sub(signalled.elapsed())
            + Duration::from_millis(200),
    );
    assert!(
        support::try_request(port, "GET", "/healthz", None).is_err(),
        "the listener is closed after the grace period"
    );
    let code = svc.wait_exit(Duration::from_secs(10).saturating_sub(signalled.elapsed()));
    let exited = signalled.elapsed();
    let (reply, took, finished) = in_flight.join().unwrap();
    assert_eq!(
        reply.status,
        200,
        "the in-flight request completes: {}",
        reply.text()
    );
    assert!(
        finished > signalled + Duration::from_millis(1000),
        "it was held by the lock past the grace period: answered {:?} after SIGTERM",
        finished - signalled
    );
    assert_eq!(code, Some(0), "exit 0 within 10 s");
    eprintln!(
        "drain: in-flight request answered 200 after {took:?}; exit 0 {exited:?} after SIGTERM"
    );
    let _ = lock.wait();
}

#[test]
#[ignore = "needs PostgreSQL on the host (apt-get install postgresql)"]
fn cancelled_sections_never_leak_connections_past_the_pool_size() {
    let pg = postgres();
    let db = pg.copy();
    let svc = service(pg, &db, &[("POOL_SIZE", "4"), ("SECTION_BUDGET_MS", "3")]);
    let port = svc.port;
    let workers: Vec<_> = (0..6)
        .map(|w| {
            thread::spawn(move || {
                (0..40)
                    .map(|i| {
                        request(
                            port,
                            "GET",
                            &format!("/feed?viewer={}", 1 + (w * 40 + i) % 1000),
                            None,
                        )
                        .status
                    })
                    .collect::<Vec<u16>>()
            })
        })
        .collect();
    let statuses: Vec<u16> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    let ok = statuses.iter().filter(|s| **s == 200).count();
    // 503 only when no connection was free within POOL_WAIT_MS for any section.
    assert!(
        statuses.iter().all(|s| matches!(s, 200 | 503)),
        "{statuses:?}"
    );
    assert!(
        ok >= statuses.len() * 9 / 10,
        "{ok} of {} answered 200",
        statuses.len()
    );
    let connections = format!("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'feed-rs' AND datname = '{db}'");
    let open: i64 = pg.psql(&db, &connections).trim().parse().unwrap();
    assert!(open <= 4, "{open} connections open with POOL_SIZE=4");
    // The pool serves again once PostgreSQL has finished the cancelled statements: a
    // leaked connection would keep it full, and every later page 503, for good. How soon
    // is the host's business (on a loaded machine the cancellations take seconds), so the
    // test waits for the first 200 rather than for a fixed time.
    let deadline = Instant::now() + Duration::from_secs(30);
    let recovered = loop {
        let page = svc.get("/feed?viewer=5");
        if page.status == 200 || Instant::now() > deadline {
            break page.status;
        }
        thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(recovered, 200, "the pool never served again within 30 s");
    eprintln!("cancellations: {ok} of {} pages 200 with a 3 ms budget; {open} connections open (POOL_SIZE=4)", statuses.len());
}
