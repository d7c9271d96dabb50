//! Named volumes (a database's seeded template and each run's copy of it), an image's
//! environment, and one-off containers that run a command to its end.

use std::collections::HashMap;
use std::time::Duration;

use bollard::container::{Config, CreateContainerOptions};
use bollard::models::HostConfig;
use bollard::volume::{CreateVolumeOptions, RemoveVolumeOptions};

use super::{binds, status, Runtime, RuntimeError};

impl Runtime {
    /// Creates a volume with these labels; one that exists already is kept as it is.
    pub async fn create_volume(
        &self,
        name: &str,
        labels: &HashMap<String, String>,
    ) -> Result<(), RuntimeError> {
        let options = CreateVolumeOptions {
            name: name.to_string(),
            labels: labels.clone(),
            ..Default::default()
        };
        let docker = self.docker.clone();
        let request = async move { docker.create_volume(options).await };
        self.inflight
            .answered(request)
            .await
            .map(|_| ())
            .map_err(|source| RuntimeError::CreateVolume {
                name: name.into(),
                source,
            })
    }

    /// A volume's labels, or `None` when there is no such volume.
    pub async fn volume_labels(
        &self,
        name: &str,
    ) -> Result<Option<HashMap<String, String>>, RuntimeError> {
        match self.docker.inspect_volume(name).await {
            Ok(v) => Ok(Some(v.labels)),
            Err(e) if status(&e) == Some(404) => Ok(None),
            Err(source) => Err(RuntimeError::InspectVolume {
                name: name.into(),
                source,
            }),
        }
    }

    /// Removes a volume; absent is fine.
    pub async fn remove_volume(&self, name: &str) -> Result<(), RuntimeError> {
        match self
            .docker
            .remove_volume(name, Some(RemoveVolumeOptions { force: true }))
            .await
        {
            Ok(()) => Ok(()),
            Err(e) if status(&e) == Some(404) => Ok(()),
            Err(source) => Err(RuntimeError::RemoveVolume {
                name: name.into(),
                source,
            }),
        }
    }

    /// An image's engine ID (`sha256:…`) and the environment it sets (`KEY=value`), from
    /// one inspection; `None` when the engine has no such image.
    pub async fn image_id_and_env(
        &self,
        image: &str,
    ) -> Result<Option<(String, Vec<String>)>, RuntimeError> {
        match self.docker.inspect_image(image).await {
            Ok(i) => {
                Ok(i.id.map(|id| (id, i.config.and_then(|c| c.env).unwrap_or_default())))
            }
            Err(e) if status(&e) == Some(404) => Ok(None),
            Err(source) => Err(RuntimeError::InspectImage {
                image: image.into(),
                source,
            }),
        }
    }

    /// Runs `argv` in a fresh container of `image`, with no network and these mounts, to
    /// its end (within `timeout`); removes it after. Its exit code and its output.
    pub async fn run_once(
        &self,
        name: &str,
        image: &str,
        argv: &[String],
        mounts: Vec<crate::spec::topology::Mount>,
        labels: &std::collections::BTreeMap<String, String>,
        timeout: Duration,
    ) -> Result<(i64, String), RuntimeError> {
        self.remove_container(name).await?;
        let config = Config {
            image: Some(image.to_string()),
            // The image's entrypoint is skipped: the command is the whole of what runs.
            entrypoint: Some(argv.to_vec()),
            cmd: Some(Vec::new()),
            labels: Some(labels.clone().into_iter().collect()),
            host_config: Some(HostConfig {
                network_mode: Some("none".to_string()),
                binds: binds(&mounts),
                ..Default::default()
            }),
            ..Default::default()
        };
        let options = CreateContainerOptions {
            name: name.to_string(),
            platform: None,
        };
        self.create_container(options, config)
            .await
            .map_err(|source| RuntimeError::CreateContainer {
                name: name.into(),
                image: image.into(),
                source: Box::new(source),
            })?;
        let result = async {
            self.start(name).await?;
            let code = self.wait_exit(name, timeout).await?.unwrap_or(-1);
            let out = self.output(name).await.unwrap_or_default();
            Ok((code, out))
        }
        .await;
        let removed = self.remove_container(name).await;
        let out = result?;
        removed?;
        Ok(out)
    }
}
