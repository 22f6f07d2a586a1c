//! The Docker backend: locked-down containers through bollard (one per command, or attached and long-lived).

use super::{DockerConfig, Job, SandboxError};
use crate::io_error::io_err;
use crate::process::{Exit, Output};
use bollard::container::LogOutput;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    AttachContainerOptions, CreateContainerOptions, KillContainerOptions, ListContainersOptions, LogsOptions,
    RemoveContainerOptions, WaitContainerOptions,
};
use bollard::Docker;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// Label on every container we create (to find leftovers).
pub const LABEL: &str = "deepdebug.sandbox";
/// Label naming the process that created a container: `boot id/pid namespace/pid/start time`
/// (see [`owner_id`]); a later connection removes the containers of owners that are gone.
pub const OWNER_LABEL: &str = "deepdebug.owner";
/// Uid/gid of the image's unprivileged user.
pub const IMAGE_USER: u32 = 1000;
/// Most output kept per stream.
const MAX_LOG: usize = 1 << 20;
/// Most standard error kept from an attached container (for error messages).
const MAX_ATTACHED_STDERR: usize = 4096;

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
    move |e| {
        let (action, message) = (action.to_string(), e.to_string());
        // The API says so only in its message text.
        if message.contains("executable file not found") {
            SandboxError::ProgramNotFound { action, message }
        } else {
            SandboxError::Docker { action, message }
        }
    }
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
        // Best effort: what a killed deepdebug left behind goes now (`sandbox prune` removes
        // every deepdebug container, whoever made it).
        let _ = sandbox.prune_orphans();
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

    /// The containers (running or not) that carry `label` (`key` or `key=value`).
    fn labelled(&self, label: String) -> Result<Vec<bollard::models::ContainerSummary>, SandboxError> {
        let options = ListContainersOptions {
            all: true,
            filters: Some(HashMap::from([("label".to_string(), vec![label])])),
            ..Default::default()
        };
        self.block_on(self.client.list_containers(Some(options))).map_err(docker_err("list containers"))
    }

    /// Force-remove the listed containers (those gone meanwhile, removed by their own cleanup
    /// or another deepdebug, are fine); returns their names.
    fn remove_all(&self, containers: Vec<bollard::models::ContainerSummary>) -> Result<Vec<String>, SandboxError> {
        let mut removed = Vec::new();
        for container in containers {
            let Some(id) = container.id else { continue };
            let force = RemoveContainerOptions { force: true, v: true, ..Default::default() };
            match self.block_on(self.client.remove_container(&id, Some(force))) {
                Ok(()) | Err(bollard::errors::Error::DockerResponseServerError { status_code: 404 | 409, .. }) => {}
                Err(e) => return Err(docker_err("remove a container")(e)),
            }
            removed.extend(container.names.unwrap_or_default());
        }
        Ok(removed)
    }

    /// Names of this connection's containers that still exist (running or not).
    ///
    /// # Errors
    /// When the engine cannot list containers.
    pub fn leftover_containers(&self) -> Result<Vec<String>, SandboxError> {
        let list = self.labelled(format!("{LABEL}={}", self.token))?;
        Ok(list.into_iter().flat_map(|c| c.names.unwrap_or_default()).collect())
    }

    /// Names of the deepdebug containers that process `pid` (another deepdebug) created and
    /// that still exist.
    ///
    /// # Errors
    /// When the engine cannot list containers.
    pub fn containers_of_process(&self, pid: u32) -> Result<Vec<String>, SandboxError> {
        let prefix = format!("/deepdebug-{pid}-");
        let list = self.labelled(LABEL.to_string())?;
        Ok(list.into_iter().flat_map(|c| c.names.unwrap_or_default()).filter(|n| n.starts_with(&prefix)).collect())
    }

    /// Remove the deepdebug containers whose creator is gone (a deepdebug killed mid-run):
    /// only those created on this machine's current boot and in our pid namespace, where the
    /// creator's pid and start time can be checked; returns their names.
    ///
    /// # Errors
    /// When the engine cannot list or remove containers.
    pub fn prune_orphans(&self) -> Result<Vec<String>, SandboxError> {
        let list = self.labelled(OWNER_LABEL.to_string())?;
        let orphans = list
            .into_iter()
            .filter(|c| c.labels.as_ref().and_then(|l| l.get(OWNER_LABEL)).is_some_and(|owner| owner_gone(owner)))
            .collect();
        self.remove_all(orphans)
    }

    /// Remove every deepdebug container on the engine (left by a deepdebug that was killed
    /// mid-run); returns their names.
    ///
    /// # Errors
    /// When the engine cannot list or remove containers.
    pub fn prune(&self) -> Result<Vec<String>, SandboxError> {
        let list = self.labelled(LABEL.to_string())?;
        self.remove_all(list)
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
            // The whole tree: a writable source is a scratch copy whose files tests may rewrite.
            for entry in walkdir::WalkDir::new(dir).follow_links(false) {
                let entry = entry.map_err(|e| io_err(format!("walk {}", dir.display()))(e.into()))?;
                std::os::unix::fs::lchown(entry.path(), Some(self.user.0), Some(self.user.1))
                    .map_err(io_err(format!("hand {} to the sandbox user", entry.path().display())))?;
            }
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
        binds.extend(
            job.writable
                .iter()
                .filter(|d| **d != job.source)
                .map(|d| format!("{0}:{0}:rw", super::absolute(d).display())),
        );
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
            labels: Some(labels(&self.token)),
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

    fn container_name(&self) -> String {
        format!("deepdebug-{}-{}", self.token, NEXT.fetch_add(1, Ordering::Relaxed))
    }

    async fn remove(&self, name: &str) -> Result<(), bollard::errors::Error> {
        let options = RemoveContainerOptions { force: true, v: true, ..Default::default() };
        self.client.remove_container(name, Some(options)).await
    }

    /// Start `job` in a long-lived container attached to our pipes: lines written to the
    /// returned handle reach the command's stdin, its stdout comes back line by line. The
    /// container is removed when the handle is dropped (`job.timeout` is not enforced here).
    ///
    /// # Errors
    /// When the container cannot be created, attached or started (it is removed then).
    pub fn attach(self: &Arc<Self>, job: &Job<'_>) -> Result<AttachedContainer, SandboxError> {
        self.prepare_mounts(job)?;
        let name = self.container_name();
        let mut body = self.container_body(job);
        body.open_stdin = Some(true);
        // Stdin closes when our connection does (we die): the command sees EOF and exits, and
        // the engine removes the container then. Normally `AttachedContainer` removes it.
        body.stdin_once = Some(true);
        body.attach_stdin = Some(true);
        body.attach_stdout = Some(true);
        body.attach_stderr = Some(true);
        if let Some(host) = body.host_config.as_mut() {
            host.auto_remove = Some(true);
        }
        let options = CreateContainerOptions { name: Some(name.clone()), ..Default::default() };
        self.block_on(self.client.create_container(Some(options), body)).map_err(docker_err("create a container"))?;
        let attached = self.block_on(async {
            let options =
                AttachContainerOptions { stream: true, stdin: true, stdout: true, stderr: true, ..Default::default() };
            // Attached before the start, so that no output is lost.
            let streams = self
                .client
                .attach_container(&name, Some(options))
                .await
                .map_err(docker_err("attach to a container"))?;
            self.client.start_container(&name, None).await.map_err(docker_err("start a container"))?;
            Ok(streams)
        });
        let streams = match attached {
            Ok(streams) => streams,
            Err(err) => {
                let _ = self.block_on(self.remove(&name));
                return Err(err);
            }
        };
        let (lines, receiver) = mpsc::channel();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let reader = self.runtime.spawn(forward_lines(streams.output, lines, Arc::clone(&stderr)));
        Ok(AttachedContainer {
            sandbox: Arc::clone(self),
            name,
            input: streams.input,
            lines: Some(receiver),
            stderr,
            reader,
            removed: false,
        })
    }

    async fn run_async(&self, job: &Job<'_>) -> Result<Output, SandboxError> {
        let name = self.container_name();
        let options = CreateContainerOptions { name: Some(name.clone()), ..Default::default() };
        self.client
            .create_container(Some(options), self.container_body(job))
            .await
            .map_err(docker_err("create a container"))?;
        let result = self.start_and_wait(&name, job.timeout).await;
        // Removed on every path: success, timeout, or error.
        let removed = self.remove(&name).await;
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

/// Send the container's stdout to `lines`, one line at a time, and keep the tail of its stderr.
async fn forward_lines(
    mut output: Pin<Box<dyn futures_util::Stream<Item = Result<LogOutput, bollard::errors::Error>> + Send>>,
    lines: mpsc::Sender<String>,
    stderr: Arc<Mutex<Vec<u8>>>,
) {
    let mut pending: Vec<u8> = Vec::new();
    while let Some(Ok(chunk)) = output.next().await {
        match chunk {
            LogOutput::StdOut { message } | LogOutput::Console { message } => {
                pending.extend_from_slice(&message);
                while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    let text = String::from_utf8_lossy(&line[..end]).into_owned();
                    if lines.send(text).is_err() {
                        return;
                    }
                }
            }
            LogOutput::StdErr { message } => {
                let mut kept = stderr.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                kept.extend_from_slice(&message);
                let excess = kept.len().saturating_sub(MAX_ATTACHED_STDERR);
                kept.drain(..excess);
            }
            LogOutput::StdIn { .. } => {}
        }
    }
}

/// A running container attached to our pipes (see [`DockerSandbox::attach`]); removed on drop.
pub struct AttachedContainer {
    sandbox: Arc<DockerSandbox>,
    name: String,
    input: Pin<Box<dyn AsyncWrite + Send>>,
    lines: Option<mpsc::Receiver<String>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    reader: tokio::task::JoinHandle<()>,
    removed: bool,
}

impl std::fmt::Debug for AttachedContainer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttachedContainer").field("name", &self.name).field("removed", &self.removed).finish()
    }
}

impl AttachedContainer {
    /// The container's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The command's stdout, line by line (taken once); disconnected when the command ends.
    pub fn take_lines(&mut self) -> Option<mpsc::Receiver<String>> {
        self.lines.take()
    }

    /// Write `line` and a newline to the command's stdin.
    ///
    /// # Errors
    /// When the container is gone.
    pub fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        if self.removed {
            return Err(std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the container was removed"));
        }
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        let input = &mut self.input;
        self.sandbox.block_on(async {
            input.write_all(&bytes).await?;
            input.flush().await
        })
    }

    /// The last few KiB the command wrote to stderr.
    #[must_use]
    pub fn stderr_tail(&self) -> String {
        let kept = self.stderr.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        String::from_utf8_lossy(&kept).into_owned()
    }

    /// Kill and remove the container now (everything in it dies).
    ///
    /// # Errors
    /// When the engine refuses (the container may be left behind; `sandbox prune` removes it).
    pub fn remove(&mut self) -> Result<(), SandboxError> {
        if self.removed {
            return Ok(());
        }
        self.removed = true;
        let result = match self.sandbox.block_on(self.sandbox.remove(&self.name)) {
            // Gone already, or being removed by the engine (auto-remove after an exit).
            Ok(()) | Err(bollard::errors::Error::DockerResponseServerError { status_code: 404 | 409, .. }) => Ok(()),
            Err(e) => Err(docker_err("remove a container")(e)),
        };
        self.reader.abort();
        result
    }
}

impl Drop for AttachedContainer {
    fn drop(&mut self) {
        let _ = self.remove();
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

/// The labels of a container made by the connection `token`.
fn labels(token: &str) -> HashMap<String, String> {
    let mut labels = HashMap::from([(LABEL.to_string(), token.to_string())]);
    if let Some(owner) = owner_id() {
        labels.insert(OWNER_LABEL.to_string(), owner.clone());
    }
    labels
}

/// This process as `boot id/pid namespace/pid/start time`: unique on this machine across
/// reboots, pid reuse and pid namespaces (`None` without /proc).
pub fn owner_id() -> Option<&'static String> {
    static OWNER: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    OWNER
        .get_or_init(|| {
            let (boot, namespace) = machine_and_namespace()?;
            let pid = std::process::id();
            Some(format!("{boot}/{namespace}/{pid}/{}", start_time(pid)?))
        })
        .as_ref()
}

/// This boot's id and our pid namespace.
fn machine_and_namespace() -> Option<(String, String)> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?.trim().to_string();
    let namespace = std::fs::read_link("/proc/self/ns/pid").ok()?.to_string_lossy().into_owned();
    Some((boot, namespace))
}

/// Start time of process `pid` in clock ticks after boot (field 22 of /proc/PID/stat).
fn start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(19).map(str::to_string)
}

/// Whether the owner a container's label names has certainly ended: same boot and pid
/// namespace as ours, and no process with its pid and start time. Anything else (another
/// machine or namespace, an unreadable label) counts as alive.
fn owner_gone(owner: &str) -> bool {
    let mut parts = owner.split('/');
    let (Some(boot), Some(namespace), Some(pid), Some(started), None) =
        (parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let Some((our_boot, our_namespace)) = machine_and_namespace() else { return false };
    let Ok(pid) = pid.parse::<u32>() else { return false };
    boot == our_boot && namespace == our_namespace && start_time(pid).as_deref() != Some(started)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_is_gone_only_when_it_surely_ran_here_and_ended() {
        let me = owner_id().expect("/proc");
        assert!(!owner_gone(me), "{me}");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let started = start_time(pid);
        child.wait().unwrap();
        let (boot, namespace) = machine_and_namespace().unwrap();
        // Ended (its pid may be reused, with another start time).
        assert!(owner_gone(&format!("{boot}/{namespace}/{pid}/{}", started.unwrap_or_default())));
        // Our pid, a start time that is not ours: a reused pid.
        assert!(owner_gone(&format!("{boot}/{namespace}/{}/1", std::process::id())));
        // Another boot, another pid namespace, or a label we cannot read: left alone.
        assert!(!owner_gone(&format!("another-boot/{namespace}/{pid}/1")));
        assert!(!owner_gone(&format!("{boot}/pid:[1]/{pid}/1")));
        assert!(!owner_gone("1234"));
        assert!(!owner_gone(&format!("{boot}/{namespace}/x/1")));
    }

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
