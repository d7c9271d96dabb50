"""feed-py's entry point: `python3 main.py`, configured by the environment (CONTRACT.md)."""

import asyncio
import logging
import sys

from feed_py.app import serve
from feed_py.config import Config, ConfigError


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        cfg = Config.from_env()
    except ConfigError as e:
        print(f"feed-py: {e}", file=sys.stderr)
        return 2
    return asyncio.run(serve(cfg))


if __name__ == "__main__":
    sys.exit(main())
