//! Rule files: their format, and compiling them into a [`RuleSet`].
//!
//! A rule file is TOML with four kinds of entries:
//! - `[[rule]]`: a finding to report when its `match` pattern matches;
//! - `[[source]]`: a data-flow source (a call or name whose result carries a label, such as
//!   `sensitive_file` or `decoded`) that rules test with `tainted`;
//! - `[[embed]]`: where code in one language carries code in another (`os.system("...")`,
//!   `bash -c "..."`), so the inner code is analysed too;
//! - `[[wrapper]]`: shell commands that run another command (`sudo`, `nohup`, `find -exec`).
//!
//! Everything is checked when loaded (unknown keys, bad regular expressions, bad tree-sitter
//! queries, unknown labels, duplicate ids), so a broken file is refused whole and a running
//! engine keeps its previous rule set.

mod assemble;
mod compile;
mod compiled;
mod spec;

pub use crate::values::{LazyRegex, NameSet, ValueKind, ValueMatcher};
pub use compiled::*;
pub use spec::*;
