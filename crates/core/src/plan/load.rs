//! Loading a plan file: YAML → positioned tree → typed plan → validated, hashed plan, with
//! every problem reported as a diagnostic at file:line:column and field path.

use std::path::{Path, PathBuf};

use super::check::locate::locate;
use super::de::from_node;
use super::diagnostic::{Diagnostic, Severity};
use super::hash::plan_hash;
use super::model::Plan;
use super::validate::{validate, Context, Finding};
use super::yaml::{parse, Node, Positions};

/// A plan that loaded and validated, with its hash and its warnings.
#[derive(Debug, Clone)]
pub struct LoadedPlan {
    /// The file as the user named it.
    pub file: String,
    /// The directory relative paths in the plan are resolved from.
    pub base_dir: PathBuf,
    pub plan: Plan,
    pub plan_hash: String,
    pub warnings: Vec<Diagnostic>,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read the plan `{file}`: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{file}` is not a valid plan ({} error(s))", .diagnostics.iter().filter(|d| d.severity == Severity::Error).count())]
    Invalid {
        file: String,
        /// Errors first, then warnings.
        diagnostics: Vec<Diagnostic>,
    },
}

/// Reads and loads a plan file; relative paths inside it are checked against its directory.
pub fn load_file(path: &Path, host_cores: Option<f64>) -> Result<LoadedPlan, LoadError> {
    let bytes = std::fs::read(path).map_err(|source| LoadError::Read {
        file: path.display().to_string(),
        source,
    })?;
    load_bytes(path, bytes, host_cores)
}

/// Loads the plan file `path` from its contents `bytes` (read once by the caller, who keeps
/// them: a pilot copies exactly what it loaded).
pub fn load_bytes(
    path: &Path,
    bytes: Vec<u8>,
    host_cores: Option<f64>,
) -> Result<LoadedPlan, LoadError> {
    let file = path.display().to_string();
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let source = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => {
            let before = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
            let column = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
            return Err(LoadError::Invalid {
                file: file.clone(),
                diagnostics: vec![Diagnostic {
                    severity: Severity::Error,
                    file,
                    line,
                    column,
                    path: String::new(),
                    message: "the plan is not UTF-8 text".into(),
                    hint: None,
                }],
            });
        }
    };
    let dir = base_dir.clone();
    let exists = move |rel: &str| dir.join(rel).exists();
    let ctx = Context {
        host_cores,
        exists: Some(&exists),
    };
    let mut loaded = load_str(&file, &source, &ctx)?;
    loaded.base_dir = base_dir;
    Ok(loaded)
}

/// Validation's findings as diagnostics at the positions of `source`'s values (or keys).
pub(crate) fn place(
    file: &str,
    source: &str,
    positions: &Positions,
    findings: Vec<Finding>,
) -> Vec<Diagnostic> {
    findings
        .into_iter()
        .map(|f| {
            let mark = match (f.at_key, f.offset) {
                (true, _) => positions.key(&f.path),
                (false, None) => positions.value(&f.path),
                (false, Some(offset)) => locate(source, positions.value(&f.path), offset),
            };
            Diagnostic::new(f.severity, file, mark, f.path, f.message).with_hint(f.hint)
        })
        .collect()
}

/// Parses a YAML document and reads a `T` from it: the positioned tree and the value, or
/// the one syntax or typing error, at its place. Plans and engines files are read so.
pub fn typed<T: serde::de::DeserializeOwned>(
    file: &str,
    source: &str,
) -> Result<(Node, T), Diagnostic> {
    let root = parse(source)
        .map_err(|e| Diagnostic::new(Severity::Error, file, e.mark, e.path, e.message))?;
    let value = from_node(&root).map_err(|e| {
        Diagnostic::new(
            Severity::Error,
            file,
            e.mark.unwrap_or(root.mark),
            e.path.unwrap_or_default(),
            e.message,
        )
        .with_hint(e.hint)
    })?;
    Ok((root, value))
}

/// Loads a plan from text; `file` names it in diagnostics.
pub fn load_str(file: &str, source: &str, ctx: &Context) -> Result<LoadedPlan, LoadError> {
    let (root, plan): (Node, Plan) = typed(file, source).map_err(|d| LoadError::Invalid {
        file: file.to_string(),
        diagnostics: vec![d],
    })?;
    let positions = Positions::index(&root);
    let mut diagnostics = place(file, source, &positions, validate(&plan, ctx));
    let hash = match plan_hash(&root) {
        Ok(h) => Some(h),
        Err(e) => {
            diagnostics.insert(
                0,
                Diagnostic::new(Severity::Error, file, e.mark, "", e.message),
            );
            None
        }
    };
    match hash {
        Some(plan_hash) if diagnostics.iter().all(|d| d.severity == Severity::Warning) => {
            Ok(LoadedPlan {
                file: file.to_string(),
                base_dir: PathBuf::new(),
                plan,
                plan_hash,
                warnings: diagnostics,
            })
        }
        _ => Err(LoadError::Invalid {
            file: file.to_string(),
            diagnostics,
        }),
    }
}
