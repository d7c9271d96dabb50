//! Command line and environment, accepting toxiproxy-server's flag style.

use std::path::PathBuf;

use thiserror::Error;

/// Usage text for `--help`.
pub const USAGE: &str = "\
fault-proxy: a lean TCP fault proxy speaking Toxiproxy's HTTP API

Usage: fault-proxy [-host HOST] [-port PORT] [-config FILE] [-threads N] [-seed N]

Flags take one or two dashes, and `-flag value` or `-flag=value`:
  -host HOST     API listen host (env FAULT_PROXY_HOST; default 127.0.0.1)
  -port PORT     API listen port (env FAULT_PROXY_PORT; default 8474)
  -config FILE   JSON array of proxies to create at start, as POST /populate
                 takes (env FAULT_PROXY_CONFIG)
  -threads N     worker threads; 1 runs everything on one thread, the
                 leanest; 0 means one per CPU (env FAULT_PROXY_THREADS; default 1)
  -seed N        seed for toxicity and jitter randomness
  -help          this text
  -version       print the version
";

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    /// Run the proxy server.
    Run(Options),
    /// Print usage.
    Help,
    /// Print the version.
    Version,
}

/// Server settings.
#[derive(Debug, PartialEq, Eq)]
pub struct Options {
    /// API listen host.
    pub host: String,
    /// API listen port.
    pub port: u16,
    /// Proxies to populate at start.
    pub config: Option<PathBuf>,
    /// Runtime worker threads (1 = single-threaded, 0 = one per CPU).
    pub threads: usize,
    /// Random seed.
    pub seed: Option<u64>,
}

/// A command line the proxy cannot use.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum CliError {
    /// A flag nobody knows.
    #[error("unknown flag {0} (see -help)")]
    UnknownFlag(String),
    /// A flag without its value.
    #[error("flag {0} needs a value")]
    MissingValue(String),
    /// A value of the wrong form.
    #[error("invalid value {value:?} for {flag}: expected {expected}")]
    BadValue {
        /// The flag or environment variable.
        flag: String,
        /// What was given.
        value: String,
        /// What would be accepted.
        expected: &'static str,
    },
}

fn number<T: std::str::FromStr>(
    flag: &str,
    value: &str,
    expected: &'static str,
) -> Result<T, CliError> {
    value.trim().parse().map_err(|_| CliError::BadValue {
        flag: flag.to_string(),
        value: value.to_string(),
        expected,
    })
}

/// Parses arguments (without the program name); `env` reads variables,
/// which flags override.
pub fn parse<I, E>(args: I, env: E) -> Result<Command, CliError>
where
    I: IntoIterator<Item = String>,
    E: Fn(&str) -> Option<String>,
{
    let mut opts = Options {
        host: env("FAULT_PROXY_HOST").unwrap_or_else(|| "127.0.0.1".into()),
        port: 8474,
        config: env("FAULT_PROXY_CONFIG")
            .filter(|c| !c.is_empty())
            .map(PathBuf::from),
        threads: 1,
        seed: None,
    };
    if let Some(p) = env("FAULT_PROXY_PORT") {
        opts.port = number("FAULT_PROXY_PORT", &p, "a port number")?;
    }
    if let Some(t) = env("FAULT_PROXY_THREADS") {
        opts.threads = number("FAULT_PROXY_THREADS", &t, "a thread count")?;
    }
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let Some(flag) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
            return Err(CliError::UnknownFlag(arg));
        };
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (flag, None),
        };
        match name {
            "h" | "help" => return Ok(Command::Help),
            "version" => return Ok(Command::Version),
            "host" | "port" | "config" | "threads" | "seed" => {}
            _ => return Err(CliError::UnknownFlag(arg)),
        }
        let value = match inline.or_else(|| args.next()) {
            Some(v) => v,
            None => return Err(CliError::MissingValue(arg)),
        };
        match name {
            "host" => opts.host = value,
            "port" => opts.port = number(&arg, &value, "a port number")?,
            "config" => opts.config = Some(PathBuf::from(value)),
            "threads" => opts.threads = number(&arg, &value, "a thread count")?,
            _ => opts.seed = Some(number(&arg, &value, "an integer")?),
        }
    }
    Ok(Command::Run(opts))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str], env: &[(&str, &str)]) -> Result<Command, CliError> {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        parse(args.iter().map(|s| s.to_string()), |k| {
            env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn defaults() {
        let Ok(Command::Run(o)) = run(&[], &[]) else {
            panic!("no run")
        };
        assert_eq!((o.host.as_str(), o.port, o.threads), ("127.0.0.1", 8474, 1));
    }

    #[test]
    fn go_and_gnu_styles_and_env() {
        let Ok(Command::Run(o)) = run(
            &["-host", "0.0.0.0", "--port=9000", "-config=/x.json"],
            &[("FAULT_PROXY_PORT", "1"), ("FAULT_PROXY_THREADS", "2")],
        ) else {
            panic!("no run")
        };
        assert_eq!(o.host, "0.0.0.0");
        assert_eq!(o.port, 9000);
        assert_eq!(o.threads, 2);
        assert_eq!(o.config, Some(PathBuf::from("/x.json")));
    }

    #[test]
    fn errors() {
        assert!(matches!(
            run(&["-bogus"], &[]),
            Err(CliError::UnknownFlag(_))
        ));
        assert!(matches!(
            run(&["-port"], &[]),
            Err(CliError::MissingValue(_))
        ));
        assert!(matches!(
            run(&["-port", "x"], &[]),
            Err(CliError::BadValue { .. })
        ));
        assert_eq!(run(&["--help"], &[]), Ok(Command::Help));
    }
}
