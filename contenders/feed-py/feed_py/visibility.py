"""The visibility rule (CONTRACT.md, Visibility), twice: as the SQL predicate every read
applies and as a row check over one post row and the viewer's follow set. FEED_MUTANT=cN
drops clause N from both."""

from collections.abc import Mapping, Set

# The reference predicate, clause by clause; $1 is the viewer, `p` the posts row.
SQL_CLAUSES = {
    "c1": "p.archived_at IS NULL",
    "c2": "(p.author = $1 OR p.state = 'ready')",
    "c3": "(p.author = $1 OR p.audience = 'public'"
    " OR (p.audience = 'followers'"
    " AND EXISTS (SELECT 1 FROM follows f WHERE f.follower = $1 AND f.followee = p.author)))",
    "c4": "(p.author = $1 OR NOT p.followers_hidden)",
}


def sql_predicate(mutant: str | None = None) -> str:
    """The predicate as SQL, without the mutant's clause."""
    kept = [sql for name, sql in SQL_CLAUSES.items() if name != mutant]
    return "(" + " AND ".join(kept) + ")"


def row_visible(post: Mapping, viewer: int, follows: Set[int], mutant: str | None = None) -> bool:
    """The same rule as a function of one post row (archived_at, author, state, audience,
    followers_hidden) and the set of profiles the viewer follows."""
    own = post["author"] == viewer
    clauses = {
        "c1": post["archived_at"] is None,
        "c2": own or post["state"] == "ready",
        "c3": own
        or post["audience"] == "public"
        or (post["audience"] == "followers" and post["author"] in follows),
        "c4": own or not post["followers_hidden"],
    }
    return all(ok for name, ok in clauses.items() if name != mutant)
