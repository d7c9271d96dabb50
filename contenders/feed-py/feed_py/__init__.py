"""feed-py: the feed contract (contenders/CONTRACT.md) in Python, with aiohttp and asyncpg."""
