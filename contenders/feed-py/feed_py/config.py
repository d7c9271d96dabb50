"""Configuration, from the environment only (CONTRACT.md, Operations)."""

import os
from dataclasses import dataclass


class ConfigError(Exception):
    pass


def _int(name: str, default: int, minimum: int = 0) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ConfigError(f"{name}={value} is below {minimum}")
    return value


@dataclass(frozen=True)
class Config:
    listen_port: int
    database_url: str
    pool_size: int
    pool_wait_ms: int
    request_deadline_ms: int
    section_budget_ms: int
    connect_timeout_ms: int
    drain_grace_ms: int
    mutant: str | None

    @staticmethod
    def from_env() -> "Config":
        url = os.environ.get("DATABASE_URL", "").strip()
        if not url:
            raise ConfigError("DATABASE_URL is required")
        mutant = os.environ.get("FEED_MUTANT", "").strip().lower() or None
        if mutant not in (None, "c1", "c2", "c3", "c4"):
            raise ConfigError(f"FEED_MUTANT={mutant!r}: expected c1, c2, c3 or c4")
        cache = os.environ.get("CACHE", "off").strip().lower()
        if cache not in ("", "off"):
            raise ConfigError("CACHE=on is not implemented by feed-py (feed-rs only)")
        return Config(
            listen_port=_int("LISTEN_PORT", 8080, 0),
            database_url=url,
            pool_size=_int("POOL_SIZE", 16, 1),
            pool_wait_ms=_int("POOL_WAIT_MS", 100, 1),
            request_deadline_ms=_int("REQUEST_DEADLINE_MS", 1000, 1),
            section_budget_ms=_int("SECTION_BUDGET_MS", 400, 1),
            connect_timeout_ms=_int("CONNECT_TIMEOUT_MS", 500, 1),
            drain_grace_ms=_int("DRAIN_GRACE_MS", 3000, 0),
            mutant=mutant,
        )
