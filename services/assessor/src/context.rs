//! The state every extraction shares: the facts found so far, the rule set (data-flow sources,
//! the tool table), the budget and nesting limit, what was written to which file, and the way to
//! extract code found inside code. Each language's module parses its own source and walks the
//! tree; the engine's extractor (`extract.rs`, above them) chooses between them and is handed to
//! the context as an [`Extractor`], so that code in one language can carry code in the other
//! without this module or the languages' modules importing upward.

use crate::budget::Budget;
use crate::facts::{Facts, Span};
use crate::rules::RuleSet;
use airlock_protocol::request::Language;

/// Embedded code inside embedded code inside ... is followed this many levels deep.
pub const MAX_EMBED_LEVEL: u32 = 4;

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
    extractor: Extractor,
    embed_level: u32,
}

/// Parses source of a language and turns it into facts (the engine passes the one in
/// `extract.rs`). `None` when it could not be parsed at all.
pub type Extractor = fn(&mut Context<'_>, Language, &str, Option<Span>) -> Option<SyntaxErrors>;

impl<'r> Context<'r> {
    pub fn new(rules: &'r RuleSet, budget: Budget, max_depth: u32, extractor: Extractor) -> Context<'r> {
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
            extractor,
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
        (self.extractor)(self, language, source, outer)
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
                    // (A key or a configuration read for the program's own use is not its data.)
                    if !item.call.flags.iter().any(|f| f == crate::effects::OWN_USE_FLAG) {
                        data = data.union(labels);
                    }
                    self.facts(language).push_call(item.call);
                }
                _ => later.push(item),
            }
        }
        for mut item in later {
            // (Code given in the command's words, `rsync -e 'ssh -i key'`, `awk PROGRAM`, is that
            // code: what the command fetches or reads is its data, not code it runs.)
            let code_in_words = item.call.name == "@shell"
                && item
                    .code
                    .as_ref()
                    .is_some_and(|(_, code)| code.text().is_some_and(|t| !t.trim().is_empty()));
            if matches!(
                item.call.name.as_str(),
                "@write" | "@append" | "@send" | "@shell" | "@exec" | "@run" | "@load"
            ) && !code_in_words
            {
                item.call.taints = item.call.taints.union(data);
            }
            if matches!(item.call.name.as_str(), "@run" | "@load")
                && let Some(path) = item.call.args.first().and_then(|a| a.text())
            {
                let labels = self.files.of(&path);
                item.call.taints = item.call.taints.union(labels);
            }
            // Which file's mode changes: `chmod +x` of a file the program downloaded is what
            // makes a download runnable, unlike one of its own scripts.
            if item.call.name == "@chmod" {
                let labels = item
                    .call
                    .args
                    .iter()
                    .filter_map(|a| a.text())
                    .fold(Taints::NONE, |t, path| t.union(self.files.of(&path)));
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

    /// Code run by the program that the analysis cannot know (a variable, input, a file's
    /// content): a fact (`@opaque`, flag `code`, the code's language as a second flag) that the
    /// fail-closed rules match.
    pub fn opaque_code(&mut self, from: Language, language: Language, code: &crate::facts::Expr, span: Span) {
        let mut fact = crate::facts::Call::new("@opaque".into(), span);
        fact.flags = vec!["code".into(), language.as_str().into()];
        fact.taints = code.taints;
        fact.args.push(code.clone());
        self.facts(from).push_call(fact);
    }

    /// Code handed to another interpreter (`perl -e`, `awk '...'`, `node -e`): Python and shell
    /// are parsed; the others are scanned for the commands they run and the connections they open.
    /// Code that is not a literal is also `@opaque`.
    pub fn inline_code(&mut self, language: &str, code: &crate::facts::Expr, span: Span) {
        // Shell code with values filled in (`trap "rm -f $tmp" EXIT`, `rsync -e "ssh -i $KEY"`)
        // is read as written, as `bash -c` and `eval` read theirs; code that is one expansion and
        // nothing more (`trap "$1" INT`) is code the assessor cannot see.
        let shell_text = matches!(language, "bash" | "sh")
            && code.text().is_some_and(|t| !is_whole_expansion(&t))
            && matches!(
                code.value,
                crate::facts::Value::Formatted(_) | crate::facts::Value::Str(_)
            );
        if !code.is_literal() && !shell_text {
            let mut fact = crate::facts::Call::new("@opaque".into(), span);
            fact.flags = vec!["code".into(), language.into()];
            fact.taints = code.taints;
            fact.args.push(code.clone());
            self.shell.push_call(fact);
        }
        let Some(text) = code.text().map(|t| t.into_owned()) else {
            return;
        };
        match language {
            "bash" | "sh" => self.extract_embedded(Language::Bash, &text, span),
            "python" => self.extract_embedded(Language::Python, &text, span),
            other => {
                if !crate::scripts::READ_LANGUAGES.contains(&other) {
                    // An interpreter whose language the assessor does not read: what its code does
                    // is only guessed at from the commands it names.
                    let mut fact = crate::facts::Call::new("@opaque".into(), span);
                    fact.flags = vec!["interpreter".into(), other.into()];
                    fact.taints = code.taints;
                    self.shell.push_call(fact);
                }
                // The script's own reads, writes and connections, recorded as a command's effects
                // are: a script that reads local files and opens a connection sends what it read
                // (`perl -MIO::Socket -e '...open(F, "/etc/shadow"); print $s <F>'`).
                let mut facts = Vec::new();
                for found in crate::scripts::scan(other, &text, span, code.taints) {
                    match found {
                        crate::scripts::Scanned::Shell(command) => {
                            self.extract_embedded(Language::Bash, &command, span)
                        }
                        crate::scripts::Scanned::Fact(call) => facts.push(call),
                        crate::scripts::Scanned::String(lit) => self.shell.push_string(lit),
                    }
                }
                let reads = facts.iter().any(|c| c.name == "@read");
                let connection = facts.iter().find(|c| c.name == "@connect").cloned();
                let mut found: Vec<crate::effects::Found> = facts
                    .into_iter()
                    .map(|call| crate::effects::Found { call, code: None })
                    .collect();
                if reads && let Some(mut send) = connection {
                    send.name = "@send".into();
                    send.flags.clear();
                    found.push(crate::effects::Found { call: send, code: None });
                }
                self.record_effects(Language::Bash, found);
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

/// A shell word that is one expansion and nothing else (`$CODE`, `${1}`, `"$@"`, `$(cmd)`).
fn is_whole_expansion(text: &str) -> bool {
    let inner = text.trim();
    if inner.starts_with("$(") && inner.ends_with(')') || inner.starts_with('`') && inner.ends_with('`') {
        return true;
    }
    let name = inner
        .strip_prefix("${")
        .and_then(|t| t.strip_suffix('}'))
        .or_else(|| inner.strip_prefix('$'));
    name.is_some_and(|n| {
        !n.is_empty() && (n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || n == "@" || n == "*")
    })
}
