//! What an engine says of its host beyond `info`: the API version it speaks, its identity
//! (which tells two connections to one engine apart from two engines), and what the API
//! does not give, the host kernel's boot id and its processor: read by a throwaway
//! container (the files are not namespaced, so a container sees its host's).

use bollard::container::{Config, CreateContainerOptions};
use bollard::models::HostConfig;

use feedbench_core::engines::cpu;
use feedbench_core::ledger::manifest::Cpu;

use super::{Runtime, RuntimeError};
use crate::spec::topology::{Instance, LABEL_INSTANCE, LABEL_STUDY};

/// The one file a container reads its host's boot id from.
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

impl Runtime {
    /// The API version the engine speaks, e.g. `1.47`.
    pub async fn api_version(&self) -> Result<String, RuntimeError> {
        let v = self.docker.version().await.map_err(RuntimeError::Info)?;
        Ok(v.api_version.unwrap_or_default())
    }

    /// What tells engines apart: one engine reached twice answers the same, two engines
    /// answer differently. The engine's ID alone does not do (engines of one host may share
    /// the key it derives from), so its data root goes with it: two engines cannot share one.
    pub async fn identity(&self) -> Result<(String, String), RuntimeError> {
        let info = self.docker.info().await.map_err(RuntimeError::Info)?;
        Ok((
            info.id.unwrap_or_default(),
            info.docker_root_dir.unwrap_or_default(),
        ))
    }

    /// The host's boot id, read by a container of `image` (which must have `cat`).
    pub async fn boot_id(&self, image: &str, study: &str) -> Result<String, RuntimeError> {
        let argv = ["cat", BOOT_ID];
        let (code, out) = self
            .read_host("boot-id", image, (study, None), &argv)
            .await?;
        let id = out.trim();
        match code {
            Some(0) if is_uuid(id) => Ok(id.to_string()),
            _ => Err(RuntimeError::BootId {
                image: image.to_string(),
                said: said(code, id),
            }),
        }
    }

    /// The host's processor (`engines::cpu`), read by a container of `image` (which must
    /// have `sh` and `cat`) of the study's `instance`.
    pub async fn cpu(
        &self,
        image: &str,
        study: &str,
        instance: &Instance,
    ) -> Result<Cpu, RuntimeError> {
        let argv = ["sh", "-c", cpu::READ_SCRIPT];
        let (code, out) = self
            .read_host("cpu", image, (study, Some(instance)), &argv)
            .await?;
        let fail = |said: String| RuntimeError::HostCpu {
            image: image.to_string(),
            said,
        };
        match code {
            Some(0) => cpu::parse(&out).map_err(|e| fail(e.to_string())),
            _ => Err(fail(said(code, out.trim()))),
        }
    }

    /// Runs `argv` to its end in a throwaway container of `image` with no network, a tenth of
    /// a core and 16 MiB, labelled for `study` and, once it has one, its `instance` (named by
    /// it, so that two studies' readers never meet, and a reap or `clean --instance` removes
    /// one a killed feedbench left): its exit code (`None`: no exit within 30 s) and output.
    async fn read_host(
        &self,
        what: &str,
        image: &str,
        (study, instance): (&str, Option<&Instance>),
        argv: &[&str],
    ) -> Result<(Option<i64>, String), RuntimeError> {
        let mut labels = vec![(LABEL_STUDY.to_string(), study.to_string())];
        let name = match instance {
            Some(i) => {
                labels.push((LABEL_INSTANCE.to_string(), i.to_string()));
                format!("fb-{study}-{i}-read-{what}")
            }
            None => format!("feedbench-{what}-{}", std::process::id()),
        };
        let config = Config {
            image: Some(image.to_string()),
            entrypoint: Some(argv.iter().map(|a| a.to_string()).collect()),
            cmd: Some(Vec::new()),
            user: Some("65534:65534".to_string()),
            labels: Some(labels.into_iter().collect()),
            host_config: Some(HostConfig {
                network_mode: Some("none".to_string()),
                nano_cpus: Some(100_000_000),
                memory: Some(16 << 20),
                memory_swap: Some(16 << 20),
                ..Default::default()
            }),
            ..Default::default()
        };
        self.remove_container(&name).await?;
        let options = CreateContainerOptions {
            name: name.clone(),
            platform: None,
        };
        self.create_container(options, config)
            .await
            .map_err(|source| RuntimeError::CreateContainer {
                name: name.clone(),
                image: image.to_string(),
                source: Box::new(source),
            })?;
        let read = async {
            self.start(&name).await?;
            let code = self
                .wait_exit(&name, std::time::Duration::from_secs(30))
                .await?;
            Ok::<_, RuntimeError>((code, self.output(&name).await?))
        }
        .await;
        self.remove_container(&name).await?;
        read
    }
}

/// What a reading container said, for an error.
fn said(code: Option<i64>, out: &str) -> String {
    match code {
        None => "no answer within 30 s".to_string(),
        Some(c) => format!(
            "exit code {c}: {}",
            out.chars().take(300).collect::<String>()
        ),
    }
}

/// `8-4-4-4-12` hexadecimal digits, as the kernel writes a boot id.
fn is_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_boot_id_is_a_uuid_and_nothing_else() {
        assert!(super::is_uuid("0b5e7c1a-2f3d-4c5b-9a8e-7d6c5b4a3f21"));
        assert!(!super::is_uuid(""));
        assert!(!super::is_uuid(
            "cat: /proc/sys/kernel/random/boot_id: No such file"
        ));
        assert!(!super::is_uuid("0b5e7c1a-2f3d-4c5b-9a8e-7d6c5b4a3f2"));
    }
}
