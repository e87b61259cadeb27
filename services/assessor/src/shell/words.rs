//! Shell words: literals, quoting, escapes, and expansions of variables, positional parameters
//! and the request's environment.

use super::walker::{Pipe, Walker};
use crate::budget::with_stack;
use crate::facts::{Expr, Taints, Value};
use airlock_bash_parser::ast::{Param, ParamOp, Word, WordPart};

/// A value built by the walker (`$a$b`, `"$@"`, `x+=y`) keeps at most this much text, so
/// `x=$x$x` repeated cannot grow it without bound.
const MAX_VALUE_TEXT: usize = 64 * 1024;
/// Text of variables copied into words, per walk: past it, expansions keep their labels but
/// read as written (`$x`), so a large value expanded many times cannot exhaust memory.
const MAX_EXPANDED_TEXT: usize = 16 * 1024 * 1024;

/// The first program named by a substitution that only looks programs up by literal names
/// (`$(type -p greadlink readlink | head -1)`, `$(command -v gsed)`, `` `which python3` ``):
/// whichever is found, it is one the script chose.
/// A substitution that is one `printf` or `echo` and nothing else.
fn prints_only(substitution: &str) -> bool {
    let Some(inner) = substitution
        .strip_prefix("$(")
        .and_then(|t| t.strip_suffix(')'))
        .or_else(|| substitution.strip_prefix('`').and_then(|t| t.strip_suffix('`')))
    else {
        return false;
    };
    let inner = inner.trim();
    (inner.starts_with("printf ") || inner.starts_with("echo "))
        && !inner.contains(['|', ';', '&', '\n', '`', '>', '<'])
        && !inner.contains("$(")
}

fn looked_up_program(substitution: &str) -> Option<&str> {
    let inner = substitution
        .strip_prefix("$(")
        .and_then(|t| t.strip_suffix(')'))
        .or_else(|| substitution.strip_prefix('`').and_then(|t| t.strip_suffix('`')))?;
    let mut stages = inner.split('|');
    let lookup: Vec<&str> = stages.next()?.split_whitespace().collect();
    let names = match lookup.as_slice() {
        ["type", "-p" | "-P", names @ ..] | ["command", "-v", names @ ..] | ["whence", "-p", names @ ..] => names,
        ["which", names @ ..] => names,
        _ => return None,
    };
    let rest_is_first_line = stages.all(|stage| {
        matches!(
            stage.split_whitespace().collect::<Vec<_>>().as_slice(),
            ["head", "-1" | "-n1"] | ["head", "-n", "1"]
        )
    });
    let literal = |n: &&str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b));
    (rest_is_first_line && !names.is_empty() && names.iter().all(literal) && !names[0].starts_with('-'))
        .then(|| names[0])
}

/// The words of a substitution that asks a program, by literal words only, for its shell
/// integration (`$(pyenv init - bash)`, `` `thefuck --alias` ``, `$(_PIPENV_COMPLETE=bash_source
/// pipenv)`, `$(register-python-argcomplete pipx)`): the program and its arguments, environment
/// assignments in front left out. One simple command, nothing expanded, piped or redirected.
pub(super) fn integration_command(substitution: &str) -> Option<Vec<String>> {
    let inner = substitution
        .strip_prefix("$(")
        .or_else(|| substitution.strip_prefix("<("))
        .and_then(|t| t.strip_suffix(')'))
        .or_else(|| substitution.strip_prefix('`').and_then(|t| t.strip_suffix('`')))?;
    let plain = |w: &str| {
        !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._+-=:/,@".contains(&b))
    };
    let mut words = inner.split_whitespace().peekable();
    let mut integration = false;
    while let Some(word) = words.peek() {
        let Some((name, value)) = word.split_once('=') else {
            break;
        };
        if name.is_empty()
            || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            || !plain(value) && !value.is_empty()
        {
            return None;
        }
        integration |= name.to_ascii_uppercase().contains("COMPLETE");
        words.next();
    }
    let words: Vec<String> = words.map(str::to_string).collect();
    let program = words.first()?;
    if program.starts_with('-') || !words.iter().all(|w| plain(w)) {
        return None;
    }
    integration |= words.iter().any(|w| {
        let w = w.trim_start_matches('-').to_ascii_lowercase();
        w.contains("complet")
            || matches!(
                w.as_str(),
                "init"
                    | "hook"
                    | "shellenv"
                    | "shell"
                    | "activate"
                    | "sh-activate"
                    | "sh-deactivate"
                    | "alias"
                    | "aliases"
            )
    });
    // Programs whose output is shell settings for `eval` (`eval "$(ssh-agent -s)"`, `eval
    // "$(dircolors -b)"`): their job is to print them.
    integration |= SETTINGS_PRINTERS.contains(&program.rsplit('/').next().unwrap_or(program));
    integration.then_some(words)
}

/// Programs that print shell variable settings for the caller to `eval`.
const SETTINGS_PRINTERS: &[&str] = &[
    "ssh-agent",
    "gpg-agent",
    "dircolors",
    "gdircolors",
    "resize",
    "dbus-launch",
    "gnome-keyring-daemon",
    "keychain",
    "locale",
];

/// A substitution whose one command sends its output to /dev/null (`` `dbus-send ... >
/// /dev/null 2>&1` ``, `$(expr match "$x" '.* ' > /dev/null)` used as a test): it prints
/// nothing, so as a command it runs nothing; only its exit status is used.
pub(super) fn prints_nothing(substitution: &str) -> bool {
    let Some(inner) = substitution
        .strip_prefix("$(")
        .and_then(|t| t.strip_suffix(')'))
        .or_else(|| substitution.strip_prefix('`').and_then(|t| t.strip_suffix('`')))
    else {
        return false;
    };
    // One command or pipeline: what a later one printed would be run.
    if inner.contains([';', '\n', '`']) || inner.contains("&&") || inner.contains("||") || inner.contains("$(") {
        return false;
    }
    let mut rest = inner.trim_end();
    for stderr in ["2>&1", "2> /dev/null", "2>/dev/null"] {
        if let Some(before) = rest.strip_suffix(stderr) {
            rest = before.trim_end();
            break;
        }
    }
    if silent_by_option(rest) {
        return true;
    }
    [
        ">/dev/null",
        "> /dev/null",
        "1>/dev/null",
        "1> /dev/null",
        "&>/dev/null",
        "&> /dev/null",
    ]
    .iter()
    .any(|discarded| {
        rest.strip_suffix(discarded)
            .is_some_and(|before| before.ends_with(' ') && !before.trim().is_empty())
    })
}

/// A command's name written as a literal prefix, one expansion, and a literal suffix
/// (`__powerline_$segment_prompt`, `cmd_$(echo $command | sed -e s/-/_/g)`,
/// `___brainy_prompt_${seg}`): the prefix and suffix, for the functions of that family. The
/// prefix names a family (at least three characters of a function name, ending in `_`, `-` or
/// `:`); after `$name` the suffix cannot be told from the name (`"$seg"_prompt` reads as
/// `$seg_prompt`), so it is left empty.
pub(super) fn function_family(text: &str) -> Option<(String, String)> {
    let at = text.find('$')?;
    let (prefix, hole) = text.split_at(at);
    let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '.');
    if prefix.len() < 3 || !prefix.chars().all(name_char) || !prefix.ends_with(['_', '-', ':']) {
        return None;
    }
    let suffix = if let Some(inner) = hole.strip_prefix("${") {
        let end = inner.find('}')?;
        &inner[end + 1..]
    } else if hole.starts_with("$(") {
        &hole[hole.rfind(')')? + 1..]
    } else {
        let name = hole[1..].trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
        if name.len() + 1 == hole.len() {
            return None;
        }
        if !name.chars().all(name_char) {
            return None;
        }
        ""
    };
    if !suffix.chars().all(name_char) {
        return None;
    }
    Some((prefix.to_string(), suffix.to_string()))
}

/// A command that prints nothing on its standard output whatever it is given, so that only its
/// exit status is used: the last stage of the pipeline is `grep -q` (`--quiet`, `--silent`, in
/// any option cluster: `-qs`, `-Fq`), or the whole command is `hash NAME...` (`` `vim --version |
/// grep -q +folding` ``, `` `hash benchstat 2>/dev/null` `` used as tests).
fn silent_by_option(command: &str) -> bool {
    let last = command.rsplit('|').next().unwrap_or(command);
    let mut words = last.split_whitespace();
    match words.next() {
        Some("grep" | "egrep" | "fgrep") => {
            // grep's options that take a value (`-e -q` searches for "-q"; in `-eq` the `q` is
            // the pattern): a `q` counts only before them, and not as one's value.
            const VALUED: &[u8] = b"efmABCdD";
            let mut value_next = false;
            words.any(|w| {
                let quiet = !value_next
                    && (matches!(w, "--quiet" | "--silent")
                        || w.strip_prefix('-').is_some_and(|cluster| {
                            let flags = cluster
                                .split(|c: char| VALUED.contains(&(c as u8)))
                                .next()
                                .unwrap_or("");
                            !cluster.starts_with('-')
                                && cluster.bytes().all(|b| b.is_ascii_alphabetic())
                                && flags.contains('q')
                        }));
                value_next = !value_next
                    && (matches!(w, "--regexp" | "--file" | "--max-count")
                        || w.strip_prefix('-').is_some_and(|c| {
                            !c.starts_with('-') && c.bytes().last().is_some_and(|b| VALUED.contains(&b))
                        }));
                quiet
            })
        }
        Some("hash") => !command.contains('|') && words.all(|w| !w.starts_with('-')),
        _ => false,
    }
}

/// Every expansion left in a word's text is a positional parameter (`$1=\"$2\"`, `"$@"`):
/// what it holds is whatever a caller of the function passes.
pub(super) fn only_positional_holes(text: &str) -> bool {
    let mut rest = text;
    let mut any = false;
    while let Some(at) = rest.find('$') {
        let after = &rest[at + 1..];
        let after = after.strip_prefix('{').unwrap_or(after);
        match after.bytes().next() {
            Some(b'@' | b'*' | b'1'..=b'9') => any = true,
            _ => return false,
        }
        rest = &after[1..];
    }
    any
}

/// Characters of a substitution's text kept as its value.
const SUBSTITUTION_TEXT: usize = 200;

impl<'s> Walker<'_, '_, 's> {
    /// `$1`, `$@`, `$#` in the current function, or the request's arguments at the top level.
    pub(super) fn positional_value(&self, name: &str) -> Option<Expr> {
        let from_request: Vec<Expr>;
        let arguments: &[Expr] = match &self.positional {
            Some(args) => args,
            None if self.in_definition > 0 => return None,
            None => {
                let inputs = self.ctx.inputs?;
                from_request = inputs
                    .args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| {
                        Expr::new(Value::Str(a.clone())).step(String::new, || format!("request argument {}", i + 1))
                    })
                    .collect();
                &from_request
            }
        };
        match name {
            // `"$@"`: each argument stays a word of its own (`python3 "$@"` given `-c CODE`).
            "@" => {
                let parts: Vec<&Expr> = arguments.iter().collect();
                let taints = arguments.iter().fold(Taints::NONE, |t, a| t.union(a.taints));
                Some(
                    Expr::new(Value::Seq(arguments.to_vec()))
                        .with_taints(taints)
                        .with_trail_of(&parts),
                )
            }
            "*" => {
                let parts: Vec<&Expr> = arguments.iter().collect();
                let text: Vec<String> = arguments
                    .iter()
                    .map(|a| a.text().map(|t| t.into_owned()).unwrap_or_default())
                    .collect();
                let taints = arguments.iter().fold(Taints::NONE, |t, a| t.union(a.taints));
                let mut literal = arguments.iter().all(|a| matches!(a.value, Value::Str(_)));
                let mut joined = String::new();
                for (i, argument) in text.iter().enumerate() {
                    let separator = if i == 0 { "" } else { " " };
                    literal &= push_bounded(&mut joined, separator) && push_bounded(&mut joined, argument);
                }
                Some(Expr::built(joined, literal, taints).with_trail_of(&parts))
            }
            "#" => Some(Expr::new(Value::Str(arguments.len().to_string()))),
            digits if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
                let index: usize = digits.parse().ok()?;
                if index == 0 {
                    return None;
                }
                arguments.get(index - 1).cloned()
            }
            _ => None,
        }
    }

    /// The value of a shell word; expansions of known variables are substituted.
    pub(super) fn word(&mut self, word: &'s Word, depth: u32) -> Expr {
        if self.ctx.stop_at(depth) {
            return Expr::other(Taints::NONE);
        }
        // Words nest in words (`${a:-${b:-...}}`): the stack grows on the heap as needed.
        with_stack(|| match &word.parts[..] {
            [part] => self.part(part, depth),
            parts => self.concatenation(parts, depth),
        })
    }

    /// A command's name: as a word, but a value not known as text reads as written (`$cmd`).
    pub(super) fn command_name(&mut self, word: &'s Word, depth: u32) -> Expr {
        if self.ctx.stop_at(depth) {
            return Expr::other(Taints::NONE);
        }
        match &word.parts[..] {
            [part] => {
                let value = self.part(part, depth);
                if matches!(value.value, Value::Str(_) | Value::Formatted(_) | Value::Seq(_)) {
                    return value;
                }
                Expr {
                    value: Value::Formatted(self.text(part.range()).to_string()),
                    taints: value.taints,
                    trail: value.trail,
                }
            }
            parts => self.concatenation(parts, depth),
        }
    }

    pub(super) fn part(&mut self, part: &'s WordPart, depth: u32) -> Expr {
        match part {
            WordPart::Literal(range) => Expr::new(Value::Str(literal_word(self.text(*range)))),
            WordPart::QuotedLiteral(range) => Expr::new(Value::Str(unescape_double_quoted(self.text(*range)))),
            WordPart::RawLiteral(range) | WordPart::SingleQuoted(range) => {
                Expr::new(Value::Str(self.text(*range).to_string()))
            }
            WordPart::AnsiC(range) => Expr::new(Value::Str(ansi_c_unescape(self.text(*range)))),
            WordPart::DoubleQuoted(_, parts) => self.concatenation(parts, depth),
            WordPart::Param(param) => self.expansion(param, depth),
            WordPart::CommandSub(range, body) | WordPart::ProcessSub(range, body) => {
                let saved = self.printed.take();
                let output = self.statements(body, depth + 1, &Pipe::default());
                let printed = std::mem::replace(&mut self.printed, saved);
                // `$(type -p greadlink readlink | head -1)`: a program the script names itself.
                if let Some(program) = looked_up_program(self.text(*range)) {
                    return Expr::new(Value::Str(program.to_string())).with_taints(output);
                }
                // `$(printf '%b' '\x72\x6d ...')`, `$(echo -e ...)`: the text printed.
                if let Some(printed) = printed
                    && prints_only(self.text(*range))
                {
                    return printed.with_taints(output);
                }
                let inner: String = self.text(*range).chars().take(SUBSTITUTION_TEXT).collect();
                Expr {
                    value: Value::Formatted(inner),
                    taints: output,
                    trail: None,
                }
            }
            WordPart::Arith(range, parts) => {
                let taints = self.parts_taints(parts, depth + 1);
                Expr {
                    value: Value::Formatted(self.text(*range).to_string()),
                    taints,
                    trail: None,
                }
            }
        }
    }

    /// Parts written together (`"$dir"/x`, `"a $b"`): literal when every part is.
    pub(super) fn concatenation(&mut self, parts: &'s [WordPart], depth: u32) -> Expr {
        let mut text = String::new();
        let mut literal = true;
        let mut taints = Taints::NONE;
        let mut trail = None;
        for part in parts {
            let value = self.part(part, depth);
            // `"${cmd[@]}"` of a literal array stays its words.
            if parts.len() == 1 && matches!(value.value, Value::Seq(_)) {
                return value;
            }
            if trail.is_none() {
                trail = value.trail.clone();
            }
            taints = taints.union(value.taints);
            match &value.value {
                Value::Str(s) => literal &= push_bounded(&mut text, s),
                Value::Formatted(s) => {
                    literal = false;
                    push_bounded(&mut text, s);
                }
                _ => {
                    literal = false;
                    push_bounded(&mut text, self.text(part.range()));
                }
            }
        }
        Expr {
            trail,
            ..Expr::built(text, literal, taints)
        }
    }

    pub(super) fn expansion(&mut self, param: &'s Param, depth: u32) -> Expr {
        let mut taints = Taints::NONE;
        if let Some(index) = &param.subscript {
            taints = taints.union(self.word(index, depth + 1).taints);
        }
        let argument = param.arg.as_ref().map(|arg| self.word(arg, depth + 1));
        if let Some(argument) = &argument {
            taints = taints.union(argument.taints);
        }
        let name = self.text(param.name);
        if name.is_empty() {
            return Expr {
                value: Value::Formatted(self.text(param.range).to_string()),
                taints,
                trail: None,
            };
        }
        // `${a[@]}`, `${a[0]}`: the array's labels, with the expansion as written; the words of
        // an array of literal words.
        if let Some(subscript) = &param.subscript {
            let bound = self.vars.get(name);
            if let Some(Value::Seq(items)) = bound.map(|b| &b.value) {
                let index = literal_word(self.text(subscript.range));
                if index == "@" || index == "*" {
                    return Expr::new(Value::Seq(items.clone()));
                }
                if let Some(item) = index.parse::<usize>().ok().and_then(|i| items.get(i)) {
                    return item.clone();
                }
            }
            return Expr {
                value: Value::Formatted(self.text(param.range).to_string()),
                taints: taints.union(bound.map_or(Taints::NONE, |b| b.taints)),
                trail: bound.and_then(|b| b.trail.clone()),
            };
        }
        let known = self
            .vars
            .get(name)
            .cloned()
            .or_else(|| self.positional_value(name))
            .or_else(|| {
                let value = self.ctx.inputs?.env.get(name)?;
                Some(Expr::new(Value::Str(value.clone())).step(String::new, || format!("environment variable {name}")))
            });
        // `${POSIXLY_CORRECT+break}`, `${PATH_SEPARATOR+false}`: the literal word, or nothing
        // (then the next word is the command): the word is what can run.
        if matches!(param.op, Some(ParamOp::Alternative))
            && !param.length
            && !param.indirect
            && let Some(word) = &argument
            && matches!(&word.value, Value::Str(w) if !w.is_empty() && !w.contains(char::is_whitespace))
        {
            return word.clone().with_taints(taints);
        }
        // `${X:-default}`, `${1-default}`: with X unknown, the default is the value it can take.
        if known.is_none()
            && matches!(param.op, Some(ParamOp::Default | ParamOp::Assign))
            && !param.length
            && !param.indirect
            && let Some(default) = argument
        {
            return default.with_taints(taints);
        }
        let plain = param.op.is_none() && !param.length && !param.indirect;
        if let Some(bound) = &known
            && plain
        {
            self.expanded = self.expanded.saturating_add(bound.text().map_or(0, |t| t.len()));
        }
        match known {
            Some(bound) if plain && self.expanded <= MAX_EXPANDED_TEXT => bound.with_taints(taints),
            Some(bound) if plain => Expr {
                value: Value::Formatted(format!("${name}")),
                taints: taints.union(bound.taints),
                trail: bound.trail,
            },
            // `${X:-default}` and other operators may change the value: keep only the labels.
            Some(bound) => Expr {
                value: Value::Formatted(format!("${name}")),
                taints: taints.union(bound.taints),
                trail: None,
            },
            None => Expr {
                value: Value::Formatted(format!("${name}")),
                taints,
                trail: None,
            },
        }
    }
}

/// Appends `more` to `text` up to `MAX_VALUE_TEXT` bytes (cut on a character boundary); false
/// when it did not fit whole.
pub(super) fn push_bounded(text: &mut String, more: &str) -> bool {
    let room = MAX_VALUE_TEXT.saturating_sub(text.len());
    if more.len() <= room {
        text.push_str(more);
        return true;
    }
    let mut cut = room;
    while cut > 0 && !more.is_char_boundary(cut) {
        cut -= 1;
    }
    text.push_str(more.get(..cut).unwrap_or_default());
    false
}

/// An unquoted word with its backslash escapes removed.
pub(super) fn literal_word(text: &str) -> String {
    if !text.contains('\\') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') => {}
                Some(next) => out.push(next),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

pub(super) fn unescape_double_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && matches!(next, '"' | '\\' | '$' | '`' | '\n')
        {
            chars.next();
            if next != '\n' {
                out.push(next);
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// `$'\x2fetc\x2fshadow'` as `/etc/shadow`.
pub(super) fn ansi_c_unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' || i >= chars.len() {
            out.push(c);
            continue;
        }
        let e = chars[i];
        i += 1;
        match e {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'e' | 'E' => out.push('\u{1b}'),
            'a' => out.push('\u{7}'),
            '\\' | '\'' | '"' => out.push(e),
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let digits: String = chars[i..]
                    .iter()
                    .take(max)
                    .take_while(|c| c.is_ascii_hexdigit())
                    .collect();
                i += digits.len();
                match u32::from_str_radix(&digits, 16).ok().and_then(char::from_u32) {
                    Some(decoded) => out.push(decoded),
                    None => {
                        out.push('\\');
                        out.push(e);
                    }
                }
            }
            '0'..='7' => {
                let digits: String = std::iter::once(e)
                    .chain(
                        chars[i..]
                            .iter()
                            .copied()
                            .take(2)
                            .take_while(|c| ('0'..='7').contains(c)),
                    )
                    .collect();
                i += digits.len() - 1;
                match u32::from_str_radix(&digits, 8).ok().and_then(char::from_u32) {
                    Some(decoded) => out.push(decoded),
                    None => out.push_str(&digits),
                }
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effects::program_name;

    #[test]
    fn program_names_lose_their_directory() {
        assert_eq!(program_name("/usr/bin/rm"), "rm");
        assert_eq!(program_name("\\rm"), "rm");
        assert_eq!(program_name("curl"), "curl");
    }

    #[test]
    fn ansi_c_strings_are_decoded() {
        assert_eq!(ansi_c_unescape(r"\x2fetc\x2fshadow"), "/etc/shadow");
        assert_eq!(ansi_c_unescape(r"\057bin\057sh"), "/bin/sh");
        assert_eq!(ansi_c_unescape(r"a\qb"), "a\\qb");
        assert_eq!(ansi_c_unescape("\\"), "\\");
    }
}
