//! The files a program leaves under `out/` in its working directory, read from the host's view
//! of the container's root once every process of the program is gone (PID 1 is parked), so that
//! nothing can change them or swap a directory for a symlink while they are read. No symlink
//! is followed, no special file is read, and counts and sizes are bounded
//! ([`airlock_protocol::files`]): a file past a bound is still listed, with its size and digest
//! when it was read, and the reason its content is not returned.

use airlock_protocol::files::{
    MAX_FILE_DEPTH, MAX_OUTPUT_FILE_BYTES, MAX_OUTPUT_FILES, MAX_OUTPUT_FILES_BYTES, OUTPUT_DIR, media_type,
};
use airlock_protocol::{CodeDigest, OutputFile};
use std::collections::VecDeque;
use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

/// Entries looked at under `out/` at most (it is bounded by the tmpfs; this bounds the time).
const MAX_WALK: usize = 10_000;
/// The largest file whose digest is computed although its content is not returned.
const MAX_DIGESTED_BYTES: u64 = 64 * 1024 * 1024;

/// The files under `<working_dir>/out`, as the container's root at `root` holds them.
pub fn collect(root: &Path, working_dir: &str) -> Vec<OutputFile> {
    let base = root.join(working_dir.trim_start_matches('/')).join(OUTPUT_DIR);
    // `out` itself must be a directory, not a link: through /proc/<pid>/root an absolute link
    // (`out -> /etc`) resolves against the executor's root, and would return the host's files.
    // Below it, only entries that are directories themselves (lstat) are walked into.
    if !std::fs::symlink_metadata(&base).is_ok_and(|meta| meta.is_dir()) {
        return Vec::new();
    }
    let mut files = Vec::new();
    let mut returned_bytes = 0u64;
    let mut dirs = VecDeque::from([(base.clone(), 0usize)]);
    let mut seen = 0usize;
    while let Some((dir, depth)) = dirs.pop_front() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            seen += 1;
            if seen > MAX_WALK || files.len() >= MAX_OUTPUT_FILES {
                return files;
            }
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                if depth + 1 < MAX_FILE_DEPTH {
                    dirs.push_back((path, depth + 1));
                }
                continue;
            }
            let name = path.strip_prefix(&base).unwrap_or(&path).to_string_lossy().into_owned();
            if !meta.is_file() {
                continue;
            }
            let size = meta.len();
            let fits = size <= MAX_OUTPUT_FILE_BYTES && returned_bytes + size <= MAX_OUTPUT_FILES_BYTES;
            files.push(read_one(&path, name, size, fits, &mut returned_bytes));
        }
    }
    files
}

/// One regular file: its content when it fits, else its digest and why it is left out.
fn read_one(path: &Path, name: String, size: u64, fits: bool, returned_bytes: &mut u64) -> OutputFile {
    let listed = |sha256: CodeDigest, media: &str, content: Vec<u8>, omitted: Option<String>| OutputFile {
        name: name.clone(),
        size,
        sha256,
        media_type: media.to_owned(),
        content,
        omitted,
    };
    let unread = |why: String| listed(CodeDigest::of(b""), "application/octet-stream", vec![], Some(why));
    if size > MAX_DIGESTED_BYTES {
        return unread(undigested(size));
    }
    // O_NOFOLLOW: the walk saw a regular file, and nothing of the program is alive to swap it.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let mut bytes = Vec::with_capacity(usize::try_from(size.min(MAX_OUTPUT_FILE_BYTES)).unwrap_or(0));
    match file.and_then(|f| f.take(MAX_DIGESTED_BYTES).read_to_end(&mut bytes)) {
        Ok(_) => {}
        Err(error) => return unread(format!("could not be read: {error}")),
    }
    let sha256 = CodeDigest::of(&bytes);
    let media = media_type(&name, &bytes[..bytes.len().min(512)]);
    if fits {
        *returned_bytes += bytes.len() as u64;
        listed(sha256, media, bytes, None)
    } else if size > MAX_OUTPUT_FILE_BYTES {
        listed(sha256, media, vec![], Some(over_file(size)))
    } else {
        listed(sha256, media, vec![], Some(over_total()))
    }
}

/// Why a file was left out, in the words of every result (from the host under runc, from PID 1
/// under gVisor: [`crate::sealed_files`]).
pub(crate) fn undigested(size: u64) -> String {
    format!("{size} bytes: too large to return or digest")
}

pub(crate) fn over_file(size: u64) -> String {
    format!("{size} bytes: files over {MAX_OUTPUT_FILE_BYTES} bytes are listed, not returned")
}

pub(crate) fn over_total() -> String {
    format!("the run's returned files reached {MAX_OUTPUT_FILES_BYTES} bytes together")
}

/// What the terminal event keeps free of returned files for everything else it carries (the
/// findings, the decision, the reason) besides the output.
const TERMINAL_HEADROOM: u64 = 512 * 1024;

/// Leaves out the content of returned files, last first, until the terminal event with
/// `output_bytes` of stdout and stderr fits in one bus message: a quota's output cap and the
/// files' own cap together could pass it, and an event the bus refuses would leave the request
/// without its end.
pub fn fit(files: &mut [OutputFile], output_bytes: u64) {
    let room = (airlock_protocol::MAX_MESSAGE_BYTES as u64).saturating_sub(TERMINAL_HEADROOM + output_bytes);
    let mut used: u64 = files.iter().map(|f| f.content.len() as u64).sum();
    for file in files.iter_mut().rev() {
        if used <= room {
            break;
        }
        if file.content.is_empty() {
            continue;
        }
        used -= file.content.len() as u64;
        file.content = Vec::new();
        file.omitted = Some(format!(
            "the result would pass the bus's {} byte message limit with the program's output",
            airlock_protocol::MAX_MESSAGE_BYTES
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("tmp").join(OUTPUT_DIR);
        for (name, content) in files {
            let path = out.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        std::fs::create_dir_all(&out).unwrap();
        root
    }

    #[test]
    fn files_under_out_come_back_with_digest_and_type_and_nothing_outside_it() {
        let root = container_with(&[("chart.png", b"\x89PNG\r\n\x1a\nxx"), ("tables/summary.csv", b"a,b\n")]);
        std::fs::write(root.path().join("tmp").join("elsewhere.txt"), b"not returned").unwrap();
        let files = collect(root.path(), "/tmp");
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["chart.png", "tables/summary.csv"]);
        assert_eq!(files[0].media_type, "image/png");
        assert_eq!(files[0].sha256, CodeDigest::of(b"\x89PNG\r\n\x1a\nxx"));
        assert_eq!(files[1].content, b"a,b\n");
        assert_eq!(files[1].media_type, "text/csv");
    }

    #[test]
    fn symlinks_are_not_followed_and_large_files_are_listed_not_returned() {
        let root = container_with(&[("small.txt", b"ok")]);
        let out = root.path().join("tmp").join(OUTPUT_DIR);
        std::os::unix::fs::symlink("/etc/passwd", out.join("passwd")).unwrap();
        std::os::unix::fs::symlink("/etc", out.join("etc")).unwrap();
        let big = vec![b'x'; (MAX_OUTPUT_FILE_BYTES + 1) as usize];
        std::fs::write(out.join("big.bin"), &big).unwrap();
        let files = collect(root.path(), "/tmp");
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["big.bin", "small.txt"], "links are neither read nor walked");
        assert!(files[0].content.is_empty() && files[0].omitted.as_deref().is_some_and(|w| w.contains("listed")));
        assert_eq!(files[0].sha256, CodeDigest::of(&big), "the digest is of the whole file");
    }

    #[test]
    fn an_output_directory_that_is_a_link_is_not_followed_out_of_the_container() {
        let host = tempfile::tempdir().unwrap();
        std::fs::write(host.path().join("secret"), b"the host's").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("tmp")).unwrap();
        std::os::unix::fs::symlink(host.path(), root.path().join("tmp").join(OUTPUT_DIR)).unwrap();
        assert!(collect(root.path(), "/tmp").is_empty(), "a linked out/ is no files");
    }

    #[test]
    fn files_are_left_out_last_first_so_the_result_fits_one_message() {
        let file = |name: &str, size: usize| OutputFile {
            name: name.into(),
            size: size as u64,
            sha256: CodeDigest::of(b""),
            media_type: "application/octet-stream".into(),
            content: vec![b'z'; size],
            omitted: None,
        };
        let mib = 1024 * 1024;
        let mut files = vec![file("a", mib), file("b", mib)];
        fit(&mut files, 256 * 1024);
        assert!(
            files.iter().all(|f| f.omitted.is_none()),
            "a small output leaves room for both"
        );
        fit(&mut files, 2 * mib as u64);
        assert!(files[0].omitted.is_none() && !files[0].content.is_empty());
        assert!(
            files[1].content.is_empty() && files[1].omitted.as_deref().is_some_and(|w| w.contains("message limit"))
        );
    }

    #[test]
    fn the_total_is_bounded_and_a_missing_directory_is_no_files() {
        let half = vec![b'y'; (MAX_OUTPUT_FILES_BYTES / 2) as usize];
        let root = container_with(&[("a", &half), ("b", &half), ("c", &half)]);
        let files = collect(root.path(), "/tmp");
        let returned = files.iter().filter(|f| f.omitted.is_none()).count();
        assert_eq!((files.len(), returned), (3, 2));
        assert!(collect(tempfile::tempdir().unwrap().path(), "/tmp").is_empty());
    }
}
