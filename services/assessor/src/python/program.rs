//! What is known of the program a walk follows: its functions, classes and methods, what each
//! returns, the calls being followed, files opened for writing, the latest directory listing,
//! and the values a loop variable takes.

use crate::facts::{Call, Expr, Value};
use ruff_python_ast as ast;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// A loop over a literal list is followed once per element, up to this many.
const MAX_LOOP_VALUES: usize = 8;

#[derive(Default)]
pub(super) struct Program<'t> {
    pub(super) functions: HashMap<String, &'t ast::StmtFunctionDef>,
    pub(super) classes: HashSet<String>,
    /// Methods by `Class.method` and by bare name.
    pub(super) methods: HashMap<String, &'t ast::StmtFunctionDef>,
    /// What each function returns when its parameters are unknown.
    pub(super) summaries: HashMap<String, Expr>,
    /// Return values of the functions being walked, innermost last.
    pub(super) returns: Vec<Option<Expr>>,
    pub(super) calling: Vec<String>,
    pub(super) followed: usize,
    pub(super) current_class: Option<String>,
    /// The annotated fields of a class with no `__init__` of its own (a dataclass, a named
    /// tuple), in order: its constructor's arguments set them.
    pub(super) fields: HashMap<String, Vec<String>>,
    /// Lambdas bound to a name (`read = lambda p: open(p).read()`): called, they are followed.
    pub(super) lambdas: HashMap<String, &'t ast::ExprLambda>,
    /// Variables holding a file opened for writing, with its path.
    pub(super) opened: HashMap<String, Expr>,
    /// The path of the latest `open(...)` call, for the assignment or `with` that names it.
    pub(super) last_open: Option<(String, Expr)>,
    /// The latest directory listing call (`os.walk`, `glob.glob`, `Path.iterdir`) and its base.
    pub(super) last_listing: Option<(String, Expr)>,
}

const OPENERS: &[&str] = &[
    "open",
    "io.open",
    "builtins.open",
    "codecs.open",
    "pathlib.Path.open",
    "aiofiles.open",
    // Archives opened for writing: what is added to them is written to their file.
    "zipfile.ZipFile",
    "tarfile.open",
    "tarfile.TarFile",
];
const LISTINGS: &[&str] = &[
    "os.walk",
    "os.listdir",
    "os.scandir",
    "glob.glob",
    "glob.iglob",
    "pathlib.Path.iterdir",
    "pathlib.Path.glob",
    "pathlib.Path.rglob",
    "pathlib.Path.walk",
];

impl Program<'_> {
    pub(super) fn note_call(&mut self, call: &Call) {
        if OPENERS.contains(&call.name.as_str()) {
            let path = if call.name == "pathlib.Path.open" {
                call.receiver.clone()
            } else {
                call.args.first().cloned().or_else(|| call.kwarg("file").cloned())
            };
            let writes = if call.name == "pathlib.Path.open" {
                call.args.first()
            } else {
                call.args.get(1).or_else(|| call.kwarg("mode"))
            }
            .and_then(|m| m.text())
            .is_some_and(|m| m.contains(['w', 'a', 'x']));
            self.last_open = path.filter(|_| writes).map(|p| (call.name.clone(), p));
        }
        if LISTINGS.contains(&call.name.as_str()) {
            let base = match call.name.as_str() {
                "pathlib.Path.iterdir" | "pathlib.Path.walk" => call.receiver.clone(),
                "pathlib.Path.glob" | "pathlib.Path.rglob" => call.receiver.clone().map(|r| {
                    let pattern = call.args.first().and_then(|a| a.text()).unwrap_or("{}".into());
                    // `Path().glob(p)` lists the working directory: its entries are relative.
                    let entry = match r.text().as_deref() {
                        None => format!("{{}}/{pattern}"),
                        Some("" | ".") => pattern.into_owned(),
                        Some(base) => format!("{}/{pattern}", base.trim_end_matches('/')),
                    };
                    Expr {
                        value: Value::Formatted(entry),
                        taints: r.taints,
                        trail: r.trail.clone(),
                    }
                }),
                _ => call.args.first().cloned(),
            };
            self.last_listing = base.map(|b| (call.name.clone(), b));
        }
    }

    pub(super) fn note_opened(&mut self, name: &str, value: &Expr) {
        match &value.value {
            Value::Call(callee) if OPENERS.contains(&callee.as_str()) => {
                if let Some((opener, path)) = self.last_open.take()
                    && opener == *callee
                {
                    self.opened.insert(name.to_string(), path);
                }
            }
            _ => {
                self.opened.remove(name);
            }
        }
    }
}

/// The values a loop variable takes: each element of a short literal list, an entry of a
/// listed directory, or "something from the iterated value" (its labels only).
pub(super) fn loop_values(iterated: &Expr, listing: Option<&(String, Expr)>) -> Vec<Expr> {
    if let Value::Seq(items) = &iterated.value
        && !items.is_empty()
        && items.len() <= MAX_LOOP_VALUES
        && items
            .iter()
            .all(|i| matches!(i.value, Value::Str(_) | Value::Path(_) | Value::Seq(_)))
    {
        return items.iter().map(|i| i.clone().with_taints(iterated.taints)).collect();
    }
    if let (Value::Call(callee), Some((listed, base))) = (&iterated.value, listing)
        && callee == listed
        && let Some(text) = base.text()
    {
        let entry = match callee.as_str() {
            "glob.glob" | "glob.iglob" | "pathlib.Path.glob" | "pathlib.Path.rglob" => text.into_owned(),
            _ => format!("{}/{{}}", text.trim_end_matches('/')),
        };
        let value = Expr {
            value: if callee.starts_with("pathlib.") {
                Value::Path(entry)
            } else {
                Value::Formatted(entry)
            },
            taints: iterated.taints.union(base.taints),
            trail: base.trail.clone(),
        };
        // `for root, dirs, files in os.walk(d)`: the first of the tuple is the directory.
        return vec![
            Expr::new(Value::Seq(vec![
                value.clone(),
                Expr::other(value.taints),
                Expr::other(value.taints),
            ]))
            .with_taints(value.taints)
            .with_trail_of(&[&value]),
        ]
        .into_iter()
        .map(|seq| if callee == "os.walk" { seq } else { value.clone() })
        .collect();
    }
    vec![Expr::other(iterated.taints).with_trail_of(&[iterated])]
}
