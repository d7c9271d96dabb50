//! The visibility rule of CONTRACT.md twice: as the reference SQL predicate and as a row check.
//! `FEED_MUTANT` drops one clause from both.

/// One clause of the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clause {
    /// C1: the post is not archived.
    Live,
    /// C2: the post is ready, or the viewer wrote it.
    Published,
    /// C3: the audience admits the viewer.
    Audience,
    /// C4: the post is not hidden from followers, or the viewer wrote it.
    NotHidden,
}

pub const CLAUSES: [Clause; 4] = [
    Clause::Live,
    Clause::Published,
    Clause::Audience,
    Clause::NotHidden,
];

impl Clause {
    /// The clause a `FEED_MUTANT` value names (`c1` … `c4`).
    pub fn from_mutant(name: &str) -> Option<Clause> {
        match name {
            "c1" => Some(Clause::Live),
            "c2" => Some(Clause::Published),
            "c3" => Some(Clause::Audience),
            "c4" => Some(Clause::NotHidden),
            _ => None,
        }
    }

    /// The clause as SQL over `posts p`, with `$1` the viewer.
    fn sql(self) -> &'static str {
        match self {
            Clause::Live => "p.archived_at IS NULL",
            Clause::Published => "(p.author = $1 OR p.state = 'ready')",
            Clause::Audience => {
                "(p.author = $1 OR p.audience = 'public' \
                 OR (p.audience = 'followers' \
                     AND EXISTS (SELECT 1 FROM follows f WHERE f.follower = $1 AND f.followee = p.author)))"
            }
            Clause::NotHidden => "(p.author = $1 OR NOT p.followers_hidden)",
        }
    }
}

/// The reference predicate over `posts p` with `$1` the viewer, less the `mutant` clause.
pub fn sql_predicate(mutant: Option<Clause>) -> String {
    CLAUSES
        .iter()
        .filter(|c| Some(**c) != mutant)
        .map(|c| c.sql())
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// The columns of a post that visibility depends on.
#[derive(Debug, Clone)]
pub struct PostFacts<'a> {
    pub author: i64,
    pub audience: &'a str,
    pub state: &'a str,
    pub followers_hidden: bool,
    pub archived: bool,
}

/// The row check: may `viewer` see the post? `follows` is the viewer's follow set, as a
/// membership test on profile ids.
pub fn visible(
    post: &PostFacts<'_>,
    viewer: i64,
    follows: impl Fn(i64) -> bool,
    mutant: Option<Clause>,
) -> bool {
    let own = post.author == viewer;
    let holds = |clause: &Clause| match clause {
        Clause::Live => !post.archived,
        Clause::Published => own || post.state == "ready",
        Clause::Audience => {
            own || post.audience == "public"
                || (post.audience == "followers" && follows(post.author))
        }
        Clause::NotHidden => own || !post.followers_hidden,
    };
    CLAUSES.iter().filter(|c| Some(**c) != mutant).all(holds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(author: i64) -> PostFacts<'static> {
        PostFacts {
            author,
            audience: "public",
            state: "ready",
            followers_hidden: false,
            archived: false,
        }
    }

    #[test]
    fn each_clause_hides_and_its_mutant_shows() {
        let none = |_| false;
        let cases = [
            (
                Clause::Live,
                PostFacts {
                    archived: true,
                    ..post(2)
                },
            ),
            (
                Clause::Published,
                PostFacts {
                    state: "draft",
                    ..post(2)
                },
            ),
            (
                Clause::Audience,
                PostFacts {
                    audience: "followers",
                    ..post(2)
                },
            ),
            (
                Clause::NotHidden,
                PostFacts {
                    followers_hidden: true,
                    ..post(2)
                },
            ),
        ];
        for (clause, p) in cases {
            assert!(!visible(&p, 1, none, None), "{clause:?}");
            assert!(visible(&p, 1, none, Some(clause)), "{clause:?}");
            for other in CLAUSES.iter().filter(|c| **c != clause) {
                assert!(
                    !visible(&p, 1, none, Some(*other)),
                    "{clause:?} / {other:?}"
                );
            }
        }
    }

    #[test]
    fn authors_see_their_own_posts_unless_archived() {
        let own = PostFacts {
            audience: "private",
            state: "draft",
            followers_hidden: true,
            ..post(1)
        };
        assert!(visible(&own, 1, |_| false, None));
        assert!(!visible(
            &PostFacts {
                archived: true,
                ..own.clone()
            },
            1,
            |_| false,
            None
        ));
        assert!(!visible(&own, 2, |_| true, None));
    }

    #[test]
    fn followers_see_followers_posts() {
        let p = PostFacts {
            audience: "followers",
            ..post(2)
        };
        assert!(visible(&p, 1, |a| a == 2, None));
        assert!(!visible(&p, 1, |a| a == 3, None));
        assert!(!visible(&p, 0, |_| false, None));
        let private = PostFacts {
            audience: "private",
            ..post(2)
        };
        assert!(!visible(&private, 1, |_| true, None));
    }

    #[test]
    fn predicate_drops_the_mutant_clause() {
        let full = sql_predicate(None);
        for fragment in ["archived_at", "followers_hidden", "EXISTS", "'ready'"] {
            assert!(full.contains(fragment), "{fragment}");
        }
        assert!(!sql_predicate(Some(Clause::Live)).contains("archived_at"));
        assert!(!sql_predicate(Some(Clause::NotHidden)).contains("followers_hidden"));
        assert!(!sql_predicate(Some(Clause::Audience)).contains("EXISTS"));
        assert!(!sql_predicate(Some(Clause::Published)).contains("'ready'"));
    }
}
