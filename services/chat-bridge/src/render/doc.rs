//! A chat message as Airlock composes it, before any chat's markup: Airlock's own words, and
//! text from outside (a label, code, a snippet, program output, a chat user's reason) kept apart
//! as data. Nothing from outside can become Airlock's words: the only way in is [`Span::Data`]
//! or a [`CodeView`], which every chat's renderer shows as quoted data, with deceptive characters
//! made visible (`airlock_protocol::text`) and then escaped for that chat's own markup.

use airlock_protocol::RequestId;

/// A piece of one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Span {
    /// Airlock's own words.
    Text(String),
    /// Airlock's own words, emphasised.
    Strong(String),
    /// Airlock's own words in a fixed-width font: request ids, digests, commands to type.
    Code(String),
    /// Text from outside, shown as data on one line.
    Data(String),
    /// A chat identity (`@alice:example.org`, `U0ALICE`, a Discord user id), shown as the chat
    /// shows people. It notifies nobody by itself: see [`Message::mentions`].
    Who(String),
    /// A point in time, shown absolute, and with how far it is from now when `relative`.
    Time { at_ms: i64, relative: bool },
    /// A link of Airlock's own (the full code page).
    Link { label: String, url: String },
}

/// One part of a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Block {
    /// The first lines: what a reader sees in a notification.
    Heading(Vec<Span>),
    Para(Vec<Span>),
    Bullets(Vec<Vec<Span>>),
    /// Code from outside, with its line numbers.
    Code(CodeView),
}

/// Lines of code from outside, numbered as in the file: a preview, and lines past it that a
/// finding points at.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodeView {
    pub lines: Vec<CodeLine>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodeLine {
    /// One line of the code; `flagged` when a finding points at it.
    Line { number: usize, text: String, flagged: bool },
    /// Lines not shown, from `from` to `to` (to the end when `None`).
    Skipped { from: usize, to: Option<usize> },
    /// A line without a number of its own (a line of a diff, which carries its own marks).
    Unnumbered(String),
}

/// A message for one chat: what it says, and whom it notifies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    pub blocks: Vec<Block>,
    /// Identities of this chat to notify (the approvers who may answer, an escalation's
    /// targets, the approvers of a result). Empty for edits.
    pub mentions: Vec<String>,
    /// Notify everyone in the room (`@room`, `<!here>`), where the chat is set up so.
    pub mention_room: bool,
    /// The request whose answer buttons go with the message, while it waits.
    pub buttons: Option<RequestId>,
}

impl Message {
    pub fn new(blocks: Vec<Block>) -> Self {
        Self {
            blocks,
            ..Self::default()
        }
    }

    /// The mentions a chat that notifies by text must still write: those the first block does
    /// not already name.
    pub fn mentions_to_write(&self) -> Vec<&String> {
        let named: Vec<&String> = match self.blocks.first() {
            Some(Block::Heading(spans) | Block::Para(spans)) => spans
                .iter()
                .filter_map(|s| match s {
                    Span::Who(w) => Some(w),
                    _ => None,
                })
                .collect(),
            _ => vec![],
        };
        self.mentions.iter().filter(|m| !named.contains(m)).collect()
    }
}

/// Builds one line of spans.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Line(pub Vec<Span>);

impl Line {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.0.push(Span::Text(text.into()));
        self
    }
    pub fn strong(mut self, text: impl Into<String>) -> Self {
        self.0.push(Span::Strong(text.into()));
        self
    }
    pub fn code(mut self, text: impl Into<String>) -> Self {
        self.0.push(Span::Code(text.into()));
        self
    }
    pub fn data(mut self, text: impl Into<String>) -> Self {
        self.0.push(Span::Data(text.into()));
        self
    }
    pub fn who(mut self, identity: impl Into<String>) -> Self {
        self.0.push(Span::Who(identity.into()));
        self
    }
    /// Several identities, separated by commas (or `none` when empty).
    pub fn people(mut self, identities: &[String]) -> Self {
        if identities.is_empty() {
            return self.text("nobody");
        }
        for (i, who) in identities.iter().enumerate() {
            if i > 0 {
                self = self.text(if i + 1 == identities.len() { " and " } else { ", " });
            }
            self = self.who(who.clone());
        }
        self
    }
    pub fn time(mut self, at_ms: i64, relative: bool) -> Self {
        self.0.push(Span::Time { at_ms, relative });
        self
    }
    pub fn link(mut self, label: impl Into<String>, url: impl Into<String>) -> Self {
        self.0.push(Span::Link {
            label: label.into(),
            url: url.into(),
        });
        self
    }
    pub fn extend(mut self, other: Line) -> Self {
        self.0.extend(other.0);
        self
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn para(self) -> Block {
        Block::Para(self.0)
    }
    pub fn heading(self) -> Block {
        Block::Heading(self.0)
    }
}
