//! Image identity: every run that names an image reference ran the same image ID, or the
//! change is accounted for. Changed sources change run hashes (the inputs digest), so what
//! is left is the image itself: rebuilt from the same source files (pruned and rebuilt, a
//! re-debootstrapped base) is a declared, benign rebuild naming both IDs; rebuilt from
//! source files an amendment changed is declared by it; rebuilt from changed files nothing
//! declares (only possible with `--allow-uncommitted`, or by hand) is an undeclared
//! departure naming the files; an ID change of an image the plan does not build has no
//! sources to check and is undeclared too.

use std::collections::{BTreeMap, BTreeSet};

use super::{Draft, Entries};
use crate::audit::history::{short, History};
use crate::audit::report::{Kind, Standing};
use crate::audit::study::StudyFiles;
use crate::inputs::{self, FileChange, InputFile};
use crate::ledger::journal::Event;
use crate::ledger::manifest::Manifest;
use crate::plan::model::BuildRecipe;

/// One run's use of an image: when it started, its id and attempt, the image ID, and the
/// source files of the image's build context as its manifest records them.
struct Use<'a> {
    started: u128,
    run: &'a str,
    attempt: u32,
    image_id: &'a str,
    manifest: &'a Manifest,
}

pub(super) fn check(history: &History, study: &StudyFiles, entries: &Entries) -> Vec<Draft> {
    let recipes = build_recipes(history);
    let amended: BTreeSet<&str> = entries
        .iter()
        .flat_map(|(_, e)| match e {
            Event::PlanAmended { files_changed, .. } => files_changed.as_slice(),
            _ => &[],
        })
        .map(String::as_str)
        .collect();
    let mut uses: BTreeMap<&str, Vec<Use>> = BTreeMap::new();
    for d in &study.run_dirs {
        let Ok(Some(m)) = &d.manifest else { continue };
        let started = m.started_wall_ns.parse::<u128>().unwrap_or(0);
        let mut seen = BTreeSet::new();
        for img in &m.images {
            let Some(id) = img.image_id.as_deref() else {
                continue;
            };
            if seen.insert(img.image.as_str()) {
                uses.entry(img.image.as_str()).or_default().push(Use {
                    started,
                    run: &m.run_id,
                    attempt: m.attempt,
                    image_id: id,
                    manifest: m,
                });
            }
        }
    }
    let mut drafts = Vec::new();
    for (image, mut list) in uses {
        list.sort_by(|a, b| (a.started, a.run).cmp(&(b.started, b.run)));
        for pair in list.windows(2) {
            let (before, after) = (&pair[0], &pair[1]);
            if before.image_id == after.image_id {
                continue;
            }
            drafts.push(change(image, before, after, recipes.get(image), &amended));
        }
    }
    drafts
}

/// The build recipe of every image reference some version of the plan builds.
fn build_recipes(history: &History) -> BTreeMap<String, BuildRecipe> {
    let mut out = BTreeMap::new();
    for plan in history.versions.iter().filter_map(|v| v.plan.as_deref()) {
        let mut add = |image: &str, b: &Option<BuildRecipe>| {
            if let Some(b) = b {
                out.insert(image.to_string(), b.clone());
            }
        };
        for c in plan.contenders.values() {
            add(c.image.as_str(), &c.build);
        }
        let t = &plan.topology;
        for s in t.services.values() {
            add(s.image.as_str(), &s.build);
        }
        add(t.balancer.image.as_str(), &t.balancer.build);
        add(t.fault_proxy.image.as_str(), &t.fault_proxy.build);
        add(t.load_generator.image.as_str(), &t.load_generator.build);
        add(t.co_tenant.image.as_str(), &t.co_tenant.build);
    }
    out
}

/// The files of `m`'s inputs that the image built by `b` is made from: its context's files
/// and prepared files, and the lock file of a cargo-built binary.
fn sources(m: &Manifest, b: &BuildRecipe) -> Vec<InputFile> {
    let dir = format!("{}/", inputs::normal(b.context.trim_end_matches('/')));
    m.inputs
        .iter()
        .filter(|f| f.path.starts_with(&dir) || (b.cargo.is_some() && f.role == inputs::CARGO_LOCK))
        .cloned()
        .collect()
}

fn change(
    image: &str,
    before: &Use,
    after: &Use,
    recipe: Option<&BuildRecipe>,
    amended: &BTreeSet<&str>,
) -> Draft {
    let mut evidence = vec![
        format!(
            "`{}` attempt {} ran {image} as {}",
            before.run,
            before.attempt,
            short_id(before.image_id)
        ),
        format!(
            "`{}` attempt {} ran {image} as {}",
            after.run,
            after.attempt,
            short_id(after.image_id)
        ),
    ];
    let subject = format!(
        "{image}: {} → {}",
        short_id(before.image_id),
        short_id(after.image_id)
    );
    let Some(recipe) = recipe else {
        return Draft {
            kind: Kind::ImageChanged,
            standing: Standing::Undeclared,
            subject,
            title: format!("The image {image} changed between runs, and the plan does not build it"),
            reason: "feedbench knows no source files of an image it does not build, so the change cannot be shown benign: pin the image by digest, or build it from a context the plan names".into(),
            evidence,
        };
    };
    let (old, new) = (
        sources(before.manifest, recipe),
        sources(after.manifest, recipe),
    );
    if old.is_empty() || new.is_empty() {
        evidence.push(
            "a manifest records no source files for it (written before inputs were recorded)"
                .into(),
        );
        return Draft {
            kind: Kind::ImageChanged,
            standing: Standing::Undeclared,
            subject,
            title: format!("The image {image} changed between runs, and its sources were not recorded"),
            reason: "without the source files' digests in both manifests the rebuild cannot be shown benign".into(),
            evidence,
        };
    }
    let changed: Vec<FileChange> = inputs::changed(&old, &new);
    if changed.is_empty() {
        evidence.push(format!(
            "the same {} source files (the same sha256 each) in both manifests",
            new.len()
        ));
        return Draft {
            kind: Kind::ImageRebuilt,
            standing: Standing::Declared,
            subject,
            title: format!("The image {image} was rebuilt from unchanged sources"),
            reason: "a rebuild (the image pruned and built again, or its base made again) is not bit-identical; its source files are, so the runs before and after ran the same recipe".into(),
            evidence,
        };
    }
    evidence.extend(changed.iter().map(|c| format!("source {c}")));
    let undeclared: Vec<&FileChange> = changed
        .iter()
        .filter(|c| !amended.contains(c.path.as_str()))
        .collect();
    if undeclared.is_empty() {
        return Draft {
            kind: Kind::ImageRebuilt,
            standing: Standing::Declared,
            subject,
            title: format!("The image {image} was rebuilt from sources an amendment changed"),
            reason: "every changed source file is named by a plan-amended event".into(),
            evidence,
        };
    }
    let files: Vec<&str> = undeclared.iter().map(|c| c.path.as_str()).collect();
    Draft {
        kind: Kind::ImageChanged,
        standing: Standing::Undeclared,
        subject,
        title: format!(
            "The image {image} was rebuilt from changed sources: {}",
            super::quoted(&files)
        ),
        reason: "no amendment names these files: declare the change (feedbench run --amend) and run again what it touched, or restore the files".into(),
        evidence,
    }
}

/// `sha256:0123456789ab` of an image ID.
fn short_id(id: &str) -> String {
    match id.strip_prefix("sha256:") {
        Some(h) => format!("sha256:{}", short(h)),
        None => short(id).to_string(),
    }
}
