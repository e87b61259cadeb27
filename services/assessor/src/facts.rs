//! The normalized model the rules match against.
//!
//! Both extractors (Python and shell) reduce a syntax tree to the same few kinds of facts: calls
//! (a Python call or a shell command), imports, bindings (a name given a value), string literals
//! and resolved name references. Rules are written against these facts, not against a grammar,
//! so one matcher serves both languages and a rule never needs Rust code of its own.

use std::fmt::Write as _;
use std::sync::Arc;

/// A value's text cut for a trail step.
pub fn short(text: &str) -> String {
    shorten_to(text.trim(), 60)
}

/// At most `limit` characters (never a cut inside a UTF-8 sequence), with an ellipsis when cut.
pub fn shorten_to(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        None => text.to_string(),
        Some(_) => {
            let mut short: String = text.chars().take(limit.saturating_sub(1)).collect();
            short.push('…');
            short
        }
    }
}

/// Data-flow labels carried by values, one bit per label declared by the rule set's sources.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Taints(pub u64);

impl Taints {
    pub const NONE: Taints = Taints(0);

    pub fn union(self, other: Taints) -> Taints {
        Taints(self.0 | other.0)
    }

    /// These labels with `other`'s taken away.
    pub fn without(self, other: Taints) -> Taints {
        Taints(self.0 & !other.0)
    }

    pub fn intersects(self, other: Taints) -> bool {
        self.0 & other.0 != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// Where a fact is in the submitted source. Facts found inside embedded code (a shell command in
/// a Python string, Python in `python3 -c`) carry the span of the outer expression, which is what
/// a human can find in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// 1-based.
    pub line: u32,
    /// 1-based, in bytes.
    pub column: u32,
    pub start_byte: usize,
    pub end_byte: usize,
}

/// What an expression evaluates to, as far as a static look can tell.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Str(String),
    /// A filesystem path built with pathlib: reads like a string, but its methods are
    /// `pathlib.Path.*`.
    Path(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    None,
    /// A reference that is not a known literal, by its resolved qualified name
    /// (`ssl.PROTOCOL_SSLv2`, `os.system`, a plain variable or parameter name).
    Name(String),
    /// The result of calling the named callee.
    Call(String),
    /// A string built from literal and non-literal parts (f-string, `%`, `.format`, `+`, a shell
    /// word with expansions); holes are kept as `{}` or as the shell expansion's text.
    Formatted(String),
    /// A list, tuple or set display.
    Seq(Vec<Expr>),
    Other,
}

/// A value with the data-flow labels that reach it, and the way it came (for explanations).
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub value: Value,
    pub taints: Taints,
    pub trail: Option<Arc<Trail>>,
}

/// The path a value took through the program: where it started and each name, parameter or
/// command it went through ("`/etc/gshadow` → `body` (line 11) → `send(body)` (line 12)").
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Trail {
    pub steps: Vec<String>,
}

/// Steps kept per trail: the start and the latest ones.
const MAX_TRAIL_STEPS: usize = 8;

impl Trail {
    pub fn render(&self) -> String {
        self.steps.join(" → ")
    }
}

impl Expr {
    pub fn new(value: Value) -> Expr {
        Expr {
            value,
            taints: Taints::NONE,
            trail: None,
        }
    }

    /// Text a program builds: a literal when every part of it is known, else formatted (an
    /// unknown part reads `{}` or `$NAME`).
    pub fn built(text: String, literal: bool, taints: Taints) -> Expr {
        Expr {
            value: if literal {
                Value::Str(text)
            } else {
                Value::Formatted(text)
            },
            taints,
            trail: None,
        }
    }

    pub fn other(taints: Taints) -> Expr {
        Expr {
            value: Value::Other,
            taints,
            trail: None,
        }
    }

    pub fn with_taints(mut self, taints: Taints) -> Expr {
        self.taints = self.taints.union(taints);
        self
    }

    /// This value, having gone through one more place. A value with no trail yet starts one at
    /// its own text (a literal path, a URL) or at `origin` (the call or name it came from).
    pub fn step(mut self, origin: impl FnOnce() -> String, step: impl FnOnce() -> String) -> Expr {
        let mut trail = match self.trail.take() {
            Some(t) => Arc::unwrap_or_clone(t),
            None => {
                let start = match &self.value {
                    Value::Str(s) | Value::Path(s) if !s.is_empty() => format!("`{}`", short(s)),
                    _ => origin(),
                };
                Trail { steps: vec![start] }
            }
        };
        let step = step();
        if trail.steps.last() != Some(&step) {
            if trail.steps.len() >= MAX_TRAIL_STEPS {
                trail.steps.remove(1);
            }
            trail.steps.push(step);
        }
        self.trail = Some(Arc::new(trail));
        self
    }

    /// The trail of the first of `parts` that has one (for values computed from several).
    pub fn with_trail_of(mut self, parts: &[&Expr]) -> Expr {
        if self.trail.is_none() {
            self.trail = parts
                .iter()
                .find(|p| p.trail.is_some() && !p.taints.is_empty())
                .or_else(|| parts.iter().find(|p| p.trail.is_some()))
                .and_then(|p| p.trail.clone());
        }
        self
    }

    /// The text a rule's regular expression sees: string contents, the literal skeleton of a
    /// formatted string, the qualified name of a reference or a call, sequence elements joined by
    /// spaces (so `["rm", "-rf", "/"]` reads as `rm -rf /`).
    pub fn text(&self) -> Option<std::borrow::Cow<'_, str>> {
        use std::borrow::Cow;
        match &self.value {
            Value::Str(s) | Value::Path(s) | Value::Formatted(s) | Value::Name(s) | Value::Call(s) => {
                Some(Cow::Borrowed(s.as_str()))
            }
            Value::Int(i) => Some(Cow::Owned(i.to_string())),
            Value::Float(f) => Some(Cow::Owned(f.to_string())),
            Value::Bool(b) => Some(Cow::Borrowed(if *b { "True" } else { "False" })),
            Value::None => Some(Cow::Borrowed("None")),
            Value::Seq(items) => {
                let mut joined = String::new();
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        joined.push(' ');
                    }
                    match item.text() {
                        Some(t) => joined.push_str(&t),
                        None => joined.push_str("{}"),
                    }
                }
                Some(Cow::Owned(joined))
            }
            Value::Other => None,
        }
    }

    /// Python truthiness of a literal; `None` when the value is not a literal.
    pub fn literal_truthiness(&self) -> Option<bool> {
        match &self.value {
            Value::Str(s) | Value::Path(s) => Some(!s.is_empty()),
            Value::Int(i) => Some(*i != 0),
            Value::Float(f) => Some(*f != 0.0),
            Value::Bool(b) => Some(*b),
            Value::None => Some(false),
            Value::Seq(items) => Some(!items.is_empty()),
            _ => None,
        }
    }

    pub fn is_literal(&self) -> bool {
        match &self.value {
            Value::Str(_) | Value::Path(_) | Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::None => true,
            Value::Seq(items) => items.iter().all(Expr::is_literal),
            _ => false,
        }
    }
}

/// A Python call or a shell command.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// Python: the callee's qualified name with import aliases resolved (`subprocess.run`, or
    /// `requests.Session.post` for a method of an object made by `requests.Session()`).
    /// Shell: the command's name without its directory (`rm` for `/bin/rm`).
    pub name: String,
    /// The receiver of a method call (`Path("/etc/passwd")` in `Path("/etc/passwd").read_text()`).
    pub receiver: Option<Expr>,
    pub args: Vec<Expr>,
    pub kwargs: Vec<(String, Expr)>,
    /// Shell: option letters and long option names, without dashes (`-rf` gives `r` and `f`).
    pub flags: Vec<String>,
    /// Shell: commands before this one in its pipeline.
    pub pipe_from: Vec<String>,
    /// Shell: commands after this one in its pipeline.
    pub pipe_to: Vec<String>,
    /// Shell: the wrappers this command runs under (`sudo`, `nohup`, `env`, ...).
    pub via: Vec<String>,
    /// Labels reaching any argument, the receiver, or (shell) standard input.
    pub taints: Taints,
    pub span: Span,
    /// Made inside a loop's body (`Facts::loop_depth`); rules ask for it as the flag `@loop`.
    pub in_loop: bool,
}

impl Call {
    pub fn new(name: String, span: Span) -> Call {
        Call {
            name,
            receiver: None,
            args: Vec::new(),
            kwargs: Vec::new(),
            flags: Vec::new(),
            pipe_from: Vec::new(),
            pipe_to: Vec::new(),
            via: Vec::new(),
            taints: Taints::NONE,
            span,
            in_loop: false,
        }
    }

    /// Whether the command was given this option (or the analysis set it: `@loop`, `probe`).
    pub fn has_flag(&self, flag: &str) -> bool {
        (self.in_loop && flag == LOOP_FLAG) || self.flags.iter().any(|f| f == flag)
    }

    pub fn kwarg(&self, name: &str) -> Option<&Expr> {
        self.kwargs.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// All argument values, positional then keyword.
    pub fn all_args(&self) -> impl Iterator<Item = &Expr> {
        self.args.iter().chain(self.kwargs.iter().map(|(_, v)| v))
    }

    /// The command line as a human would type it, for explanations of embedded commands.
    pub fn describe(&self) -> String {
        let mut line = self.name.clone();
        for arg in &self.args {
            match arg.text() {
                Some(t) => {
                    let _ = write!(line, " {t}");
                }
                None => line.push_str(" …"),
            }
        }
        line
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Import {
    /// The fully qualified module or member (`xml.etree.ElementTree`, `os.system`).
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BindingKind {
    /// `name = value`
    Assign,
    /// `name == value`, `value != name`
    Compare,
    /// `{"name": value}`
    DictEntry,
    /// `f(name=value)`
    Kwarg,
    /// `def f(name=value)`
    Default,
}

/// A name given (or compared with) a value: what hard-coded-secret rules look at.
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    pub kind: BindingKind,
    /// The target as written (`password`, `self.password`, a dict key's text).
    pub target: String,
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StringLit {
    /// The literal parts (holes of a formatted string as `{}`).
    pub text: String,
    /// Built with non-literal parts (f-string, `%`, `.format`, `+`).
    pub formatted: bool,
    pub span: Span,
}

/// A resolved reference to a module attribute (`ssl.PROTOCOL_SSLv2`, `os.environ`).
#[derive(Clone, Debug, PartialEq)]
pub struct NameRef {
    pub name: String,
    pub span: Span,
}

/// Everything extracted from code of one language (the submitted file, plus code embedded in it
/// in that language).
#[derive(Debug, Default)]
pub struct Facts {
    pub calls: Vec<Call>,
    pub imports: Vec<Import>,
    pub bindings: Vec<Binding>,
    pub strings: Vec<StringLit>,
    pub names: Vec<NameRef>,
    /// Loop bodies the walk is inside (`for`, `while`, `until`, both languages): a call made
    /// there may run again and again, which a rule can ask for (`flags = ["@loop"]`: a
    /// screenshot taken in a loop is the screen watched; one taken after a countdown is not).
    pub loop_depth: u32,
}

/// The flag a call made inside a loop body answers to (`Call::has_flag`).
pub const LOOP_FLAG: &str = "@loop";

/// Upper bound on facts of each kind kept for one request: a generated file of a million tiny
/// calls must not make rule matching quadratic or the findings list unbounded.
pub const MAX_FACTS_PER_KIND: usize = 50_000;

impl Facts {
    pub fn push_call(&mut self, mut call: Call) {
        if self.calls.len() < MAX_FACTS_PER_KIND {
            call.in_loop |= self.loop_depth > 0;
            self.calls.push(call);
        }
    }

    pub fn push_string(&mut self, lit: StringLit) {
        if self.strings.len() < MAX_FACTS_PER_KIND {
            self.strings.push(lit);
        }
    }

    pub fn push_binding(&mut self, binding: Binding) {
        if self.bindings.len() < MAX_FACTS_PER_KIND {
            self.bindings.push(binding);
        }
    }

    pub fn push_name(&mut self, name: NameRef) {
        if self.names.len() < MAX_FACTS_PER_KIND {
            self.names.push(name);
        }
    }
}

/// Byte offsets to lines and columns.
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(source: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(memchr_newlines(source));
        LineIndex { starts }
    }

    /// The 1-based line of a byte offset.
    pub fn line(&self, offset: usize) -> u32 {
        self.starts.partition_point(|&s| s <= offset).max(1) as u32
    }

    pub fn span(&self, start: usize, end: usize) -> Span {
        let line = self.line(start);
        let line_start = self.starts.get(line as usize - 1).copied().unwrap_or(0);
        Span {
            line,
            column: start.saturating_sub(line_start) as u32 + 1,
            start_byte: start,
            end_byte: end,
        }
    }
}

fn memchr_newlines(source: &str) -> impl Iterator<Item = usize> + '_ {
    source
        .bytes()
        .enumerate()
        .filter(|(_, b)| *b == b'\n')
        .map(|(i, _)| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_offsets_map_to_lines_and_columns() {
        let index = LineIndex::new("ab\ncd\n\nx");
        assert_eq!((index.span(0, 1).line, index.span(0, 1).column), (1, 1));
        assert_eq!((index.span(4, 5).line, index.span(4, 5).column), (2, 2));
        assert_eq!((index.span(7, 8).line, index.span(7, 8).column), (4, 1));
    }
}
