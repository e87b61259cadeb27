//! A process listing the script narrows to its own children: `pgrep -P $$`, `ps --ppid $$`, or a
//! listing filtered by awk to the rows where a column is the script's own pid (`ps -f | awk -v
//! ppid=$$ '$3 == ppid { print $2 }'`, git-changelog stopping what it started on Ctrl-C).
//! Signalling those stops what the script itself started, as `kill $!` does; the listing no
//! longer carries the `process_list` label that makes a kill "chosen from a process listing".

use crate::facts::Expr;

/// The script's own process id, as a word holds it.
fn own_pid(text: &str) -> bool {
    matches!(text, "$$" | "${$}" | "$BASHPID" | "${BASHPID}")
}

fn text(word: &Expr) -> String {
    word.text().map(|t| t.into_owned()).unwrap_or_default()
}

/// Whether the command's output lists only the script's own children (and itself).
pub(super) fn narrows_to_own_children(name: &str, words: &[Expr]) -> bool {
    // Called for every command: the words are copied only for the few programs that list.
    let check: fn(&[String]) -> bool = match name {
        "pgrep" => pgrep_children,
        "ps" => ps_children,
        "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" => awk_children,
        _ => return false,
    };
    let rest: Vec<String> = words.iter().skip(1).map(text).collect();
    check(&rest)
}

/// pgrep's criteria all apply together: one of them being "the parent is this script" is
/// enough.
fn pgrep_children(words: &[String]) -> bool {
    words.iter().enumerate().any(|(i, w)| {
        let next = words.get(i + 1).map(String::as_str).unwrap_or_default();
        ((w == "-P" || w == "--parent") && own_pid(next))
            || w.strip_prefix("-P").is_some_and(own_pid)
            || w.strip_prefix("--parent=").is_some_and(own_pid)
    })
}

/// ps's selections add up (`ps -e --ppid $$` lists everything): only `--ppid $$` with output
/// formatting options beside it.
fn ps_children(words: &[String]) -> bool {
    let mut own = false;
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        match w {
            "--ppid" if words.get(i + 1).is_some_and(|p| own_pid(p)) => {
                own = true;
                i += 1;
            }
            "-o" | "o" | "--format" | "-O" | "--sort" => i += 1,
            "-f" | "-F" | "-l" | "-j" | "-w" | "-ww" | "-H" | "h" | "--no-headers" | "--forest" => {}
            _ if w.strip_prefix("--ppid=").is_some_and(own_pid) => own = true,
            _ if w.starts_with("-o") || w.starts_with("--format=") || w.starts_with("--sort=") => {}
            _ => return false,
        }
        i += 1;
    }
    own
}

/// awk keeps a row only where a column equals a variable set to the script's pid: every block
/// that prints has a pattern requiring `$N == VAR` (with `&&` only), and the program runs no
/// command (`system`, `getline`, pipes).
fn awk_children(words: &[String]) -> bool {
    let mut own_vars = Vec::new();
    let mut program = None;
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        let assignment = if w == "-v" {
            i += 1;
            words.get(i).map(String::as_str)
        } else if let Some(a) = w.strip_prefix("-v") {
            Some(a)
        } else if program.is_some() {
            // Operands after the program: `VAR=value` assignments or files.
            Some(w)
        } else if w == "-F" {
            i += 2;
            continue;
        } else if w.starts_with("-F") || w == "--" {
            i += 1;
            continue;
        } else if w.starts_with('-') {
            // `-f progfile` and other options: a program not seen here.
            return false;
        } else {
            program = Some(w);
            i += 1;
            continue;
        };
        if let Some((var, value)) = assignment.and_then(|a| a.split_once('='))
            && own_pid(value)
        {
            own_vars.push(var.to_string());
        }
        i += 1;
    }
    let Some(program) = program else {
        return false;
    };
    if own_vars.is_empty() || program.contains("system") || program.contains("getline") || program.contains('|') {
        return false;
    }
    let guarded = |pattern: &str| {
        let pattern = pattern.trim();
        !pattern.contains("||")
            && !pattern.contains('!')
            && pattern.split("&&").any(|term| {
                let Some((left, right)) = term.split_once("==") else {
                    return false;
                };
                let (left, right) = (left.trim(), right.trim());
                let column = |s: &str| {
                    s.strip_prefix('$')
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                };
                let var = |s: &str| own_vars.iter().any(|v| v == s);
                (column(left) && var(right)) || (var(left) && column(right))
            })
    };
    let mut printed = false;
    for (pattern, action) in blocks(program) {
        if action.contains("print") {
            printed = true;
            if !guarded(pattern) {
                return false;
            }
        }
    }
    printed
}

/// An awk program's top-level `pattern { action }` pairs (braces inside strings skipped). A
/// pattern with no action prints its rows: it is returned with the action `print`.
fn blocks(program: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let (mut depth, mut in_string, mut pattern_start, mut action_start) = (0usize, false, 0usize, 0usize);
    let mut previous = '\0';
    for (i, c) in program.char_indices() {
        match c {
            '"' if previous != '\\' => in_string = !in_string,
            '{' if !in_string => {
                if depth == 0 {
                    action_start = i + 1;
                }
                depth += 1;
            }
            '}' if !in_string && depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    let pattern_end = action_start.saturating_sub(1);
                    out.push((&program[pattern_start..pattern_end], &program[action_start..i]));
                    pattern_start = i + 1;
                }
            }
            '\n' | ';' if !in_string && depth == 0 => {
                let bare = program[pattern_start..i].trim();
                if !bare.is_empty() {
                    out.push((bare, "print"));
                }
                pattern_start = i + 1;
            }
            _ => {}
        }
        previous = c;
    }
    let bare = program[pattern_start..].trim();
    if depth == 0 && !bare.is_empty() {
        out.push((bare, "print"));
    }
    if depth != 0 {
        // Unbalanced: not read here, so not known to filter anything.
        out.push(("", "print"));
    }
    out
}
