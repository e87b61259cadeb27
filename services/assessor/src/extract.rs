//! Turning source text into facts: the analysis budget, and the state both extractors share
//! (the facts found so far, the rule set's data-flow sources, the nesting limit). Each language's
//! module parses its own source (`python::extract`, `shell::extract`) and walks the tree.

use crate::facts::{Facts, Span};
use crate::rules::RuleSet;
use airlock_protocol::request::Language;
use std::time::Duration;

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

/// Syntax errors of a parse, for `ParseStatus::Partial`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyntaxErrors {
    pub count: u32,
    pub first_line: u32,
}

impl SyntaxErrors {
    /// Counts one more error at `line` (1-based).
    pub fn add(&mut self, line: u32) {
        self.count = self.count.saturating_add(1);
        if self.first_line == 0 || line < self.first_line {
            self.first_line = line;
        }
    }
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
    /// The furthest line of the submitted file the extraction reached, for saying where an
    /// analysis that ran out of budget stopped.
    pub reached_line: u32,
    /// The request's arguments and environment, when the request is known: the values of
    /// `sys.argv[1:]`, `$1…`, `os.environ[...]` and `$NAME`.
    pub inputs: Option<&'r airlock_protocol::request::Inputs>,
    /// Labels of what the program wrote to each file, so reading or running it later carries
    /// them (a download saved and then run, keys archived and then uploaded).
    pub files: crate::effects::FileTaints,
    /// Trojan Source found in the submitted file (not in embedded code, whose text is a string
    /// of the file and was looked at as one).
    pub trojan: Vec<crate::trojan::Hit>,
    /// Code inside the file that cannot be read as the interpreter would read it.
    pub unreadable: Vec<crate::input::Problem>,
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
            reached_line: 0,
            inputs: None,
            files: Default::default(),
            trojan: Vec::new(),
            unreadable: Vec::new(),
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

    /// Notes how far into the submitted file (not embedded code) the extraction got.
    pub fn reached(&mut self, line: u32, outer: Option<Span>) {
        if outer.is_none() && line > self.reached_line {
            self.reached_line = line;
        }
    }

    /// Parses `source` and turns it into facts. `None` when it could not be parsed at all: the
    /// budget ran out while parsing (`budget.parsed_to` says how far it got), or the nesting was
    /// too deep to parse (`too_deep` is set, `reached_line` says where).
    pub fn extract(&mut self, language: Language, source: &str, outer: Option<Span>) -> Option<SyntaxErrors> {
        match language {
            Language::Python => crate::python::extract(self, source, outer),
            Language::Bash => crate::shell::extract(self, source, outer),
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
        if language == Language::Python
            && let Some(problem) = crate::input::embedded_python_encoding(code, outer.line)
        {
            self.unreadable.push(problem);
        }
        self.embed_level += 1;
        self.extract(language, code, Some(outer));
        self.embed_level -= 1;
    }
}

/// Runs one step of a recursive walk, moving to a fresh heap-allocated stack segment when the
/// current one runs low. The depth limit bounds the work; this bounds the stack, whatever the
/// caller's thread was given (tokio's blocking pool, a test thread, a debug build's big frames).
pub fn with_stack<R>(step: impl FnOnce() -> R) -> R {
    const RED_ZONE: usize = 64 * 1024;
    const SEGMENT: usize = 1024 * 1024;
    stacker::maybe_grow(RED_ZONE, SEGMENT, step)
}
