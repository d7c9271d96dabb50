//! Configuration from the environment, with the defaults of CONTRACT.md ("Operations").

use std::time::Duration;

use crate::visibility::Clause;

/// Everything the service reads from its environment.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen_port: u16,
    pub database_url: String,
    pub pool_size: usize,
    pub pool_wait: Duration,
    pub request_deadline: Duration,
    pub section_budget: Duration,
    pub connect_timeout: Duration,
    pub cache: bool,
    pub drain_grace: Duration,
    pub mutant: Option<Clause>,
}

impl Config {
    /// Reads the configuration; a malformed value is an error naming the variable.
    pub fn from_env() -> Result<Config, String> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `get`, which maps a variable's name to its value.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, String> {
        let number = |name: &str, default: u64, min: u64| -> Result<u64, String> {
            match get(name).filter(|v| !v.trim().is_empty()) {
                None => Ok(default),
                Some(v) => match v.trim().parse::<u64>() {
                    Ok(n) if n >= min => Ok(n),
                    _ => Err(format!("{name} must be an integer >= {min}, got {v:?}")),
                },
            }
        };
        let millis = |name: &str, default: u64| number(name, default, 0).map(Duration::from_millis);
        let database_url = get("DATABASE_URL")
            .filter(|v| !v.is_empty())
            .ok_or("DATABASE_URL is required")?;
        let cache = match get("CACHE").as_deref().map(str::trim) {
            None | Some("") | Some("off") => false,
            Some("on") => true,
            Some(other) => return Err(format!("CACHE must be on or off, got {other:?}")),
        };
        let mutant = match get("FEED_MUTANT").as_deref().map(str::trim) {
            None | Some("") => None,
            Some(name) => Some(
                Clause::from_mutant(name)
                    .ok_or_else(|| format!("FEED_MUTANT must be c1, c2, c3 or c4, got {name:?}"))?,
            ),
        };
        let listen_port = number("LISTEN_PORT", 8080, 0)?;
        Ok(Config {
            listen_port: u16::try_from(listen_port).map_err(|_| "LISTEN_PORT is out of range")?,
            database_url,
            pool_size: usize::try_from(number("POOL_SIZE", 16, 1)?).unwrap_or(usize::MAX),
            pool_wait: millis("POOL_WAIT_MS", 100)?,
            request_deadline: millis("REQUEST_DEADLINE_MS", 1000)?,
            section_budget: millis("SECTION_BUDGET_MS", 400)?,
            connect_timeout: millis("CONNECT_TIMEOUT_MS", 500)?,
            cache,
            drain_grace: millis("DRAIN_GRACE_MS", 3000)?,
            mutant,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)]) -> Result<Config, String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    #[test]
    fn defaults_follow_the_contract() {
        let c = with(&[("DATABASE_URL", "postgres://u:p@h:5432/d")]).unwrap();
        assert_eq!(c.listen_port, 8080);
        assert_eq!(c.pool_size, 16);
        assert_eq!(c.pool_wait, Duration::from_millis(100));
        assert_eq!(c.request_deadline, Duration::from_millis(1000));
        assert_eq!(c.section_budget, Duration::from_millis(400));
        assert_eq!(c.connect_timeout, Duration::from_millis(500));
        assert_eq!(c.drain_grace, Duration::from_millis(3000));
        assert!(!c.cache);
        assert_eq!(c.mutant, None);
    }

    #[test]
    fn rejects_bad_values() {
        assert!(with(&[]).is_err());
        let url = ("DATABASE_URL", "postgres://h/d");
        assert!(with(&[url, ("POOL_SIZE", "0")]).is_err());
        assert!(with(&[url, ("POOL_WAIT_MS", "-1")]).is_err());
        assert!(with(&[url, ("CACHE", "yes")]).is_err());
        assert!(with(&[url, ("FEED_MUTANT", "c5")]).is_err());
        assert!(with(&[url, ("LISTEN_PORT", "70000")]).is_err());
        let c = with(&[url, ("CACHE", "on"), ("FEED_MUTANT", "c3")]).unwrap();
        assert!(c.cache);
        assert_eq!(c.mutant, Some(Clause::Audience));
    }
}
