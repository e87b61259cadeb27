//! What can go wrong loading the engine: reading, parsing and checking rule files and the threat
//! list, and watching them. At the bottom of the crate: the rule compiler and the threat list
//! report in these terms, and the engine passes them on.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("reading {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("rule file {file}: {message}")]
    RuleSyntax { file: String, message: String },
    #[error("rule file {file}, {rule}: {message}")]
    RuleInvalid {
        file: String,
        rule: String,
        message: String,
    },
    #[error("rule {id} is defined in {first_file} and again in {second_file}")]
    DuplicateRule {
        id: String,
        first_file: String,
        second_file: String,
    },
    #[error("no rules: the rule files define no [[rule]]")]
    NoRules,
    #[error("no rule files (*.toml) in {0}")]
    NoRuleFiles(PathBuf),
    #[error("threat list {file}: {message}")]
    ThreatsInvalid { file: String, message: String },
    #[error("threat list {file}: {source}")]
    ThreatsSyntax {
        file: String,
        #[source]
        source: toml::de::Error,
    },
    #[error("threat list {file}: sha256 {value:?}: {source}")]
    ThreatHash {
        file: String,
        value: String,
        #[source]
        source: hex::FromHexError,
    },
    #[error("threat list {file}: {source}")]
    ThreatsMatcher {
        file: String,
        #[source]
        source: aho_corasick::BuildError,
    },
    #[error("rule file {file}, {rule}: {source}")]
    RuleRegex {
        file: String,
        rule: String,
        #[source]
        source: RegexError,
    },
    #[error("rule file {file}, {rule}: tree-sitter query: {source}")]
    RuleQuery {
        file: String,
        rule: String,
        #[source]
        source: tree_sitter::QueryError,
    },
    #[error("the rules' tree-sitter queries do not combine: {source}")]
    QueriesCombine {
        #[source]
        source: tree_sitter::QueryError,
    },
    #[error("watching rule files: {0}")]
    Watch(#[from] notify::Error),
}

/// A rule's regular expression that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RegexError {
    #[error("regular expression {pattern:?}: {source}")]
    Syntax {
        pattern: String,
        #[source]
        source: Box<regex_syntax::Error>,
    },
    #[error(transparent)]
    Compile(Box<regex_automata::meta::BuildError>),
}
