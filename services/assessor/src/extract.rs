//! Turning source text into facts: parsing under a time budget, and the state both extractors
//! share (the facts found so far, the rule set's data-flow sources, the nesting limit).

use crate::facts::{Facts, Span};
use crate::rules::RuleSet;
use airlock_protocol::request::Language;
use std::ops::ControlFlow;
use std::time::Duration;
use tree_sitter::{Node, Parser, Tree};

/// Embedded code inside embedded code inside ... is followed this many levels deep.
pub const MAX_EMBED_LEVEL: u32 = 4;

/// The analysis budget of one request, in CPU time of the analysing thread: a machine busy with
/// other work slows the wall clock, not the amount of analysis a request may have (an ordinary
/// large file must not fail closed because the host is loaded). Checking the clock on every
/// node would cost more than the work it guards, so most checks only count.
pub struct Budget {
    /// How far parsing got (bytes) when it gave up.
    pub parsed_to: usize,
    clock: CpuClock,
    ticks: u32,
    exhausted: bool,
}

/// CPU time used by this thread since the clock was started.
#[derive(Clone, Copy)]
pub struct CpuClock {
    start: Duration,
    limit: Duration,
}

impl CpuClock {
    pub fn passed(&self) -> bool {
        thread_cpu_time().saturating_sub(self.start) >= self.limit
    }
}

/// CPU time this thread has used.
fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes the timespec it is given; the thread CPU-time clock
    // exists on every Linux kernel.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if rc != 0 {
        // Cannot happen on Linux; an unreadable clock must not make the budget endless.
        return Duration::MAX;
    }
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

impl Budget {
    pub fn new(limit: Duration) -> Budget {
        Budget {
            parsed_to: 0,
            clock: CpuClock {
                start: thread_cpu_time(),
                limit,
            },
            ticks: 0,
            exhausted: false,
        }
    }

    pub fn exhausted(&mut self) -> bool {
        if self.exhausted {
            return true;
        }
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks.is_multiple_of(128) {
            self.check_now()
        } else {
            false
        }
    }

    pub fn check_now(&mut self) -> bool {
        if !self.exhausted && self.clock.passed() {
            self.exhausted = true;
        }
        self.exhausted
    }

    /// The clock, for callbacks that cannot borrow the budget (tree-sitter's progress).
    pub fn clock(&self) -> CpuClock {
        self.clock
    }
}

pub fn grammar(language: Language) -> tree_sitter::Language {
    match language {
        Language::Python => tree_sitter_python::LANGUAGE.into(),
        Language::Bash => tree_sitter_bash::LANGUAGE.into(),
    }
}

/// Parses under the budget; `None` when the budget ran out (or, in theory, the grammar could not
/// be loaded, which the grammar version tests rule out).
pub fn parse(language: Language, source: &str, budget: &mut Budget) -> Option<Tree> {
    let mut parser = Parser::new();
    if let Err(e) = parser.set_language(&grammar(language)) {
        tracing::error!(error = %e, "tree-sitter grammar does not match the library");
        return None;
    }
    let clock = budget.clock();
    let mut reached = 0usize;
    let mut calls = 0u32;
    let mut give_up = |state: &tree_sitter::ParseState| {
        reached = reached.max(state.current_byte_offset());
        calls = calls.wrapping_add(1);
        if calls.is_multiple_of(16) && clock.passed() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let bytes = source.as_bytes();
    let tree = parser.parse_with_options(
        &mut |offset, _| bytes.get(offset..).unwrap_or_default(),
        None,
        Some(tree_sitter::ParseOptions::new().progress_callback(&mut give_up)),
    );
    if tree.is_none() {
        budget.check_now();
        budget.parsed_to = reached;
    }
    tree
}

/// Syntax errors of a parse, for `ParseStatus::Partial`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyntaxErrors {
    pub count: u32,
    pub first_line: u32,
}

/// Counts error and missing nodes without recursion, so any nesting depth is safe.
pub fn syntax_errors(tree: &Tree, budget: &mut Budget) -> SyntaxErrors {
    let mut errors = SyntaxErrors::default();
    if !tree.root_node().has_error() {
        return errors;
    }
    let mut cursor = tree.walk();
    loop {
        let node = cursor.node();
        if node.is_error() || node.is_missing() {
            errors.count = errors.count.saturating_add(1);
            let line = error_line(node);
            if errors.first_line == 0 || line < errors.first_line {
                errors.first_line = line;
            }
        }
        // Subtrees without errors need no visit.
        if node.has_error() && !node.is_error() && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return errors;
            }
        }
        if budget.exhausted() {
            return errors;
        }
    }
}

/// Where an error node goes wrong. Recovery often wraps whole valid statements in the error
/// node, so its start is too early: the first token it could not use (an unnamed child) is the
/// place a human should look.
fn error_line(node: Node<'_>) -> u32 {
    let mut cursor = node.walk();
    let unexpected = node
        .children(&mut cursor)
        .find(|c| !c.is_named() || c.is_error() || c.is_missing())
        .unwrap_or(node);
    unexpected.start_position().row as u32 + 1
}

/// State of one request's extraction.
pub struct Context<'r> {
    pub rules: &'r RuleSet,
    pub python: Facts,
    pub shell: Facts,
    pub budget: Budget,
    pub max_depth: u32,
    /// Set when some subtree was deeper than `max_depth` and was not analysed.
    pub too_deep: bool,
    /// Node kinds visited in the submitted file's tree (not in embedded code), by grammar id:
    /// query rules whose starting kinds never appear need not run.
    pub seen_kinds: Vec<bool>,
    /// The furthest line of the submitted file the extraction reached, for saying where an
    /// analysis that ran out of budget stopped.
    pub reached_line: u32,
    /// The request's arguments and environment, when the request is known: the values of
    /// `sys.argv[1:]`, `$1…`, `os.environ[...]` and `$NAME`.
    pub inputs: Option<&'r airlock_protocol::request::Inputs>,
    /// Labels of what the program wrote to each file, so reading or running it later carries
    /// them (a download saved and then run, keys archived and then uploaded).
    pub files: crate::effects::FileTaints,
    embed_level: u32,
}

impl<'r> Context<'r> {
    pub fn new(rules: &'r RuleSet, budget: Budget, max_depth: u32) -> Context<'r> {
        Context {
            rules,
            python: Facts::default(),
            shell: Facts::default(),
            budget,
            max_depth,
            too_deep: false,
            seen_kinds: Vec::new(),
            reached_line: 0,
            inputs: None,
            files: Default::default(),
            embed_level: 0,
        }
    }

    /// True when a subtree at `depth` must not be analysed (too deep, or out of time).
    pub fn stop_at(&mut self, depth: u32) -> bool {
        if depth > self.max_depth {
            self.too_deep = true;
            return true;
        }
        self.budget.exhausted()
    }

    /// Records a node kind of the submitted file's own tree.
    pub fn saw(&mut self, node: Node<'_>, outer: Option<Span>) {
        if outer.is_some() {
            return;
        }
        let id = usize::from(node.kind_id());
        if id >= self.seen_kinds.len() {
            self.seen_kinds.resize(id + 1, false);
        }
        self.seen_kinds[id] = true;
        let line = node.start_position().row as u32 + 1;
        if line > self.reached_line {
            self.reached_line = line;
        }
    }

    pub fn extract(&mut self, language: Language, tree: &Tree, source: &str, outer: Option<Span>) {
        match language {
            Language::Python => crate::python::extract(self, tree, source, outer),
            Language::Bash => crate::shell::extract(self, tree, source, outer),
        }
    }

    /// Records the effects of a command or call (`@read`, `@write`, ...) as facts of `language`
    /// and returns the labels of the data the command took in (files read, downloads).
    pub fn record_effects(&mut self, language: Language, found: Vec<crate::effects::Found>) -> crate::facts::Taints {
        use crate::facts::Taints;
        let mut data = Taints::NONE;
        let mut later = Vec::new();
        // Reads and fetches first: what they bring in is the data of the command's writes and sends.
        for mut item in found {
            match item.call.name.as_str() {
                "@read" | "@fetch" => {
                    let path = item.call.args.first().and_then(|a| a.text()).map(|t| t.into_owned());
                    let mut labels = self.rules.call_labels(language, &item.call);
                    if let Some(path) = path {
                        labels = labels.union(self.files.of(&path));
                    }
                    item.call.taints = item.call.taints.union(labels);
                    data = data.union(labels);
                    self.facts(language).push_call(item.call);
                }
                _ => later.push(item),
            }
        }
        for mut item in later {
            if matches!(
                item.call.name.as_str(),
                "@write" | "@append" | "@send" | "@shell" | "@exec" | "@run" | "@load"
            ) {
                item.call.taints = item.call.taints.union(data);
            }
            if matches!(item.call.name.as_str(), "@run" | "@load")
                && let Some(path) = item.call.args.first().and_then(|a| a.text())
            {
                let labels = self.files.of(&path);
                item.call.taints = item.call.taints.union(labels);
            }
            if matches!(item.call.name.as_str(), "@write" | "@append")
                && let Some(path) = item.call.args.first().and_then(|a| a.text())
            {
                let path = path.into_owned();
                self.files.written(&path, item.call.taints);
            }
            let labels = self.rules.call_labels(language, &item.call);
            data = data.union(labels);
            if let Some((code_language, code)) = item.code.take() {
                self.inline_code(&code_language, &code, item.call.span);
            }
            self.facts(language).push_call(item.call);
        }
        data
    }

    /// Code handed to another interpreter (`perl -e`, `awk '...'`, `node -e`): Python and shell
    /// are parsed; the others are scanned for the commands they run and the connections they open.
    pub fn inline_code(&mut self, language: &str, code: &crate::facts::Expr, span: Span) {
        let Some(text) = code.text().map(|t| t.into_owned()) else {
            return;
        };
        match language {
            "bash" | "sh" => self.extract_embedded(Language::Bash, &text, span),
            "python" => self.extract_embedded(Language::Python, &text, span),
            other => {
                for found in crate::scripts::scan(other, &text, span, code.taints) {
                    match found {
                        crate::scripts::Scanned::Shell(command) => {
                            self.extract_embedded(Language::Bash, &command, span)
                        }
                        crate::scripts::Scanned::Fact(call) => self.shell.push_call(call),
                        crate::scripts::Scanned::String(lit) => self.shell.push_string(lit),
                    }
                }
            }
        }
    }

    pub fn facts(&mut self, language: Language) -> &mut crate::facts::Facts {
        match language {
            Language::Python => &mut self.python,
            Language::Bash => &mut self.shell,
        }
    }

    /// Extracts code found inside a string of the outer code (a shell command given to
    /// `os.system`, a script given to `bash -c`); its facts carry the outer span.
    pub fn extract_embedded(&mut self, language: Language, code: &str, outer: Span) {
        if self.embed_level >= MAX_EMBED_LEVEL || code.trim().is_empty() {
            return;
        }
        let Some(tree) = parse(language, code, &mut self.budget) else {
            return;
        };
        self.embed_level += 1;
        self.extract(language, &tree, code, Some(outer));
        self.embed_level -= 1;
    }
}

/// The span of a node, or the outer span for embedded code.
pub fn span_of(node: Node<'_>, outer: Option<Span>) -> Span {
    if let Some(outer) = outer {
        return outer;
    }
    let start = node.start_position();
    Span {
        line: start.row as u32 + 1,
        column: start.column as u32 + 1,
        start_byte: node.start_byte(),
        end_byte: node.end_byte(),
    }
}

pub fn node_text<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    source.get(node.byte_range()).unwrap_or_default()
}

/// Runs one step of a recursive walk, moving to a fresh heap-allocated stack segment when the
/// current one runs low. The depth limit bounds the work; this bounds the stack, whatever the
/// caller's thread was given (tokio's blocking pool, a test thread, a debug build's big frames).
pub fn with_stack<R>(step: impl FnOnce() -> R) -> R {
    const RED_ZONE: usize = 64 * 1024;
    const SEGMENT: usize = 1024 * 1024;
    stacker::maybe_grow(RED_ZONE, SEGMENT, step)
}
