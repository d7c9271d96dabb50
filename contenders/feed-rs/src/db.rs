//! The service's statements. Every one runs under what is left of the request's deadline,
//! carried into PostgreSQL as `statement_timeout`, and every read applies the visibility rule
//! in SQL and then again as the row check.

use std::sync::Arc;

use serde::Serialize;
use tokio::time::Instant;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::Row;

use crate::pool::{remaining_ms, Conn, DbError, Pool};
use crate::visibility::{self, Clause, PostFacts};

/// A post as the routes return it.
#[derive(Debug, Clone, Serialize)]
pub struct Post {
    pub id: i64,
    pub author: i64,
    pub body: String,
    pub audience: String,
    pub created_at: String,
}

/// A feed section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Own,
    Followed,
    Suggested,
}

impl Section {
    pub const ALL: [Section; 3] = [Section::Own, Section::Followed, Section::Suggested];

    pub fn name(self) -> &'static str {
        match self {
            Section::Own => "own",
            Section::Followed => "followed",
            Section::Suggested => "suggested",
        }
    }

    /// Which authors the section takes, over `posts p` with `$1` the viewer.
    fn authors(self) -> &'static str {
        match self {
            Section::Own => "p.author = $1",
            Section::Followed => {
                "p.author <> $1 AND p.author IN \
                 (SELECT f.followee FROM follows f WHERE f.follower = $1)"
            }
            Section::Suggested => {
                "p.author <> $1 AND NOT EXISTS \
                 (SELECT 1 FROM follows f WHERE f.follower = $1 AND f.followee = p.author)"
            }
        }
    }
}

/// The post columns every read selects, the row check's inputs included.
const COLUMNS: &str = "p.id, p.author, p.body, p.audience, p.state, p.followers_hidden, \
     p.archived_at IS NOT NULL AS archived, \
     to_char(p.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AS created_at";

/// Whether the viewer `$1` follows the author of `q`.
const FOLLOWS_AUTHOR: &str =
    "EXISTS (SELECT 1 FROM follows f WHERE f.follower = $1 AND f.followee = q.author)";

/// The statements, built once for the configured mutant.
pub struct Statements {
    sections: [String; 3],
    post: String,
    mutant: Option<Clause>,
}

impl Statements {
    pub fn new(mutant: Option<Clause>) -> Statements {
        let predicate = visibility::sql_predicate(mutant);
        let section = |s: Section| {
            format!(
                "SELECT q.*, {FOLLOWS_AUTHOR} AS follows_author FROM \
                 (SELECT {COLUMNS}, p.created_at AS created_ts FROM posts p \
                  WHERE {} AND {predicate} \
                  ORDER BY p.created_at DESC, p.id DESC LIMIT 20) q \
                 ORDER BY q.created_ts DESC, q.id DESC",
                s.authors()
            )
        };
        Statements {
            sections: Section::ALL.map(section),
            post: format!(
                "SELECT q.*, {FOLLOWS_AUTHOR} AS follows_author FROM \
                 (SELECT {COLUMNS}, ({predicate}) AS sql_visible FROM posts p WHERE p.id = $2) q"
            ),
            mutant,
        }
    }

    /// The rows the SQL predicate admitted, checked again by the row check.
    fn checked(&self, viewer: i64, rows: &[Row]) -> Result<Vec<Post>, DbError> {
        let mut posts = Vec::with_capacity(rows.len());
        for row in rows {
            let (post, visible) = self.row_check(viewer, row)?;
            if visible {
                posts.push(post);
            } else {
                eprintln!(
                    "feed-rs: visibility disagreement: SQL shows post {} to viewer {viewer}",
                    post.id
                );
            }
        }
        Ok(posts)
    }

    fn row_check(&self, viewer: i64, row: &Row) -> Result<(Post, bool), DbError> {
        let get_err = |e: tokio_postgres::Error| DbError::Statement(e.to_string());
        let author: i64 = row.try_get("author").map_err(get_err)?;
        let follows_author: bool = row.try_get("follows_author").map_err(get_err)?;
        let audience: String = row.try_get("audience").map_err(get_err)?;
        let state: String = row.try_get("state").map_err(get_err)?;
        let facts = PostFacts {
            author,
            audience: &audience,
            state: &state,
            followers_hidden: row.try_get("followers_hidden").map_err(get_err)?,
            archived: row.try_get("archived").map_err(get_err)?,
        };
        let visible = visibility::visible(
            &facts,
            viewer,
            |a| a == author && follows_author,
            self.mutant,
        );
        let post = Post {
            id: row.try_get("id").map_err(get_err)?,
            author,
            body: row.try_get("body").map_err(get_err)?,
            audience,
            created_at: row.try_get("created_at").map_err(get_err)?,
        };
        Ok((post, visible))
    }
}

/// Runs one read on `conn` with `statement_timeout` set to what is left until `deadline`;
/// the `SET` and the query go out together.
async fn read(
    conn: &mut Conn,
    deadline: Instant,
    sql: &str,
    params: &[(&(dyn ToSql + Sync), Type)],
) -> Result<Vec<Row>, DbError> {
    let set = format!("SET statement_timeout = {}", remaining_ms(deadline)?);
    let client = conn.client();
    let (_, rows) = tokio::try_join!(client.batch_execute(&set), client.query_typed(sql, params))?;
    Ok(rows)
}

/// Runs `work` on a checked-out connection, handing it back to the pool when it completes.
macro_rules! with_conn {
    ($pool:expr, $deadline:expr, |$conn:ident| $work:expr) => {{
        let mut $conn = $pool.checkout($deadline).await?;
        let result = $work;
        if result.is_ok() {
            $conn.finish();
        }
        result
    }};
}

/// Whether the profile `id` exists.
pub async fn profile_exists(pool: &Arc<Pool>, deadline: Instant, id: i64) -> Result<bool, DbError> {
    with_conn!(pool, deadline, |conn| {
        read(
            &mut conn,
            deadline,
            "SELECT 1 FROM profiles WHERE id = $1",
            &[(&id, Type::INT8)],
        )
        .await
        .map(|rows| !rows.is_empty())
    })
}

/// One feed section for `viewer`: at most 20 visible posts, newest first.
pub async fn section(
    pool: &Arc<Pool>,
    statements: &Statements,
    deadline: Instant,
    section: Section,
    viewer: i64,
) -> Result<Vec<Post>, DbError> {
    let sql = &statements.sections[section as usize];
    let rows = with_conn!(pool, deadline, |conn| {
        read(&mut conn, deadline, sql, &[(&viewer, Type::INT8)]).await
    })?;
    statements.checked(viewer, &rows)
}

/// The post `id` if `viewer` may see it: the SQL predicate and the row check must both agree.
pub async fn post(
    pool: &Arc<Pool>,
    statements: &Statements,
    deadline: Instant,
    viewer: i64,
    id: i64,
) -> Result<Option<Post>, DbError> {
    let params: [(&(dyn ToSql + Sync), Type); 2] = [(&viewer, Type::INT8), (&id, Type::INT8)];
    let rows = with_conn!(pool, deadline, |conn| {
        read(&mut conn, deadline, &statements.post, &params).await
    })?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let sql_visible: bool = row
        .try_get("sql_visible")
        .map_err(|e| DbError::Statement(e.to_string()))?;
    let (post, row_visible) = statements.row_check(viewer, row)?;
    if sql_visible != row_visible {
        eprintln!(
            "feed-rs: visibility disagreement on post {id} for viewer {viewer}: \
             SQL {sql_visible}, row check {row_visible}"
        );
    }
    Ok((sql_visible && row_visible).then_some(post))
}

/// Creates a post in one transaction; `None` when the author does not exist (nothing written).
pub async fn create_post(
    pool: &Arc<Pool>,
    deadline: Instant,
    author: i64,
    body: &str,
    audience: &str,
) -> Result<Option<Post>, DbError> {
    with_conn!(pool, deadline, |conn| {
        let client = conn.client();
        let begin = format!(
            "BEGIN; SET LOCAL statement_timeout = {}",
            remaining_ms(deadline)?
        );
        client.batch_execute(&begin).await?;
        let author_rows = client
            .query_typed(
                "SELECT 1 FROM profiles WHERE id = $1",
                &[(&author, Type::INT8)],
            )
            .await?;
        if author_rows.is_empty() {
            client.batch_execute("ROLLBACK").await?;
            Ok(None)
        } else {
            let insert = format!(
                "INSERT INTO posts AS p (author, body, audience, state, followers_hidden, created_at) \
                 VALUES ($1, $2, $3, 'ready', false, now()) RETURNING {COLUMNS}"
            );
            let row = client
                .query_typed(
                    &insert,
                    &[
                        (&author, Type::INT8),
                        (&body, Type::TEXT),
                        (&audience, Type::TEXT),
                    ],
                )
                .await?
                .into_iter()
                .next()
                .ok_or_else(|| DbError::Statement("INSERT returned no row".into()))?;
            client.batch_execute("COMMIT").await?;
            let get_err = |e: tokio_postgres::Error| DbError::Statement(e.to_string());
            Ok(Some(Post {
                id: row.try_get("id").map_err(get_err)?,
                author: row.try_get("author").map_err(get_err)?,
                body: row.try_get("body").map_err(get_err)?,
                audience: row.try_get("audience").map_err(get_err)?,
                created_at: row.try_get("created_at").map_err(get_err)?,
            }))
        }
    })
}
