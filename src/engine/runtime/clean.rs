//! Removing what feedbench left on an engine (`clean`: of one instance, one study, or all),
//! and finding which study instances left something there (`instances`).

use std::collections::{BTreeMap, HashMap};

use bollard::container::ListContainersOptions;
use bollard::models::{ContainerSummary, Network};
use bollard::network::ListNetworksOptions;
use bollard::volume::{ListVolumesOptions, RemoveVolumeOptions};

use super::{status, Removed, Runtime, RuntimeError, CLEAN_PASSES, CLEAN_PAUSE};
use crate::spec::topology::{Instance, LABEL_INSTANCE, LABEL_STUDY};

/// What a cleanup removes: everything carrying feedbench's study label, narrowed to one
/// study, one instance, or both. Each set field is a label the engine filters on (the
/// engine ANDs them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    pub study: Option<String>,
    pub instance: Option<Instance>,
}

impl Scope {
    pub fn all() -> Scope {
        Scope::default()
    }

    pub fn study(study: &str) -> Scope {
        Scope {
            study: Some(study.to_string()),
            instance: None,
        }
    }

    pub fn instance(instance: &Instance) -> Scope {
        Scope {
            study: None,
            instance: Some(instance.clone()),
        }
    }

    fn filters(&self) -> HashMap<String, Vec<String>> {
        let mut labels = vec![match &self.study {
            Some(s) => format!("{LABEL_STUDY}={s}"),
            None => LABEL_STUDY.to_string(),
        }];
        if let Some(i) = &self.instance {
            labels.push(format!("{LABEL_INSTANCE}={i}"));
        }
        [("label".to_string(), labels)].into()
    }
}

/// A study instance found on an engine: its study, its id (`None` for what a feedbench made
/// before studies had instances), and how many containers and networks carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub study: String,
    pub instance: Option<Instance>,
    pub containers: usize,
    pub networks: usize,
}

impl Runtime {
    /// Every study instance that has a container or a network on this engine, by study and id.
    pub async fn instances(&self) -> Result<Vec<Found>, RuntimeError> {
        let scope = Scope::all();
        let containers = self.containers_in(&scope).await?;
        let networks = self.networks_in(&scope).await?;
        let mut found: BTreeMap<(String, Option<Instance>), (usize, usize)> = BTreeMap::new();
        let key = |labels: Option<&HashMap<String, String>>| {
            let labels = labels?;
            let study = labels.get(LABEL_STUDY)?.clone();
            // A label no feedbench wrote (not an id) is read as no instance.
            let instance = labels
                .get(LABEL_INSTANCE)
                .and_then(|i| Instance::parse(i).ok());
            Some((study, instance))
        };
        for c in &containers {
            if let Some(k) = key(c.labels.as_ref()) {
                found.entry(k).or_default().0 += 1;
            }
        }
        for n in &networks {
            if let Some(k) = key(n.labels.as_ref()) {
                found.entry(k).or_default().1 += 1;
            }
        }
        Ok(found
            .into_iter()
            .map(|((study, instance), (containers, networks))| Found {
                study,
                instance,
                containers,
                networks,
            })
            .collect())
    }

    /// Removes every container, network and volume carrying feedbench's study label within
    /// `scope`, whether or not feedbench is still running for it. A feedbench that
    /// was killed may have left requests in flight that the engine completes after a first
    /// pass (a container created, or still being removed, after the pass listed them, which
    /// holds a volume: the engine answers 409 "volume is in use"), so passes repeat until one
    /// finds nothing and no volume is held (for at most about ten seconds); a volume still
    /// held after the last pass is the error.
    pub async fn clean(&self, scope: &Scope) -> Result<Removed, RuntimeError> {
        // What this feedbench asked for and was dropped before the answer is made first.
        self.inflight.settled().await;
        let mut all = Removed::default();
        let mut held = Vec::new();
        for _ in 0..CLEAN_PASSES {
            let (pass, still_held) = self.clean_once(scope).await?;
            let done = pass == Removed::default() && still_held.is_empty();
            all.containers.extend(pass.containers);
            all.networks.extend(pass.networks);
            all.volumes.extend(pass.volumes);
            held = still_held;
            if done {
                break;
            }
            tokio::time::sleep(CLEAN_PAUSE).await;
        }
        if let Some(first) = held.into_iter().next() {
            return Err(first);
        }
        all.containers.sort();
        all.containers.dedup();
        Ok(all)
    }

    /// Every container, running or not, within `scope`.
    async fn containers_in(&self, scope: &Scope) -> Result<Vec<ContainerSummary>, RuntimeError> {
        self.docker
            .list_containers(Some(ListContainersOptions {
                all: true,
                filters: scope.filters(),
                ..Default::default()
            }))
            .await
            .map_err(RuntimeError::List)
    }

    /// Every network within `scope`.
    async fn networks_in(&self, scope: &Scope) -> Result<Vec<Network>, RuntimeError> {
        self.docker
            .list_networks(Some(ListNetworksOptions {
                filters: scope.filters(),
            }))
            .await
            .map_err(RuntimeError::List)
    }

    /// One pass of `clean`: what it removed, and the volumes a container still held (409).
    async fn clean_once(
        &self,
        scope: &Scope,
    ) -> Result<(Removed, Vec<RuntimeError>), RuntimeError> {
        let mut removed = Removed::default();
        let containers = self.containers_in(scope).await?;
        let names: Vec<String> = containers
            .iter()
            .filter_map(|c| {
                c.names
                    .as_ref()?
                    .first()
                    .map(|n| n.trim_start_matches('/').to_string())
            })
            .collect();
        let results =
            futures_util::future::join_all(names.iter().map(|n| self.remove_container(n))).await;
        for (n, r) in names.into_iter().zip(results) {
            r?;
            removed.containers.push(n);
        }
        let networks = self.networks_in(scope).await?;
        for n in networks.into_iter().filter_map(|n| n.name) {
            self.remove_network(&n).await?;
            removed.networks.push(n);
        }
        let volumes = self
            .docker
            .list_volumes(Some(ListVolumesOptions {
                filters: scope.filters(),
            }))
            .await
            .map_err(RuntimeError::List)?;
        let mut held = Vec::new();
        for v in volumes.volumes.unwrap_or_default() {
            match self
                .docker
                .remove_volume(&v.name, Some(RemoveVolumeOptions { force: true }))
                .await
            {
                Ok(()) => removed.volumes.push(v.name),
                Err(e) if status(&e) == Some(404) => {}
                Err(source) if status(&source) == Some(409) => {
                    held.push(RuntimeError::RemoveVolume {
                        name: v.name,
                        source,
                    })
                }
                Err(source) => {
                    return Err(RuntimeError::RemoveVolume {
                        name: v.name,
                        source,
                    })
                }
            }
        }
        removed.containers.sort();
        Ok((removed, held))
    }
}
