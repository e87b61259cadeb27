//! The assessor's modules import one another in layers, never in a circle (issue 28): for each
//! of its crates with modules (the engine, the bash parser), read from its own
//! sources, the graph of its files and the graph of its top-level modules have no cycle. A
//! cycle is printed with the files that make each of its edges.
//!
//! An edge A -> B means code of A names an item of B: a `use` or a path (also inside macro
//! calls) starting with `crate::`, `super::`, `self::` or a child module's name. Declaring a
//! child module (`mod b;`) is containment, not an edge. Test code (files named `tests.rs`,
//! modules under a `tests` module, items marked `#[cfg(test)]`) may reach anywhere and is left
//! out, as are the crate root (which only declares and re-exports) and binaries.

use proc_macro2::{TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// A module by its path inside the crate (`["rules", "compile"]`); the crate root is `[]`.
type Module = Vec<String>;

/// Edges from module to module, each with the files that make it.
type Graph = BTreeMap<Module, BTreeMap<Module, BTreeSet<PathBuf>>>;

#[test]
fn the_assessor_crates_have_no_import_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut failures = Vec::new();
    // The quality crate is one library file and a binary: it has no modules to put in a circle.
    for src in ["src", "bash-parser/src"] {
        let files = graph_of(&root.join(src));
        assert!(
            files.values().map(BTreeMap::len).sum::<usize>() > 0,
            "{src}: no import found; is the source read?"
        );
        for (level, graph) in [("file", files.clone()), ("top-level module", top_level(&files))] {
            for cycle in cycles(&graph) {
                failures.push(format!("{src}: {level} cycle\n{}", describe(&graph, &cycle)));
            }
        }
    }
    assert!(failures.is_empty(), "imports in a circle:\n{}", failures.join("\n"));
}

#[test]
fn a_circle_is_found_and_named() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let write = |name: &str, code: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a writable directory");
        std::fs::write(path, code).expect("a writable file");
    };
    write("lib.rs", "mod high; mod low; mod other; mod rules; pub use high::f;");
    write("other.rs", "fn g() { crate::f(); }");
    write(
        "low.rs",
        "use crate::rules::Rule; // crate::high in a comment is no edge\n",
    );
    write("high.rs", "pub fn f() { let _ = matches!(x, crate::low::Kind::A); }");
    write("rules/mod.rs", "mod spec; pub use spec::Rule;");
    write(
        "rules/spec.rs",
        "use super::super::high::f;\n#[cfg(test)] mod tests { use crate::low::X; }",
    );
    write("rules/tests.rs", "use crate::low::Y;");
    let files = graph_of(dir.path());
    let top = top_level(&files);
    let names = |graph: &Graph| -> Vec<Vec<String>> {
        cycles(graph)
            .into_iter()
            .map(|cycle| cycle.iter().map(|m| m.join("::")).collect())
            .collect()
    };
    assert_eq!(names(&top), vec![vec!["high", "low", "rules"]]);
    assert_eq!(names(&files), vec![vec!["high", "low", "rules", "rules::spec"]]);
    assert!(
        top[&vec!["other".to_string()]].contains_key(&vec!["high".to_string()]),
        "{top:?}"
    );
    let described = describe(&top, &cycles(&top)[0]);
    assert!(described.contains("low -> rules (low.rs)"), "{described}");
    assert!(described.contains("high -> low (high.rs)"), "{described}");
}

/// Every source file as a module, and the modules each one names.
fn graph_of(src: &Path) -> Graph {
    let mut files = Vec::new();
    collect_files(src, &mut files);
    let modules: BTreeMap<Module, PathBuf> = files
        .into_iter()
        .filter_map(|path| {
            let relative = path.strip_prefix(src).expect("under src");
            let mut parts: Module = relative
                .with_extension("")
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|last| last == "mod") {
                parts.pop();
            }
            match parts.first().map(String::as_str) {
                Some("lib") if parts.len() == 1 => None,
                Some("main" | "bin") => None,
                _ if parts.iter().any(|p| p == "tests") => None,
                _ => Some((parts, path)),
            }
        })
        .collect();
    // What the crate root re-exports (`crate::Engine`) is named through it.
    let mut root = Names::default();
    if let Ok(text) = std::fs::read_to_string(src.join("lib.rs")) {
        root.visit_file(&syn::parse_file(&text).unwrap_or_else(|e| panic!("lib.rs: {e}")));
    }
    let mut graph = Graph::new();
    for (module, path) in &modules {
        let text = std::fs::read_to_string(path).expect("a readable source file");
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut names = Names::default();
        names.visit_file(&file);
        let edges = graph.entry(module.clone()).or_default();
        for name in names.paths {
            if let Some(target) = resolve(&modules, &root.exports, module, &name)
                && target != *module
            {
                edges
                    .entry(target)
                    .or_default()
                    .insert(path.strip_prefix(src).expect("under src").to_path_buf());
            }
        }
    }
    graph
}

fn collect_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a readable directory").path();
        if path.is_dir() {
            collect_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The module a path names, if it is one of this crate's: the longest known module its
/// segments start with, after `crate`, `super` and `self` are applied.
fn resolve(
    modules: &BTreeMap<Module, PathBuf>,
    exports: &BTreeMap<String, Vec<String>>,
    here: &Module,
    path: &[String],
) -> Option<Module> {
    let mut base = here.clone();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &path[1..];
            if let Some(exported) = rest.first().and_then(|name| exports.get(name)) {
                return resolve(modules, &BTreeMap::new(), &Vec::new(), exported);
            }
        }
        Some("super" | "self") => {
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "super" => {
                        base.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        // A path relative to this module names a child module, or else another crate.
        Some(first) if !modules.contains_key(&[here.as_slice(), &[first.to_string()]].concat()) => return None,
        _ => {}
    }
    let full: Module = base.into_iter().chain(rest.iter().cloned()).collect();
    (0..=full.len())
        .rev()
        .map(|cut| full[..cut].to_vec())
        .find(|m| modules.contains_key(m))
}

/// Collapses the graph to the crate's top-level modules (the root, which only re-exports, is
/// left out).
fn top_level(files: &Graph) -> Graph {
    let mut graph = Graph::new();
    for (from, edges) in files {
        let Some(from_top) = from.first() else { continue };
        let entry = graph.entry(vec![from_top.clone()]).or_default();
        for (to, paths) in edges {
            match to.first() {
                Some(to_top) if to_top != from_top => {
                    entry
                        .entry(vec![to_top.clone()])
                        .or_default()
                        .extend(paths.iter().cloned());
                }
                _ => {}
            }
        }
    }
    graph
}

/// The strongly connected components with more than one module (Tarjan), each sorted.
fn cycles(graph: &Graph) -> Vec<Vec<Module>> {
    struct Tarjan<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g Module, (usize, usize)>,
        stack: Vec<&'g Module>,
        found: Vec<Vec<Module>>,
    }
    impl<'g> Tarjan<'g> {
        fn visit(&mut self, v: &'g Module) {
            let at = self.index.len();
            self.index.insert(v, (at, at));
            self.stack.push(v);
            for w in self.graph.get(v).into_iter().flat_map(BTreeMap::keys) {
                let low = match self.index.get(w) {
                    None => {
                        self.visit(w);
                        self.index[w].1
                    }
                    Some(&(index, _)) if self.stack.contains(&w) => index,
                    Some(_) => continue,
                };
                let entry = self.index.get_mut(v).expect("visited");
                entry.1 = entry.1.min(low);
            }
            if self.index[v].0 == self.index[v].1 {
                let start = self.stack.iter().rposition(|m| *m == v).expect("on the stack");
                let mut component: Vec<Module> = self.stack.drain(start..).cloned().collect();
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut tarjan = Tarjan {
        graph,
        index: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !tarjan.index.contains_key(v) {
            tarjan.visit(v);
        }
    }
    tarjan.found.sort();
    tarjan.found
}

/// The edges inside a cycle, one a line, with the files that make them.
fn describe(graph: &Graph, cycle: &[Module]) -> String {
    let mut lines = Vec::new();
    for from in cycle {
        for (to, paths) in &graph[from] {
            if cycle.contains(to) {
                let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                lines.push(format!(
                    "  {} -> {} ({})",
                    from.join("::"),
                    to.join("::"),
                    paths.join(", ")
                ));
            }
        }
    }
    lines.join("\n")
}

/// Every path a file's non-test code names, as segments, and what its `use`s bring in by name.
#[derive(Default)]
struct Names {
    paths: Vec<Vec<String>>,
    exports: BTreeMap<String, Vec<String>>,
}

impl Names {
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.use_tree(prefix, &path.tree);
                prefix.pop();
            }
            syn::UseTree::Name(name) => self.named(prefix, &name.ident, &name.ident),
            syn::UseTree::Rename(rename) => self.named(prefix, &rename.ident, &rename.rename),
            syn::UseTree::Glob(_) => self.paths.push(prefix.clone()),
            syn::UseTree::Group(group) => group.items.iter().for_each(|item| self.use_tree(prefix, item)),
        }
    }

    fn named(&mut self, prefix: &[String], ident: &syn::Ident, name: &syn::Ident) {
        let mut path = prefix.to_vec();
        // `use super::{self, x}` names the module itself.
        if ident != "self" {
            path.push(ident.to_string());
        }
        self.exports.insert(name.to_string(), path.clone());
        self.paths.push(path);
    }

    /// Paths inside a macro's tokens (`matches!(v, crate::facts::Value::Str(_))`).
    fn tokens(&mut self, tokens: TokenStream) {
        let mut current: Vec<String> = Vec::new();
        let mut colons = 0;
        for token in tokens {
            match token {
                TokenTree::Ident(ident) if current.is_empty() || colons == 2 => {
                    current.push(ident.to_string());
                    colons = 0;
                }
                TokenTree::Punct(punct) if punct.as_char() == ':' && !current.is_empty() && colons < 2 => colons += 1,
                other => {
                    self.flush(&mut current);
                    colons = 0;
                    match other {
                        TokenTree::Group(group) => self.tokens(group.stream()),
                        TokenTree::Ident(ident) => current.push(ident.to_string()),
                        _ => {}
                    }
                }
            }
        }
        self.flush(&mut current);
    }

    fn flush(&mut self, current: &mut Vec<String>) {
        if current.len() > 1 {
            self.paths.push(std::mem::take(current));
        }
        current.clear();
    }
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Meta>()
                .is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

fn attributes(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

impl<'ast> Visit<'ast> for Names {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test(attributes(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        // Inline modules other than tests are not used by the checked crates; a declared file
        // module (`mod b;`) is containment.
        assert!(
            module.content.is_none() || module.ident == "tests",
            "inline module {}",
            module.ident
        );
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.segments.len() > 1 {
            self.paths
                .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.tokens(mac.tokens.clone());
    }
}
