//! The bash syntax tree: statements, commands, words and their parts, redirections and
//! here-documents. Nodes hold byte ranges into the source, never copies of it: the walker slices
//! the source when it needs text. The tree says what the source says; a few marks (`until`,
//! `select`, `!`, `${...}` braces, how a here-document was quoted) change nothing the walker
//! follows and are read only by the tests.

/// A byte range of the source (`start..end`), always on character boundaries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Range {
    pub start: u32,
    pub end: u32,
}

impl Range {
    pub fn new(start: usize, end: usize) -> Range {
        Range {
            start: start as u32,
            end: end as u32,
        }
    }

    /// The source text of the range (empty if it does not fit the source).
    pub fn text(self, source: &str) -> &str {
        source.get(self.start as usize..self.end as usize).unwrap_or_default()
    }

    pub fn is_empty(self) -> bool {
        self.end <= self.start
    }
}

/// A parsed script: its statements, the bodies of its here-documents (referred to by index
/// from redirections, wherever they are nested) and what went wrong.
#[derive(Debug, Default)]
pub struct Script {
    pub body: Vec<Stmt>,
    pub heredocs: Vec<Heredoc>,
    /// The first syntax errors (at most a few hundred are kept).
    pub errors: Vec<SyntaxError>,
    /// How many syntax errors there were in all.
    pub error_count: u32,
    /// Where the nesting limit was reached: nothing at or after this offset was parsed.
    pub too_deep_at: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// Byte offset of the place that could not be parsed.
    pub offset: u32,
    pub message: &'static str,
}

#[derive(Debug)]
pub struct Stmt {
    pub range: Range,
    pub kind: StmtKind,
}

#[derive(Debug)]
pub enum StmtKind {
    /// Words, assignments and redirections: `FOO=bar cmd -x "$y" > out`, or assignments alone.
    Simple(Simple),
    /// `export`, `local`, `declare`, `typeset`, `readonly`, `unset`: arguments may be assignments.
    Declaration(Declaration),
    /// `a | b |& c`, `! a`.
    Pipeline(Pipeline),
    /// `a && b || c`.
    AndOr(AndOr),
    /// A compound command with the redirections that follow it.
    Compound(Compound),
    /// `f() { ...; }`, `function f { ...; }`.
    Function(Function),
}

#[derive(Debug, Default)]
pub struct Simple {
    /// `FOO=bar` before the command name (or alone: `a=1 b=2`).
    pub assignments: Vec<Assignment>,
    /// The command name and its arguments.
    pub words: Vec<Word>,
    /// Every redirection of the command, in source order, wherever it was written.
    pub redirects: Vec<Redirect>,
    /// From the first assignment or word to the last word (redirections after it excluded).
    pub command_range: Range,
}

#[derive(Debug)]
pub struct Declaration {
    /// The keyword (`export`, `local`, ...).
    pub keyword: Word,
    pub args: Vec<DeclarationArg>,
    pub redirects: Vec<Redirect>,
}

#[derive(Debug)]
pub enum DeclarationArg {
    Word(Word),
    Assignment(Assignment),
}

#[derive(Debug)]
pub struct Assignment {
    pub range: Range,
    /// The name as written, subscript included (`a`, `a[0]`).
    pub name: Range,
    /// `+=`
    pub append: bool,
    pub value: AssignValue,
}

#[derive(Debug)]
pub enum AssignValue {
    /// `a=`
    Empty,
    Word(Word),
    /// `a=(x y)`; the range includes the parentheses.
    Array(Range, Vec<Word>),
}

#[derive(Debug)]
pub struct Pipeline {
    /// `!`
    pub negated: bool,
    pub stages: Vec<Stmt>,
}

#[derive(Debug)]
pub struct AndOr {
    pub first: Box<Stmt>,
    pub rest: Vec<(AndOrOp, Stmt)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AndOrOp {
    And,
    Or,
}

#[derive(Debug)]
pub struct Compound {
    pub kind: CompoundKind,
    pub redirects: Vec<Redirect>,
}

#[derive(Debug)]
pub enum CompoundKind {
    /// `{ ...; }`
    Group(Vec<Stmt>),
    /// `( ... )`
    Subshell(Vec<Stmt>),
    If(If),
    /// `while` / `until`
    While(While),
    /// `for x in ...` and `select x in ...`
    For(For),
    /// `for ((init; cond; step))`: the expansions inside the arithmetic, then the body.
    ArithFor(Vec<WordPart>, Vec<Stmt>),
    Case(Case),
    /// `[[ ... ]]`: its words (operators included).
    Test(Vec<Word>),
    /// `(( ... ))`: the expansions inside.
    Arith(Vec<WordPart>),
    /// `coproc [NAME] command`
    Coproc(Box<Stmt>),
}

#[derive(Debug)]
pub struct If {
    /// `if` / `elif` conditions with their bodies.
    pub branches: Vec<(Vec<Stmt>, Vec<Stmt>)>,
    pub otherwise: Option<Vec<Stmt>>,
}

#[derive(Debug)]
pub struct While {
    pub until: bool,
    pub condition: Vec<Stmt>,
    pub body: Vec<Stmt>,
}

#[derive(Debug)]
pub struct For {
    pub select: bool,
    pub variable: Range,
    /// `None` without `in` (the positional parameters).
    pub words: Option<Vec<Word>>,
    pub body: Vec<Stmt>,
}

#[derive(Debug)]
pub struct Case {
    pub word: Word,
    pub items: Vec<CaseItem>,
}

#[derive(Debug)]
pub struct CaseItem {
    pub patterns: Vec<Word>,
    pub body: Vec<Stmt>,
}

#[derive(Debug)]
pub struct Function {
    pub name: Word,
    /// A compound command (or, after a syntax error, whatever command followed).
    pub body: Box<Stmt>,
}

/// A shell word: one or more parts written without blanks between them.
#[derive(Debug)]
pub struct Word {
    pub range: Range,
    pub parts: Parts,
}

/// The parts of a word or a double-quoted string. Most have one, held without an allocation.
#[derive(Debug)]
pub enum Parts {
    One(WordPart),
    Many(Vec<WordPart>),
}

impl Default for Parts {
    fn default() -> Parts {
        Parts::Many(Vec::new())
    }
}

impl Parts {
    pub fn push(&mut self, part: WordPart) {
        match self {
            Parts::Many(parts) if parts.is_empty() => *self = Parts::One(part),
            Parts::Many(parts) => parts.push(part),
            Parts::One(_) => {
                if let Parts::One(first) = std::mem::take(self) {
                    *self = Parts::Many(vec![first, part]);
                }
            }
        }
    }
}

impl std::ops::Deref for Parts {
    type Target = [WordPart];

    fn deref(&self) -> &[WordPart] {
        match self {
            Parts::One(part) => std::slice::from_ref(part),
            Parts::Many(parts) => parts,
        }
    }
}

#[derive(Debug)]
pub enum WordPart {
    /// Unquoted text, backslash escapes as written.
    Literal(Range),
    /// Text inside double quotes, backslash escapes as written.
    QuotedLiteral(Range),
    /// Here-document text: as written.
    RawLiteral(Range),
    /// `'...'`: the range is the text between the quotes.
    SingleQuoted(Range),
    /// `$'...'`: the range is the text between the quotes, escapes as written.
    AnsiC(Range),
    /// `"..."` or `$"..."`: the range includes the quotes.
    DoubleQuoted(Range, Vec<WordPart>),
    Param(Box<Param>),
    /// `$(...)` or `` `...` ``.
    CommandSub(Range, Vec<Stmt>),
    /// `<(...)` or `>(...)`.
    ProcessSub(Range, Vec<Stmt>),
    /// `$((...))` or `$[...]`: the expansions inside.
    Arith(Range, Vec<WordPart>),
}

impl WordPart {
    pub fn range(&self) -> Range {
        match self {
            WordPart::Literal(r)
            | WordPart::QuotedLiteral(r)
            | WordPart::RawLiteral(r)
            | WordPart::SingleQuoted(r)
            | WordPart::AnsiC(r)
            | WordPart::DoubleQuoted(r, _)
            | WordPart::CommandSub(r, _)
            | WordPart::ProcessSub(r, _)
            | WordPart::Arith(r, _) => *r,
            WordPart::Param(p) => p.range,
        }
    }
}

/// A parameter expansion: `$x`, `$1`, `$@`, `${x}`, `${x:-default}`, `${#x}`, `${a[@]}`, ...
#[derive(Debug)]
pub struct Param {
    pub range: Range,
    /// The parameter's name (`x`, `1`, `@`, `#`); empty when none could be read.
    pub name: Range,
    /// `${...}` rather than `$x`.
    pub braced: bool,
    /// `${#x}`
    pub length: bool,
    /// `${!x}`
    pub indirect: bool,
    /// `${a[...]}`: the index.
    pub subscript: Option<Word>,
    pub op: Option<ParamOp>,
    /// The word after the operator (`default` in `${x:-default}`), up to the closing brace.
    pub arg: Option<Word>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamOp {
    /// `:-` and `-`: use a default.
    Default,
    /// `:=` and `=`: assign a default.
    Assign,
    /// `:+` and `+`
    Alternative,
    /// `:?` and `?`
    Error,
    /// `#`, `##`, `%`, `%%`
    Trim,
    /// `/`, `//`, `/#`, `/%`
    Replace,
    /// `^`, `^^`, `,`, `,,`
    Case,
    /// `:offset:length`
    Substring,
    /// `@Q` and the other transformations
    Transform,
}

/// A redirection: `> f`, `2>&1`, `<<EOF`, `<<< "x"`, `{fd}> f`, `&>> log`.
#[derive(Debug)]
pub struct Redirect {
    pub range: Range,
    /// `2` in `2> f`, `fd` in `{fd}> f`.
    pub fd: Option<Range>,
    pub op: RedirectOp,
    pub target: RedirectTarget,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedirectOp {
    /// `<`
    Read,
    /// `>`
    Write,
    /// `>>`
    Append,
    /// `<>`
    ReadWrite,
    /// `>|`
    Clobber,
    /// `&>`
    WriteAll,
    /// `&>>`
    AppendAll,
    /// `<&`
    DupRead,
    /// `>&`
    DupWrite,
    /// `<<` and `<<-`
    Heredoc,
    /// `<<<`
    HereString,
}

#[derive(Debug)]
pub enum RedirectTarget {
    Word(Word),
    /// Index into `Script::heredocs`.
    Heredoc(u32),
    /// Nothing could be read after the operator (a syntax error).
    Missing,
}

/// A here-document's body.
#[derive(Debug, Default)]
pub struct Heredoc {
    /// The body, without the delimiter lines.
    pub range: Range,
    /// The delimiter was quoted: no expansions.
    pub quoted: bool,
    /// `<<-`: leading tabs are not part of the text.
    pub strip_tabs: bool,
    pub parts: Vec<WordPart>,
}
