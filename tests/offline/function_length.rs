//! Functions short enough to hold in one's head: no function, method or closure in `src/` or
//! `crates/*/src` (test code excluded) is longer than [`BOUND`] lines, counted from its `fn`
//! (or a closure's `|`) to its closing brace. The functions that were longer when the bound was
//! set are listed in [`OVER`] with the length they had: each may only shrink, and leaves the
//! list once within the bound, so the list is a ledger of what is left to split, not a licence.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

/// The round's bound, in lines.
const BOUND: usize = 120;

/// `file::function` (a closure as `file::function::{closure}`) and its length when the bound
/// was set. Split one and remove it here; the test says when one shrank below the bound.
const OVER: &[(&str, usize)] = &[];

/// One function's place and length.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Length {
    lines: usize,
    name: String,
}

/// Walks a file, naming each function by its enclosing function (closures) and skipping
/// `#[cfg(test)]` items and `#[test]` functions.
struct Lengths<'a> {
    file: &'a str,
    within: Vec<String>,
    found: Vec<Length>,
}

pub(crate) fn is_test_code(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || (a.path().is_ident("cfg")
                && a.meta
                    .require_list()
                    .map(|l| {
                        l.tokens
                            .to_string()
                            .split(|c: char| !c.is_alphanumeric() && c != '_')
                            .any(|t| t == "test")
                    })
                    .unwrap_or(false))
    })
}

fn lines_of(span: proc_macro2::Span) -> usize {
    span.end().line - span.start().line + 1
}

impl Lengths<'_> {
    fn function(
        &mut self,
        name: &str,
        attrs: &[syn::Attribute],
        span: proc_macro2::Span,
        visit: impl FnOnce(&mut Self),
    ) {
        if is_test_code(attrs) {
            return;
        }
        let qualified = match self.within.last() {
            Some(outer) => format!("{outer}::{name}"),
            None => format!("{}::{name}", self.file),
        };
        self.found.push(Length {
            lines: lines_of(span),
            name: qualified.clone(),
        });
        self.within.push(qualified);
        visit(self);
        self.within.pop();
    }
}

impl<'ast> Visit<'ast> for Lengths<'_> {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if !is_test_code(&item.attrs) {
            syn::visit::visit_item_mod(self, item);
        }
    }
    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if is_test_code(&item.attrs) {
            return;
        }
        // A method is named by its type, as `file::Type::method`.
        let name = match &*item.self_ty {
            syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        let name = name.unwrap_or_else(|| "{impl}".to_string());
        let qualified = match self.within.last() {
            Some(outer) => format!("{outer}::{name}"),
            None => format!("{}::{name}", self.file),
        };
        self.within.push(qualified);
        syn::visit::visit_item_impl(self, item);
        self.within.pop();
    }
    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        let span = item
            .sig
            .fn_token
            .span
            .join(item.block.span())
            .unwrap_or(item.span());
        self.function(&item.sig.ident.to_string(), &item.attrs, span, |v| {
            syn::visit::visit_item_fn(v, item)
        });
    }
    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        let span = item
            .sig
            .fn_token
            .span
            .join(item.block.span())
            .unwrap_or(item.span());
        self.function(&item.sig.ident.to_string(), &item.attrs, span, |v| {
            syn::visit::visit_impl_item_fn(v, item)
        });
    }
    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        let span = item.span();
        self.function(&item.sig.ident.to_string(), &item.attrs, span, |v| {
            syn::visit::visit_trait_item_fn(v, item)
        });
    }
    fn visit_expr_closure(&mut self, closure: &'ast syn::ExprClosure) {
        self.function("{closure}", &closure.attrs, closure.span(), |v| {
            syn::visit::visit_expr_closure(v, closure)
        });
    }
}

/// Every `.rs` file under `dir`, at any depth (also `honest_paths`'s walk).
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every function of the binary's and the library crates' sources, a test module's file
/// (`tests.rs`, or under a `tests/` folder of `src`) left out.
fn lengths() -> Vec<Length> {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&repo.join("src"), &mut files);
    for krate in std::fs::read_dir(repo.join("crates")).unwrap() {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    let mut found = Vec::new();
    for path in files {
        let relative = path
            .strip_prefix(&repo)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if relative.ends_with("/tests.rs") || relative.contains("/tests/") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{relative}: {e}"));
        let mut walk = Lengths {
            file: &relative,
            within: Vec::new(),
            found: Vec::new(),
        };
        walk.visit_file(&file);
        found.extend(walk.found);
    }
    found
}

#[test]
fn no_function_is_longer_than_the_bound_unless_listed_and_none_listed_grew() {
    let found = lengths();
    assert!(
        found.len() > 500,
        "the walk found only {} functions",
        found.len()
    );
    let listed: BTreeMap<&str, usize> = OVER.iter().copied().collect();
    let mut wrong = Vec::new();
    for f in found.iter().filter(|f| f.lines > BOUND) {
        match listed.get(f.name.as_str()) {
            None => wrong.push(format!(
                "{} is {} lines (bound {BOUND}): split it",
                f.name, f.lines
            )),
            Some(&was) if f.lines > was => {
                wrong.push(format!("{} grew from {was} to {} lines", f.name, f.lines))
            }
            Some(_) => {}
        }
    }
    // Closures share their function's name; the longest of a name stands for it.
    for (name, was) in &listed {
        let longest = found
            .iter()
            .filter(|f| f.name == *name)
            .map(|f| f.lines)
            .max();
        match longest {
            None => wrong.push(format!(
                "{name} (listed at {was} lines) no longer exists: remove it from OVER"
            )),
            Some(lines) if lines <= BOUND => wrong.push(format!(
                "{name} is {lines} lines now, within the bound: remove it from OVER"
            )),
            Some(_) => {}
        }
    }
    let mut longest = found.clone();
    longest.sort_by(|a, b| b.cmp(a));
    let top: Vec<String> = longest
        .iter()
        .take(10)
        .map(|f| format!("{:>4} {}", f.lines, f.name))
        .collect();
    assert!(
        wrong.is_empty(),
        "{}\n\nthe longest:\n{}",
        wrong.join("\n"),
        top.join("\n")
    );
}

#[test]
fn the_walk_measures_functions_methods_and_closures_and_skips_test_code() {
    let text = "fn a() {\n    let c = |x: u8| {\n        x\n    };\n}\nimpl S {\n    fn m(&self) {}\n}\n#[cfg(test)]\nmod tests {\n    fn hidden() {}\n}\n#[test]\nfn t() {}\n";
    let file = syn::parse_file(text).unwrap();
    let mut walk = Lengths {
        file: "f.rs",
        within: Vec::new(),
        found: Vec::new(),
    };
    walk.visit_file(&file);
    let got: Vec<(String, usize)> = walk.found.into_iter().map(|f| (f.name, f.lines)).collect();
    assert_eq!(
        got,
        vec![
            ("f.rs::a".to_string(), 5),
            ("f.rs::a::{closure}".to_string(), 3),
            ("f.rs::S::m".to_string(), 1)
        ]
    );
}
