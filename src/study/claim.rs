//! A study instance's claim on the engines its runs use: one study per engine at a time,
//! unless the person asks to share (`--share-engine`), so that two studies' runs never
//! compete for one host's CPU unseen.
//!
//! The claims of every engine live in a registry on this host, a directory per engine id
//! under the temporary directory: `<instance>.claim`, `flock`ed by the feedbench running that
//! instance for as long as it runs (the kernel lets go when the process ends, also when it
//! is killed) and holding who it is (`Holder`), and `.start`, `flock`ed while one feedbench
//! looks at the others and adds its own, so that of two started at once exactly one sees
//! the other. A lock file no process holds is a stale claim and is removed. What an
//! instance without a live claim left on an engine is named with the `clean` command that
//! removes it. Clients of one engine on other hosts do not share the registry: their
//! instances are seen on the engine, never as live.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Session, StudyError, StudyEvent, TestbedError};
use crate::engine::placement::Placement;
use crate::engine::runtime::{Runtime, RuntimeError};
use crate::spec::topology::Instance;

/// The registry's directory under the temporary directory.
const REGISTRY: &str = "feedbench-engines";
/// The lock held while a claim is made.
const START: &str = ".start";
/// The claim file of one instance: `<instance>.claim`.
const LOCK_SUFFIX: &str = ".claim";
pub const FORMAT_VERSION: u32 = 1;

/// Who holds a claim: written into its lock file, read by the feedbench it refuses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Holder {
    pub format_version: u32,
    pub study: String,
    pub instance: Instance,
    pub pid: u32,
    /// The study's directory.
    pub results: String,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "study `{}` (instance {}, feedbench pid {}, results `{}`)",
            self.study, self.instance, self.pid, self.results
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error("engine `{engine}` is in use by {holder}: feedbench runs one study per engine at a time, so that two studies' runs do not compete for its CPU and memory unseen. Wait for it to finish, or pass --share-engine to run beside it anyway")]
    InUse { engine: String, holder: Holder },
    #[error("cannot claim engine `{engine}` in `{}`: {source}", .path.display())]
    Io {
        engine: String,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The claims this feedbench holds; dropping it lets them go.
#[derive(Debug)]
pub struct Claim {
    held: Vec<(PathBuf, File)>,
    /// Other live instances on the claimed engines (only when sharing), by engine name.
    pub beside: Vec<(String, Holder)>,
    /// Each claimed engine's name and directory in the registry.
    engines: Vec<(String, PathBuf)>,
    mine: Instance,
    /// The (engine, instance) pairs `undeclared` has returned.
    declared: BTreeSet<(String, Instance)>,
}

impl Claim {
    /// The other live studies on the claimed engines not returned before: at the first call
    /// those found at the claim, later those that came since (with `--share-engine`). Each is
    /// returned once, for the study to declare.
    pub fn undeclared(&mut self) -> std::io::Result<Vec<(String, Holder)>> {
        // Marked declared only once every engine was read: an error returns none of them,
        // to be found again at the next call.
        let mut out: Vec<((String, Instance), Holder)> = Vec::new();
        for (name, dir) in &self.engines {
            for holder in live_now(dir, &self.mine)? {
                let key = (name.clone(), holder.instance.clone());
                if !self.declared.contains(&key) && !out.iter().any(|(k, _)| *k == key) {
                    out.push((key, holder));
                }
            }
        }
        Ok(out
            .into_iter()
            .map(|(key, holder)| {
                let engine = key.0.clone();
                self.declared.insert(key);
                (engine, holder)
            })
            .collect())
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        // Removed while still held, so that nobody takes a file that is going away for live.
        for (path, _) in &self.held {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A fresh instance id from the kernel's random source.
pub fn fresh_instance() -> std::io::Result<Instance> {
    let mut bytes = [0u8; 4];
    File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(Instance::from_bytes(bytes))
}

/// The registry on this host.
fn registry() -> PathBuf {
    std::env::temp_dir().join(REGISTRY)
}

/// Claims each engine (`(name, id)`) in `registry` for `me`: refused when another live
/// instance holds one, unless `share`.
pub fn claim(
    registry: &Path,
    engines: &[(String, String)],
    me: &Holder,
    share: bool,
) -> Result<Claim, ClaimError> {
    let mut claim = Claim {
        held: Vec::new(),
        beside: Vec::new(),
        engines: Vec::new(),
        mine: me.instance.clone(),
        declared: BTreeSet::new(),
    };
    for (name, id) in engines {
        let dir = registry.join(file_name(id));
        // One engine reached at two addresses is claimed once.
        if claim
            .held
            .iter()
            .any(|(p, _)| p.parent() == Some(dir.as_path()))
        {
            continue;
        }
        let io = |path: &Path| {
            let (engine, path) = (name.clone(), path.to_path_buf());
            move |source| ClaimError::Io {
                engine,
                path,
                source,
            }
        };
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let start = dir.join(START);
        let _starting = crate::lock::flock(&start, true).map_err(io(&start))?;
        let others = live_claims(&dir, &me.instance).map_err(io(&dir))?;
        if let (false, Some(other)) = (share, others.first()) {
            return Err(ClaimError::InUse {
                engine: name.clone(),
                holder: other.clone(),
            });
        }
        let path = dir.join(format!("{}{LOCK_SUFFIX}", me.instance));
        let file = hold(&path, me).map_err(io(&path))?;
        claim.held.push((path, file));
        claim.engines.push((name.clone(), dir.clone()));
        claim
            .beside
            .extend(others.into_iter().map(|h| (name.clone(), h)));
    }
    Ok(claim)
}

/// The live claims of an engine's directory but `mine`, read while `.start` is held: a
/// claim being made is never taken for a stale one.
fn live_now(dir: &Path, mine: &Instance) -> std::io::Result<Vec<Holder>> {
    let _starting = crate::lock::flock(&dir.join(START), true)?;
    live_claims(dir, mine)
}

/// Takes `path`'s lock for `me` and writes who holds it.
fn hold(path: &Path, me: &Holder) -> std::io::Result<File> {
    let mut file = crate::lock::flock(path, false)?;
    file.set_len(0)?;
    file.rewind()?;
    let json = serde_json::to_vec(me).map_err(std::io::Error::other)?;
    file.write_all(&json)?;
    file.sync_all()?;
    Ok(file)
}

/// Every live claim in an engine's directory but `mine`; a lock file nobody holds is a
/// stale claim, removed. A live claim whose holder cannot be read is still live: it is named
/// by its file.
fn live_claims(dir: &Path, mine: &Instance) -> std::io::Result<Vec<Holder>> {
    let mut live = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(LOCK_SUFFIX) else {
            continue;
        };
        if name.starts_with('.') || id == mine.as_str() {
            continue;
        }
        let path = dir.join(&name);
        match crate::lock::flock(&path, false) {
            Ok(_free) => {
                let _ = std::fs::remove_file(&path);
            }
            Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => {
                live.push(read_holder(&path, id));
            }
            Err(e) => return Err(e),
        }
    }
    live.sort_by(|a, b| a.instance.cmp(&b.instance));
    Ok(live)
}

/// The holder a live lock file names; what cannot be read is said so, with the file's path.
fn read_holder(path: &Path, id: &str) -> Holder {
    let text = std::fs::read(path).unwrap_or_default();
    feedbench_core::files::parse_versioned(&text, FORMAT_VERSION).unwrap_or_else(|why| Holder {
        format_version: FORMAT_VERSION,
        study: format!("(unreadable: {why})"),
        instance: Instance::parse(id).unwrap_or_else(|_| Instance::from_bytes([0; 4])),
        pid: 0,
        results: path.display().to_string(),
    })
}

/// An engine id as a directory name: what is not a letter, digit or `-` becomes `_`.
fn file_name(id: &str) -> String {
    if id.is_empty() {
        return "unnamed-engine".into();
    }
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Claims every engine of `placements` for the study `session` holds, before anything is
/// deployed, and keeps the claim in the session (which declares the other studies beside
/// it, `Session::declare_neighbours`) until it ends; what stale instances left is warned
/// of, each with the command that removes it.
pub async fn claim_engines(
    session: &mut Session<'_>,
    placements: &[Placement],
    share: bool,
) -> Result<(), StudyError> {
    let engines = engines_of(placements).await.map_err(TestbedError::from)?;
    let me = Holder {
        format_version: FORMAT_VERSION,
        study: session.study.clone(),
        instance: session.instance.clone(),
        pid: std::process::id(),
        // Absolute: the person refused works in another clone, another directory.
        results: std::path::absolute(&session.dir)
            .unwrap_or_else(|_| session.dir.clone())
            .display()
            .to_string(),
    };
    let ids: Vec<(String, String)> = engines
        .iter()
        .map(|e| (e.name.to_string(), e.id.clone()))
        .collect();
    session.claim = Some(claim(&registry(), &ids, &me, share)?);
    let stale = stale(&engines, &session.instance)
        .await
        .map_err(TestbedError::from)?;
    for line in stale {
        session.report(StudyEvent::Warning(&line));
    }
    Ok(())
}

/// An engine of the study's placements: its name in the plan, its id as the engine states
/// it, and the runtime that reaches it.
struct Engine<'a> {
    name: &'a str,
    id: String,
    rt: &'a Runtime,
}

/// Each engine of `placements`, with its id.
async fn engines_of(placements: &[Placement]) -> Result<Vec<Engine<'_>>, RuntimeError> {
    let mut out = Vec::new();
    for p in placements {
        for (name, rt) in p.engines() {
            let id = rt.facts().await?.id;
            out.push(Engine { name, id, rt });
        }
    }
    Ok(out)
}

/// What instances without a live claim left on `engines`, each named with the command that
/// removes it: the lines of a warning. The live claims are read after the engine is listed,
/// so that an instance that claimed and deployed meanwhile is seen live.
async fn stale(engines: &[Engine<'_>], mine: &Instance) -> Result<Vec<String>, RuntimeError> {
    let mut out = Vec::new();
    for Engine { name, id, rt } in engines {
        let found = rt.instances().await?;
        // Unreadable, the registry names nothing live: every other instance is named.
        let live: Vec<Instance> = live_now(&registry().join(file_name(id)), mine)
            .unwrap_or_default()
            .into_iter()
            .map(|h| h.instance)
            .collect();
        for f in found {
            let how = match &f.instance {
                Some(i) if i == mine || live.contains(i) => continue,
                Some(i) => format!("feedbench clean --instance {i}"),
                None => format!("feedbench clean --study {}", f.study),
            };
            let which = f
                .instance
                .as_ref()
                .map_or("made before instances".to_string(), |i| {
                    format!("instance {i}")
                });
            out.push(format!(
                "engine `{name}` holds {} container(s) and {} network(s) of study `{}` ({which}) that no feedbench on this host is running: remove them with `{how}`",
                f.containers, f.networks, f.study
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(n: u8) -> Holder {
        Holder {
            format_version: FORMAT_VERSION,
            study: "smoke".into(),
            instance: Instance::from_bytes([n, n, n, n]),
            pid: u32::from(n),
            results: format!("/clone-{n}/results/smoke"),
        }
    }

    fn engines() -> Vec<(String, String)> {
        vec![("local".into(), "ABCD:1234".into())]
    }

    #[test]
    fn a_second_study_on_a_claimed_engine_is_refused_naming_the_first() {
        let reg = tempfile::tempdir().unwrap();
        let first = claim(reg.path(), &engines(), &holder(1), false).unwrap();
        let e = claim(reg.path(), &engines(), &holder(2), false).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("engine `local` is in use by study `smoke` (instance 01010101, feedbench pid 1, results `/clone-1/results/smoke`)"), "{text}");
        assert!(text.contains("--share-engine"), "{text}");
        // Refused before it wrote a claim of its own.
        assert!(!reg.path().join("ABCD_1234/02020202.claim").exists());
        drop(first);
        assert!(!reg.path().join("ABCD_1234/01010101.claim").exists());
        let third = claim(reg.path(), &engines(), &holder(3), false).unwrap();
        assert!(third.beside.is_empty());
    }

    #[test]
    fn sharing_runs_beside_the_live_and_a_lock_nobody_holds_is_stale() {
        let reg = tempfile::tempdir().unwrap();
        let first = claim(reg.path(), &engines(), &holder(1), false).unwrap();
        let shared = claim(reg.path(), &engines(), &holder(2), true).unwrap();
        assert_eq!(shared.beside, vec![("local".to_string(), holder(1))]);
        // A claim left by a killed feedbench: its file, held by nobody.
        let dir = reg.path().join("ABCD_1234");
        std::fs::write(dir.join("09090909.claim"), b"{}").unwrap();
        drop(first);
        drop(shared);
        let next = claim(reg.path(), &engines(), &holder(4), false).unwrap();
        assert!(next.beside.is_empty());
        assert!(!dir.join("09090909.claim").exists());
    }

    /// The first study learns of one that came later with --share-engine, once; the later
    /// one of the first at its claim; one that left is not named again.
    #[test]
    fn each_study_beside_another_is_returned_once_to_each_of_them() {
        let reg = tempfile::tempdir().unwrap();
        let mut first = claim(reg.path(), &engines(), &holder(1), false).unwrap();
        assert!(first.undeclared().unwrap().is_empty());
        let mut later = claim(reg.path(), &engines(), &holder(2), true).unwrap();
        assert_eq!(later.beside, vec![("local".to_string(), holder(1))]);
        assert_eq!(
            later.undeclared().unwrap(),
            vec![("local".to_string(), holder(1))]
        );
        assert!(later.undeclared().unwrap().is_empty());
        assert_eq!(
            first.undeclared().unwrap(),
            vec![("local".to_string(), holder(2))]
        );
        assert!(first.undeclared().unwrap().is_empty());
        drop(later);
        assert!(first.undeclared().unwrap().is_empty());
    }

    #[test]
    fn a_live_claim_whose_holder_cannot_be_read_is_still_live() {
        let reg = tempfile::tempdir().unwrap();
        let dir = reg.path().join("ABCD_1234");
        std::fs::create_dir_all(&dir).unwrap();
        let _held = crate::lock::flock(&dir.join("0a0b0c0d.claim"), false).unwrap();
        let e = claim(reg.path(), &engines(), &holder(1), false).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("instance 0a0b0c0d"), "{text}");
        assert!(text.contains("unreadable"), "{text}");
    }

    #[test]
    fn one_engine_named_twice_is_claimed_once() {
        let reg = tempfile::tempdir().unwrap();
        let twice = [engines(), engines()].concat();
        let claim = claim(reg.path(), &twice, &holder(1), false).unwrap();
        assert_eq!(claim.held.len(), 1);
    }

    #[test]
    fn fresh_instances_differ() {
        let a = fresh_instance().unwrap();
        let b = fresh_instance().unwrap();
        assert_ne!(a, b);
    }
}
