//! The twin's Python environment: the interpreter `report --verify` runs twin/recompute.py
//! with. `$FEEDBENCH_PYTHON` when set (checked, never changed); else `twin/.venv`, made on
//! first use from twin/requirements.txt's pinned packages and remade when the pins change.
//! What cannot be had is one line naming the command that would get it, never a traceback.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The twin's pinned packages, beside recompute.py.
pub const REQUIREMENTS: &str = "requirements.txt";
/// The environment feedbench makes, inside the twin's folder (git-ignored).
pub const VENV: &str = ".venv";
/// In a made environment: the sha256 of the requirements it was made from, written last.
const MADE_FROM: &str = "feedbench-requirements.sha256";
/// What the twin imports; an interpreter that cannot import them cannot verify.
const IMPORTS: &str = "import pandas, numpy";

#[derive(Debug, thiserror::Error)]
pub enum TwinEnvError {
    #[error("`{python}` (FEEDBENCH_PYTHON) cannot run the twin: {why}; install its packages with `{python} -m pip install -r {}`, or unset FEEDBENCH_PYTHON so that feedbench makes its own environment", requirements.display())]
    Given {
        python: String,
        why: String,
        requirements: PathBuf,
    },
    #[error("cannot make the twin's environment: `{command}` failed ({why}); run `{script}` by hand, or set FEEDBENCH_PYTHON to a Python that has the packages of `{}`", requirements.display())]
    Make {
        command: String,
        why: String,
        script: String,
        requirements: PathBuf,
    },
    #[error("the twin's pinned packages: cannot read `{}`: {source}", path.display())]
    Requirements {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The interpreter for the twin in `twin`, made ready if need be; what is done is said on
/// `progress` (once, on first use).
pub fn ready(twin: &Path, progress: &mut dyn Write) -> Result<String, TwinEnvError> {
    let requirements = twin.join(REQUIREMENTS);
    if let Ok(given) = std::env::var("FEEDBENCH_PYTHON") {
        return check_given(given, &requirements);
    }
    let pins = std::fs::read(&requirements).map_err(|source| TwinEnvError::Requirements {
        path: requirements.clone(),
        source,
    })?;
    let wanted = feedbench_core::plan::hash::sha256_hex(&pins);
    let venv = twin.join(VENV);
    let python = venv.join("bin/python");
    if made_from(&venv).as_deref() == Some(wanted.as_str()) {
        return Ok(python.display().to_string());
    }
    // one maker at a time; whoever waited finds it made
    let _lock = crate::lock::flock(&twin.join(".venv.lock"), true).map_err(|e| {
        make_error(
            &twin.join(".venv.lock").display().to_string(),
            &e.to_string(),
            twin,
        )
    })?;
    if made_from(&venv).as_deref() != Some(wanted.as_str()) {
        make(twin, &wanted, progress)?;
    }
    Ok(python.display().to_string())
}

fn made_from(venv: &Path) -> Option<String> {
    let text = std::fs::read_to_string(venv.join(MADE_FROM)).ok()?;
    venv.join("bin/python")
        .is_file()
        .then(|| text.trim().to_string())
}

fn check_given(python: String, requirements: &Path) -> Result<String, TwinEnvError> {
    let given = |why: String| TwinEnvError::Given {
        python: python.clone(),
        why,
        requirements: requirements.to_path_buf(),
    };
    let out = Command::new(&python)
        .args(["-c", IMPORTS])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| given(format!("it does not start ({e})")))?;
    if out.status.success() {
        return Ok(python);
    }
    // Python's last line names the missing module; the traceback above it is not shown
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("it exited with an error");
    Err(given(format!("`{IMPORTS}` says {}", last.trim())))
}

/// The commands that make the environment, as a person would type them.
fn script(twin: &Path) -> String {
    let venv = twin.join(VENV);
    format!(
        "python3 -m venv {} && {}/bin/python -m pip install -r {}",
        venv.display(),
        venv.display(),
        twin.join(REQUIREMENTS).display()
    )
}

fn make_error(command: &str, why: &str, twin: &Path) -> TwinEnvError {
    TwinEnvError::Make {
        command: command.to_string(),
        why: why.to_string(),
        script: script(twin),
        requirements: twin.join(REQUIREMENTS),
    }
}

/// Makes the environment in a scratch folder beside it and moves it into place once its
/// packages are installed, so that a cut-short make leaves no half environment behind.
fn make(twin: &Path, wanted: &str, progress: &mut dyn Write) -> Result<(), TwinEnvError> {
    let venv = twin.join(VENV);
    let scratch = twin.join(format!("{VENV}.making-{}", std::process::id()));
    let _ = writeln!(
        progress,
        "the twin's environment is not made yet: making `{}` from `{}` (once; needs PyPI)",
        venv.display(),
        twin.join(REQUIREMENTS).display()
    );
    let _ = std::fs::remove_dir_all(&scratch);
    let result = (|| {
        let python = scratch.join("bin/python");
        step(
            twin,
            Command::new("python3").arg("-m").arg("venv").arg(&scratch),
            progress,
        )?;
        step(
            twin,
            Command::new(&python)
                .args(["-m", "pip", "install", "--disable-pip-version-check"])
                .args(["--progress-bar", "off", "-r"])
                .arg(twin.join(REQUIREMENTS)),
            progress,
        )?;
        let io = |e: std::io::Error| make_error(&venv.display().to_string(), &e.to_string(), twin);
        std::fs::write(scratch.join(MADE_FROM), format!("{wanted}\n")).map_err(io)?;
        if venv.exists() {
            std::fs::remove_dir_all(&venv).map_err(io)?;
        }
        std::fs::rename(&scratch, &venv).map_err(io)
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    result?;
    let _ = writeln!(progress, "the twin's environment is made");
    Ok(())
}

/// Runs one making step, its output shown as it comes, indented, and its failure named.
fn step(twin: &Path, cmd: &mut Command, progress: &mut dyn Write) -> Result<(), TwinEnvError> {
    let shown = format!(
        "{} {}",
        cmd.get_program().to_string_lossy(),
        cmd.get_args()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let _ = writeln!(progress, "  $ {shown}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| make_error(&shown, &format!("it does not start: {e}"), twin))?;
    // stderr is read on a thread of its own so that neither pipe can fill and stall the step
    let stderr = child.stderr.take().map(|s| {
        std::thread::spawn(move || {
            BufReader::new(s)
                .lines()
                .map_while(Result::ok)
                .collect::<Vec<_>>()
        })
    });
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = writeln!(progress, "    {line}");
        }
    }
    let errors = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    let status = child
        .wait()
        .map_err(|e| make_error(&shown, &e.to_string(), twin))?;
    if status.success() {
        return Ok(());
    }
    let last = errors
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map_or(status.to_string(), |l| l.trim().to_string());
    Err(make_error(&shown, &last, twin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_python_without_pandas_is_one_line_naming_the_install() {
        let twin = tempfile::tempdir().unwrap();
        let e = check_given(
            "python3-that-is-not-there".into(),
            &twin.path().join(REQUIREMENTS),
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(!text.contains('\n'), "{text}");
        assert!(
            text.contains("python3-that-is-not-there -m pip install -r"),
            "{text}"
        );
    }

    #[test]
    fn a_made_environment_is_known_by_its_requirements() {
        let twin = tempfile::tempdir().unwrap();
        let venv = twin.path().join(VENV);
        assert_eq!(made_from(&venv), None);
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::write(venv.join(MADE_FROM), "abc\n").unwrap();
        // no interpreter: not made
        assert_eq!(made_from(&venv), None);
        std::fs::write(venv.join("bin/python"), "").unwrap();
        assert_eq!(made_from(&venv).as_deref(), Some("abc"));
    }
}
