//! Pages that look like each chat's message for the sample request of `approver_view`, drawn
//! from exactly what the bridge posts: Matrix's `formatted_body`, Slack's Block Kit and `text`,
//! Discord's `content` and embeds, the plain `body` of Matrix and webhooks. `ops/screens` writes
//! them to `docs/screens/` and photographs each with headless Chromium at a desktop and a phone
//! width; a test checks that the pages there are what the current renderer draws.
//!
//! Slack's mrkdwn and Discord's Markdown are turned into HTML here by a small reader of just the
//! markup the bridge writes (bold, inline code, code blocks, mentions, dates, escapes): no
//! maintained crate renders either, and a page that looks like the chat is all this is for.
//!
//! `cargo run -p airlock-chat-bridge --example screens -- DIR` writes DIR/{matrix,slack,discord,plain}.html.

#[path = "sample/mod.rs"]
mod sample;

use airlock_chat_bridge::render;
use serde_json::Value;

fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "docs/screens".into());
    std::fs::create_dir_all(&dir)?;
    for (name, page) in pages() {
        std::fs::write(dir.join(format!("{name}.html")), page)?;
    }
    Ok(())
}

/// Each surface's page, by file name.
pub fn pages() -> Vec<(&'static str, String)> {
    let now = sample::NOW;
    let matrix_message = sample::message("matrix");
    let slack_message = sample::message("slack");
    let matrix = render::html::render(&matrix_message, now, 64 * 1024);
    let plain = render::plain::render(&matrix_message, now, 64 * 1024);
    let slack_blocks = render::slack::blocks(&slack_message, now);
    let slack_text = render::slack::fallback(&slack_message, now);
    let (discord_content, discord_embeds) = render::discord::render(&sample::message("discord"));
    vec![
        (
            "matrix",
            page(
                "Matrix (Element): the formatted body",
                "matrix",
                &format!(
                    "<div class=\"sender\">Airlock <span class=\"id\">@airlock:example.org</span></div>\n<div class=\"body\">{matrix}</div>"
                ),
            ),
        ),
        (
            "slack",
            page(
                "Slack: Block Kit",
                "slack",
                &format!(
                    "<div class=\"notification\">Notification: {}</div>\n<div class=\"sender\">Airlock <span class=\"app\">APP</span></div>\n{}",
                    mrkdwn(&slack_text, now),
                    slack_html(&slack_blocks, now)
                ),
            ),
        ),
        (
            "discord",
            page(
                "Discord: content and embeds",
                "discord",
                &format!(
                    "<div class=\"sender\">Airlock <span class=\"app\">BOT</span></div>\n<div class=\"content\">{}</div>\n{}",
                    discord_markdown(&discord_content, now),
                    discord_embeds
                        .iter()
                        .map(|e| format!(
                            "<div class=\"embed\">{}</div>",
                            discord_markdown(e["description"].as_str().unwrap_or_default(), now)
                        ))
                        .collect::<String>()
                ),
            ),
        ),
        (
            "plain",
            page(
                "Plain text: Matrix's body, webhooks",
                "plain",
                &format!("<pre class=\"plain\">{}</pre>", escape(&plain)),
            ),
        ),
    ]
}

const STYLE: &str = "body{margin:0;font:15px/1.45 system-ui,'DejaVu Sans',sans-serif;background:#fff;color:#1d1c1d}\
.frame{max-width:760px;margin:0 auto;padding:16px}\
h1{font-size:12px;color:#777;font-weight:normal;margin:0 0 12px}\
.sender{font-weight:bold;margin-bottom:4px}.sender .id{color:#777;font-weight:normal;font-size:12px}\
.app{background:#ddd;color:#555;font-size:10px;padding:1px 4px;border-radius:3px;margin-left:4px}\
pre,code{font-family:'DejaVu Sans Mono',monospace;font-size:13px}\
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;border:1px solid #e2e2e2;border-radius:4px;padding:8px;margin:6px 0}\
code{background:#f2f2f2;border:1px solid #e2e2e2;border-radius:3px;padding:0 3px;word-break:break-word}\
.notification{font-size:12px;color:#555;border:1px dashed #bbb;padding:6px;margin-bottom:12px}\
.section{margin:4px 0}.actions button{font-weight:bold;border-radius:4px;padding:6px 14px;margin-right:8px;border:1px solid #bbb;background:#fff}\
.actions .primary{background:#007a5a;color:#fff;border-color:#007a5a}.actions .danger{color:#e01e5a;border-color:#e01e5a}\
.mention{background:#e8f5fa;color:#1264a3;border-radius:3px;padding:0 2px}\
.discord{background:#313338;color:#dbdee1}.discord code,.discord pre{background:#2b2d31;border-color:#1e1f22;color:#dbdee1}\
.discord .embed{border-left:4px solid #b35900;background:#2b2d31;border-radius:4px;padding:8px 12px;margin:6px 0}\
.discord .mention{background:#3c4270;color:#c9cdfb}.discord h1{color:#949ba4}\
.matrix .body{border-left:4px solid #b35900;padding:4px 12px}.plain{background:#fff;border:0}";

fn page(title: &str, class: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<!-- Generated by services/chat-bridge/examples/screens.rs from the bridge's renderer: regenerate with ops/screens. -->\n<html><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{title}</title><style>{STYLE}</style></head>\n<body class=\"{class}\"><div class=\"frame\"><h1>{title}</h1>\n{body}\n</div></body></html>\n"
    )
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn slack_html(blocks: &[Value], now_ms: i64) -> String {
    let mut out = String::new();
    for block in blocks {
        match block["type"].as_str() {
            Some("section") => out.push_str(&format!(
                "<div class=\"section\">{}</div>\n",
                mrkdwn(block["text"]["text"].as_str().unwrap_or_default(), now_ms)
            )),
            Some("actions") => {
                out.push_str("<div class=\"actions\">");
                for element in block["elements"].as_array().into_iter().flatten() {
                    out.push_str(&format!(
                        "<button class=\"{}\">{}</button>",
                        element["style"].as_str().unwrap_or_default(),
                        escape(element["text"]["text"].as_str().unwrap_or_default())
                    ));
                }
                out.push_str("</div>\n");
            }
            other => out.push_str(&format!("<div class=\"section\">[{other:?} block]</div>\n")),
        }
    }
    out
}

/// Slack mrkdwn as the bridge writes it: ``` blocks, `code`, *bold*, <@U…> mentions,
/// <!here>, <!date^…|fallback> and the three entities, which stay entities in HTML.
fn mrkdwn(text: &str, now_ms: i64) -> String {
    let _ = now_ms;
    let mut out = String::new();
    for (i, part) in text.split("```").enumerate() {
        if i % 2 == 1 {
            out.push_str(&format!("<pre>{}</pre>", part.trim_matches('\n')));
            continue;
        }
        let html = inline(part, '*', ("<", ">"), |token| {
            if let Some(user) = token.strip_prefix("@") {
                Some(format!("<span class=\"mention\">@{user}</span>"))
            } else if token == "!here" {
                Some("<span class=\"mention\">@here</span>".into())
            } else {
                token
                    .strip_prefix("!date^")
                    .and_then(|d| d.split_once('|'))
                    .map(|(_, fallback)| fallback.to_owned())
            }
        });
        out.push_str(&html.replace('\n', "<br>\n"));
    }
    out
}

/// Discord Markdown as the bridge writes it: ``` blocks, `code`, **bold**, backslash escapes,
/// <@id> mentions, @here and <t:unix:R> times.
fn discord_markdown(text: &str, now_ms: i64) -> String {
    let mut out = String::new();
    for (i, part) in text.split("```").enumerate() {
        if i % 2 == 1 {
            out.push_str(&format!("<pre>{}</pre>", escape(part.trim_matches('\n'))));
            continue;
        }
        // Backslash escapes first: an escaped character is never markup.
        let mut unescaped = String::new();
        let mut chars = part.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                if let Some(next) = chars.next() {
                    // A private-use stand-in keeps an escaped `*` or `` ` `` out of the markup.
                    unescaped.push(match next {
                        '*' => '\u{E001}',
                        '`' => '\u{E002}',
                        '<' => '\u{E003}',
                        other => other,
                    });
                }
            } else {
                unescaped.push(c);
            }
        }
        let html = inline(
            &escape(&unescaped).replace("**", "\u{E000}"),
            '\u{E000}',
            ("&lt;", "&gt;"),
            |token| {
                if let Some(user) = token.strip_prefix('@') {
                    Some(format!("<span class=\"mention\">@{user}</span>"))
                } else {
                    // `<t:UNIX:R>` is relative ("in 12 min"); any other style a date and time.
                    let (unix, style) = token.strip_prefix("t:")?.split_once(':').unwrap_or((token, "f"));
                    let at_ms = unix.trim_start_matches("t:").parse::<i64>().ok()? * 1000;
                    Some(if style == "R" {
                        render::relative(at_ms, now_ms)
                    } else {
                        render::time_of(at_ms)
                    })
                }
            },
        );
        out.push_str(
            &html
                .replace('\u{E001}', "*")
                .replace('\u{E002}', "`")
                .replace('\u{E003}', "&lt;")
                .replace('\n', "<br>\n"),
        );
    }
    out
}

/// Inline code (kept as written), bold between `bold` marks, and the surface's tokens between
/// `delimiters` (Slack's raw `<…>`, Discord's once escaped), which `token` turns into HTML.
fn inline(text: &str, bold: char, delimiters: (&str, &str), token: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    for (i, piece) in text.split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str(&format!("<code>{piece}</code>"));
            continue;
        }
        let mut strong = false;
        let mut rest = piece;
        while let Some(c) = rest.chars().next() {
            if c == bold {
                out.push_str(if strong { "</b>" } else { "<b>" });
                strong = !strong;
                rest = &rest[c.len_utf8()..];
                continue;
            }
            let (open, close) = delimiters;
            if let Some(inner) = rest.strip_prefix(open)
                && let Some(end) = inner.find(close)
                && let Some(html) = token(&inner[..end])
            {
                out.push_str(&html);
                rest = &inner[end + close.len()..];
                continue;
            }
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
        if strong {
            out.push_str("</b>");
        }
    }
    out
}
