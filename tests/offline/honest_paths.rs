//! Paths that say what they are: a module is named where it is. No `pub use` in `src/` or
//! `crates/*/src` re-exports a module under another parent (once `engine::topology` was
//! `spec::topology` and `run::load` was `spec::load`), except the binary crate's one façade
//! at its root (`src/lib.rs` re-exports the core's top modules). A `pub use` of an item (a
//! type, a function, a constant) is an API, not an alias, and stays. And a study's directory,
//! `results/<study>/`, is put together in one place, `rundir::layout::study_dir`: no other
//! code joins anything onto the results directory.

use std::path::{Path, PathBuf};

use syn::visit::Visit;

use crate::function_length::{is_test_code, rust_files};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every path a `use` tree names, as its segments (a glob and `self` left out).
fn paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) if n.ident != "self" => {
            let mut full = prefix.clone();
            full.push(n.ident.to_string());
            out.push(full);
        }
        syn::UseTree::Name(_) => out.push(prefix.clone()),
        syn::UseTree::Rename(r) => {
            let mut full = prefix.clone();
            full.push(r.ident.to_string());
            out.push(full);
        }
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| paths(t, prefix, out)),
        syn::UseTree::Glob(_) => {}
    }
}

/// Whether `segments` name a module of ours: a file or folder of that name under the
/// crate it starts in (`crate::…` in `root`, `feedbench_core::…` in the core).
fn is_module(segments: &[String], root: &Path) -> bool {
    let (base, rest) = match segments.first().map(String::as_str) {
        Some("crate") => (root.to_path_buf(), &segments[1..]),
        Some("feedbench_core") => (repo().join("crates/core/src"), &segments[1..]),
        _ => return false,
    };
    if rest.is_empty() {
        return false;
    }
    // The binary's `crate::plan`, `crate::spec`… are the core's, through its façade.
    [base, repo().join("crates/core/src")].iter().any(|base| {
        let dir = rest.iter().fold(base.clone(), |d, s| d.join(s));
        dir.with_extension("rs").is_file() || dir.join("mod.rs").is_file()
    })
}

struct Uses<'a> {
    file: &'a str,
    root: &'a Path,
    found: Vec<String>,
}

impl<'ast> Visit<'ast> for Uses<'_> {
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if !matches!(u.vis, syn::Visibility::Public(_)) {
            return;
        }
        let mut all = Vec::new();
        paths(&u.tree, &mut Vec::new(), &mut all);
        for p in all.iter().filter(|p| is_module(p, self.root)) {
            self.found
                .push(format!("{}: pub use {}", self.file, p.join("::")));
        }
    }
}

/// Every `pub use` of a module in `root`'s files, the façade file aside.
fn module_reexports(root: &Path, facade: Option<&Path>) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let mut found = Vec::new();
    for f in files.iter().filter(|f| Some(f.as_path()) != facade) {
        let text = std::fs::read_to_string(f).unwrap();
        let parsed = syn::parse_file(&text).unwrap();
        let name = f.strip_prefix(repo()).unwrap().display().to_string();
        let mut v = Uses {
            file: &name,
            root,
            found: Vec::new(),
        };
        v.visit_file(&parsed);
        found.extend(v.found);
    }
    found
}

#[test]
fn no_module_is_re_exported_under_another_path() {
    let mut found = module_reexports(&repo().join("src"), Some(&repo().join("src/lib.rs")));
    found.extend(module_reexports(&repo().join("crates/core/src"), None));
    assert!(
        found.is_empty(),
        "aliases of modules:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_a_module_alias_and_passes_an_item() {
    let root = repo().join("crates/core/src");
    let parsed = syn::parse_file(
        "pub use crate::spec::topology;\npub use crate::files::{short, unused};\nuse crate::rundir::layout;\n",
    )
    .unwrap();
    let mut v = Uses {
        file: "f.rs",
        root: &root,
        found: Vec::new(),
    };
    v.visit_file(&parsed);
    assert_eq!(v.found, ["f.rs: pub use crate::spec::topology"]);
}

/// Every `.join(…)` onto the results directory (a variable or field named `results`)
/// outside test code, as `file:line`.
struct ResultsJoins<'a> {
    file: &'a str,
    found: Vec<String>,
}

/// Whether `e` names the results directory: `results`, `x.results`, `&results`, `(results)`.
fn names_results(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Path(p) => p.path.is_ident("results"),
        syn::Expr::Field(f) => matches!(&f.member, syn::Member::Named(i) if i == "results"),
        syn::Expr::Reference(r) => names_results(&r.expr),
        syn::Expr::Paren(p) => names_results(&p.expr),
        _ => false,
    }
}

impl<'ast> Visit<'ast> for ResultsJoins<'_> {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if !is_test_code(&item.attrs) {
            syn::visit::visit_item_mod(self, item);
        }
    }
    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_test_code(&item.attrs) {
            syn::visit::visit_item_fn(self, item);
        }
    }
    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        if call.method == "join" && names_results(&call.receiver) {
            let line = call.method.span().start().line;
            self.found.push(format!("{}:{line}", self.file));
        }
        syn::visit::visit_expr_method_call(self, call);
    }
}

fn results_joins(file: &str, text: &str) -> Vec<String> {
    let parsed = syn::parse_file(text).unwrap();
    let mut v = ResultsJoins {
        file,
        found: Vec::new(),
    };
    v.visit_file(&parsed);
    v.found
}

#[test]
fn a_studys_directory_is_put_together_only_by_its_owner() {
    let owner = repo().join("crates/core/src/rundir/layout.rs");
    let mut files = Vec::new();
    rust_files(&repo().join("src"), &mut files);
    rust_files(&repo().join("crates/core/src"), &mut files);
    let mut found = Vec::new();
    for f in files.iter().filter(|f| **f != owner) {
        let name = f.strip_prefix(repo()).unwrap().display().to_string();
        found.extend(results_joins(&name, &std::fs::read_to_string(f).unwrap()));
    }
    assert!(
        found.is_empty(),
        "`results/<study>` put together outside rundir::layout::study_dir:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_owner_check_sees_a_join_onto_the_results_directory_in_any_spelling() {
    let text = "fn a(results: &Path, r: &Req) {\n    let x = results.join(study);\n    let y = r.results.join(&s);\n    let z = (&r.results).join(s);\n    let ok = results_dir(r).join(s);\n}\n#[cfg(test)]\nmod tests { fn t() { results.join(1); } }\n";
    assert_eq!(results_joins("f.rs", text), ["f.rs:2", "f.rs:3", "f.rs:4"]);
}
