//! Shell words: literals, quoting, escapes, and expansions of variables, positional parameters
//! and the request's environment.

use super::{Pipe, Walker};
use crate::facts::{Expr, Taints, Value};
use tree_sitter::Node;

impl<'t> Walker<'_, '_, '_, 't> {
    /// `$1`, `$@`, `$#` in the current function, or the request's arguments at the top level.
    pub(super) fn positional_value(&self, name: &str) -> Option<Expr> {
        let from_request: Vec<Expr>;
        let arguments: &[Expr] = match &self.positional {
            Some(args) => args,
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
            "@" | "*" => {
                let parts: Vec<&Expr> = arguments.iter().collect();
                let text: Vec<String> = arguments
                    .iter()
                    .map(|a| a.text().map(|t| t.into_owned()).unwrap_or_default())
                    .collect();
                let taints = arguments.iter().fold(Taints::NONE, |t, a| t.union(a.taints));
                let literal = arguments.iter().all(|a| matches!(a.value, Value::Str(_)));
                let value = if literal {
                    Value::Str(text.join(" "))
                } else {
                    Value::Formatted(text.join(" "))
                };
                Some(
                    Expr {
                        value,
                        taints,
                        trail: None,
                    }
                    .with_trail_of(&parts),
                )
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
    pub(super) fn word(&mut self, node: Node<'t>, depth: u32) -> Expr {
        if self.ctx.stop_at(depth) {
            return Expr::other(Taints::NONE);
        }
        match node.kind() {
            "word" | "number" | "extglob_pattern" | "regex" | "special_variable_name" => {
                Expr::new(Value::Str(literal_word(self.text(node))))
            }
            "raw_string" => {
                let text = self.text(node);
                let inner = text
                    .strip_prefix('\'')
                    .and_then(|t| t.strip_suffix('\''))
                    .unwrap_or(text);
                Expr::new(Value::Str(inner.to_string()))
            }
            "ansi_c_string" => {
                let text = self.text(node);
                let inner = text
                    .strip_prefix("$'")
                    .and_then(|t| t.strip_suffix('\''))
                    .unwrap_or(text);
                Expr::new(Value::Str(ansi_c_unescape(inner)))
            }
            "string" | "concatenation" | "command_name" | "translated_string" => self.compound_word(node, depth),
            "simple_expansion" | "expansion" => self.expansion(node, depth),
            "command_substitution" | "process_substitution" => {
                let mut output = Taints::NONE;
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    output = output.union(self.visit(child, depth + 1, &Pipe::default()));
                }
                let inner: String = self.text(node).chars().take(200).collect();
                Expr {
                    value: Value::Formatted(inner),
                    taints: output,
                    trail: None,
                }
            }
            _ => {
                let mut taints = Taints::NONE;
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    taints = taints.union(self.word(child, depth + 1).taints);
                }
                Expr {
                    value: Value::Formatted(self.text(node).to_string()),
                    taints,
                    trail: None,
                }
            }
        }
    }

    pub(super) fn compound_word(&mut self, node: Node<'t>, depth: u32) -> Expr {
        let quoted = node.kind() == "string";
        let mut text = String::new();
        let mut literal = true;
        let mut taints = Taints::NONE;
        let mut trail = None;
        let mut last_end = if quoted {
            node.start_byte() + 1
        } else {
            node.start_byte()
        };
        let end = if quoted {
            node.end_byte().saturating_sub(1)
        } else {
            node.end_byte()
        };
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            // Text between named children (a `$` alone, spaces in a string) is literal too.
            if child.start_byte() > last_end
                && let Some(gap) = self.source.get(last_end..child.start_byte())
            {
                text.push_str(gap);
            }
            last_end = child.end_byte();
            match child.kind() {
                "string_content" => text.push_str(&unescape_double_quoted(self.text(child))),
                _ => {
                    let part = self.word(child, depth + 1);
                    if trail.is_none() {
                        trail = part.trail.clone();
                    }
                    taints = taints.union(part.taints);
                    match &part.value {
                        Value::Str(s) => text.push_str(s),
                        Value::Formatted(s) => {
                            literal = false;
                            text.push_str(s);
                        }
                        _ => {
                            literal = false;
                            text.push_str(self.text(child));
                        }
                    }
                }
            }
        }
        if end > last_end
            && let Some(gap) = self.source.get(last_end..end)
        {
            text.push_str(gap);
        }
        let value = if literal {
            Value::Str(text)
        } else {
            Value::Formatted(text)
        };
        Expr { value, taints, trail }
    }

    pub(super) fn expansion(&mut self, node: Node<'t>, depth: u32) -> Expr {
        let mut cursor = node.walk();
        let mut name = None;
        let mut taints = Taints::NONE;
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "variable_name" | "special_variable_name" if name.is_none() => {
                    name = Some(self.text(child).to_string());
                }
                _ => taints = taints.union(self.word(child, depth + 1).taints),
            }
        }
        let Some(name) = name else {
            return Expr {
                value: Value::Formatted(self.text(node).to_string()),
                taints,
                trail: None,
            };
        };
        let known = self
            .vars
            .get(&name)
            .cloned()
            .or_else(|| self.positional_value(&name))
            .or_else(|| {
                let value = self.ctx.inputs?.env.get(&name)?;
                Some(Expr::new(Value::Str(value.clone())).step(String::new, || format!("environment variable {name}")))
            });
        // `${X:-default}`, `${1-default}`: with X unknown, the default is the value it can take.
        if known.is_none() && node.kind() == "expansion" {
            let text = self.text(node);
            let after_name = text
                .trim_start_matches("${")
                .strip_prefix(name.as_str())
                .unwrap_or_default();
            if (after_name.starts_with(":-") || after_name.starts_with('-') || after_name.starts_with(":="))
                && let Some(default) = node.named_child(node.named_child_count().saturating_sub(1) as u32)
                && default.kind() != "variable_name"
            {
                return self.word(default, depth + 1).with_taints(taints);
            }
        }
        match known.as_ref() {
            // `${X:-default}` and other operators may change the value: keep only the labels.
            Some(bound) if node.kind() == "simple_expansion" || node.named_child_count() == 1 => {
                bound.clone().with_taints(taints)
            }
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

/// An unquoted word with its backslash escapes removed.
pub(super) fn literal_word(text: &str) -> String {
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
    use crate::shell_old::program_name;

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
