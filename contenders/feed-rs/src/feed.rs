//! `GET /feed`: three sections run concurrently, each within `SECTION_BUDGET_MS`; an overrun
//! section is dropped and named in `degraded`. With `CACHE=on`, complete pages are kept per
//! viewer for 5 s in this process only.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use tokio::time::{timeout_at, Instant};

use crate::db::{self, Post, Section};
use crate::pool::DbError;
use crate::App;

/// How long a cached page is served.
const CACHE_TTL: Duration = Duration::from_secs(5);

/// The outcome of building a page.
pub enum Page {
    /// The JSON body of a `200`.
    Ok(Vec<u8>),
    /// The viewer does not exist.
    UnknownViewer,
}

#[derive(Serialize)]
struct FeedBody<'a> {
    viewer: i64,
    sections: Sections,
    degraded: Vec<&'a str>,
}

#[derive(Serialize, Default)]
struct Sections {
    #[serde(skip_serializing_if = "Option::is_none")]
    own: Option<Vec<Post>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    followed: Option<Vec<Post>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    suggested: Option<Vec<Post>>,
}

/// How one section ended.
enum Outcome {
    Done(Vec<Post>),
    /// Over budget: dropped, and the page is degraded.
    Overran,
    /// No connection or a failed statement: dropped too, and when every section ends so
    /// the database is unreachable.
    Unavailable,
}

/// Builds the feed page of `viewer` (or serves it from the cache).
pub async fn page(app: &App, viewer: i64, deadline: Instant) -> Result<Page, DbError> {
    if let Some(body) = app.cache.as_ref().and_then(|c| c.get(viewer)) {
        return Ok(Page::Ok(body));
    }
    if !db::profile_exists(&app.pool, deadline, viewer).await? {
        return Ok(Page::UnknownViewer);
    }
    let run = |section: Section| async move {
        let budget_end = deadline.min(Instant::now() + app.config.section_budget);
        let work = db::section(&app.pool, &app.statements, budget_end, section, viewer);
        match timeout_at(budget_end, work).await {
            Ok(Ok(posts)) => Outcome::Done(posts),
            Err(_) | Ok(Err(DbError::StatementTimeout | DbError::Deadline)) => Outcome::Overran,
            Ok(Err(_)) => Outcome::Unavailable,
        }
    };
    let (own, followed, suggested) = tokio::join!(
        run(Section::Own),
        run(Section::Followed),
        run(Section::Suggested)
    );
    let outcomes = [own, followed, suggested];
    if outcomes.iter().all(|o| matches!(o, Outcome::Unavailable)) {
        return Err(DbError::Connect("no section reached the database".into()));
    }
    let mut body = FeedBody {
        viewer,
        sections: Sections::default(),
        degraded: Vec::new(),
    };
    for (section, outcome) in Section::ALL.into_iter().zip(outcomes) {
        let slot = match section {
            Section::Own => &mut body.sections.own,
            Section::Followed => &mut body.sections.followed,
            Section::Suggested => &mut body.sections.suggested,
        };
        match outcome {
            Outcome::Done(posts) => *slot = Some(posts),
            Outcome::Overran | Outcome::Unavailable => body.degraded.push(section.name()),
        }
    }
    let json = serde_json::to_vec(&body).map_err(|e| DbError::Statement(e.to_string()))?;
    if let (Some(cache), true) = (&app.cache, body.degraded.is_empty()) {
        cache.put(viewer, json.clone());
    }
    Ok(Page::Ok(json))
}

/// Complete feed pages by viewer, each with the time it was built.
#[derive(Default)]
pub struct Cache {
    pages: Mutex<HashMap<i64, (Instant, Vec<u8>)>>,
}

impl Cache {
    fn get(&self, viewer: i64) -> Option<Vec<u8>> {
        let pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        match pages.get(&viewer) {
            Some((at, body)) if at.elapsed() < CACHE_TTL => Some(body.clone()),
            _ => None,
        }
    }

    fn put(&self, viewer: i64, body: Vec<u8>) {
        let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        if pages.len() >= 4096 {
            pages.retain(|_, (at, _)| at.elapsed() < CACHE_TTL);
        }
        pages.insert(viewer, (Instant::now(), body));
    }
}
