//! Files that cross the sandbox's wall. A request may carry files in (`inputs.files`): they are
//! part of the execution digest (by name and SHA-256), shown to an approver, kept in the audit
//! log as blobs, and placed read-only in the program's working directory before it starts. A
//! program returns files by writing them under `out/` in its working directory: the executor
//! reads them once every process of the program is gone and returns them in the terminal event
//! (`files`), so the audit log keeps them and a receipt proves them.
//!
//! Names are relative paths of plain components, so that no name can reach outside the working
//! directory, and every count and size is bounded here, where both the assessor (on admission)
//! and the executor (before a run) check them.

use crate::ids::CodeDigest;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Most files a request may carry in.
pub const MAX_INPUT_FILES: usize = 32;
/// Largest file a request may carry in, and all of them together, in bytes. (A request travels
/// as one bus message of at most [`crate::MAX_MESSAGE_BYTES`], with its code and inputs.)
pub const MAX_INPUT_FILE_BYTES: usize = 1024 * 1024;
pub const MAX_INPUT_FILES_BYTES: usize = 2 * 1024 * 1024;
/// Longest file name (a relative path), in bytes, and deepest path.
pub const MAX_FILE_NAME_BYTES: usize = 200;
pub const MAX_FILE_DEPTH: usize = 8;
/// The directory, under the working directory, whose files come back.
pub const OUTPUT_DIR: &str = "out";
/// Most files returned, the largest returned with its content, and all contents together; a
/// file past these is listed with its size and digest, and why its content is not there.
pub const MAX_OUTPUT_FILES: usize = 64;
pub const MAX_OUTPUT_FILE_BYTES: u64 = 1024 * 1024;
pub const MAX_OUTPUT_FILES_BYTES: u64 = 2 * 1024 * 1024;

/// A file given to the program.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InputFile {
    /// Where it is placed, relative to the working directory (`data.csv`, `in/a.json`).
    pub name: String,
    #[schemars(with = "Vec<u8>")]
    #[serde(with = "serde_bytes")]
    pub content: Vec<u8>,
}

impl InputFile {
    pub fn new(name: impl Into<String>, content: impl Into<Vec<u8>>) -> Self {
        Self {
            name: name.into(),
            content: content.into(),
        }
    }
}

/// A file the program left under `out/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OutputFile {
    /// Its path under `out/` (`chart.png`, `tables/summary.csv`).
    pub name: String,
    pub size: u64,
    /// Of its whole content, even when the content is not returned.
    pub sha256: CodeDigest,
    /// `image/png`, `image/svg+xml`, `text/csv`, ... (from its name and first bytes).
    pub media_type: String,
    /// Its bytes; empty when `omitted` says why they are not returned.
    #[schemars(with = "Vec<u8>")]
    #[serde(default, with = "serde_bytes")]
    pub content: Vec<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<String>,
}

impl OutputFile {
    /// An image an assistant can show as one.
    pub fn is_image(&self) -> bool {
        self.media_type.starts_with("image/")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error("{count} files; at most {limit} are accepted")]
    TooMany { count: usize, limit: usize },
    #[error("file {name:?} is {size} bytes; at most {limit} are accepted per file")]
    TooLarge { name: String, size: usize, limit: usize },
    #[error("the files are {size} bytes together; at most {limit} are accepted")]
    TooLargeTogether { size: usize, limit: usize },
    #[error(
        "file name {0:?} is not a relative path of plain names (letters, digits, `.`, `_`, `-`, `+`, `@`, space; no `..`, at most {MAX_FILE_DEPTH} deep and {MAX_FILE_NAME_BYTES} bytes)"
    )]
    BadName(String),
    #[error("file {0:?} is given twice")]
    Duplicate(String),
    #[error("file {0:?} is a file and a directory of another file")]
    Overlaps(String),
    #[error("file {0:?} is under {OUTPUT_DIR}/, which is the program's own output directory")]
    InOutputDir(String),
    #[error("file {0:?} would hide the program itself")]
    Reserved(String),
}

/// Whether `name` may be a file's path under the working directory: components of letters,
/// digits and `._-+@ `, none of them `.` or `..` or starting with `-`, joined by `/`.
pub fn check_name(name: &str) -> Result<(), FileError> {
    let bad = || FileError::BadName(name.to_owned());
    if name.is_empty() || name.len() > MAX_FILE_NAME_BYTES {
        return Err(bad());
    }
    let components: Vec<&str> = name.split('/').collect();
    if components.len() > MAX_FILE_DEPTH {
        return Err(bad());
    }
    for component in components {
        let plain = component
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+' | '@' | ' '));
        if !plain || component.is_empty() || component == "." || component == ".." || component.starts_with('-') {
            return Err(bad());
        }
        if component.trim() != component {
            return Err(bad());
        }
    }
    Ok(())
}

/// Checks a request's files: names, counts, sizes, no duplicates, nothing under `out/`.
pub fn check_inputs(files: &[InputFile]) -> Result<(), FileError> {
    if files.len() > MAX_INPUT_FILES {
        return Err(FileError::TooMany {
            count: files.len(),
            limit: MAX_INPUT_FILES,
        });
    }
    let mut total = 0usize;
    let mut names = std::collections::BTreeSet::new();
    for file in files {
        check_name(&file.name)?;
        if file.name == OUTPUT_DIR || file.name.starts_with(&format!("{OUTPUT_DIR}/")) {
            return Err(FileError::InOutputDir(file.name.clone()));
        }
        if file.name == "main.py" {
            return Err(FileError::Reserved(file.name.clone()));
        }
        if file.content.len() > MAX_INPUT_FILE_BYTES {
            return Err(FileError::TooLarge {
                name: file.name.clone(),
                size: file.content.len(),
                limit: MAX_INPUT_FILE_BYTES,
            });
        }
        total += file.content.len();
        if !names.insert(file.name.as_str()) {
            return Err(FileError::Duplicate(file.name.clone()));
        }
    }
    // `a` and `a/b` cannot both be placed.
    for name in &names {
        let mut prefix = String::new();
        for component in name.split('/') {
            if !prefix.is_empty() && names.contains(prefix.trim_end_matches('/')) {
                return Err(FileError::Overlaps(name.to_string()));
            }
            prefix.push_str(component);
            prefix.push('/');
        }
    }
    if total > MAX_INPUT_FILES_BYTES {
        return Err(FileError::TooLargeTogether {
            size: total,
            limit: MAX_INPUT_FILES_BYTES,
        });
    }
    Ok(())
}

/// What kind of file this is, for a client that shows images and tables: from the first bytes
/// where formats have a signature, else from the name.
pub fn media_type(name: &str, head: &[u8]) -> &'static str {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        return "image/png";
    }
    if head.starts_with(b"\xff\xd8\xff") {
        return "image/jpeg";
    }
    if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        return "image/gif";
    }
    if head.starts_with(b"%PDF-") {
        return "application/pdf";
    }
    let extension = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "svg" => "image/svg+xml",
        "webp" => "image/webp",
        "csv" => "text/csv",
        "tsv" => "text/tab-separated-values",
        "json" => "application/json",
        "html" | "htm" => "text/html",
        "md" => "text/markdown",
        "txt" | "log" => "text/plain",
        _ if std::str::from_utf8(head).is_ok() => "text/plain",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_relative_paths() {
        for good in [
            "data.csv",
            "in/a.json",
            "My File (1).txt".replace(['(', ')'], "").as_str(),
            "a+b@c.txt",
        ] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../b",
            "./a",
            "a//b",
            "a/",
            "-rf",
            "a\nb",
            "a\\b",
            "é.txt",
            " a",
            "a ",
            "a/b/c/d/e/f/g/h/i",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_name(&"a".repeat(MAX_FILE_NAME_BYTES + 1)).is_err());
    }

    #[test]
    fn a_requests_files_are_bounded_distinct_and_outside_the_output_directory() {
        let file = |name: &str, size: usize| InputFile::new(name, vec![b'x'; size]);
        assert_eq!(check_inputs(&[file("a.csv", 10), file("in/b.csv", 10)]), Ok(()));
        assert_eq!(
            check_inputs(&[file("a.csv", 1), file("a.csv", 2)]),
            Err(FileError::Duplicate("a.csv".into()))
        );
        assert_eq!(
            check_inputs(&[file("a", 1), file("a/b", 2)]),
            Err(FileError::Overlaps("a/b".into()))
        );
        assert_eq!(
            check_inputs(&[file("out/x", 1)]),
            Err(FileError::InOutputDir("out/x".into()))
        );
        assert_eq!(
            check_inputs(&[file("main.py", 1)]),
            Err(FileError::Reserved("main.py".into()))
        );
        assert!(matches!(
            check_inputs(&[file("big", MAX_INPUT_FILE_BYTES + 1)]),
            Err(FileError::TooLarge { .. })
        ));
        let three: Vec<InputFile> = (0..3).map(|i| file(&format!("f{i}"), MAX_INPUT_FILE_BYTES)).collect();
        assert!(matches!(check_inputs(&three), Err(FileError::TooLargeTogether { .. })));
        let many: Vec<InputFile> = (0..=MAX_INPUT_FILES).map(|i| file(&format!("f{i}"), 1)).collect();
        assert!(matches!(check_inputs(&many), Err(FileError::TooMany { .. })));
    }

    #[test]
    fn media_types_come_from_signatures_before_names() {
        assert_eq!(media_type("chart.png", b"\x89PNG\r\n\x1a\n...."), "image/png");
        assert_eq!(media_type("chart.txt", b"\x89PNG\r\n\x1a\n...."), "image/png");
        assert_eq!(media_type("plot.svg", b"<?xml"), "image/svg+xml");
        assert_eq!(media_type("t.csv", b"a,b\n1,2\n"), "text/csv");
        assert_eq!(media_type("notes", b"hello"), "text/plain");
        assert_eq!(media_type("blob", b"\x00\xff\xfe"), "application/octet-stream");
    }
}
