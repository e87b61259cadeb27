//! The rule file format, as read from TOML.

use crate::facts::{BindingKind, Expr};
use crate::values::ValueKind;
use airlock_protocol::assessment::{Category, Confidence, Level};
use airlock_protocol::request::Language;
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleFile {
    #[serde(default)]
    pub rule: Vec<RuleSpec>,
    #[serde(default)]
    pub source: Vec<SourceSpec>,
    #[serde(default)]
    pub embed: Vec<EmbedSpec>,
    #[serde(default)]
    pub wrapper: Vec<WrapperSpec>,
    /// Shell tools by what their options do (the tool table).
    #[serde(default)]
    pub tool: Vec<ToolSpec>,
    /// Python calls by what they do, in the same terms as the tool table.
    #[serde(default)]
    pub api: Vec<ApiSpec>,
}

/// What a shell tool does, option by option: each effect becomes a fact (`@read`, `@write`,
/// `@fetch`, ...) whose first argument is the operand (a path, a URL, a host, a process name),
/// so a behaviour is one rule whichever tool shows it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// Program names (without directory).
    pub names: Vec<String>,
    /// Options that take the next word as their value, so it is not taken for an operand.
    #[serde(default)]
    pub value_options: Vec<String>,
    #[serde(default, rename = "effect")]
    pub effects: Vec<EffectSpec>,
    /// The first word is a cluster of options even without a dash (`tar xzf`, `ps aux`).
    #[serde(default)]
    pub bundled_first: bool,
}

/// One effect of a tool or a Python call and where its operands are.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EffectSpec {
    /// `read`, `write`, `append`, `delete`, `fetch`, `send`, `connect`, `listen`, `exec`,
    /// `shell`, `load`, `privilege`, `kill`, `schedule`, `service`, `chmod`, `chown`, `account`,
    /// `mount`, `firewall`.
    pub kind: String,
    /// Shell: the values of these options are operands (`o` for `-o FILE`, `output` for
    /// `--output=FILE`).
    #[serde(default)]
    pub options: Vec<String>,
    /// Shell: which words that are not options are operands: `all`, `first`, `last`, `rest`
    /// (all but the first), `urls` (words that look like URLs or host:path), `none`.
    #[serde(default)]
    pub positional: Option<String>,
    /// Shell: words starting with this prefix are operands, without it (`of=` of dd).
    #[serde(default)]
    pub prefix: Option<String>,
    /// The effect applies only when one of these options is given.
    #[serde(default)]
    pub when: Vec<String>,
    /// The effect does not apply when one of these options is given.
    #[serde(default)]
    pub unless: Vec<String>,
    /// Shell: the effect applies only when the word at `verb_at` among the words that are not
    /// options is one of these (`stop` of `systemctl stop ssh`); that word is not an operand.
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default)]
    pub verb_at: usize,
    /// Shell: an operand starting with this character names a file that is read (`@` of curl).
    #[serde(default)]
    pub file_prefix: Option<String>,
    /// The operand names a file that is read for the effect (`--post-file FILE`, `scp FILE host:`).
    #[serde(default)]
    pub reads_file: bool,
    /// `read`: the file is read for the program's own use (an identity key, a configuration,
    /// a CA certificate), not as data it sends or writes (`ssh -i KEY host`).
    #[serde(default)]
    pub own: bool,
    /// The operands are the words that follow one of these words inside the options' values (a
    /// small command language: `put FILE` in `lftp -e 'put FILE; bye'`).
    #[serde(default)]
    pub after_words: Vec<String>,
    /// A fixed operand, for an effect on a known place (`gpg --export-secret-keys` reads the
    /// private keyring, `crontab -` writes the cron table).
    #[serde(default)]
    pub operand: Option<String>,
    /// Shell: the effect applies only when the last word that is not an option does (`true`) or
    /// does not (`false`) name another machine (`host:path`, a URL): the direction of a copy.
    #[serde(default)]
    pub last_remote: Option<bool>,
    /// The command's standard input is part of the effect (the data sent, the code run).
    #[serde(default)]
    pub stdin: bool,
    /// `shell`: the language of the code (`bash`, `python`, or `perl`, `ruby`, `php`, `node`,
    /// `lua`, `awk`, which are scanned for the commands and connections they make).
    #[serde(default)]
    pub language: Option<String>,
    /// Python: the positional argument that is the operand.
    #[serde(default)]
    pub arg: Option<usize>,
    /// Python: the keyword argument that is the operand (also when given by position `arg`).
    #[serde(default)]
    pub kwarg: Option<String>,
    /// Python: the receiver is the operand (`Path("/etc/x").write_text(...)`).
    #[serde(default)]
    pub receiver: bool,
    /// Python: arguments that must match for the effect to apply (`"1" = { regex = "[wa]" }`
    /// for `open(path, "w")`).
    #[serde(default)]
    pub if_args: BTreeMap<String, ValueSpec>,
    #[serde(default)]
    pub if_kwargs: BTreeMap<String, ValueSpec>,
    /// Python: the effect applies only when none of these keyword arguments is given.
    #[serde(default)]
    pub unless_kwargs: Vec<String>,
}

/// Python calls by what they do; `names` are qualified names (`*` globs).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiSpec {
    pub names: Vec<String>,
    #[serde(default, rename = "effect")]
    pub effects: Vec<EffectSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    pub id: String,
    pub category: Category,
    pub severity: Level,
    pub confidence: Confidence,
    pub languages: Vec<Language>,
    /// What the code does when this rule matches, as a phrase for the summary
    /// ("runs shell commands"); defaults to the rule id.
    #[serde(default)]
    pub action: Option<String>,
    pub explanation: String,
    #[serde(default)]
    pub references: Vec<String>,
    /// The rule says the assessor could not follow something (a command or code it cannot
    /// resolve): for external code the gate asks a human whatever the level (the finding makes
    /// the assessment `unanalysed`).
    #[serde(default)]
    pub fails_closed: bool,
    #[serde(rename = "match")]
    pub pattern: PatternSpec,
    #[serde(default)]
    pub examples: Examples,
    /// Examples in the rule's other languages.
    #[serde(default)]
    pub more_examples: Vec<Examples>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Examples {
    /// Code that must produce this rule's finding.
    #[serde(rename = "match", default)]
    pub matching: Vec<String>,
    /// Code that must not.
    #[serde(default)]
    pub no_match: Vec<String>,
    /// Language of the examples, when the rule has several.
    #[serde(default)]
    pub language: Option<Language>,
}

/// A pattern: exactly one subject (`call`, `import`, `string`, `binding`, `name`, `query`,
/// `text`, `all`, `any`) and the constraints that subject takes.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternSpec {
    /// Calls (Python) or commands (shell) by name; `*` matches any run of characters.
    pub call: Option<Vec<String>>,
    /// Imported modules or members by qualified name.
    pub import: Option<Vec<String>>,
    /// String literals (and shell words) whose text matches this regular expression.
    pub string: Option<String>,
    pub binding: Option<Box<BindingSpec>>,
    /// Resolved references to module attributes (`ssl.PROTOCOL_SSLv2`).
    pub name: Option<Vec<String>>,
    /// A tree-sitter query over the file's syntax tree; the finding is at its first capture.
    pub query: Option<String>,
    /// A regular expression over the raw source text.
    pub text: Option<String>,
    /// Every sub-pattern matches somewhere in the file (a capability meeting a threat); the
    /// finding is at the first sub-pattern's match.
    pub all: Option<Vec<PatternSpec>>,
    /// Any sub-pattern matches.
    pub any: Option<Vec<PatternSpec>>,

    // Constraints on `call`.
    #[serde(default)]
    pub not_call: Vec<String>,
    /// Positional arguments by index ("0" is the first).
    #[serde(default)]
    pub args: BTreeMap<String, ValueSpec>,
    #[serde(default)]
    pub kwargs: BTreeMap<String, ValueSpec>,
    /// Some argument, positional or keyword, matches; given a list, each entry must be matched
    /// by some argument.
    pub any_arg: Option<Box<OneOrMany<ValueSpec>>>,
    pub receiver: Option<Box<ValueSpec>>,
    /// Shell options that must all be present (`r` for `-r` or `-rf`, `recursive` for
    /// `--recursive`).
    #[serde(default)]
    pub flags: Vec<String>,
    #[serde(default)]
    pub any_flag: Vec<String>,
    /// Shell options (or flags the analysis sets, such as `probe`) none of which may be present.
    #[serde(default)]
    pub no_flag: Vec<String>,
    /// Labels of which at least one reaches an argument, the receiver or standard input.
    #[serde(default)]
    pub tainted: Vec<String>,
    /// Shell: some earlier pipeline stage runs one of these.
    #[serde(default)]
    pub pipe_from: Vec<String>,
    /// Shell: some later pipeline stage runs one of these.
    #[serde(default)]
    pub pipe_to: Vec<String>,
    /// Shell: runs under one of these wrappers.
    #[serde(default)]
    pub via: Vec<String>,
    /// Shell: runs under none of these wrappers (an effect: made by none of these tools).
    #[serde(default)]
    pub not_via: Vec<String>,

    // Constraint on `string`.
    /// Only strings built with (`true`) or without (`false`) non-literal parts.
    pub formatted: Option<bool>,

    // Constraint on `all`.
    /// The file must match none of these.
    #[serde(default)]
    pub none: Vec<PatternSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    pub fn as_slice(&self) -> &[T] {
        match self {
            OneOrMany::One(one) => std::slice::from_ref(one),
            OneOrMany::Many(many) => many,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BindingSpec {
    #[serde(default = "all_binding_kinds")]
    pub kinds: Vec<BindingKind>,
    /// Regular expression over the target name.
    pub target: String,
    #[serde(default)]
    pub value: ValueSpec,
}

fn all_binding_kinds() -> Vec<BindingKind> {
    vec![
        BindingKind::Assign,
        BindingKind::Compare,
        BindingKind::DictEntry,
        BindingKind::Kwarg,
        BindingKind::Default,
    ]
}

/// Constraints on one value; all that are given must hold. Given no constraint at all, a value
/// only has to be present.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueSpec {
    /// The value is (`true`) or is not (`false`) given.
    pub present: Option<bool>,
    /// Regular expression over the text of a string, formatted string or sequence.
    pub regex: Option<String>,
    /// The text equals one of these.
    pub equals: Option<Vec<String>>,
    pub kind: Option<Vec<ValueKind>>,
    /// A literal whose Python truth value is this.
    pub truthy: Option<bool>,
    pub int_lt: Option<i64>,
    pub int_ge: Option<i64>,
    /// An integer with any of these bits set (`0o4000` for setuid).
    pub int_bits: Option<i64>,
    /// A reference or call result by qualified name (`*` globs).
    pub name: Option<Vec<String>>,
    pub tainted: Option<Vec<String>>,
    /// Some element of a sequence matches.
    pub element: Option<Box<ValueSpec>>,
    /// The first element of a sequence (or the value itself when it is not one) matches.
    pub first: Option<Box<ValueSpec>>,
    pub not: Option<Box<ValueSpec>>,
    pub any_of: Option<Vec<ValueSpec>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSpec {
    pub label: String,
    pub languages: Vec<Language>,
    /// A `call` or `name` pattern.
    #[serde(rename = "match")]
    pub pattern: PatternSpec,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedSpec {
    pub from: Language,
    pub to: Language,
    pub call: Vec<String>,
    /// Positional index of the code (default 0 unless `after_flag` or `all_args`).
    #[serde(default)]
    pub arg: Option<usize>,
    /// Keyword that may carry the code instead (`args` for `subprocess.run(args=...)`).
    #[serde(default)]
    pub kwarg: Option<String>,
    /// The code is the word after the option with this letter (`c` for `bash -c`, `-lc`).
    #[serde(default)]
    pub after_flag: Option<String>,
    /// The code is all arguments joined by spaces (`eval`).
    #[serde(default)]
    pub all_args: bool,
    /// The command is the positional arguments, one word each (`os.execl(path, arg0, ...)`,
    /// `asyncio.create_subprocess_exec(program, *args)`).
    #[serde(default)]
    pub argv_args: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrapperSpec {
    pub name: Vec<String>,
    /// Options that take the next word as their value (`-u` of `sudo -u root`).
    #[serde(default)]
    pub options_with_value: Vec<String>,
    /// Skips `NAME=value` words (`env`).
    #[serde(default)]
    pub skip_assignments: bool,
    /// Positional words before the command (the duration of `timeout 10 cmd`).
    #[serde(default)]
    pub skip_positionals: usize,
    /// The command starts after one of these words and ends at `;` or `+` (`find -exec`).
    #[serde(default)]
    pub starts_after: Vec<String>,
    /// With one of these options the wrapper runs nothing (`command -v` only looks a name up).
    #[serde(default)]
    pub unless_options: Vec<String>,
}

impl WrapperSpec {
    /// The command this wrapper runs, as an argument vector.
    pub fn inner_command(&self, words: &[Expr]) -> Vec<Expr> {
        let text = |i: usize| {
            words
                .get(i)
                .and_then(|w| w.text())
                .map(|t| t.into_owned())
                .unwrap_or_default()
        };
        if (1..words.len()).any(|i| self.unless_options.contains(&text(i))) {
            return Vec::new();
        }
        if !self.starts_after.is_empty() {
            let Some(start) = (1..words.len()).find(|&i| self.starts_after.contains(&text(i))) else {
                return Vec::new();
            };
            let end = (start + 1..words.len())
                .find(|&i| matches!(text(i).as_str(), ";" | "+" | "\\;"))
                .unwrap_or(words.len());
            return words.get(start + 1..end).map(<[Expr]>::to_vec).unwrap_or_default();
        }
        let mut i = 1;
        while i < words.len() {
            let word = text(i);
            if word == "--" {
                i += 1;
                break;
            }
            if word.starts_with('-') && word.len() > 1 {
                // A cluster of short options whose last takes a value (`screen -dmS NAME`).
                let clustered = !word.starts_with("--")
                    && word.len() > 2
                    && word[1..].chars().all(|c| c.is_ascii_alphabetic())
                    && word
                        .chars()
                        .last()
                        .is_some_and(|c| self.options_with_value.contains(&format!("-{c}")));
                i += if self.options_with_value.contains(&word) || clustered {
                    2
                } else {
                    1
                };
                continue;
            }
            if self.skip_assignments && is_assignment(&word) {
                i += 1;
                continue;
            }
            break;
        }
        let start = i + self.skip_positionals;
        words.get(start..).map(<[Expr]>::to_vec).unwrap_or_default()
    }
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
        None => false,
    }
}
