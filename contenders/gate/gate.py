#!/usr/bin/env python3
"""The feed contract's gate suite (contenders/CONTRACT.md).

Runs against a deployed contender over HTTP ($FEEDBENCH_TARGET) with direct access to its
database ($FEEDBENCH_DATABASE_URL) for the row-level checks. Exits 0 when every check
passes, 1 with a report of each failed check otherwise, 2 on a usage error.
Standard library plus asyncpg only. See docs/contenders.md.
"""

import argparse
import asyncio
import http.client
import json
import os
import random
import re
import shlex
import subprocess
import sys
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request

import asyncpg

# --- the contract, written down independently of any contender ---------------------------

CLAUSES = {
    "C1": "p.archived_at IS NULL",
    "C2": "(p.author = $1 OR p.state = 'ready')",
    "C3": "(p.author = $1 OR p.audience = 'public' OR (p.audience = 'followers'"
    " AND EXISTS (SELECT 1 FROM follows f WHERE f.follower = $1 AND f.followee = p.author)))",
    "C4": "(p.author = $1 OR NOT p.followers_hidden)",
}
PREDICATE = " AND ".join(CLAUSES.values())
COLUMNS = "p.id, p.author, p.body, p.audience, p.state, p.followers_hidden, p.archived_at, p.created_at"
FOLLOWED = "EXISTS (SELECT 1 FROM follows g WHERE g.follower = $1 AND g.followee = p.author)"
ORDER = "ORDER BY p.created_at DESC, p.id DESC LIMIT 20"
SECTION_SQL = {
    "own": f"SELECT {COLUMNS} FROM posts p WHERE p.author = $1 AND {PREDICATE} {ORDER}",
    "followed": f"SELECT {COLUMNS} FROM posts p WHERE p.author <> $1 AND {FOLLOWED} AND {PREDICATE} {ORDER}",
    "suggested": f"SELECT {COLUMNS} FROM posts p WHERE p.author <> $1 AND NOT {FOLLOWED} AND {PREDICATE} {ORDER}",
}
SECTIONS = ("own", "followed", "suggested")
NOT_FOUND_BODY = b'{"error":{"code":"not_found","message":"not found"}}'


def row_check(post, viewer: int, follows: set) -> list[str]:
    """The gate's own row check: the clauses (C1..C4) that hide `post` from `viewer`;
    empty when the viewer may see it."""
    own = post["author"] == viewer
    failed = []
    if post["archived_at"] is not None:
        failed.append("C1")
    if not (own or post["state"] == "ready"):
        failed.append("C2")
    if not (own or post["audience"] == "public" or (post["audience"] == "followers" and post["author"] in follows)):
        failed.append("C3")
    if not (own or not post["followers_hidden"]):
        failed.append("C4")
    return failed


def post_json(row) -> dict:
    return {
        "id": row["id"],
        "author": row["author"],
        "body": row["body"],
        "audience": row["audience"],
        "created_at": row["created_at"].astimezone(__import__("datetime").timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


# --- HTTP ----------------------------------------------------------------------------------


class Resp:
    def __init__(self, status, headers, body, elapsed):
        self.status, self.headers, self.body, self.elapsed = status, headers, body, elapsed

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def __repr__(self):
        body = self.body[:300].decode("utf-8", "replace")
        return f"{self.status} {body!r} ({self.elapsed * 1000:.0f} ms)"


class Target:
    def __init__(self, base: str):
        u = urllib.parse.urlsplit(base)
        if u.scheme != "http" or not u.hostname:
            raise ValueError(f"FEEDBENCH_TARGET must be http://host[:port], not {base!r}")
        self.host, self.port, self.prefix = u.hostname, u.port or 80, u.path.rstrip("/")

    def request(self, method, path, body=None, timeout=10.0) -> Resp:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        headers = {"Connection": "close"}
        if body is not None:
            headers["Content-Type"] = "application/json"
            body = body if isinstance(body, bytes) else body.encode()
        started = time.monotonic()
        try:
            conn.request(method, self.prefix + path, body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
            return Resp(r.status, r.getheaders(), data, time.monotonic() - started)
        finally:
            conn.close()

    async def arequest(self, method, path, body=None, timeout=10.0) -> Resp:
        return await asyncio.to_thread(self.request, method, path, body, timeout)

    def refuses(self) -> bool:
        import socket

        try:
            socket.create_connection((self.host, self.port), timeout=0.5).close()
            return False
        except OSError:
            return True


# --- the suite -----------------------------------------------------------------------------


class Failed(Exception):
    pass


class Gate:
    def __init__(self, args):
        self.args = args
        self.target = Target(args.target)
        self.failures: list[tuple[str, str]] = []
        self.passed = 0
        self.created: list[int] = []
        self.rng = random.Random(args.seed)
        self.used_viewers: set[int] = set()

    # assertions: each failed expectation is recorded; a check goes on after one
    def expect(self, check, ok, detail):
        if ok:
            self.passed += 1
        else:
            self.failures.append((check, detail))
        return ok

    def expect_error(self, check, what, r: Resp, status, code):
        body = r.json()
        ok = (
            r.status == status
            and (r.header("content-type") or "").startswith("application/json")
            and isinstance(body, dict)
            and isinstance(body.get("error"), dict)
            and body["error"].get("code") == code
            and isinstance(body["error"].get("message"), str)
        )
        return self.expect(check, ok, f"{what}: expected {status} {code}, got {r!r} content-type {r.header('content-type')}")

    async def follows(self, viewer) -> set:
        rows = await self.db.fetch("SELECT followee FROM follows WHERE follower = $1", viewer)
        return {r["followee"] for r in rows}

    async def post_row(self, post_id):
        return await self.db.fetchrow(f"SELECT {COLUMNS} FROM posts p WHERE p.id = $1", post_id)

    # ---

    async def run(self):
        self.db = await asyncpg.connect(self.args.database_url, timeout=10)
        self.lock_conn = await asyncpg.connect(self.args.database_url, timeout=10)
        try:
            self.max_profile = await self.db.fetchval("SELECT coalesce(max(id), 0) FROM profiles")
            self.max_post = await self.db.fetchval("SELECT coalesce(max(id), 0) FROM posts")
            if self.max_profile < 20 or self.max_post < 200:
                raise Failed("the database holds too little data: load schema.sql and seed.sql first")
            checks = [
                ("health", self.check_health),
                ("errors", self.check_errors),
                ("visibility", self.check_visibility),
                ("feed", self.check_feed),
                ("degraded", self.check_degraded),
                ("deadline", self.check_deadline),
                ("create-post", self.check_create_post),
            ]
            if self.args.pool_size:
                checks.append(("pool-wait", self.check_pool_wait))
            if self.args.toxiproxy and self.args.db_link:
                checks.append(("link-cut", self.check_link_cut))
            if self.args.drain_command:
                checks.append(("drain", self.check_drain))
            only = set(self.args.only.split(",")) if self.args.only else None
            skip = set(self.args.skip.split(",")) if self.args.skip else set()
            for name, fn in checks:
                if (only is not None and name not in only) or name in skip:
                    continue
                before = len(self.failures)
                started = time.monotonic()
                try:
                    await fn(name)
                except Exception as e:  # a check that crashes fails, the others still run
                    detail = "".join(traceback.format_exception_only(type(e), e)).strip()
                    self.failures.append((name, f"aborted: {detail}"))
                n = len(self.failures) - before
                state = "ok" if n == 0 else f"FAILED ({n})"
                print(f"  {name:<12} {state}  [{time.monotonic() - started:.1f} s]", flush=True)
        finally:
            await self.cleanup()
            await self.db.close()
            await self.lock_conn.close()

    async def cleanup(self):
        if self.created:
            try:
                await self.db.execute("DELETE FROM posts WHERE id = ANY($1::bigint[])", self.created)
            except Exception as e:  # the gate's posts stay; say so
                print(f"  note: could not delete the gate's posts {self.created}: {e}", flush=True)

    # --- health, readiness, routes and the error table --------------------------------------

    async def check_health(self, c):
        r = await self.target.arequest("GET", "/healthz")
        self.expect(c, r.status == 200 and r.json() == {"status": "ok"}, f"GET /healthz: {r!r}")
        self.expect(c, (r.header("content-type") or "").startswith("application/json"), "GET /healthz: content-type is not application/json")
        deadline = time.monotonic() + 10
        while True:
            r = await self.target.arequest("GET", "/readyz")
            if r.status == 200 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        self.expect(c, r.status == 200 and r.json() == {"status": "ready"}, f"GET /readyz: {r!r}")

    async def check_errors(self, c):
        missing_viewer = self.max_profile + 1000
        missing_post = self.max_post + 1_000_000
        cases = [
            ("GET", "/no/such/route", None, 404, "not_found"),
            ("GET", "/", None, 404, "not_found"),
            ("GET", "/feed", None, 400, "bad_request"),
            ("GET", "/feed?viewer=", None, 400, "bad_request"),
            ("GET", "/feed?viewer=abc", None, 400, "bad_request"),
            ("GET", "/feed?viewer=1.5", None, 400, "bad_request"),
            ("GET", f"/feed?viewer={missing_viewer}", None, 404, "not_found"),
            ("GET", "/posts/abc", None, 400, "bad_request"),
            ("GET", "/posts/1?viewer=abc", None, 400, "bad_request"),
            ("GET", f"/posts/{missing_post}", None, 404, "not_found"),
            ("POST", "/feed?viewer=1", "{}", 405, "method_not_allowed"),
            ("DELETE", "/posts/1", None, 405, "method_not_allowed"),
            ("PUT", "/posts/1", "{}", 405, "method_not_allowed"),
            ("GET", "/posts", None, 405, "method_not_allowed"),
            ("POST", "/healthz", "{}", 405, "method_not_allowed"),
            ("DELETE", "/readyz", None, 405, "method_not_allowed"),
            ("POST", "/posts", "not json", 400, "bad_request"),
            ("POST", "/posts", "[]", 400, "bad_request"),
            ("POST", "/posts", "{}", 400, "bad_request"),
            ("POST", "/posts", '{"author": "1", "body": "x", "audience": "public"}', 400, "bad_request"),
            ("POST", "/posts", '{"author": 1.5, "body": "x", "audience": "public"}', 400, "bad_request"),
            ("POST", "/posts", '{"author": 1, "body": 5, "audience": "public"}', 400, "bad_request"),
            ("POST", "/posts", '{"author": 1, "body": "x", "audience": "friends"}', 400, "bad_request"),
            ("POST", "/posts", '{"author": 1, "body": "x"}', 400, "bad_request"),
        ]
        before = await self.db.fetchval("SELECT count(*) FROM posts")
        for method, path, body, status, code in cases:
            r = await self.target.arequest(method, path, body)
            self.expect_error(c, f"{method} {path} {body or ''}".strip(), r, status, code)
        after = await self.db.fetchval("SELECT count(*) FROM posts")
        self.expect(c, before == after, f"rejected POST /posts requests wrote {after - before} post(s)")

    # --- visibility: HTTP answers against the gate's row check -----------------------------

    async def pairs(self):
        """(viewer, post id, why) pairs: for every clause, posts hidden by that clause alone
        (so dropping it is caught with certainty), the author exemptions, then a
        deterministic random sample."""
        q = self.db.fetch
        other = lambda author: 1 if author != 1 else 2  # noqa: E731
        pairs = []
        live_ready = "p.archived_at IS NULL AND p.state = 'ready'"
        # C1: archived, otherwise visible to everyone; also to its author
        for r in await q(f"SELECT id, author FROM posts p WHERE p.archived_at IS NOT NULL AND p.state = 'ready' AND p.audience = 'public' AND NOT p.followers_hidden ORDER BY id LIMIT 3"):
            pairs += [(0, r["id"], "C1 archived public post, anonymous"), (other(r["author"]), r["id"], "C1 archived public post, another profile"), (r["author"], r["id"], "C1 archived post, its author")]
        # C2: drafts, public and not hidden
        for r in await q("SELECT id, author FROM posts p WHERE p.archived_at IS NULL AND p.state = 'draft' AND p.audience = 'public' AND NOT p.followers_hidden ORDER BY id LIMIT 3"):
            pairs += [(0, r["id"], "C2 draft, anonymous"), (other(r["author"]), r["id"], "C2 draft, another profile"), (r["author"], r["id"], "C2 own draft (visible)")]
        # C3: followers-only by a non-followed author; private; followers-only seen by a follower
        for r in await q(f"SELECT p.id, p.author, (SELECT min(x.id) FROM profiles x WHERE x.id <> p.author AND NOT EXISTS (SELECT 1 FROM follows f WHERE f.follower = x.id AND f.followee = p.author)) AS stranger FROM posts p WHERE {live_ready} AND p.audience = 'followers' AND NOT p.followers_hidden ORDER BY id LIMIT 3"):
            pairs += [(0, r["id"], "C3 followers-only, anonymous"), (r["stranger"], r["id"], "C3 followers-only, a non-follower"), (r["author"], r["id"], "C3 own followers-only post (visible)")]
        for r in await q(f"SELECT p.id, f.follower FROM posts p JOIN follows f ON f.followee = p.author AND f.follower <> p.author WHERE {live_ready} AND p.audience = 'followers' AND NOT p.followers_hidden ORDER BY p.id, f.follower LIMIT 3"):
            pairs.append((r["follower"], r["id"], "C3 followers-only, a follower (visible)"))
        for r in await q(f"SELECT p.id, p.author, f.follower FROM posts p JOIN follows f ON f.followee = p.author AND f.follower <> p.author WHERE {live_ready} AND p.audience = 'private' AND NOT p.followers_hidden ORDER BY p.id, f.follower LIMIT 3"):
            pairs += [(0, r["id"], "C3 private, anonymous"), (r["follower"], r["id"], "C3 private, a follower"), (r["author"], r["id"], "C3 own private post (visible)")]
        # C4: followers_hidden, seen by a follower; public and hidden, seen by anyone
        for r in await q(f"SELECT p.id, p.author, f.follower FROM posts p JOIN follows f ON f.followee = p.author AND f.follower <> p.author WHERE {live_ready} AND p.audience = 'followers' AND p.followers_hidden ORDER BY p.id, f.follower LIMIT 3"):
            pairs += [(r["follower"], r["id"], "C4 followers_hidden, a follower"), (r["author"], r["id"], "C4 own hidden post (visible)")]
        for r in await q(f"SELECT id, author FROM posts p WHERE {live_ready} AND p.audience = 'public' AND p.followers_hidden ORDER BY id LIMIT 3"):
            pairs += [(0, r["id"], "C4 public and followers_hidden, anonymous"), (other(r["author"]), r["id"], "C4 public and followers_hidden, another profile")]
        # plainly visible
        for r in await q(f"SELECT id FROM posts p WHERE {live_ready} AND p.audience = 'public' AND NOT p.followers_hidden ORDER BY id LIMIT 3"):
            pairs.append((0, r["id"], "public post, anonymous (visible)"))
        # a deterministic random sample: any post, a followed author's post, an own post
        for i in range(self.args.samples):
            viewer = self.rng.choice([0, self.rng.randint(1, self.max_profile)])
            kind = i % 3
            row = None
            if kind == 1 and viewer:
                row = await self.db.fetchrow("SELECT p.id FROM posts p JOIN follows f ON f.followee = p.author WHERE f.follower = $1 ORDER BY p.id OFFSET $2 LIMIT 1", viewer, self.rng.randint(0, 40))
            elif kind == 2 and viewer:
                row = await self.db.fetchrow("SELECT id FROM posts WHERE author = $1 ORDER BY id OFFSET $2 LIMIT 1", viewer, self.rng.randint(0, 10))
            post_id = row["id"] if row else self.rng.randint(1, self.max_post)
            pairs.append((viewer, post_id, "random sample"))
        return pairs

    async def check_visibility(self, c):
        pairs = await self.pairs()
        clauses_seen = set()
        missing = await self.target.arequest("GET", f"/posts/{self.max_post + 1_000_000}?viewer=0")
        follows_cache = {}
        for viewer, post_id, why in pairs:
            if viewer not in follows_cache:
                follows_cache[viewer] = await self.follows(viewer)
            row = await self.post_row(post_id)
            if row is None:
                continue
            hidden_by = row_check(row, viewer, follows_cache[viewer])
            clauses_seen.update(hidden_by if len(hidden_by) == 1 else [])
            # the gate's row check must agree with the reference SQL (a check of the gate)
            by_sql = await self.db.fetchval(f"SELECT {PREDICATE} FROM posts p WHERE p.id = $2", viewer, post_id)
            if by_sql != (not hidden_by):
                raise Failed(f"the gate's row check and its SQL disagree on post {post_id} viewer {viewer}")
            r = await self.target.arequest("GET", f"/posts/{post_id}?viewer={viewer}")
            what = f"GET /posts/{post_id}?viewer={viewer} [{why}]"
            if not hidden_by:
                self.expect(c, r.status == 200 and r.json() == post_json(row), f"{what}: visible, expected 200 {json.dumps(post_json(row))}, got {r!r}")
            else:
                ok = r.status == 404
                self.expect(c, ok, f"{what}: hidden by {'+'.join(hidden_by)}, expected 404, got {r!r}")
                if ok:
                    self.same_404(c, what, r, missing)
        for clause in CLAUSES:
            self.expect(c, clause in clauses_seen, f"the sample holds no post hidden by {clause} alone (seed data missing?)")

    def same_404(self, c, what, hidden: Resp, missing: Resp):
        strip = lambda r: [(k.lower(), v) for k, v in r.headers if k.lower() != "date"]  # noqa: E731
        self.expect(c, hidden.body == NOT_FOUND_BODY and missing.body == NOT_FOUND_BODY, f"{what}: 404 body {hidden.body!r}; a missing post gives {missing.body!r}; both must be {NOT_FOUND_BODY!r}")
        self.expect(c, strip(hidden) == strip(missing), f"{what}: 404 headers {strip(hidden)} differ from a missing post's {strip(missing)}")

    # --- the feed ------------------------------------------------------------------------

    async def feed_viewers(self):
        rows = await self.db.fetch(
            "SELECT DISTINCT author FROM posts WHERE state = 'draft' OR followers_hidden OR archived_at IS NOT NULL ORDER BY author LIMIT 4"
        )
        viewers = [r["author"] for r in rows]
        while len(viewers) < 10:
            v = self.rng.randint(1, self.max_profile)
            if v not in viewers:
                viewers.append(v)
        return viewers

    async def check_feed(self, c):
        for viewer in await self.feed_viewers():
            self.used_viewers.add(viewer)
            r = await self.target.arequest("GET", f"/feed?viewer={viewer}")
            page = r.json()
            what = f"GET /feed?viewer={viewer}"
            if not self.expect(c, r.status == 200 and isinstance(page, dict), f"{what}: {r!r}"):
                continue
            self.expect(c, (r.header("content-type") or "").startswith("application/json"), f"{what}: content-type {r.header('content-type')}")
            self.expect(c, set(page) == {"viewer", "sections", "degraded"} and page.get("viewer") == viewer, f"{what}: expected keys viewer, sections, degraded and viewer {viewer}: {r!r}")
            if not self.expect(c, page.get("degraded") == [] and isinstance(page.get("sections"), dict) and set(page["sections"]) == set(SECTIONS), f"{what}: expected all three sections and degraded [] (is the contender overloaded?): degraded {page.get('degraded')!r}"):
                continue
            follows = await self.follows(viewer)
            for name in SECTIONS:
                expected = [post_json(row) for row in await self.db.fetch(SECTION_SQL[name], viewer)]
                got = page["sections"][name]
                if got != expected:
                    ids = [p.get("id") if isinstance(p, dict) else p for p in got] if isinstance(got, list) else got
                    self.expect(c, False, f"{what}: section {name}: got ids {ids}, the reference SQL gives {[p['id'] for p in expected]}" + ("" if ids != [p["id"] for p in expected] else " (same ids, different fields)"))
                else:
                    self.passed += 1
                for p in got if isinstance(got, list) else []:
                    row = await self.post_row(p.get("id")) if isinstance(p, dict) and isinstance(p.get("id"), int) else None
                    if row is None:
                        continue
                    hidden_by = row_check(row, viewer, follows)
                    self.expect(c, not hidden_by, f"{what}: section {name} shows post {row['id']}, hidden by {'+'.join(hidden_by)}")

    async def lock_posts(self):
        tx = self.lock_conn.transaction()
        await tx.start()
        await self.lock_conn.execute("LOCK TABLE posts IN ACCESS EXCLUSIVE MODE")
        return tx

    async def waiting_on_posts(self) -> int:
        return await self.db.fetchval(
            "SELECT count(*) FROM pg_locks WHERE relation = 'posts'::regclass AND NOT granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )

    async def check_degraded(self, c):
        """Every section overruns its budget while the gate holds an exclusive lock on posts:
        the page is still 200, with no sections and all three names in `degraded`."""
        # a viewer no earlier check (or, likely, earlier run) asked for: no cached page
        pick = random.Random(time.time_ns())
        viewer = next(v for v in iter(lambda: pick.randint(1, self.max_profile), None) if v not in self.used_viewers)
        self.used_viewers.add(viewer)
        budget, deadline = self.args.section_budget_ms / 1000, self.args.request_deadline_ms / 1000
        tx = await self.lock_posts()
        try:
            r = await self.target.arequest("GET", f"/feed?viewer={viewer}", timeout=deadline + 5)
        finally:
            await tx.rollback()
        page = r.json() or {}
        what = f"GET /feed?viewer={viewer} with posts locked"
        self.expect(c, r.status == 200 and page.get("degraded") == list(SECTIONS) and page.get("sections") == {}, f"{what}: expected 200 with sections {{}} and degraded {list(SECTIONS)}, got {r!r}")
        self.expect(c, r.elapsed < min(deadline, budget) + 0.35, f"{what}: took {r.elapsed * 1000:.0f} ms, the section budget is {budget * 1000:.0f} ms")

    async def check_deadline(self, c):
        """A statement blocked past the request deadline: 503 upstream_unavailable by the
        deadline, and the contender's statement no longer waits in PostgreSQL afterwards
        (the deadline was carried in as statement_timeout, or the statement cancelled)."""
        post_id = await self.db.fetchval("SELECT min(id) FROM posts WHERE audience = 'public'")
        deadline = self.args.request_deadline_ms / 1000
        tx = await self.lock_posts()
        try:
            r = await self.target.arequest("GET", f"/posts/{post_id}?viewer=0", timeout=deadline + 10)
            waiting = await self.waiting_on_posts()
            t_end = time.monotonic() + 0.5
            while waiting and time.monotonic() < t_end:
                await asyncio.sleep(0.05)
                waiting = await self.waiting_on_posts()
        finally:
            await tx.rollback()
        what = f"GET /posts/{post_id} with posts locked"
        self.expect_error(c, what, r, 503, "upstream_unavailable")
        self.expect(c, r.elapsed < deadline + 0.3, f"{what}: answered after {r.elapsed * 1000:.0f} ms; the request deadline is {deadline * 1000:.0f} ms")
        self.expect(c, waiting == 0, f"{what}: {waiting} statement(s) still waiting in PostgreSQL 500 ms after the answer (no statement_timeout?)")

    # --- POST /posts ---------------------------------------------------------------------

    async def check_create_post(self, c):
        author = await self.db.fetchval("SELECT min(id) FROM profiles")
        marker = f"gate {os.getpid()} {time.time_ns()}"
        for audience in ("public", "followers", "private"):
            body = f"{marker} {audience} \"quoted\" ünïcode"
            r = await self.target.arequest("POST", "/posts", json.dumps({"author": author, "body": body, "audience": audience}))
            post = r.json()
            if not self.expect(c, r.status == 201 and isinstance(post, dict) and isinstance(post.get("id"), int), f"POST /posts ({audience}): expected 201 with the post, got {r!r}"):
                continue
            self.created.append(post["id"])
            row = await self.db.fetchrow(f"SELECT {COLUMNS} FROM posts p WHERE p.id = $1", post["id"])
            if not self.expect(c, row is not None, f"POST /posts: post {post['id']} is not in the database"):
                continue
            self.expect(c, post == post_json(row), f"POST /posts: answered {post}, the database holds {post_json(row)}")
            self.expect(c, row["state"] == "ready" and row["followers_hidden"] is False and row["archived_at"] is None, f"POST /posts: stored with state {row['state']}, followers_hidden {row['followers_hidden']}, archived_at {row['archived_at']}")
            self.expect(c, re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", str(post.get("created_at"))) is not None, f"POST /posts: created_at {post.get('created_at')!r} is not RFC 3339 UTC with seconds")
            r = await self.target.arequest("GET", f"/posts/{post['id']}?viewer={author}")
            self.expect(c, r.status == 200 and r.json() == post, f"GET /posts/{post['id']}?viewer={author} (its author): {r!r}")
            r = await self.target.arequest("GET", f"/posts/{post['id']}?viewer=0")
            want = 200 if audience == "public" else 404
            self.expect(c, r.status == want, f"GET /posts/{post['id']}?viewer=0 ({audience} post): expected {want}, got {r!r}")
        # an unknown author: 422 and nothing written
        unknown = self.max_profile + 1000
        count = await self.db.fetchval("SELECT count(*) FROM posts")
        r = await self.target.arequest("POST", "/posts", json.dumps({"author": unknown, "body": marker + " unknown", "audience": "public"}))
        self.expect_error(c, f"POST /posts with unknown author {unknown}", r, 422, "unknown_author")
        written = await self.db.fetchval("SELECT count(*) FROM posts WHERE author = $1 OR body = $2", unknown, marker + " unknown")
        self.expect(c, written == 0 and await self.db.fetchval("SELECT count(*) FROM posts") == count, f"POST /posts with an unknown author wrote {written} post(s)")

    # --- operations (opt-in) ---------------------------------------------------------------

    async def check_pool_wait(self, c):
        """With every pooled connection held by a request blocked on a lock (--pool-size of
        them, one replica), one more request gets 503 upstream_unavailable after about
        POOL_WAIT_MS instead of queueing."""
        post_id = await self.db.fetchval("SELECT min(id) FROM posts WHERE audience = 'public'")
        n, wait = self.args.pool_size, self.args.pool_wait_ms / 1000
        results = []
        tx = await self.lock_posts()
        try:
            threads = [threading.Thread(target=lambda: results.append(self._catch("GET", f"/posts/{post_id}?viewer=0"))) for _ in range(n)]
            for t in threads:
                t.start()
            t_end = time.monotonic() + 0.8 * self.args.request_deadline_ms / 1000
            while await self.waiting_on_posts() < n and time.monotonic() < t_end:
                await asyncio.sleep(0.01)
            held = await self.waiting_on_posts()
            r = await self.target.arequest("GET", f"/posts/{post_id}?viewer=0")
        finally:
            await tx.rollback()
        for t in threads:
            await asyncio.to_thread(t.join, 15)
        if not self.expect(c, held >= n, f"only {held} of {n} requests reached PostgreSQL; is the target one replica with POOL_SIZE={n}?"):
            return
        what = f"GET /posts/{post_id} with all {n} pooled connections busy"
        self.expect_error(c, what, r, 503, "upstream_unavailable")
        self.expect(c, r.elapsed < wait + 0.15, f"{what}: answered after {r.elapsed * 1000:.0f} ms; POOL_WAIT_MS is {wait * 1000:.0f}")

    def toxiproxy(self, enabled: bool):
        url = f"{self.args.toxiproxy.rstrip('/')}/proxies/{urllib.parse.quote(self.args.db_link)}"
        req = urllib.request.Request(url, data=json.dumps({"enabled": enabled}).encode(), method="POST", headers={"Content-Type": "application/json", "User-Agent": "feedbench-gate"})
        with urllib.request.urlopen(req, timeout=5) as resp:
            if resp.status != 200:
                raise Failed(f"toxiproxy {url}: {resp.status}")

    async def check_link_cut(self, c):
        """With the database link disabled at the fault proxy, requests fail fast with 503
        upstream_unavailable (within 100 ms), readiness reports database_unreachable, and the
        contender recovers when the link is back."""
        post_id = await self.db.fetchval("SELECT min(id) FROM posts WHERE audience = 'public'")
        viewer = 1
        await asyncio.to_thread(self.toxiproxy, False)
        try:
            await asyncio.sleep(0.2)
            for path in [f"/feed?viewer={viewer}", f"/posts/{post_id}?viewer=0"] * 3:
                r = await self.target.arequest("GET", path)
                self.expect_error(c, f"GET {path} with the link cut", r, 503, "upstream_unavailable")
                self.expect(c, r.elapsed < 0.1, f"GET {path} with the link cut: answered after {r.elapsed * 1000:.0f} ms, more than 100 ms")
            t_end, r = time.monotonic() + 2, None
            while time.monotonic() < t_end:
                r = await self.target.arequest("GET", "/readyz")
                if r.status == 503:
                    break
                await asyncio.sleep(0.1)
            self.expect(c, r.status == 503 and r.json() == {"status": "not_ready", "reason": "database_unreachable"}, f"GET /readyz with the link cut: {r!r}")
            self.expect(c, r.elapsed < 0.35, f"GET /readyz with the link cut: answered after {r.elapsed * 1000:.0f} ms (the probe has 200 ms)")
        finally:
            await asyncio.to_thread(self.toxiproxy, True)
        t_end = time.monotonic() + 10
        while True:
            ready = await self.target.arequest("GET", "/readyz")
            feed = await self.target.arequest("GET", f"/feed?viewer={viewer}")
            if (ready.status == 200 and feed.status == 200) or time.monotonic() > t_end:
                break
            await asyncio.sleep(0.2)
        self.expect(c, ready.status == 200 and feed.status == 200, f"10 s after the link came back: /readyz {ready!r}, /feed {feed!r}")

    async def check_drain(self, c):
        """SIGTERM (sent by --drain-command): readiness 503 draining at once, in-flight
        requests (held up by a lock on posts) complete with 200, requests are served during
        the grace period, and the listener closes within 10 s of the signal. The contender's
        exit status is for whoever runs it to check."""
        post_id = await self.db.fetchval("SELECT min(id) FROM posts WHERE audience = 'public' AND state = 'ready' AND archived_at IS NULL AND NOT followers_hidden")
        hold = 0.5 * self.args.request_deadline_ms / 1000
        grace = self.args.drain_grace_ms / 1000
        results = []
        tx = await self.lock_posts()
        try:
            threads = [threading.Thread(target=lambda: results.append(self._catch("GET", f"/posts/{post_id}?viewer=0"))) for _ in range(4)]
            for t in threads:
                t.start()
            t_end = time.monotonic() + 0.4
            while await self.waiting_on_posts() < 1 and time.monotonic() < t_end:
                await asyncio.sleep(0.02)
            signalled = time.monotonic()
            proc = await asyncio.to_thread(subprocess.run, shlex.split(self.args.drain_command), capture_output=True, text=True, timeout=10)
            if proc.returncode != 0:
                raise Failed(f"--drain-command exited {proc.returncode}: {proc.stderr.strip()}")
            ready = await self.target.arequest("GET", "/readyz")
            self.expect(c, ready.status == 503 and ready.json() == {"status": "not_ready", "reason": "draining"} and ready.elapsed < 0.5, f"GET /readyz right after SIGTERM: expected 503 draining, got {ready!r}")
            await asyncio.sleep(max(0.0, hold - (time.monotonic() - signalled)))
        finally:
            await tx.rollback()
        for t in threads:
            await asyncio.to_thread(t.join, 15)
        for r in results:
            self.expect(c, isinstance(r, Resp) and r.status == 200, f"an in-flight GET /posts/{post_id} during the drain: {r!r}")
        if grace - (time.monotonic() - signalled) > 0.3:
            r = self._catch("GET", "/healthz")
            self.expect(c, isinstance(r, Resp) and r.status == 200, f"GET /healthz within DRAIN_GRACE_MS of SIGTERM: {r!r}")
        while not self.target.refuses() and time.monotonic() - signalled < 10.5:
            await asyncio.sleep(0.1)
        closed = time.monotonic() - signalled
        self.expect(c, closed <= 10.5, "the listener still accepts connections 10 s after SIGTERM")
        self.expect(c, closed >= grace - 0.2, f"the listener closed {closed * 1000:.0f} ms after SIGTERM, before DRAIN_GRACE_MS ({grace * 1000:.0f} ms)")
        print(f"    drain: in-flight {[getattr(r, 'status', r) for r in results]}, listener closed {closed * 1000:.0f} ms after SIGTERM", flush=True)

    def _catch(self, method, path):
        try:
            return self.target.request(method, path, timeout=12)
        except Exception as e:
            return f"{type(e).__name__}: {e}"


def main(argv=None) -> int:
    env = os.environ.get
    p = argparse.ArgumentParser(description="The feed contract's gate suite (contenders/CONTRACT.md).")
    p.add_argument("--target", default=env("FEEDBENCH_TARGET"), help="the contender's base URL (env FEEDBENCH_TARGET)")
    p.add_argument("--database-url", default=env("FEEDBENCH_DATABASE_URL"), help="its database, for the row-level checks (env FEEDBENCH_DATABASE_URL)")
    p.add_argument("--toxiproxy", default=env("FEEDBENCH_TOXIPROXY"), help="Toxiproxy API URL of the fault proxy on the database link (env FEEDBENCH_TOXIPROXY); enables link-cut")
    p.add_argument("--db-link", default=env("FEEDBENCH_DB_LINK"), help="the proxy's name there (env FEEDBENCH_DB_LINK)")
    p.add_argument("--drain-command", default=env("FEEDBENCH_DRAIN_COMMAND"), help="a command that sends SIGTERM to the contender (env FEEDBENCH_DRAIN_COMMAND); enables the destructive drain check, run last")
    p.add_argument("--request-deadline-ms", type=int, default=int(env("FEEDBENCH_REQUEST_DEADLINE_MS") or 1000), help="the contender's REQUEST_DEADLINE_MS (env FEEDBENCH_REQUEST_DEADLINE_MS)")
    p.add_argument("--section-budget-ms", type=int, default=int(env("FEEDBENCH_SECTION_BUDGET_MS") or 400), help="its SECTION_BUDGET_MS (env FEEDBENCH_SECTION_BUDGET_MS)")
    p.add_argument("--drain-grace-ms", type=int, default=int(env("FEEDBENCH_DRAIN_GRACE_MS") or 3000), help="its DRAIN_GRACE_MS (env FEEDBENCH_DRAIN_GRACE_MS)")
    p.add_argument("--pool-size", type=int, default=int(env("FEEDBENCH_POOL_SIZE") or 0), help="the contender's POOL_SIZE, when the target is a single replica (env FEEDBENCH_POOL_SIZE); enables pool-wait")
    p.add_argument("--pool-wait-ms", type=int, default=int(env("FEEDBENCH_POOL_WAIT_MS") or 100), help="its POOL_WAIT_MS (env FEEDBENCH_POOL_WAIT_MS)")
    p.add_argument("--samples", type=int, default=int(env("FEEDBENCH_GATE_SAMPLES") or 150), help="random (viewer, post) pairs on top of the targeted ones")
    p.add_argument("--seed", type=int, default=int(env("FEEDBENCH_GATE_SEED") or 1), help="seed of the sampling")
    p.add_argument("--only", help="comma-separated checks to run: health, errors, visibility, feed, degraded, deadline, create-post, pool-wait, link-cut, drain")
    p.add_argument("--skip", help="comma-separated checks to skip")
    args = p.parse_args(argv)
    if not args.target or not args.database_url:
        p.error("the target (FEEDBENCH_TARGET) and the database (FEEDBENCH_DATABASE_URL) are both required")
    if bool(args.toxiproxy) != bool(args.db_link):
        p.error("--toxiproxy and --db-link go together")
    try:
        gate = Gate(args)
    except ValueError as e:
        p.error(str(e))
    print(f"gate: {args.target}", flush=True)
    try:
        asyncio.run(gate.run())
    except Exception as e:
        gate.failures.append(("setup", "".join(traceback.format_exception_only(type(e), e)).strip()))
    if gate.failures:
        print(f"\ngate FAILED: {len(gate.failures)} failed expectation(s), {gate.passed} passed")
        for check, detail in gate.failures:
            print(f"  [{check}] {detail}")
        return 1
    print(f"gate passed: {gate.passed} expectations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
