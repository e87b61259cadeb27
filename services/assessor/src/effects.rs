//! What commands and calls do, from the tool table (`[[tool]]`) and the Python call table
//! (`[[api]]`): each effect becomes a fact named `@KIND` (`@read`, `@write`, `@send`, ...) whose
//! first argument is the operand, so that a behaviour ("sends a local file over the network",
//! "writes under /etc") is one rule whichever tool or library shows it.

use crate::facts::{Call, Expr, Taints, Value};
use crate::values::{NameSet, ValueMatcher};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Positional {
    None,
    All,
    First,
    Last,
    Rest,
    Urls,
}

impl Positional {
    pub fn parse(text: Option<&str>) -> Result<Positional, String> {
        Ok(match text {
            None | Some("none") => Positional::None,
            Some("all") => Positional::All,
            Some("first") => Positional::First,
            Some("last") => Positional::Last,
            Some("rest") => Positional::Rest,
            Some("urls") => Positional::Urls,
            Some(other) => {
                return Err(format!(
                    "positional {other:?} is not all, first, last, rest, urls or none"
                ));
            }
        })
    }
}

pub const EFFECT_KINDS: &[&str] = &[
    "read",
    "write",
    "append",
    "delete",
    "fetch",
    "send",
    "connect",
    "listen",
    "exec",
    "run",
    "shell",
    "load",
    "privilege",
    "kill",
    "schedule",
    "service",
    "chmod",
    "chown",
    "account",
    "mount",
    "firewall",
    "install",
];

#[derive(Debug, Clone)]
pub struct Effect {
    pub kind: String,
    pub options: Vec<String>,
    pub positional: Positional,
    pub prefix: Option<String>,
    pub when: Vec<String>,
    pub unless: Vec<String>,
    pub verbs: Vec<String>,
    pub verb_at: usize,
    pub file_prefix: Option<char>,
    pub reads_file: bool,
    /// A `read` for the program's own use, not data of its sends and writes.
    pub own: bool,
    pub operand: Option<String>,
    pub last_remote: Option<bool>,
    pub stdin: bool,
    pub language: Option<String>,
    pub arg: Option<usize>,
    pub kwarg: Option<String>,
    pub receiver: bool,
    pub after_words: Vec<String>,
    pub if_args: Vec<(usize, ValueMatcher)>,
    pub if_kwargs: Vec<(String, ValueMatcher)>,
    pub unless_kwargs: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Tool {
    pub bundled_first: bool,
    /// Options that take a value (those whose values are operands included).
    pub value_options: HashSet<String>,
    pub effects: Vec<Effect>,
}

#[derive(Debug, Clone)]
pub struct Api {
    pub names: NameSet,
    pub effects: Vec<Effect>,
}

/// The compiled tool and call tables.
#[derive(Debug, Default)]
pub struct EffectTables {
    /// Shared by every name of a tool (`nc`, `ncat`, `netcat`, ...).
    pub tools: HashMap<String, std::sync::Arc<Tool>>,
    pub apis: Vec<Api>,
    /// Python names to the indices of `apis` that may match them.
    pub api_index: crate::values::CallIndex,
}

/// One effect found: the `@KIND` fact, plus inline code to analyse for `shell` effects.
pub struct Found {
    pub call: Call,
    pub code: Option<(String, Expr)>,
}

/// A shell command's words split into options (with their values) and other words.
struct Parsed<'w> {
    options: Vec<(String, Option<&'w Expr>)>,
    positionals: Vec<&'w Expr>,
}

fn word_text(word: &Expr) -> Option<String> {
    match &word.value {
        Value::Str(s) => Some(s.clone()),
        _ => None,
    }
}

fn parse_words<'w>(tool: &Tool, words: &'w [Expr]) -> Parsed<'w> {
    let takes_value = |name: &str| tool.value_options.contains(name);
    let mut parsed = Parsed {
        options: Vec::new(),
        positionals: Vec::new(),
    };
    let mut i = 1;
    let mut options_done = false;
    while i < words.len() {
        let word = &words[i];
        i += 1;
        let bundled = tool.bundled_first
            && i == 2
            && word_text(word)
                .is_some_and(|t| !t.starts_with('-') && !t.is_empty() && t.chars().all(|c| c.is_ascii_alphabetic()));
        // A word with expansions is an option when it starts with its dashes as written
        // (`--post-data="$(ifconfig)"`).
        let Some(text) = word
            .text()
            .map(|t| t.into_owned())
            .filter(|t| {
                matches!(word.value, Value::Str(_))
                    || t.starts_with("--")
                    || (t.starts_with('-') && !t.starts_with("-$"))
            })
            .map(|t| if bundled { format!("-{t}") } else { t })
            .filter(|t| !options_done && t.len() > 1 && t.starts_with('-'))
        else {
            parsed.positionals.push(word);
            continue;
        };
        if text == "--" {
            options_done = true;
            continue;
        }
        if let Some(long) = text.strip_prefix("--") {
            match long.split_once('=') {
                Some((name, _)) => parsed.options.push((name.to_string(), Some(word))),
                None if takes_value(long) => {
                    parsed.options.push((long.to_string(), words.get(i)));
                    i += 1;
                }
                None => parsed.options.push((long.to_string(), None)),
            }
            continue;
        }
        let short = &text[1..];
        // Single-dash long options (`find -name`, `-exec`) when the table names them.
        if short.chars().count() > 1
            && (takes_value(short) || tool.effects.iter().any(|e| e.when.iter().any(|w| w == short)))
        {
            if takes_value(short) {
                parsed.options.push((short.to_string(), words.get(i)));
                i += 1;
            } else {
                parsed.options.push((short.to_string(), None));
            }
            continue;
        }
        let chars: Vec<char> = short.chars().collect();
        for (k, c) in chars.iter().enumerate() {
            let name = c.to_string();
            if takes_value(&name) {
                if k + 1 < chars.len() {
                    // `-ofile`: the value is attached; keep it as the whole word's tail.
                    parsed.options.push((name, Some(word)));
                } else {
                    parsed.options.push((name, words.get(i)));
                    i += 1;
                }
                break;
            }
            parsed.options.push((name, None));
        }
    }
    parsed
}

/// The value of an option written `--name=value` or `-ovalue` (the whole word was kept).
fn option_value(name: &str, word: &Expr) -> Expr {
    let Value::Str(text) = &word.value else {
        return word.clone();
    };
    let stripped = if let Some(long) = text.strip_prefix("--") {
        long.split_once('=').map(|(_, v)| v.to_string())
    } else if text.starts_with('-') && !text.starts_with("--") && text.len() > 2 {
        text.find(name).map(|at| text[at + name.len()..].to_string())
    } else {
        None
    };
    match stripped {
        Some(v) => Expr {
            value: Value::Str(v),
            taints: word.taints,
            trail: word.trail.clone(),
        },
        None => word.clone(),
    }
}

/// The words after each of `verbs` in a small command language (`put a; put b; bye`).
fn words_after(text: &str, verbs: &[String]) -> Vec<String> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ';')
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .filter(|pair| verbs.iter().any(|v| v == pair[0]))
        .map(|pair| pair[1].trim_matches(['\'', '"']).to_string())
        .collect()
}

/// A local path: absolute, in a home, relative with a directory (`./x`, `dir/x`, `../x`).
fn looks_like_path(text: &str) -> bool {
    !text.is_empty()
        && !text.contains("://")
        && !is_remote(text)
        && (text.starts_with(['/', '~', '.']) || text.starts_with("$HOME") || text.contains('/'))
}

/// Text that reads as code rather than a name, a number or a file: it has spaces, brackets,
/// quotes, operators or statement separators.
fn looks_like_code(text: &str) -> bool {
    !looks_like_path(text) && text.contains([' ', '(', ')', '{', '}', ';', '"', '\'', '`', '=', '|', '$'])
}

/// Options that name where a program writes, by the names programs commonly give them.
const OUTPUT_OPTIONS: &[&str] = &[
    "o",
    "O",
    "out",
    "output",
    "outfile",
    "output-file",
    "output-dir",
    "outdir",
    "out-dir",
    "dest",
    "destination",
    "target",
    "target-dir",
    "to",
    "save",
    "save-to",
    "write",
    "w",
];

/// Verbs of a program's first word that copy files to the last path named.
const COPY_VERBS: &[&str] = &[
    "push", "copy", "cp", "install", "sync", "put", "deploy", "mv", "move", "link", "ln", "write", "save", "upload",
];

/// Verbs (or parts of a program's name) that send the files named to another machine.
const SEND_VERBS: &[&str] = &[
    "send", "upload", "share", "post", "publish", "exfil", "beam", "transfer", "sendfile",
];

/// Options under which programs commonly take inline code.
const CODE_OPTIONS: &[&str] = &[
    "e", "c", "x", "eval", "exec", "execute", "command", "Command", "ex", "script", "run",
];

/// A fact of one effect with its operand, as [`EffectTables::found`] makes them.
fn effect_fact(kind: &str, via: &str, operand: Expr, call: &Call) -> Found {
    let mut fact = Call::new(format!("@{kind}"), call.span);
    fact.via = vec![via.to_string()];
    fact.via.extend(call.via.iter().cloned());
    fact.flags = call.flags.clone();
    fact.pipe_from = call.pipe_from.clone();
    fact.pipe_to = call.pipe_to.clone();
    fact.taints = match kind {
        "send" | "write" | "append" => operand.taints.union(call.taints),
        _ => operand.taints,
    };
    fact.args.push(operand);
    Found { call: fact, code: None }
}

/// Inline code handed to a program, to be read in the program's own language (one the
/// assessor does not read, for a program the table does not describe).
fn inline_code_fact(program: &str, code: Expr, call: &Call) -> Found {
    Found {
        call: effect_fact("shell", program, code.clone(), call).call,
        code: Some((program.to_string(), code)),
    }
}

/// What a program the table does not describe may do, read from its words alone (issue 26:
/// behaviour over tool). Its local paths are read; a path given to an output-like option, or the
/// last of two or more paths after a copying verb (`tool push a b`), is written; a URL is
/// fetched, and with local paths beside it they may be sent; inline code given under a
/// code-like option (`-e`, `-c`, `eval`) is code in a language the assessor does not read.
pub fn unknown_program_effects(name: &str, words: &[Expr], call: &Call) -> Vec<Found> {
    let mut found = Vec::new();
    if name.is_empty() || words.is_empty() {
        return found;
    }
    let mut paths: Vec<Expr> = Vec::new();
    let mut urls: Vec<Expr> = Vec::new();
    // Network addresses that are not URLs (`203.0.113.7`, `host:9092`, `u@host:/dir`, the value of
    // `-h`/`--host`/`--server`), whether a shell is named (`-l /bin/sh`, `-s bash`) and whether a
    // port is given to listen on (`-p 2323`).
    let mut addresses: Vec<Expr> = Vec::new();
    let mut names_shell = false;
    let mut port_option = false;
    let mut i = 1;
    let mut code_next = false;
    while i < words.len() {
        let word = &words[i];
        i += 1;
        let Some(text) = word.text() else { continue };
        // Code given under a code-like option: text that reads as code, or has spaces (a
        // program's text names paths too: `jrunscript -e 'new ProcessBuilder("/bin/sh", ...)'`).
        // (Only text written as it stands: a computed value with spaces in it, `"$(cd "$d" && pwd)"/f`,
        // is a path.)
        if code_next
            && (looks_like_code(&text)
                || (matches!(word.value, Value::Str(_))
                    && text.contains(char::is_whitespace)
                    && looks_like_code_text(&text)))
        {
            code_next = false;
            found.push(inline_code_fact(name, word.clone(), call));
            continue;
        }
        code_next = false;
        names_shell |= is_shell_program(&text);
        let option = text
            .strip_prefix("--")
            .or_else(|| text.strip_prefix('-'))
            .filter(|o| !o.is_empty());
        if let Some(option) = option {
            if let Some((option, _)) = option.split_once('=').filter(|_| text.starts_with("--")) {
                let value = option_value(option, word);
                let value_text = value.text().map(|t| t.into_owned()).unwrap_or_default();
                names_shell |= is_shell_program(&value_text);
                if OUTPUT_OPTIONS.contains(&option) && looks_like_path(&value_text) {
                    found.push(effect_fact("write", name, value, call));
                } else if CODE_OPTIONS.contains(&option) && looks_like_code(&value_text) {
                    found.push(inline_code_fact(name, value, call));
                } else if HOST_OPTIONS.contains(&option) && looks_like_host_name(&value_text) {
                    addresses.push(value);
                } else if PORT_OPTIONS.contains(&option) && is_port(&value_text) {
                    port_option = true;
                } else if looks_like_address(&value_text) {
                    addresses.push(value);
                } else if looks_like_path(&value_text) {
                    paths.push(value);
                }
            } else if CODE_OPTIONS.contains(&option) {
                code_next = true;
            } else if OUTPUT_OPTIONS.contains(&option)
                && let Some(next) = words.get(i).filter(|w| w.text().is_some_and(|t| looks_like_path(&t)))
            {
                found.push(effect_fact("write", name, next.clone(), call));
                i += 1;
            } else if HOST_OPTIONS.contains(&option)
                && let Some(next) = words
                    .get(i)
                    .filter(|w| w.text().is_some_and(|t| looks_like_host_name(&t)))
            {
                addresses.push(next.clone());
                i += 1;
            } else if PORT_OPTIONS.contains(&option) && words.get(i).and_then(|w| w.text()).is_some_and(|t| is_port(&t))
            {
                port_option = true;
                i += 1;
            }
            continue;
        }
        if looks_like_address(&text) {
            addresses.push(word.clone());
            continue;
        }
        if i == 2 && matches!(text.as_ref(), "eval" | "exec" | "-e") {
            // `deno eval CODE`, `tool exec CODE`.
            code_next = true;
        } else if text.starts_with("$(") || text.starts_with('`') || text.starts_with("<(") || text.starts_with(">(") {
            // A command's output given as an argument: data, not a place.
        } else if names_a_url(&text) || text.starts_with("/dev/tcp/") || text.starts_with("/dev/udp/") {
            urls.push(word.clone());
        } else if let Some(path) = file_operand(word, '@').filter(|p| p.text().is_some_and(|t| looks_like_path(&t))) {
            paths.push(path);
        } else if looks_like_path(&text)
            && (matches!(word.value, Value::Str(_)) || text.starts_with(['/', '~', '.']) || text.starts_with("$HOME"))
        {
            paths.push(word.clone());
        }
    }
    // The copy convention (`cp`, `install`, `rsync`): a verb that copies, then two or more paths,
    // the last being the destination. A program whose name ends in a part that says it copies (`safe-cp`,
    // `files-install`) follows it too.
    let named_like = |verbs: &[&str]| name.split(['-', '_', '.']).skip(1).any(|part| verbs.contains(&part));
    let copies = words
        .get(1)
        .and_then(|w| w.text())
        .is_some_and(|verb| COPY_VERBS.contains(&verb.as_ref()))
        || named_like(COPY_VERBS);
    // A verb that sends (`croc send FILE`, `wormhole send FILE`, `tool upload FILE`): the files
    // named go wherever the program sends them. (Not a name: `dbus-send` sends messages on the
    // bus, naming objects by paths.)
    let sends = words
        .get(1)
        .and_then(|w| w.text())
        .is_some_and(|verb| SEND_VERBS.contains(&verb.as_ref()));
    let written = (copies && paths.len() >= 2 && urls.is_empty())
        .then(|| paths.pop())
        .flatten();
    for path in &paths {
        found.push(effect_fact("read", name, path.clone(), call));
    }
    if let Some(target) = written {
        found.push(effect_fact("write", name, target, call));
    }
    // `start-stop-daemon --startas /bin/sh -- -c CODE`: code given beside a shell is shell code.
    if names_shell {
        for item in &mut found {
            if let Some((language, _)) = &mut item.code
                && language == name
            {
                *language = "bash".into();
            }
        }
    }
    if sends && urls.is_empty() && addresses.is_empty() && !paths.is_empty() {
        found.push(effect_fact("send", name, Expr::new(Value::Str(String::new())), call));
    }
    let sends_data = !paths.is_empty() || !call.taints.is_empty();
    for url in urls {
        if paths.is_empty() {
            found.push(effect_fact("fetch", name, url, call));
        } else {
            found.push(effect_fact("send", name, url, call));
        }
    }
    // A program given a network address is a network client: what it takes in (its local
    // paths, its standard input, its arguments' data) goes there (`redis-cli -h HOST -x set k <
    // KEY`, `mosquitto_pub -h HOST -f FILE`, `restic -r sftp:u@HOST:/r backup /home`). With a
    // shell named beside the address or a port to listen on, it is a shell reachable from the
    // network (`rcat connect -s bash HOST PORT`, `telnetd -l /bin/sh -p 2323`).
    for address in &addresses {
        let mut fact = effect_fact(if sends_data { "send" } else { "connect" }, name, address.clone(), call);
        if names_shell {
            fact.call.flags.push("shell".into());
            if sends_data {
                let mut connect = effect_fact("connect", name, address.clone(), call);
                connect.call.flags.push("shell".into());
                found.push(connect);
            }
        }
        found.push(fact);
    }
    if names_shell && addresses.is_empty() && port_option {
        let mut fact = effect_fact("listen", name, Expr::new(Value::Str(String::new())), call);
        fact.call.flags.push("shell".into());
        found.push(fact);
    }
    found
}

/// Options under which programs commonly take the host they talk to.
const HOST_OPTIONS: &[&str] = &[
    "h",
    "host",
    "hostname",
    "server",
    "broker",
    "brokers",
    "bootstrap-server",
    "bootstrap-servers",
    "remote",
    "endpoint",
    "addr",
    "address",
    "connect",
    "b",
    "r",
    "repo",
    "H",
];

/// Options under which programs commonly take a port to serve on.
const PORT_OPTIONS: &[&str] = &["p", "port", "l", "listen", "P"];

fn is_port(text: &str) -> bool {
    !text.is_empty() && text.len() <= 5 && text.chars().all(|c| c.is_ascii_digit())
}

/// A program that is a shell, named as an argument (`-l /bin/sh`, `-s bash`, `EXEC:bash`).
fn is_shell_program(text: &str) -> bool {
    let program = text.rsplit(['/', ':']).next().unwrap_or(text);
    matches!(
        program,
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "ash" | "mksh" | "cmd.exe" | "powershell" | "pwsh"
    ) || text.starts_with("/bin/sh ")
        || text.starts_with("/bin/bash ")
}

/// Text that reads as a program's code: brackets, quotes, statement separators.
fn looks_like_code_text(text: &str) -> bool {
    text.contains(['(', ')', '{', '}', ';', '"', '\'', '`', '='])
}

/// An IPv4 address written out (`203.0.113.7`).
fn is_ipv4(text: &str) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    parts.len() == 4
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 3 && p.parse::<u8>().is_ok())
}

/// A host name or an address as an option's value: an IPv4 address, `localhost`, or a dotted
/// name (not a path, not a file name with an extension only).
fn looks_like_host_name(text: &str) -> bool {
    let host = text.rsplit_once('@').map_or(text, |(_, h)| h);
    let host = host.split_once(':').map_or(host, |(h, _)| h);
    if host.is_empty() || host.contains(['/', ' ', '$', '(', '`', '=', ',']) {
        return false;
    }
    is_ipv4(host)
        || host == "localhost"
        || (host.matches('.').count() >= 2
            && host.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
            && host
                .rsplit('.')
                .next()
                .is_some_and(|tld| tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic())))
}

/// A network address that is not a URL: an IPv4 address (with a port, a user or a path),
/// `host:PORT`, `user@host:path`, or a remote repository (`sftp:user@host:/dir`).
fn looks_like_address(text: &str) -> bool {
    if text.contains(char::is_whitespace) || text.starts_with(['-', '/', '.', '~', '$', '@']) || text.contains("://") {
        return false;
    }
    // A mail or chat address (`admin@example.org`): a recipient somewhere else.
    if let Some((user, domain)) = text.split_once('@')
        && !user.is_empty()
        && !domain.contains([':', '@', '/'])
        && user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-'))
        && domain.contains('.')
        && domain
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
        && domain
            .rsplit('.')
            .next()
            .is_some_and(|tld| tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic()))
    {
        return true;
    }
    let rest = text
        .split_once(':')
        .filter(|(scheme, _)| matches!(*scheme, "sftp" | "ssh" | "rest" | "s3" | "rclone" | "tcp" | "udp"))
        .map_or(text, |(_, r)| r);
    let (user_host, tail) = rest.split_once(':').map_or((rest, None), |(h, t)| (h, Some(t)));
    let (user, host) = user_host
        .rsplit_once('@')
        .map_or((None, user_host), |(u, h)| (Some(u), h));
    if is_ipv4(host) {
        return true;
    }
    let dotted = host.contains('.') && host.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    match tail {
        Some(port) if is_port(port) => dotted || host == "localhost",
        Some(_) => user.is_some_and(|u| !u.is_empty()) && (dotted || host == "localhost"),
        None => false,
    }
}

/// A word that is a URL: a scheme (or an expansion holding one, `$proto://$host`) before its
/// `://`. A path whose text holds `://` further on (`../$(echo "$V" | sed 's/^[0-9]*://')-x.diff`,
/// a sed expression inside a substitution) is a path.
fn names_a_url(text: &str) -> bool {
    text.split_once("://")
        .is_some_and(|(scheme, _)| !scheme.is_empty() && !scheme.contains(['/', ' ', '(', ')', '"', '\'', '|', ';']))
}

/// `host:path`, `user@host:path` or a URL: a place on another machine.
fn is_remote(text: &str) -> bool {
    if text.contains("://") {
        return true;
    }
    match text.split_once(':') {
        Some((host, _)) => !host.is_empty() && !host.contains('/') && !host.starts_with('-'),
        None => false,
    }
}

fn looks_like_url(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.contains("://")
        || (lower.contains('@') && lower.contains(':') && !lower.starts_with('@'))
        || lower.starts_with("/dev/tcp/")
        || lower.starts_with("/dev/udp/")
}

impl EffectTables {
    /// The language of the code an interpreter reads from its standard input, when its table
    /// entry has a `shell` effect with `stdin` (`tclsh`, `perl`, `node`); the language of its
    /// inline code otherwise, since an interpreter fed a here-document runs it.
    pub fn stdin_language(&self, name: &str) -> Option<String> {
        let tool = self.tools.get(name)?;
        // (Shell commands given under an option, `rsync -e CMD`, `git -c`, do not make the
        // program a shell that reads its input as commands.)
        tool.effects
            .iter()
            .filter(|e| e.kind == "shell" && (e.language.as_deref() != Some("bash") || e.options.is_empty()))
            .find_map(|e| e.language.clone())
    }

    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.get(name).map(|t| &**t)
    }

    /// Effects of a shell command (`words[0]` is the program).
    pub fn shell_effects(&self, name: &str, words: &[Expr], call: &Call) -> Vec<Found> {
        let Some(tool) = self.tools.get(name) else {
            return Vec::new();
        };
        // Most commands are of tools that do nothing of note (`echo`, `[`, `printf`): with no
        // option taking a value, only `--name=value` could name a file (read below).
        if tool.effects.is_empty()
            && tool.value_options.is_empty()
            && !words
                .iter()
                .skip(1)
                .any(|w| w.text().is_some_and(|t| t.starts_with("--") && t.contains('=')))
        {
            return Vec::new();
        }
        let parsed = parse_words(tool, words);
        let present: Vec<&str> = parsed.options.iter().map(|(n, _)| n.as_str()).collect();
        let mut found = Vec::new();
        for effect in &tool.effects {
            if !effect.when.is_empty() && !effect.when.iter().any(|w| present.contains(&w.as_str())) {
                continue;
            }
            if effect.unless.iter().any(|w| present.contains(&w.as_str())) {
                continue;
            }
            let mut positionals: Vec<&Expr> = parsed.positionals.clone();
            if !effect.verbs.is_empty() {
                let verb = positionals.get(effect.verb_at).and_then(|w| word_text(w));
                if !verb.is_some_and(|v| effect.verbs.contains(&v)) {
                    continue;
                }
                positionals.remove(effect.verb_at);
            }
            if let Some(remote) = effect.last_remote {
                let last_is_remote = positionals.last().and_then(|w| w.text()).is_some_and(|t| is_remote(&t));
                if last_is_remote != remote {
                    continue;
                }
            }
            let mut operands: Vec<Expr> = Vec::new();
            if let Some(constant) = &effect.operand {
                operands.push(Expr::new(Value::Str(constant.clone())));
            }
            for (option, value) in &parsed.options {
                if effect.options.contains(option)
                    && let Some(value) = value
                {
                    let value = option_value(option, value);
                    if effect.after_words.is_empty() {
                        operands.push(value);
                    } else if let Some(text) = value.text() {
                        operands.extend(words_after(&text, &effect.after_words).into_iter().map(|w| Expr {
                            value: Value::Str(w),
                            taints: value.taints,
                            trail: value.trail.clone(),
                        }));
                    }
                }
            }
            let chosen: Vec<&Expr> = match effect.positional {
                Positional::None => Vec::new(),
                Positional::All => positionals.clone(),
                Positional::First => positionals.first().copied().into_iter().collect(),
                Positional::Last => positionals.last().copied().into_iter().collect(),
                Positional::Rest => positionals.iter().skip(1).copied().collect(),
                Positional::Urls => positionals
                    .iter()
                    .copied()
                    .filter(|w| w.text().is_some_and(|t| looks_like_url(&t)))
                    .collect(),
            };
            operands.extend(chosen.into_iter().cloned());
            if let Some(prefix) = &effect.prefix {
                for word in &words[1..] {
                    if let Some(text) = word.text()
                        && let Some(rest) = text.strip_prefix(prefix.as_str())
                    {
                        let mut operand = word.clone();
                        operand.value = match &word.value {
                            Value::Str(_) => Value::Str(rest.to_string()),
                            _ => Value::Formatted(rest.to_string()),
                        };
                        operands.push(operand);
                    }
                }
            }
            let names_nothing = effect.options.is_empty() && effect.prefix.is_none() && effect.operand.is_none();
            if operands.is_empty() && names_nothing && (effect.stdin || effect.positional == Positional::None) {
                // An effect on standard input or on nothing named (`nc -l`, `sudo -i`).
                operands.push(Expr::new(Value::Str(String::new())).with_taints(call.taints));
            }
            for operand in operands {
                found.extend(self.found(effect, name, operand, call));
            }
        }
        // An option the table does not describe is not assumed harmless: a path given to it is
        // read (`ssh-keygen -y -f KEY`, `--input=/etc/shadow`). One an effect names, even only to
        // say when it applies, is described: `sed -e s/a/b/` and `grep -e a/b` give an
        // expression, not a file (`-f`, which names one, is an effect of its own).
        for (option, value) in &parsed.options {
            let described = tool
                .effects
                .iter()
                .any(|e| e.options.contains(option) || e.when.contains(option) || e.unless.contains(option));
            if let Some(value) = value
                && !described
            {
                let value = option_value(option, value);
                if value.text().is_some_and(|t| looks_like_path(&t)) {
                    found.push(effect_fact("read", name, value, call));
                }
            }
        }
        // Operands the table says nothing about are not harmless either: a tool whose effects
        // name no positional operand (`gpg --symmetric FILE`, `ssh-add KEY`) reads a local path
        // given to it, as the fallback assumes for a tool it does not know.
        // (A tool that connects or runs commands takes hosts and commands there: `ssh HOST CMD`.)
        let names_operands = tool.effects.iter().any(|e| {
            e.positional != Positional::None
                || e.prefix.is_some()
                || !e.verbs.is_empty()
                || matches!(e.kind.as_str(), "connect" | "listen" | "shell" | "run" | "exec")
        });
        if !names_operands && !tool.effects.is_empty() {
            for word in &parsed.positionals {
                if let Some(text) = word.text()
                    && looks_like_path(&text)
                    && !text.contains(char::is_whitespace)
                    && (matches!(word.value, Value::Str(_))
                        || text.starts_with(['/', '~', '.'])
                        || text.starts_with("$HOME"))
                {
                    found.push(effect_fact("read", name, (*word).clone(), call));
                }
            }
        }
        found.extend(configured_commands(name, &parsed.positionals, call));
        // `wget URL`, `curl -O URL`: the download is written to a file named after the URL.
        let saved: Vec<Found> = found
            .iter()
            .filter(|f| f.call.name == "@fetch" && saves_under_url_name(&f.call))
            .filter_map(|f| {
                let url = f.call.args.first()?;
                let file = url_file_name(&url.text()?)?.to_string();
                Some(effect_fact(
                    "write",
                    name,
                    Expr::new(Value::Str(file)).with_taints(url.taints),
                    call,
                ))
            })
            .collect();
        found.extend(saved);
        found
    }

    /// Effects of a Python call.
    pub fn python_effects(&self, call: &Call) -> Vec<Found> {
        let mut found = Vec::new();
        for index in self.api_index.candidates(&call.name) {
            let api = &self.apis[index];
            if !api.names.contains(&call.name) {
                continue;
            }
            for effect in &api.effects {
                if effect.if_args.iter().any(|(i, m)| !m.matches(call.args.get(*i))) {
                    continue;
                }
                if effect.if_kwargs.iter().any(|(k, m)| !m.matches(call.kwarg(k))) {
                    continue;
                }
                if effect.unless_kwargs.iter().any(|k| call.kwarg(k).is_some()) {
                    continue;
                }
                let operand = if let Some(constant) = &effect.operand {
                    Some(Expr::new(Value::Str(constant.clone())))
                } else if effect.receiver {
                    call.receiver.clone()
                } else {
                    effect
                        .arg
                        .and_then(|i| call.args.get(i))
                        .or_else(|| effect.kwarg.as_deref().and_then(|k| call.kwarg(k)))
                        .cloned()
                };
                let operand = match operand {
                    Some(o) => o,
                    None if effect.arg.is_none() && effect.kwarg.is_none() && !effect.receiver => {
                        Expr::new(Value::Str(String::new()))
                    }
                    None => continue,
                };
                found.extend(self.found(effect, &call.name, operand, call));
            }
        }
        found
    }

    fn found(&self, effect: &Effect, via: &str, operand: Expr, call: &Call) -> Vec<Found> {
        let mut fact = Call::new(format!("@{}", effect.kind), call.span);
        fact.via = vec![via.to_string()];
        fact.via.extend(call.via.iter().cloned());
        fact.flags = call.flags.clone();
        fact.pipe_from = call.pipe_from.clone();
        fact.pipe_to = call.pipe_to.clone();
        // The data of a send or a write is everything the command takes in. Code given to an
        // interpreter (`awk '{print $1}'`, `perl -e CODE`) is that code: what it reads on its
        // standard input is its data (an interpreter reading its code from standard input has
        // that input as operand).
        fact.taints = match effect.kind.as_str() {
            "send" | "write" | "append" | "exec" => operand.taints.union(call.taints),
            _ => operand.taints,
        };
        let mut operand = operand;
        // `os.kill(-1, 9)`: numbers are matched as text, like the shell's words.
        if let Value::Int(number) = operand.value {
            operand.value = Value::Str(number.to_string());
        }
        let mut found = Vec::new();
        let mut file = effect.reads_file && effect.kind != "read";
        if let Some(prefix) = effect.file_prefix
            && let Some(path) = file_operand(&operand, prefix)
        {
            operand = path;
            file = true;
        }
        if file
            && !operand
                .text()
                .is_some_and(|t| t.is_empty() || t == "-" || is_remote(&t))
        {
            // The file is read for the effect: the read is a fact of its own.
            let mut read = Call::new("@read".into(), call.span);
            read.via = fact.via.clone();
            read.taints = operand.taints;
            read.args.push(operand.clone());
            found.push(Found { call: read, code: None });
        }
        let code = match (&effect.language, effect.kind.as_str()) {
            (Some(language), "shell") => Some((language.clone(), operand.clone())),
            _ => None,
        };
        fact.args.push(operand);
        if effect.own {
            fact.flags.push(OWN_USE_FLAG.into());
        }
        // The data of a send or a write, for the path it took (the second argument).
        if matches!(effect.kind.as_str(), "send" | "write" | "append")
            && let Some(data) = call
                .all_args()
                .chain(call.receiver.iter())
                .find(|a| a.trail.is_some() && !a.taints.is_empty())
        {
            fact.args.push(data.clone());
        }
        found.push(Found { call: fact, code });
        found
    }
}

/// `git config core.fsmonitor CMD`, `git config alias.x '!CMD'`: a setting whose value git runs as
/// a shell command later (a hook in all but name). The value is shell code, analysed as such.
fn configured_commands(program: &str, positionals: &[&Expr], call: &Call) -> Vec<Found> {
    if program != "git" || positionals.first().and_then(|w| word_text(w)).as_deref() != Some("config") {
        return Vec::new();
    }
    let (Some(key), Some(value)) = (positionals.get(1).and_then(|w| word_text(w)), positionals.get(2)) else {
        return Vec::new();
    };
    let key = key.to_ascii_lowercase();
    let runs = matches!(
        key.as_str(),
        "core.fsmonitor"
            | "core.sshcommand"
            | "core.pager"
            | "core.editor"
            | "core.askpass"
            | "sequence.editor"
            | "gpg.program"
            | "gpg.ssh.program"
            | "uploadpack.packobjectshook"
            | "core.gitproxy"
    ) || key.starts_with("alias.")
        || (key.starts_with("credential.") && key.ends_with(".helper"))
        || key == "credential.helper"
        || (key.starts_with("diff.") && (key.ends_with(".command") || key.ends_with(".textconv")))
        || (key.starts_with("merge.") && key.ends_with(".driver"))
        || (key.starts_with("filter.")
            && (key.ends_with(".clean") || key.ends_with(".smudge") || key.ends_with(".process")));
    if !runs {
        return Vec::new();
    }
    let mut code = (*value).clone();
    // An editor or a pager the user names at run time (`core.editor "$EDITOR"`) is theirs.
    if matches!(key.as_str(), "core.pager" | "core.editor" | "sequence.editor") && !code.is_literal() {
        return Vec::new();
    }
    if let Some(text) = code.text().map(|t| t.into_owned()) {
        // An alias runs a shell command only when it starts with `!`; a credential helper does
        // when it does (otherwise it names a `git-credential-*` program).
        if key.starts_with("alias.") || key.contains("credential") {
            let Some(command) = text.strip_prefix('!') else {
                return Vec::new();
            };
            code.value = match &code.value {
                Value::Str(_) => Value::Str(command.to_string()),
                _ => Value::Formatted(command.to_string()),
            };
        }
    }
    vec![inline_code_fact_in("bash", "git", code, call)]
}

/// Shell code a program runs later (a setting's value), to be read as shell.
fn inline_code_fact_in(language: &str, program: &str, code: Expr, call: &Call) -> Found {
    Found {
        call: effect_fact("shell", program, code.clone(), call).call,
        code: Some((language.to_string(), code)),
    }
}

/// The flag of a `@read` for the program's own use (`ssh -i KEY`): not the data of its sends.
pub const OWN_USE_FLAG: &str = "@own";

/// `@/etc/passwd`, `file=@/etc/passwd`: the file a data option names.
fn file_operand(operand: &Expr, prefix: char) -> Option<Expr> {
    let text = operand.text()?;
    let at = text.find(prefix)?;
    // `name=@file` (curl's forms), or httpie's `field@/path` (a field name, then a path).
    let after = &text[at + prefix.len_utf8()..];
    if at > 0 && !text[..at].ends_with('=') && !(prefix == '@' && after.starts_with(['/', '~', '.'])) {
        return None;
    }
    let path = text[at + prefix.len_utf8()..].to_string();
    let path = path.split(';').next().unwrap_or_default().to_string();
    if path.is_empty() || path == "-" {
        return None;
    }
    Some(Expr {
        value: if matches!(operand.value, Value::Str(_)) {
            Value::Str(path)
        } else {
            Value::Formatted(path)
        },
        taints: operand.taints,
        trail: operand.trail.clone(),
    })
}

/// Taints of files written earlier in the same program, by literal path.
#[derive(Debug, Default)]
pub struct FileTaints {
    by_path: HashMap<String, Taints>,
}

impl FileTaints {
    pub fn written(&mut self, path: &str, taints: Taints) {
        if !taints.is_empty() && !path.is_empty() && self.by_path.len() < 4096 {
            let entry = self.by_path.entry(normalise(path)).or_default();
            *entry = entry.union(taints);
        }
    }

    /// Labels of the file, or of a directory it is in that was written whole (an archive
    /// extracted there).
    pub fn of(&self, path: &str) -> Taints {
        if self.by_path.is_empty() {
            return Taints::NONE;
        }
        let mut path = normalise(path);
        // `shutil.make_archive("/tmp/h", "zip", ...)` writes `/tmp/h.zip`: an archive read under
        // its full name was written under its base name.
        if !self.by_path.contains_key(path.as_str())
            && let Some(base) = [
                ".tar.gz", ".tar.bz2", ".tar.xz", ".tgz", ".zip", ".tar", ".gztar", ".bztar", ".xztar",
            ]
            .iter()
            .find_map(|ext| path.strip_suffix(ext))
            && self.by_path.contains_key(base)
        {
            path = base.to_string();
        }
        let mut taints = Taints::NONE;
        let mut current = path.as_str();
        loop {
            if let Some(t) = self.by_path.get(current.trim_end_matches('/')) {
                taints = taints.union(*t);
            }
            match current.trim_end_matches('/').rfind('/') {
                Some(at) if at > 0 => current = &current[..at],
                _ => break,
            }
        }
        taints
    }
}

fn normalise(path: &str) -> String {
    let trimmed = path.trim_start_matches("./");
    let trimmed = if trimmed.len() > 1 {
        trimmed.trim_end_matches('/')
    } else {
        trimmed
    };
    trimmed.to_string()
}

/// A download saved in the working directory under the URL's name: `wget URL`, `aria2c URL`,
/// `curl -O URL` (`curl URL` writes to its output; `-O FILE` options name their file as a write).
fn saves_under_url_name(fetch: &Call) -> bool {
    let flag = |f: &str| fetch.flags.iter().any(|g| g == f);
    match fetch.via.first().map(String::as_str) {
        Some("wget" | "wget2" | "aria2c" | "axel" | "lwp-download") => !flag("O") && !flag("output-document"),
        Some("curl") => flag("O") || flag("remote-name") || flag("remote-name-all"),
        _ => false,
    }
}

/// The name a download of `url` is saved under by default (`wget URL`, `curl -O URL`): its
/// path's last part, when it has one.
fn url_file_name(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let path = rest.split(['?', '#']).next()?;
    let (_, path) = path.split_once('/')?;
    let name = path.rsplit('/').next()?;
    (!name.is_empty() && !name.contains('$') && name != "." && name != "..").then_some(name)
}

/// `/usr/bin/rm` and `\rm` both run `rm`.
pub fn program_name(word: &str) -> String {
    let base = word.rsplit('/').next().unwrap_or(word);
    base.trim_start_matches('\\').to_string()
}
