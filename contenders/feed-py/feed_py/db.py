"""Database access: a bounded pool, per-request deadlines carried into PostgreSQL as
statement_timeout, and the queries of every route."""

import asyncio
import time

import asyncpg

from .visibility import sql_predicate

POST_COLUMNS = "p.id, p.author, p.body, p.audience, p.state, p.followers_hidden, p.archived_at, p.created_at"
ORDER = "ORDER BY p.created_at DESC, p.id DESC LIMIT 20"
FOLLOWS = "EXISTS (SELECT 1 FROM follows g WHERE g.follower = $1 AND g.followee = p.author)"


class Unavailable(Exception):
    """The database could not be reached, or a statement failed, within the deadline."""

    def __init__(self, why: str, connect: bool = False):
        super().__init__(why)
        self.connect = connect  # no connection could be had at all


class Deadline:
    def __init__(self, ms: float, within: "Deadline | None" = None):
        self.end = time.monotonic() + ms / 1000
        if within is not None:
            self.end = min(self.end, within.end)

    def left(self) -> float:
        return self.end - time.monotonic()


def section_queries(mutant: str | None) -> dict[str, str]:
    visible = sql_predicate(mutant)
    return {
        "own": f"SELECT {POST_COLUMNS} FROM posts p WHERE p.author = $1 AND {visible} {ORDER}",
        "followed": f"SELECT {POST_COLUMNS} FROM posts p WHERE p.author <> $1 AND {FOLLOWS}"
        f" AND {visible} {ORDER}",
        "suggested": f"SELECT {POST_COLUMNS} FROM posts p WHERE p.author <> $1 AND NOT {FOLLOWS}"
        f" AND {visible} {ORDER}",
    }


class Database:
    def __init__(self, cfg):
        self.cfg = cfg
        self.pool: asyncpg.Pool | None = None
        self.sections = section_queries(cfg.mutant)
        self.post_query = (
            f"SELECT {POST_COLUMNS}, {sql_predicate(cfg.mutant)} AS visible, {FOLLOWS} AS follows_author"
            " FROM posts p WHERE p.id = $2"
        )

    async def start(self):
        # min_size=0: the service starts (and reports not ready) without a database. Idle
        # connections are kept (no inactive lifetime); broken ones are replaced on checkout.
        self.pool = await asyncpg.create_pool(
            self.cfg.database_url,
            min_size=0,
            max_size=self.cfg.pool_size,
            timeout=self.cfg.connect_timeout_ms / 1000,
            command_timeout=None,
            max_inactive_connection_lifetime=0,
        )
        # POOL_SIZE slots: waiting for one is what POOL_WAIT_MS bounds; opening a connection
        # for a slot is bounded by CONNECT_TIMEOUT_MS (and the deadline).
        self.slots = asyncio.Semaphore(self.cfg.pool_size)

    async def close(self):
        if self.pool is not None:
            try:
                await asyncio.wait_for(self.pool.close(), 2)
            except (asyncio.TimeoutError, Exception):
                self.pool.terminate()

    async def run(self, deadline: Deadline, work):
        """Run `work(conn, timeout)` in a transaction on a pooled connection, with what is
        left of the deadline as its statement_timeout."""
        if deadline.left() <= 0.001:
            raise Unavailable("deadline passed")
        try:
            async with asyncio.timeout(min(self.cfg.pool_wait_ms / 1000, deadline.left())):
                await self.slots.acquire()
        except TimeoutError:
            raise Unavailable("no pooled connection free within POOL_WAIT_MS", connect=True) from None
        try:
            connect = min(self.cfg.connect_timeout_ms / 1000, deadline.left())
            try:
                conn = await self.pool.acquire(timeout=max(connect, 0.001))
            except (asyncio.TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
                raise Unavailable(f"no connection: {e!r}", connect=True) from None
            try:
                left = deadline.left()
                async with conn.transaction():
                    # SET takes no parameters; the value is an int computed here.
                    await conn.execute(f"SET LOCAL statement_timeout = {max(1, int(left * 1000))}", timeout=left + 0.05)
                    return await work(conn, deadline.left() + 0.05)
            except (asyncio.TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
                raise Unavailable(f"statement failed: {e!r}") from None
            finally:
                await self.pool.release(conn, timeout=1)
        finally:
            self.slots.release()

    # --- queries -------------------------------------------------------------------------

    async def viewer(self, deadline, viewer: int):
        """Whether the viewer exists, and the set it follows."""

        async def work(conn, t):
            return await conn.fetchrow(
                "SELECT EXISTS (SELECT 1 FROM profiles WHERE id = $1) AS found,"
                " ARRAY(SELECT followee FROM follows WHERE follower = $1) AS follows",
                viewer,
                timeout=t,
            )

        row = await self.run(deadline, work)
        return row["found"], set(row["follows"])

    async def section(self, deadline, name: str, viewer: int, budget_ms: int):
        async def work(conn, t):
            return await conn.fetch(self.sections[name], viewer, timeout=t)

        return await self.run(Deadline(budget_ms, within=deadline), work)

    async def post(self, deadline, post_id: int, viewer: int):
        async def work(conn, t):
            return await conn.fetchrow(self.post_query, viewer, post_id, timeout=t)

        return await self.run(deadline, work)

    async def create_post(self, deadline, author: int, body: str, audience: str):
        """None when the author does not exist (nothing is written)."""

        async def work(conn, t):
            found = await conn.fetchval(
                "SELECT 1 FROM profiles WHERE id = $1 FOR KEY SHARE", author, timeout=t
            )
            if found is None:
                return None
            return await conn.fetchrow(
                "INSERT INTO posts (author, body, audience, state, followers_hidden, created_at)"
                " VALUES ($1, $2, $3, 'ready', false, now())"
                " RETURNING id, author, body, audience, created_at",
                author,
                body,
                audience,
                timeout=t,
            )

        return await self.run(deadline, work)

    async def ping(self, timeout: float) -> bool:
        """SELECT 1 within `timeout` seconds; a slow probe is left to finish in the background."""

        async def work(conn, t):
            return await conn.fetchval("SELECT 1", timeout=t)

        task = asyncio.ensure_future(self.run(Deadline(int(timeout * 1000)), work))
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            task.cancel()
            task.add_done_callback(_consume)
            return False
        return task.exception() is None and task.result() == 1


def _consume(task: asyncio.Task):
    if not task.cancelled():
        task.exception()
