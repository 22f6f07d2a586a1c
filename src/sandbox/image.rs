//! `sandbox build`: a Python+pytest image without a registry (debootstrap rootfs imported via the Engine API).

use super::docker::{DockerSandbox, IMAGE_PYTHON, IMAGE_USER};
use super::{DockerConfig, Job, SandboxError};
use crate::io_error::io_err;
use crate::process::{self, Limits};
use bollard::query_parameters::CreateImageOptions;
use futures_util::StreamExt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How to build the image.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// `repo:tag` of the image.
    pub tag: String,
    /// Debian mirror; default: the first Debian mirror in the host's apt sources.
    pub mirror: Option<String>,
    /// Debian suite; default: the host's codename, else bookworm.
    pub suite: Option<String>,
    /// Packages installed on top of `minbase`.
    pub packages: Vec<String>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            tag: super::DEFAULT_IMAGE.to_string(),
            mirror: None,
            suite: None,
            packages: vec!["python3".into(), "python3-pytest".into()],
        }
    }
}

/// What a build did.
#[derive(Debug, Clone)]
pub struct BuildReport {
    pub tag: String,
    pub mirror: String,
    pub suite: String,
    pub rootfs_bytes: u64,
    pub elapsed: Duration,
    /// `python3 -m pytest --version` inside the new image.
    pub pytest_version: String,
}

/// Longest a debootstrap may take.
const DEBOOTSTRAP_TIMEOUT: Duration = Duration::from_secs(1800);

/// Build the image: debootstrap a minimal rootfs with Python and pytest, add the unprivileged
/// user, import the tarball through the Engine API (`FROM scratch`, nothing pulled), then run
/// pytest in it once. `progress` receives one line per step.
///
/// # Errors
/// When debootstrap is missing or fails, we are not root, or the engine rejects the import.
pub fn build(options: &BuildOptions, progress: &dyn Fn(&str)) -> Result<BuildReport, SandboxError> {
    let start = Instant::now();
    let engine = DockerSandbox::connect_engine(DockerConfig { image: options.tag.clone(), ..DockerConfig::default() })?;
    let debootstrap = super::local::find_in_path("debootstrap")
        .or_else(|| Some(PathBuf::from("/usr/sbin/debootstrap")).filter(|p| p.is_file()))
        .ok_or_else(|| SandboxError::Build("`debootstrap` is not installed (apt-get install -y debootstrap)".into()))?;
    // SAFETY: plain getter.
    if unsafe { libc::geteuid() } != 0 {
        return Err(SandboxError::Build(
            "debootstrap needs root; run `deepdebug sandbox build` as root, or build docker/Dockerfile".into(),
        ));
    }
    let suite = options.suite.clone().unwrap_or_else(host_codename);
    let mirror = options.mirror.clone().unwrap_or_else(host_mirror);
    let work = tempfile::Builder::new()
        .prefix("deepdebug-image-")
        .tempdir_in(if Path::new("/var/tmp").is_dir() { "/var/tmp" } else { "/tmp" })
        .map_err(io_err("create the build directory"))?;
    let rootfs = work.path().join("rootfs");
    progress(&format!("debootstrap {suite} from {mirror} (minbase + {})", options.packages.join(", ")));
    let mut cmd = Command::new(&debootstrap);
    cmd.arg("--variant=minbase")
        .arg(format!("--include={}", options.packages.join(",")))
        .arg(&suite)
        .arg(&rootfs)
        .arg(&mirror);
    let unlimited = Limits { memory_bytes: None, cpu_seconds: None, file_bytes: None };
    let out = process::run(&mut cmd, DEBOOTSTRAP_TIMEOUT, unlimited, work.path()).map_err(io_err("run debootstrap"))?;
    if !out.exit.is_success() {
        let log = std::fs::read_to_string(rootfs.join("debootstrap/debootstrap.log")).unwrap_or_default();
        return Err(SandboxError::Build(format!(
            "debootstrap failed ({:?}):\n{}\n{}",
            out.exit,
            tail(&out.stderr, 2000),
            tail(&log, 2000)
        )));
    }
    progress("adding the unprivileged user and trimming caches");
    finish_rootfs(&rootfs)?;
    progress("packing the rootfs");
    let tarball = work.path().join("rootfs.tar");
    let mut tar = Command::new("tar");
    tar.arg("--numeric-owner").arg("-C").arg(&rootfs).arg("-cf").arg(&tarball).arg(".");
    let out = process::run(&mut tar, Duration::from_secs(600), unlimited, work.path()).map_err(io_err("run tar"))?;
    if !out.exit.is_success() {
        return Err(SandboxError::Build(format!("tar failed: {}", tail(&out.stderr, 2000))));
    }
    let bytes = std::fs::read(&tarball).map_err(io_err("read the rootfs tarball"))?;
    let rootfs_bytes = bytes.len() as u64;
    progress(&format!("importing {} MiB as {}", rootfs_bytes >> 20, options.tag));
    import(&engine, &options.tag, bytes)?;
    drop(work);
    progress("checking pytest inside the image");
    let engine = DockerSandbox::connect(DockerConfig { image: options.tag.clone(), ..DockerConfig::default() })?;
    let pytest_version = probe_pytest(&engine)?;
    Ok(BuildReport { tag: options.tag.clone(), mirror, suite, rootfs_bytes, elapsed: start.elapsed(), pytest_version })
}

/// Add user and group 1000 (`runner`), drop apt caches and docs.
fn finish_rootfs(rootfs: &Path) -> Result<(), SandboxError> {
    let append = |rel: &str, line: &str| -> Result<(), SandboxError> {
        let path = rootfs.join(rel);
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if text.lines().any(|l| l.starts_with("runner:")) {
            return Ok(());
        }
        let mut file =
            std::fs::OpenOptions::new().append(true).create(true).open(&path).map_err(io_err(format!("open {rel}")))?;
        Ok(writeln!(file, "{line}").map_err(io_err(format!("write {rel}")))?)
    };
    append("etc/passwd", &format!("runner:x:{IMAGE_USER}:{IMAGE_USER}:deepdebug runner:/tmp:/usr/sbin/nologin"))?;
    append("etc/group", &format!("runner:x:{IMAGE_USER}:"))?;
    for dir in ["var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/locale"] {
        let path = rootfs.join(dir);
        if let Ok(entries) = std::fs::read_dir(&path) {
            for entry in entries.flatten() {
                let p = entry.path();
                let _ =
                    if p.is_dir() && !p.is_symlink() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
            }
        }
    }
    Ok(())
}

/// `docker import`: the tarball becomes a one-layer image with the runner user and defaults.
fn import(engine: &DockerSandbox, tag: &str, tarball: Vec<u8>) -> Result<(), SandboxError> {
    let (repo, tag_part) = match tag.rsplit_once(':') {
        Some((repo, t)) if !t.contains('/') => (repo.to_string(), t.to_string()),
        _ => (tag.to_string(), "latest".to_string()),
    };
    let options = CreateImageOptions {
        from_src: Some("-".into()),
        repo: Some(repo),
        tag: Some(tag_part),
        changes: vec![
            format!("USER {IMAGE_USER}:{IMAGE_USER}"),
            "WORKDIR /tmp".into(),
            "ENV PYTHONDONTWRITEBYTECODE=1".into(),
            format!("CMD [\"{IMAGE_PYTHON}\"]"),
        ],
        ..Default::default()
    };
    let body = bollard::body_full(bytes::Bytes::from(tarball));
    engine.block_on(async {
        let mut stream = engine.client().create_image(Some(options), Some(body), None);
        while let Some(item) = stream.next().await {
            let info =
                item.map_err(|e| SandboxError::Docker { action: "import the image".into(), message: e.to_string() })?;
            if let Some(err) = info.error_detail.and_then(|d| d.message) {
                return Err(SandboxError::Build(err));
            }
        }
        Ok(())
    })
}

/// `python3 -m pytest --version` in a container of the image.
///
/// # Errors
/// When the container cannot run or pytest is missing.
pub fn probe_pytest(engine: &DockerSandbox) -> Result<String, SandboxError> {
    let dir = tempfile::tempdir().map_err(io_err("create a temp dir"))?;
    let job = Job {
        program: Path::new(IMAGE_PYTHON),
        args: vec!["-m".into(), "pytest".into(), "--version".into()],
        source: dir.path(),
        read_only: Vec::new(),
        writable: Vec::new(),
        env: Vec::new(),
        timeout: Duration::from_secs(60),
        limits: Limits::default(),
        capture_dir: dir.path(),
    };
    let out = engine.run(&job)?;
    let text = format!("{}{}", out.stdout, out.stderr).trim().to_string();
    if out.exit.is_success() {
        Ok(text)
    } else {
        Err(SandboxError::Build(format!("pytest does not run in the image: {text}")))
    }
}

/// The host's Debian codename (`VERSION_CODENAME`), else `bookworm`.
#[must_use]
pub fn host_codename() -> String {
    std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| l.strip_prefix("VERSION_CODENAME=").map(|v| v.trim_matches('"').to_string()))
        })
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "bookworm".to_string())
}

/// The first Debian archive in the host's apt sources (deb822 `URIs:` or one-line `deb`),
/// else `http://deb.debian.org/debian`.
#[must_use]
pub fn host_mirror() -> String {
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(entries) = std::fs::read_dir("/etc/apt/sources.list.d") {
        let mut more: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        more.sort();
        files.extend(more);
    }
    files
        .iter()
        .filter_map(|file| std::fs::read_to_string(file).ok())
        .find_map(|text| mirror_in(&text))
        .unwrap_or_else(|| "http://deb.debian.org/debian".to_string())
}

/// The first Debian archive URI in an apt sources file (deb822 or one-line format).
#[must_use]
pub fn mirror_in(sources: &str) -> Option<String> {
    for line in sources.lines() {
        let line = line.trim();
        let uris: Vec<&str> = if let Some(rest) = line.strip_prefix("URIs:") {
            rest.split_whitespace().collect()
        } else if let Some(rest) = line.strip_prefix("deb ") {
            rest.split_whitespace().filter(|w| w.contains("://")).take(1).collect()
        } else {
            Vec::new()
        };
        if let Some(uri) = uris.into_iter().find(|u| u.trim_end_matches('/').ends_with("/debian")) {
            return Some(uri.trim_end_matches('/').to_string());
        }
    }
    None
}

fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_debian_mirror_is_read_from_both_source_formats() {
        let deb822 = "Types: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm\n";
        assert_eq!(mirror_in(deb822).as_deref(), Some("http://mirror.example/debian"));
        let one_line = "deb [arch=amd64] http://ftp.example/debian bookworm main\n";
        assert_eq!(mirror_in(one_line).as_deref(), Some("http://ftp.example/debian"));
        assert_eq!(mirror_in("deb https://packages.cloud.google.com/apt cloud-sdk main\n"), None);
        assert_eq!(mirror_in("URIs: http://deb.debian.org/debian-security\n"), None);
    }
}
