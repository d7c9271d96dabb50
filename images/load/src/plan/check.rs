//! What a plan must satisfy before the generator runs it, and the parsed base URL.

use super::{LoadPlan, PlanError, Segment, FORMAT_VERSION};

/// The largest integer the draws' f64 arithmetic holds exactly (JavaScript's
/// Number.MAX_SAFE_INTEGER), so the largest id both generators draw alike.
const MAX_ID: u64 = (1 << 53) - 1;

/// base_url taken apart: where to connect and what to send as `Host`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl {
    /// The host name or address, IPv6 without brackets.
    pub host: String,
    /// The port, 80 when base_url names none.
    pub port: u16,
    /// `host[:port]` as written in base_url, for the `Host` header.
    pub authority: String,
}

impl BaseUrl {
    /// Parses `http://host[:port]`: no path (routes' paths are appended), no https.
    pub fn parse(url: &str) -> Result<BaseUrl, PlanError> {
        let bad = |reason| PlanError::BaseUrl {
            url: url.to_string(),
            reason,
        };
        let lower = url.to_ascii_lowercase();
        if lower.starts_with("https://") {
            return Err(bad("uses https, which feedbench-load does not support"));
        }
        if !lower.starts_with("http://") {
            return Err(bad("does not start with http://"));
        }
        let authority = &url["http://".len()..];
        if authority.contains(['/', '?', '#']) {
            return Err(bad("has a path, but routes' paths are appended to it"));
        }
        if authority.contains('@') {
            return Err(bad("holds user information, which is not supported"));
        }
        let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
            let (host, after) = rest
                .split_once(']')
                .ok_or_else(|| bad("has no `]` after its IPv6 address"))?;
            let port = match after {
                "" => None,
                _ => Some(
                    after
                        .strip_prefix(':')
                        .ok_or_else(|| bad("has text after its IPv6 address"))?,
                ),
            };
            (host, port)
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(bad("has no host"));
        }
        let port = match port {
            None => 80,
            Some(p) => match p.parse::<u16>() {
                Ok(p) if p > 0 => p,
                _ => return Err(bad("has a port that is not a number from 1 to 65535")),
            },
        };
        Ok(BaseUrl {
            host: host.to_string(),
            port,
            authority: authority.to_string(),
        })
    }
}

fn non_negative(what: impl FnOnce() -> String, value: f64) -> Result<(), PlanError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(PlanError::Schedule {
            what: what(),
            value,
        })
    }
}

impl LoadPlan {
    /// Refuses what the generator cannot run; the error says how to fix it.
    pub fn check(&self) -> Result<(), PlanError> {
        if self.format_version != FORMAT_VERSION {
            return Err(PlanError::Version {
                found: self.format_version,
            });
        }
        BaseUrl::parse(&self.base_url)?;
        if self.timeout_ms == 0 {
            return Err(PlanError::Timeout);
        }
        if self.max_connections == 0 {
            return Err(PlanError::MaxConnections);
        }
        self.check_routes()?;
        self.check_ids()?;
        self.check_schedule()
    }

    /// The parsed base_url.
    pub fn base(&self) -> Result<BaseUrl, PlanError> {
        BaseUrl::parse(&self.base_url)
    }

    fn check_routes(&self) -> Result<(), PlanError> {
        if self.routes.is_empty() {
            return Err(PlanError::NoRoutes);
        }
        if self.cumulative_weights.len() != self.routes.len() {
            return Err(PlanError::WeightCount {
                weights: self.cumulative_weights.len(),
                routes: self.routes.len(),
            });
        }
        let mut previous = 0.0;
        for (index, &value) in self.cumulative_weights.iter().enumerate() {
            if !value.is_finite() || value < previous {
                return Err(PlanError::Weight { index, value });
            }
            previous = value;
        }
        if !(self.total_weight.is_finite() && self.total_weight > 0.0) {
            return Err(PlanError::TotalWeight {
                value: self.total_weight,
            });
        }
        for route in &self.routes {
            let method_ok =
                !route.method.is_empty() && route.method.bytes().all(|b| b.is_ascii_uppercase());
            if !method_ok {
                return Err(PlanError::Method {
                    route: route.name.clone(),
                    method: route.method.clone(),
                });
            }
            if !matches!(route.path.first(), Some(Segment::Text(t)) if t.starts_with('/')) {
                return Err(PlanError::Path {
                    route: route.name.clone(),
                });
            }
            let segments = route.path.iter().chain(route.body.iter().flatten());
            for segment in segments {
                if let Segment::Id { id } = segment {
                    if !self.ids.contains_key(id) {
                        return Err(PlanError::UnknownId {
                            route: route.name.clone(),
                            id: id.clone(),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    fn check_ids(&self) -> Result<(), PlanError> {
        for (name, &[min, max]) in &self.ids {
            if min > max {
                return Err(PlanError::IdRange {
                    name: name.clone(),
                    min,
                    max,
                });
            }
            if max > MAX_ID {
                return Err(PlanError::IdTooLarge {
                    name: name.clone(),
                    max,
                });
            }
        }
        Ok(())
    }

    fn check_schedule(&self) -> Result<(), PlanError> {
        let schedule = &self.schedule;
        non_negative(|| "schedule.start_rate".into(), schedule.start_rate)?;
        if schedule.stages.is_empty() {
            return Err(PlanError::NoStages);
        }
        for (i, stage) in schedule.stages.iter().enumerate() {
            non_negative(
                || format!("schedule.stages[{i}].duration_s"),
                stage.duration_s,
            )?;
            non_negative(|| format!("schedule.stages[{i}].target"), stage.target)?;
        }
        Ok(())
    }
}
