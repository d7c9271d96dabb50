"""Routes, the error table, readiness and graceful drain (CONTRACT.md, Routes to Operations)."""

import asyncio
import json
import logging
import re
import signal
import time
from datetime import timezone

from aiohttp import web

from .db import Database, Deadline, Unavailable, _consume
from .visibility import row_visible

log = logging.getLogger("feed-py")

SECTIONS = ("own", "followed", "suggested")
AUDIENCES = ("public", "followers", "private")
INTEGER = re.compile(r"-?[0-9]{1,19}")


class Fail(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def respond(status: int, payload) -> web.Response:
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    return web.Response(status=status, body=body, content_type="application/json")


def error(status: int, code: str, message: str) -> web.Response:
    return respond(status, {"error": {"code": code, "message": message}})


def not_found() -> web.Response:
    # Hidden and missing posts, unknown viewers and routes: one body, byte for byte.
    return error(404, "not_found", "not found")


def parse_id(raw: str | None, what: str) -> int:
    if raw is None or not INTEGER.fullmatch(raw):
        raise Fail(400, "bad_request", f"{what} must be an integer")
    value = int(raw)
    if not -(2**63) <= value < 2**63:
        raise Fail(400, "bad_request", f"{what} is out of range")
    return value


def post_json(row) -> dict:
    return {
        "id": row["id"],
        "author": row["author"],
        "body": row["body"],
        "audience": row["audience"],
        "created_at": row["created_at"].astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


class Service:
    def __init__(self, cfg, db: Database):
        self.cfg, self.db = cfg, db
        self.draining = False
        self.in_flight = 0
        self.probe_ok, self.probe_at = False, float("-inf")
        self.probe_lock = asyncio.Lock()

    # --- middleware: deadline, in-flight count, the error table ----------------------------

    @web.middleware
    async def middleware(self, request: web.Request, handler):
        request["deadline"] = Deadline(self.cfg.request_deadline_ms)
        self.in_flight += 1
        try:
            return await handler(request)
        except Fail as f:
            return error(f.status, f.code, f.message)
        except Unavailable as u:
            log.debug("upstream unavailable: %s", u)
            return error(503, "upstream_unavailable", "the database is unavailable")
        except web.HTTPMethodNotAllowed as e:
            resp = error(405, "method_not_allowed", "method not allowed")
            resp.headers["Allow"] = ",".join(sorted(e.allowed_methods))
            return resp
        except web.HTTPNotFound:
            return not_found()
        except web.HTTPException as e:  # e.g. 413 from aiohttp for a body over 1 MiB
            if 400 <= e.status < 500:
                return error(400, "bad_request", e.reason or "bad request")
            raise
        finally:
            self.in_flight -= 1

    # --- routes ----------------------------------------------------------------------------

    async def healthz(self, request):
        return respond(200, {"status": "ok"})

    async def readyz(self, request):
        if self.draining:
            return respond(503, {"status": "not_ready", "reason": "draining"})
        if not await self.probe():
            return respond(503, {"status": "not_ready", "reason": "database_unreachable"})
        return respond(200, {"status": "ready"})

    async def probe(self) -> bool:
        """A SELECT 1 within 200 ms, its result reused for up to 1 s."""
        if time.monotonic() - self.probe_at < 1.0:
            return self.probe_ok
        async with self.probe_lock:
            if time.monotonic() - self.probe_at >= 1.0:
                ok = await self.db.ping(0.2)
                self.probe_ok, self.probe_at = ok, time.monotonic()
            return self.probe_ok

    async def feed(self, request):
        viewer = parse_id(request.query.get("viewer"), "viewer")
        deadline = request["deadline"]
        found, follows = await self.db.viewer(deadline, viewer)
        if not found:
            return not_found()
        budget = Deadline(self.cfg.section_budget_ms, within=deadline)
        tasks = {
            name: asyncio.ensure_future(self.db.section(deadline, name, viewer, self.cfg.section_budget_ms))
            for name in SECTIONS
        }
        done, pending = await asyncio.wait(tasks.values(), timeout=max(budget.left(), 0))
        for task in pending:  # dropped: left to clean up in the background
            task.cancel()
            task.add_done_callback(_consume)
        sections, degraded, no_connection = {}, [], 0
        for name, task in tasks.items():
            if task in done and task.exception() is None:
                sections[name] = [post_json(r) for r in task.result() if self.check(r, viewer, follows)]
                continue
            degraded.append(name)
            exc = task.exception() if task in done else None
            if isinstance(exc, Unavailable) and exc.connect:
                no_connection += 1
        if no_connection == len(SECTIONS):
            raise Unavailable("no section got a connection", connect=True)
        return respond(200, {"viewer": viewer, "sections": sections, "degraded": degraded})

    def check(self, row, viewer: int, follows: set) -> bool:
        """The row check; it must agree with the SQL predicate that selected the row."""
        ok = row_visible(row, viewer, follows, self.cfg.mutant)
        if not ok:
            log.error("row check disagrees with SQL: post %s viewer %s", row["id"], viewer)
        return ok

    async def get_post(self, request):
        post_id = parse_id(request.match_info["id"], "post id")
        viewer = parse_id(request.query.get("viewer", "0"), "viewer")
        row = await self.db.post(request["deadline"], post_id, viewer)
        if row is None:
            return not_found()
        follows = {row["author"]} if row["follows_author"] else set()
        by_row = row_visible(row, viewer, follows, self.cfg.mutant)
        if by_row != row["visible"]:
            log.error("row check disagrees with SQL: post %s viewer %s", post_id, viewer)
        if not (by_row and row["visible"]):
            return not_found()
        return respond(200, post_json(row))

    async def create_post(self, request):
        try:
            data = json.loads(await request.read())
        except (ValueError, UnicodeDecodeError):
            raise Fail(400, "bad_request", "the body is not JSON") from None
        if not isinstance(data, dict):
            raise Fail(400, "bad_request", "the body must be a JSON object")
        author, body, audience = data.get("author"), data.get("body"), data.get("audience")
        if type(author) is not int or not -(2**63) <= author < 2**63:
            raise Fail(400, "bad_request", "author must be an integer")
        if not isinstance(body, str):
            raise Fail(400, "bad_request", "body must be a string")
        if audience not in AUDIENCES:
            raise Fail(400, "bad_request", "audience must be public, followers or private")
        row = await self.db.create_post(request["deadline"], author, body, audience)
        if row is None:
            raise Fail(422, "unknown_author", "unknown author")
        return respond(201, post_json(row))


def make_app(service: Service) -> web.Application:
    app = web.Application(middlewares=[service.middleware])
    app.router.add_get("/healthz", service.healthz, allow_head=False)
    app.router.add_get("/readyz", service.readyz, allow_head=False)
    app.router.add_get("/feed", service.feed, allow_head=False)
    app.router.add_get("/posts/{id}", service.get_post, allow_head=False)
    app.router.add_post("/posts", service.create_post)
    return app


async def serve(cfg) -> int:
    db = Database(cfg)
    await db.start()
    service = Service(cfg, db)
    runner = web.AppRunner(make_app(service), handle_signals=False, access_log=None)
    await runner.setup()
    # After the grace period the listener closes and in-flight requests get what is left
    # of the 10 s the contract allows.
    finish = max(0.5, 9.0 - cfg.drain_grace_ms / 1000)
    site = web.TCPSite(runner, "0.0.0.0", cfg.listen_port, shutdown_timeout=finish, reuse_address=True)
    await site.start()
    # The bound port: with LISTEN_PORT=0 the system picks one, and this line names it.
    port = runner.addresses[0][1] if runner.addresses else cfg.listen_port
    log.info("feed-py listening on port %d (pool %d, mutant %s)", port, cfg.pool_size, cfg.mutant)

    terminated = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, terminated.set)
    await terminated.wait()

    # Graceful drain: not ready at once, serve on for the grace period, close the listener,
    # let in-flight requests finish, exit 0.
    service.draining = True
    log.info("SIGTERM: draining, serving for %d ms more", cfg.drain_grace_ms)
    await asyncio.sleep(cfg.drain_grace_ms / 1000)
    log.info("closing the listener; %d request(s) in flight", service.in_flight)
    await runner.cleanup()
    await db.close()
    log.info("drained")
    return 0
