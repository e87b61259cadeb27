//! The wheel store: every wheel a resolution downloaded, kept by its SHA-256
//! (`<cache_dir>/wheels/<hex>/<file name>`), private to the executor's user like the rest of the
//! package cache. A wheel enters only after its bytes were hashed, and leaves for an install only
//! after they were hashed again and found equal to the digest that was assessed and approved.

use crate::error::SandboxError;
use airlock_protocol::CodeDigest;
use airlock_protocol::packages::{Wheel, normalise_name};
use sha2::{Digest as _, Sha256};
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The store's directory under the package cache.
const WHEELS_DIR: &str = "wheels";

#[derive(Clone, Debug)]
pub struct WheelStore {
    dir: PathBuf,
}

/// Why a stored wheel cannot be installed.
#[derive(Debug, thiserror::Error)]
pub enum WheelError {
    #[error("wheel {file} is not in this executor's store")]
    Missing { file: String },
    #[error("wheel {file} differs from the one assessed: its bytes hash to {found}, the approval names {expected}")]
    DigestMismatch {
        file: String,
        expected: CodeDigest,
        found: CodeDigest,
    },
    #[error("the index now serves other bytes than the wheels assessed and approved: {detail}")]
    IndexChanged { detail: String },
    #[error("{0:?} is not a wheel's file name")]
    BadName(String),
}

/// Name and version read from a wheel's file name (PEP 427:
/// `{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl`).
pub fn parse_file_name(file: &str) -> Result<(String, String), WheelError> {
    let bad = || WheelError::BadName(airlock_protocol::text::clip(file, 120));
    let stem = file.strip_suffix(".whl").ok_or_else(bad)?;
    let parts: Vec<&str> = stem.split('-').collect();
    if !(5..=6).contains(&parts.len()) || parts.iter().any(|p| p.is_empty()) {
        return Err(bad());
    }
    let wheel = Wheel {
        name: normalise_name(parts[0]),
        version: parts[1].to_owned(),
        file: file.to_owned(),
        sha256: CodeDigest::of(b""),
    };
    if !wheel.is_well_formed() {
        return Err(bad());
    }
    Ok((wheel.name, wheel.version))
}

/// SHA-256 of a file's bytes, read in blocks.
pub fn digest_file(path: &Path) -> std::io::Result<CodeDigest> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    // The hex of a SHA-256 is always a valid digest.
    CodeDigest::parse(&format!("sha256:{}", hex::encode(hasher.finalize()))).map_err(std::io::Error::other)
}

fn hex_of(digest: &CodeDigest) -> &str {
    digest.as_str().trim_start_matches("sha256:")
}

impl WheelStore {
    /// The store under the (already private) package cache directory.
    pub fn new(cache_dir: &Path) -> WheelStore {
        WheelStore {
            dir: cache_dir.join(WHEELS_DIR),
        }
    }

    fn path_of(&self, wheel: &Wheel) -> PathBuf {
        self.dir.join(hex_of(&wheel.sha256)).join(&wheel.file)
    }

    /// Takes a downloaded wheel in: hashes it, and moves it to its place unless an identical
    /// one is there already. Returns what it is.
    pub fn put(&self, file_name: &str, downloaded: &Path) -> Result<Wheel, SandboxError> {
        // Said to the requester in the request's end (the wire carries text), as every
        // `Packages` failure is.
        let (name, version) =
            parse_file_name(file_name).map_err(|e| SandboxError::Packages { detail: e.to_string() })?;
        let io = |action: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| SandboxError::Io { action, path, source }
        };
        let sha256 = digest_file(downloaded).map_err(io("hashing", downloaded))?;
        let wheel = Wheel {
            name,
            version,
            file: file_name.to_owned(),
            sha256,
        };
        let target = self.path_of(&wheel);
        if target.exists() {
            return Ok(wheel);
        }
        let parent = target.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(parent).map_err(io("creating", parent))?;
        // A rename within the cache: whole or not at all. Two executors storing the same wheel
        // store the same bytes.
        if let Err(error) = std::fs::rename(downloaded, &target) {
            std::fs::copy(downloaded, &target).map_err(|_| io("storing a wheel in", &target)(error))?;
        }
        Ok(wheel)
    }

    /// The stored file of `wheel`, after checking that its bytes still hash to the digest that
    /// was approved.
    pub fn verified(&self, wheel: &Wheel) -> Result<PathBuf, WheelError> {
        let path = self.path_of(wheel);
        let found = match digest_file(&path) {
            Ok(found) => found,
            Err(_) => {
                return Err(WheelError::Missing {
                    file: wheel.file.clone(),
                });
            }
        };
        if found != wheel.sha256 {
            return Err(WheelError::DigestMismatch {
                file: wheel.file.clone(),
                expected: wheel.sha256.clone(),
                found,
            });
        }
        Ok(path)
    }

    /// Whether the store holds `wheel` (without checking its bytes).
    pub fn has(&self, wheel: &Wheel) -> bool {
        self.path_of(wheel).is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_give_name_and_version() {
        assert_eq!(
            parse_file_name("tablefmt_rt-1.0-py3-none-any.whl").unwrap(),
            ("tablefmt-rt".into(), "1.0".into())
        );
        assert_eq!(
            parse_file_name("numpy-1.26.4-1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl").unwrap(),
            ("numpy".into(), "1.26.4".into())
        );
        for bad in [
            "x.whl",
            "a-1-py3-none.tar.gz",
            "../a-1-py3-none-any.whl",
            "a--py3-none-any.whl",
        ] {
            assert!(parse_file_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_stored_wheel_is_handed_out_only_while_its_bytes_are_the_approved_ones() {
        let cache = tempfile::tempdir().unwrap();
        let store = WheelStore::new(cache.path());
        let download = cache.path().join("download");
        std::fs::write(&download, b"wheel bytes").unwrap();
        let wheel = store.put("pkg-1.0-py3-none-any.whl", &download).unwrap();
        assert_eq!(wheel.sha256, CodeDigest::of(b"wheel bytes"));
        assert_eq!(wheel.name, "pkg");
        let path = store.verified(&wheel).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"wheel bytes");

        std::fs::write(&path, b"swapped bytes").unwrap();
        assert!(matches!(store.verified(&wheel), Err(WheelError::DigestMismatch { .. })));
        let mut other = wheel.clone();
        other.sha256 = CodeDigest::of(b"never stored");
        assert!(matches!(store.verified(&other), Err(WheelError::Missing { .. })));
    }
}
