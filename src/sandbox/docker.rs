//! The Docker backend: one short-lived, locked-down container per command, through bollard.

use super::{io_err, DockerConfig, Job, SandboxError};
use crate::process::{Exit, Output};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptions, KillContainerOptions, ListContainersOptions, LogsOptions, RemoveContainerOptions,
    WaitContainerOptions,
};
use bollard::container::LogOutput;
use bollard::Docker;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Label on every container we create (to find leftovers).
pub const LABEL: &str = "deepdebug.sandbox";
/// Uid/gid of the image's unprivileged user.
pub const IMAGE_USER: u32 = 1000;
/// Most output kept per stream.
const MAX_LOG: usize = 1 << 20;

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A connection to the engine, with its own small async runtime; usable from many threads.
pub struct DockerSandbox {
    client: Docker,
    runtime: tokio::runtime::Runtime,
    config: DockerConfig,
    /// `uid:gid` the containers run as.
    user: (u32, u32),
    /// Value of [`LABEL`] on this connection's containers.
    token: String,
}

fn docker_err(action: &str) -> impl FnOnce(bollard::errors::Error) -> SandboxError + '_ {
    move |e| SandboxError::Docker { action: action.to_string(), message: e.to_string() }
}

impl DockerSandbox {
    /// Connect (honouring `DOCKER_HOST`), agree on an API version and check the image exists.
    ///
    /// # Errors
    /// [`SandboxError::DockerUnavailable`] or [`SandboxError::ImageMissing`].
    pub fn connect(config: DockerConfig) -> Result<DockerSandbox, SandboxError> {
        let sandbox = DockerSandbox::connect_engine(config)?;
        if !sandbox.image_exists(&sandbox.config.image)? {
            return Err(SandboxError::ImageMissing(sandbox.config.image.clone()));
        }
        Ok(sandbox)
    }

    /// Connect without checking for the image (for `sandbox build`).
    ///
    /// # Errors
    /// [`SandboxError::DockerUnavailable`].
    pub fn connect_engine(config: DockerConfig) -> Result<DockerSandbox, SandboxError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("deepdebug-docker")
            .enable_all()
            .build()
            .map_err(io_err("start the Docker client runtime"))?;
        let unavailable = |e: bollard::errors::Error| SandboxError::DockerUnavailable(e.to_string());
        let client = Docker::connect_with_local_defaults().map_err(unavailable)?;
        let client = runtime.block_on(client.negotiate_version()).map_err(unavailable)?;
        // SAFETY: plain getters.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let user = if uid == 0 { (IMAGE_USER, IMAGE_USER) } else { (uid, gid) };
        let token = format!("{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        Ok(DockerSandbox { client, runtime, config, user, token })
    }

    #[must_use]
    pub fn config(&self) -> &DockerConfig {
        &self.config
    }

    pub(crate) fn client(&self) -> &Docker {
        &self.client
    }

    pub(crate) fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// Whether `image` exists in the engine.
    ///
    /// # Errors
    /// When the engine fails for another reason than a missing image.
    pub fn image_exists(&self, image: &str) -> Result<bool, SandboxError> {
        match self.block_on(self.client.inspect_image(image)) {
            Ok(_) => Ok(true),
            Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => Ok(false),
            Err(e) => Err(docker_err("inspect the image")(e)),
        }
    }

    /// Names of this connection's containers that still exist (running or not).
    ///
    /// # Errors
    /// When the engine cannot list containers.
    pub fn leftover_containers(&self) -> Result<Vec<String>, SandboxError> {
        let options = ListContainersOptions {
            all: true,
            filters: Some(HashMap::from([("label".to_string(), vec![format!("{LABEL}={}", self.token)])])),
            ..Default::default()
        };
        let list = self.block_on(self.client.list_containers(Some(options))).map_err(docker_err("list containers"))?;
        Ok(list.into_iter().flat_map(|c| c.names.unwrap_or_default()).collect())
    }

    /// Remove every deepdebug container on the engine (left by a deepdebug that was killed
    /// mid-run); returns their names.
    ///
    /// # Errors
    /// When the engine cannot list or remove containers.
    pub fn prune(&self) -> Result<Vec<String>, SandboxError> {
        let options = ListContainersOptions {
            all: true,
            filters: Some(HashMap::from([("label".to_string(), vec![LABEL.to_string()])])),
            ..Default::default()
        };
        let list = self.block_on(self.client.list_containers(Some(options))).map_err(docker_err("list containers"))?;
        let mut removed = Vec::new();
        for container in list {
            let Some(id) = container.id else { continue };
            let force = RemoveContainerOptions { force: true, v: true, ..Default::default() };
            self.block_on(self.client.remove_container(&id, Some(force))).map_err(docker_err("remove a container"))?;
            removed.extend(container.names.unwrap_or_default());
        }
        Ok(removed)
    }

    /// Run `job` in a fresh container, which is removed afterwards whatever happened.
    ///
    /// # Errors
    /// When the container cannot be created or started.
    pub fn run(&self, job: &Job<'_>) -> Result<Output, SandboxError> {
        self.prepare_mounts(job)?;
        self.block_on(self.run_async(job))
    }

    /// Containers run as an unprivileged uid: when we are root, hand the writable directories
    /// to that uid and make the read-only ones readable.
    fn prepare_mounts(&self, job: &Job<'_>) -> Result<(), SandboxError> {
        // SAFETY: plain getter.
        if unsafe { libc::geteuid() } != 0 {
            return Ok(());
        }
        for dir in job.writable.iter().chain(job.read_only.iter()).chain(std::iter::once(&job.source)) {
            let meta = std::fs::metadata(dir).map_err(io_err(format!("read {}", dir.display())))?;
            let mode = meta.permissions().mode();
            if mode & 0o005 != 0o005 {
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o055))
                    .map_err(io_err(format!("open {} to the sandbox user", dir.display())))?;
            }
        }
        for dir in &job.writable {
            std::os::unix::fs::chown(dir, Some(self.user.0), Some(self.user.1))
                .map_err(io_err(format!("hand {} to the sandbox user", dir.display())))?;
        }
        Ok(())
    }

    fn container_body(&self, job: &Job<'_>) -> ContainerCreateBody {
        let mut cmd = vec![job.program.to_string_lossy().into_owned()];
        cmd.extend(job.args.iter().map(|a| a.to_string_lossy().into_owned()));
        let mut env: Vec<String> = vec!["HOME=/tmp".into(), "TMPDIR=/tmp".into()];
        env.extend(job.env.iter().map(|(k, v)| format!("{k}={}", v.to_string_lossy())));
        let source_mode = if job.writable.contains(&job.source) { "rw" } else { "ro" };
        let mut binds = vec![format!("{0}:{0}:{source_mode}", super::absolute(job.source).display())];
        binds.extend(job.read_only.iter().map(|d| format!("{0}:{0}:ro", super::absolute(d).display())));
        binds.extend(job.writable.iter().filter(|d| **d != job.source).map(|d| format!("{0}:{0}:rw", super::absolute(d).display())));
        let memory = job
            .limits
            .memory_bytes
            .and_then(|m| i64::try_from(m).ok())
            .map_or(self.config.memory_bytes, |m| m.min(self.config.memory_bytes));
        #[allow(clippy::cast_possible_truncation)]
        let nano_cpus = (self.config.cpus * 1e9) as i64;
        ContainerCreateBody {
            image: Some(self.config.image.clone()),
            cmd: Some(cmd),
            env: Some(env),
            working_dir: Some(super::absolute(job.source).display().to_string()),
            user: Some(format!("{}:{}", self.user.0, self.user.1)),
            network_disabled: Some(true),
            labels: Some(HashMap::from([(LABEL.to_string(), self.token.clone())])),
            host_config: Some(HostConfig {
                network_mode: Some("none".into()),
                memory: Some(memory),
                memory_swap: Some(memory),
                pids_limit: Some(self.config.pids),
                nano_cpus: Some(nano_cpus),
                binds: Some(binds),
                tmpfs: Some(HashMap::from([("/tmp".to_string(), "rw,nosuid,nodev,size=512m".to_string())])),
                readonly_rootfs: Some(true),
                cap_drop: Some(vec!["ALL".into()]),
                security_opt: Some(vec!["no-new-privileges".into()]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    async fn run_async(&self, job: &Job<'_>) -> Result<Output, SandboxError> {
        let name = format!("deepdebug-{}-{}", self.token, NEXT.fetch_add(1, Ordering::Relaxed));
        let options = CreateContainerOptions { name: Some(name.clone()), ..Default::default() };
        self.client
            .create_container(Some(options), self.container_body(job))
            .await
            .map_err(docker_err("create a container"))?;
        let result = self.start_and_wait(&name, job.timeout).await;
        // Removed on every path: success, timeout, or error.
        let removed = self
            .client
            .remove_container(&name, Some(RemoveContainerOptions { force: true, v: true, ..Default::default() }))
            .await;
        let output = result?;
        removed.map_err(docker_err("remove a container"))?;
        Ok(output)
    }

    async fn start_and_wait(&self, name: &str, timeout: Duration) -> Result<Output, SandboxError> {
        let start = Instant::now();
        self.client.start_container(name, None).await.map_err(docker_err("start a container"))?;
        let mut wait = self.client.wait_container(name, None::<WaitContainerOptions>);
        let exit = match tokio::time::timeout(timeout, wait.next()).await {
            Ok(Some(Ok(response))) => exit_from_code(response.status_code),
            Ok(Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. }))) => exit_from_code(code),
            Ok(Some(Err(e))) => return Err(docker_err("wait for a container")(e)),
            Ok(None) => Exit::Failure(-1),
            Err(_) => {
                let kill = KillContainerOptions { signal: "SIGKILL".into() };
                // It may have just exited: a failed kill is fine, removal follows anyway.
                let _ = self.client.kill_container(name, Some(kill)).await;
                Exit::Timeout
            }
        };
        let elapsed = start.elapsed();
        let (stdout, stderr) = self.logs(name).await;
        Ok(Output { exit, elapsed, stdout, stderr })
    }

    async fn logs(&self, name: &str) -> (String, String) {
        let options = LogsOptions { stdout: true, stderr: true, tail: "all".into(), ..Default::default() };
        let mut stream = self.client.logs(name, Some(options));
        let (mut out, mut err) = (Vec::new(), Vec::new());
        while let Some(Ok(chunk)) = stream.next().await {
            let (buffer, message) = match chunk {
                LogOutput::StdOut { message } | LogOutput::Console { message } => (&mut out, message),
                LogOutput::StdErr { message } => (&mut err, message),
                LogOutput::StdIn { .. } => continue,
            };
            let room = MAX_LOG.saturating_sub(buffer.len());
            buffer.extend_from_slice(&message[..message.len().min(room)]);
        }
        (String::from_utf8_lossy(&out).into_owned(), String::from_utf8_lossy(&err).into_owned())
    }
}

/// A container's exit code: 128+n means killed by signal n (e.g. 137 for the OOM killer).
fn exit_from_code(code: i64) -> Exit {
    match i32::try_from(code) {
        Ok(0) => Exit::Success,
        Ok(c) if (129..=128 + 64).contains(&c) => Exit::Signalled(c - 128),
        Ok(c) => Exit::Failure(c),
        Err(_) => Exit::Failure(-1),
    }
}

/// The image's interpreter (`--python` is ignored for host paths under Docker).
pub const IMAGE_PYTHON: &str = "/usr/bin/python3";

/// `python` as seen inside the image: host interpreters do not exist there.
#[must_use]
pub fn image_python(python: &Path) -> &Path {
    if python.is_absolute() && !python.starts_with("/usr/bin") && !python.starts_with("/usr/local/bin") {
        Path::new(IMAGE_PYTHON)
    } else {
        python
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_exit_codes_map_to_exits() {
        assert_eq!(exit_from_code(0), Exit::Success);
        assert_eq!(exit_from_code(1), Exit::Failure(1));
        assert_eq!(exit_from_code(137), Exit::Signalled(9));
        assert_eq!(exit_from_code(i64::MAX), Exit::Failure(-1));
    }

    #[test]
    fn host_interpreters_become_the_image_python() {
        assert_eq!(image_python(Path::new("/root/.pyenv/shims/python3")), Path::new(IMAGE_PYTHON));
        assert_eq!(image_python(Path::new("/tmp/venv/bin/python")), Path::new(IMAGE_PYTHON));
        assert_eq!(image_python(Path::new("python3")), Path::new("python3"));
        assert_eq!(image_python(Path::new("/usr/bin/python3.11")), Path::new("/usr/bin/python3.11"));
    }
}
