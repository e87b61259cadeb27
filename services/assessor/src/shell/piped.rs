//! A program read from a pipe: `echo "$code" | sh`, `printf '%s' "$X" | python3`, `cat f | bash`.
//! An interpreter given no script and no inline code reads its program from standard input, so
//! the stage before it is the code: what `echo` or `printf` print is read as code (and, when it
//! holds values known only at run time, asked about); what another command prints is code the
//! assessor cannot see, unless it is a file of the working directory (the program's own).

use super::walker::{Piped, Walker};
use crate::facts::{Expr, Span, Taints, Value};
use airlock_protocol::request::Language;

/// The language an interpreter reads from its standard input when given no script, no inline
/// code and no module (`sh`, `bash -s`, `python3 -`), or `None`.
pub(super) fn reads_program_from_stdin(name: &str, words: &[Expr]) -> Option<Language> {
    let language = match name {
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" | "mksh" => Language::Bash,
        "python" | "python2" | "python3" => Language::Python,
        _ => return None,
    };
    let options_only = words.iter().skip(1).all(|w| match &w.value {
        Value::Str(t) => {
            t == "-"
                || t == "--"
                || (t.starts_with('-') && !t.starts_with("--") && !t[1..].contains(['c', 'm']) && t.len() > 1)
                || (t.starts_with("--")
                    && t.len() > 2
                    && !matches!(t.as_str(), "--command" | "--rcfile" | "--init-file"))
        }
        _ => false,
    });
    options_only.then_some(language)
}

/// What `echo` or `printf` print, as far as the words say (`None` for other programs).
pub(super) fn printed(name: &str, words: &[Expr]) -> Option<Expr> {
    let args: Vec<&Expr> = match name {
        "echo" => words
            .iter()
            .skip(1)
            .skip_while(
                |w| matches!(&w.value, Value::Str(t) if matches!(t.as_str(), "-n" | "-e" | "-E" | "-ne" | "-en")),
            )
            .collect(),
        "printf" => {
            let mut rest = words.iter().skip(1).peekable();
            if rest.peek().is_some_and(|w| w.text().as_deref() == Some("--")) {
                rest.next();
            }
            let format = rest.next()?;
            let arguments: Vec<&Expr> = rest.collect();
            return Some(fill_format(format, &arguments));
        }
        _ => return None,
    };
    let escapes = name == "echo"
        && words
            .iter()
            .skip(1)
            .take_while(|w| matches!(&w.value, Value::Str(t) if t.starts_with('-')))
            .any(|w| w.text().is_some_and(|t| t.contains('e')));
    let mut literal = true;
    let mut taints = Taints::NONE;
    let mut text = Vec::new();
    for arg in args {
        literal &= matches!(arg.value, Value::Str(_));
        taints = taints.union(arg.taints);
        let printed = arg.text().map(|t| t.into_owned()).unwrap_or_else(|| "{}".into());
        text.push(if escapes { unescape(&printed) } else { printed });
    }
    Some(Expr::built(text.join(" "), literal, taints))
}

/// `printf FORMAT ARGS`: the format with each `%s` / `%b` / `%q` filled by the next argument (other
/// conversions kept as they are) and `\n` read as a newline.
fn fill_format(format: &Expr, arguments: &[&Expr]) -> Expr {
    let mut literal = matches!(format.value, Value::Str(_));
    let mut taints = format.taints;
    let template = format.text().map(|t| t.into_owned()).unwrap_or_default();
    let mut out = String::new();
    let mut next = arguments.iter();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('%', Some(conversion @ ('s' | 'b' | 'q'))) => {
                let escapes = *conversion == 'b';
                chars.next();
                if let Some(arg) = next.next() {
                    literal &= matches!(arg.value, Value::Str(_));
                    taints = taints.union(arg.taints);
                    let text = arg.text().unwrap_or_default();
                    // `%b` reads the argument's backslash escapes (`\x72`, `\162`).
                    if escapes {
                        out.push_str(&unescape(&text));
                    } else {
                        out.push_str(&text);
                    }
                }
            }
            ('\\', Some('n')) => {
                chars.next();
                out.push('\n');
            }
            ('\\', Some('x')) => {
                chars.next();
                let hex: String = std::iter::from_fn(|| chars.next_if(|c| c.is_ascii_hexdigit()))
                    .take(2)
                    .collect();
                match u8::from_str_radix(&hex, 16) {
                    Ok(byte) => out.push(char::from(byte)),
                    Err(_) => out.push_str("\\x"),
                }
            }
            _ => out.push(c),
        }
    }
    // Arguments left over print the format again; only their labels are kept here.
    for arg in next {
        literal &= matches!(arg.value, Value::Str(_));
        taints = taints.union(arg.taints);
    }
    Expr::built(out, literal, taints)
}

/// Backslash escapes as `printf %b` and `echo -e` read them: `\xHH`, `\0NNN` and `\NNN`
/// (octal), `\n`, `\t`, `\\`.
fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('x') => {
                let hex: String = std::iter::from_fn(|| chars.next_if(|c| c.is_ascii_hexdigit()))
                    .take(2)
                    .collect();
                match u8::from_str_radix(&hex, 16) {
                    Ok(byte) => out.push(char::from(byte)),
                    Err(_) => out.push_str("\\x"),
                }
            }
            Some(d) if d.is_digit(8) => {
                let mut octal = String::from(d);
                octal.extend(std::iter::from_fn(|| chars.next_if(|c| c.is_digit(8))).take(3));
                let octal = octal.strip_prefix('0').filter(|o| !o.is_empty()).unwrap_or(&octal);
                match u8::from_str_radix(octal, 8) {
                    Ok(byte) => out.push(char::from(byte)),
                    Err(_) => out.push_str(octal),
                }
            }
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

impl Walker<'_, '_, '_> {
    /// The interpreter `name` reads its program from the pipe: read what was printed into it.
    pub(super) fn program_from_pipe(&mut self, language: Language, stdin: Taints, span: Span) {
        let Some(fed) = self.piped.take() else {
            return;
        };
        match fed {
            Piped::Printed(code) => {
                if !code.is_literal() {
                    self.ctx.opaque_code(Language::Bash, language, &code, span);
                }
                if let Some(text) = code.text() {
                    let text = text.into_owned();
                    self.ctx.extract_embedded(language, &text, span);
                }
            }
            // `curl ... | sh` is a download run (AIR-BEHAVIOUR-DOWNLOAD-AND-RUN), not code
            // nobody can know: the rules that say so say it.
            Piped::Other if stdin.intersects(self.ctx.rules.label("downloaded")) => {}
            Piped::Other => {
                let code = Expr::other(stdin);
                self.ctx.opaque_code(Language::Bash, language, &code, span);
            }
        }
    }
}
