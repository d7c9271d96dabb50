//! The thin reader: containers.csv, requests.csv and events.csv parsed into what the checks
//! need (columns by header name, as docs/results.md documents them). host.csv has one reader,
//! `rundir::host::read`, which names a damaged row's line and field.

use std::path::Path;

use serde::Deserialize;

use super::error::ValidityError;
use super::samples::Sample;
use super::window::EventRow;
use crate::rundir::samples::SampleStatus;

fn reader(path: &Path) -> Result<csv::Reader<std::fs::File>, ValidityError> {
    let file = std::fs::File::open(path).map_err(|source| ValidityError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(csv::Reader::from_reader(file))
}

/// Every row of `path`, deserialised by header name (other columns are ignored).
fn rows<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>, ValidityError> {
    reader(path)?
        .into_deserialize()
        .map(|r| {
            r.map_err(|source| ValidityError::Csv {
                path: path.to_path_buf(),
                source,
            })
        })
        .collect()
}

#[derive(Deserialize)]
struct ContainerLine {
    unix_ns: u64,
    offset_s: f64,
    container: String,
    role: String,
    status: String,
    cpu_usage_s: Option<f64>,
    cpu_periods: Option<u64>,
    cpu_throttled_periods: Option<u64>,
    oom_kills: Option<u64>,
    detail: String,
}

/// containers.csv: one sample per container per second.
pub fn read_samples(path: &Path) -> Result<Vec<Sample>, ValidityError> {
    Ok(rows::<ContainerLine>(path)?
        .into_iter()
        .map(|l| Sample {
            unix_ns: i128::from(l.unix_ns),
            offset_s: l.offset_s,
            container: l.container,
            role: l.role,
            status: match l.status.as_str() {
                "ok" => SampleStatus::Ok,
                "down" => SampleStatus::Down,
                _ => SampleStatus::Error,
            },
            cpu_usage_s: l.cpu_usage_s,
            cpu_periods: l.cpu_periods,
            cpu_throttled_periods: l.cpu_throttled_periods,
            oom_kills: l.oom_kills,
            detail: l.detail,
        })
        .collect())
}

#[derive(Deserialize)]
struct RequestLine {
    start_ns: u64,
}

/// requests.csv's `start_ns` column, in file order.
pub fn read_request_starts(path: &Path) -> Result<Vec<i128>, ValidityError> {
    Ok(rows::<RequestLine>(path)?
        .into_iter()
        .map(|l| i128::from(l.start_ns))
        .collect())
}

#[derive(Deserialize)]
struct EventLine {
    wall_ns: i64,
    event: String,
}

/// events.csv's time and kind of each event.
pub fn read_events(path: &Path) -> Result<Vec<EventRow>, ValidityError> {
    Ok(rows::<EventLine>(path)?
        .into_iter()
        .map(|l| EventRow {
            wall_ns: i128::from(l.wall_ns),
            event: l.event,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rundir::samples::{ContainerRow, Counters, CONTAINERS_HEADER};

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn reads_containers_csv_as_the_monitors_write_it() {
        let dir = tempfile::tempdir().unwrap();
        let ok = ContainerRow {
            unix_ns: 1_700_000_001_000_000_000,
            offset_s: 1.0005,
            tick: 1,
            container: "fb-s-r-balancer".into(),
            role: "balancer".into(),
            source: "cgroup",
            status: SampleStatus::Ok,
            counters: Counters {
                cpu_usage_ns: Some(1_500_000_001),
                cpu_periods: Some(40),
                cpu_throttled_periods: Some(3),
                oom_kills: Some(0),
                ..Default::default()
            },
            detail: String::new(),
        };
        let down = ContainerRow {
            status: SampleStatus::Down,
            counters: Counters::default(),
            detail: "status exited, exit code 137, killed out of memory".into(),
            ..ok.clone()
        };
        let mut text = format!("{CONTAINERS_HEADER}\n");
        ok.write_csv(&mut text);
        down.write_csv(&mut text);
        let samples = read_samples(&write(dir.path(), "containers.csv", &text)).unwrap();
        assert_eq!(samples.len(), 2);
        let s = &samples[0];
        assert_eq!(s.unix_ns, 1_700_000_001_000_000_000);
        assert_eq!(
            (s.container.as_str(), s.role.as_str()),
            ("fb-s-r-balancer", "balancer")
        );
        assert_eq!(s.status, SampleStatus::Ok);
        assert_eq!(s.cpu_usage_s, Some(1.500000001));
        assert_eq!(
            (s.cpu_periods, s.cpu_throttled_periods),
            (Some(40), Some(3))
        );
        assert_eq!(s.oom_kills, Some(0));
        let d = &samples[1];
        assert_eq!(
            (d.status, d.cpu_usage_s, d.oom_kills),
            (SampleStatus::Down, None, None)
        );
        assert!(d.detail.contains("killed out of memory"));
    }

    #[test]
    fn reads_request_starts_and_events() {
        let dir = tempfile::tempdir().unwrap();
        let requests = write(
            dir.path(),
            "requests.csv",
            "start_ns,end_ns,route,method,status,duration_ms,error\n\
             100,200,read,GET,200,0.1,\n\
             150,900,write,POST,0,0,\"1212 dial: refused, twice\"\n",
        );
        assert_eq!(read_request_starts(&requests).unwrap(), vec![100, 150]);
        let events = write(
            dir.path(),
            "events.csv",
            "wall_ns,t_s,event,subject,detail\n\
             10,0.000000,phase,deploy,\n\
             20,1.000000,fault-applied,db-latency,\"add-toxic latency, proxy\"\n",
        );
        let ev = read_events(&events).unwrap();
        assert_eq!(
            ev,
            vec![
                EventRow {
                    wall_ns: 10,
                    event: "phase".into()
                },
                EventRow {
                    wall_ns: 20,
                    event: "fault-applied".into()
                },
            ]
        );
    }

    #[test]
    fn a_missing_or_malformed_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_events(&dir.path().join("events.csv")).unwrap_err();
        assert!(matches!(e, ValidityError::Open { .. }), "{e}");
        let bad = write(dir.path(), "requests.csv", "start_ns,end_ns\nsoon,200\n");
        let e = read_request_starts(&bad).unwrap_err();
        assert!(matches!(e, ValidityError::Csv { .. }), "{e}");
        let no_column = write(dir.path(), "r2.csv", "end_ns\n200\n");
        assert!(read_request_starts(&no_column).is_err());
    }
}
