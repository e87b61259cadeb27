//! The package cache: one directory per installed wheel set, keyed by the image and the wheels'
//! digests, private to the executor's user, filled only by unpacking an install's tar into a
//! staging directory (plain files and directories, every path inside, no setuid bits) and
//! renaming it into place once complete. The wheel store ([`crate::wheels`]) lives beside it.

use crate::config::SandboxConfig;
use crate::error::SandboxError;
use crate::image;
use airlock_protocol::packages::{Wheel, normalise_name};
use sha2::{Digest, Sha256};
use std::path::{Component, Path, PathBuf};

/// Marks a package set as complete (its content is the recipe hash of the image it was made with).
pub(crate) const COMPLETE_MARKER: &str = ".airlock-complete";
/// The directory of a set that is mounted into the program's container.
pub(crate) const SITE: &str = "site";

/// PEP 503 normalised name, plus the version as given.
fn normalise(spec: &str) -> String {
    let (name, version) = spec.split_once("==").unwrap_or((spec, ""));
    let mut name = normalise_name(name);
    if !version.is_empty() {
        name.push_str("==");
        name.push_str(version);
    }
    name
}

/// The key of a resolution: everything that changes what `specs` resolve to (the index, the
/// interpreter in the image), bar time (a new release), which the resolution's time to live
/// bounds.
pub fn resolution_key(config: &SandboxConfig, image_id: &str, specs: &[String]) -> String {
    let mut specs: Vec<String> = specs.iter().map(|s| normalise(s)).collect();
    specs.sort();
    specs.dedup();
    let mut hasher = Sha256::new();
    hasher.update(b"airlock-resolution-v1\n");
    hasher.update(image_id.as_bytes());
    hasher.update(b"\n");
    let rules = &config.egress;
    hasher.update(rules.index_host.as_bytes());
    hasher.update(rules.index_path.as_bytes());
    if let Some(pinned) = rules.pinned.get(&rules.index_host) {
        hasher.update(pinned.as_bytes());
    }
    // A standalone proxy's own configuration decides where the index is.
    if let Some(proxy) = &config.egress.proxy {
        hasher.update(b"\nproxy ");
        hasher.update(proxy.as_bytes());
    }
    for spec in specs {
        hasher.update(b"\n");
        hasher.update(spec.as_bytes());
    }
    hex::encode(hasher.finalize())
}

/// The key of an installed set: the image and exactly these wheels (their digests pin every
/// byte; where they came from no longer matters).
pub fn set_key(image_id: &str, wheels: &[Wheel]) -> String {
    let mut wheels = wheels.to_vec();
    wheels.sort();
    wheels.dedup();
    let mut hasher = Sha256::new();
    // v3: package test suites are left out of the installed tree.
    hasher.update(b"airlock-packages-v3\n");
    hasher.update(image_id.as_bytes());
    for wheel in &wheels {
        hasher.update(b"\n");
        hasher.update(wheel.file.as_bytes());
        hasher.update(b" ");
        hasher.update(wheel.sha256.as_str().as_bytes());
    }
    hex::encode(hasher.finalize())
}

/// The package cache holds code that runs in sandboxes, so it must belong to this user alone:
/// in a directory others can write to (a shared /tmp path they created first, say) they could
/// plant a "complete" package set for the next request that names it.
pub fn ensure_private_dir(dir: &Path) -> Result<(), SandboxError> {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let fail = |detail: String| SandboxError::PackageCache {
        dir: dir.to_path_buf(),
        detail,
    };
    let io = |action: &'static str| {
        move |source| SandboxError::Io {
            action,
            path: dir.to_path_buf(),
            source,
        }
    };
    std::fs::create_dir_all(dir).map_err(io("creating the package cache"))?;
    let meta = std::fs::symlink_metadata(dir).map_err(io("reading the package cache"))?;
    if !meta.is_dir() {
        return Err(fail("is not a directory (a symbolic link is refused)".into()));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(fail(format!(
            "belongs to uid {}, not to this user (uid {me})",
            meta.uid()
        )));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io("making the package cache private"))?;
    }
    Ok(())
}

/// Unpacks the install's tar into `final_dir/site`: plain files and directories only, every
/// path inside the directory, modes reduced to 0644/0755; then marks it complete.
pub(crate) fn unpack_into_cache(
    archive: &tempfile::NamedTempFile,
    cache_dir: &Path,
    final_dir: &Path,
) -> Result<(), SandboxError> {
    let io = |action: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| SandboxError::Io {
            action,
            path: path.clone(),
            source,
        }
    };
    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(cache_dir)
        .map_err(io("creating a staging directory in", cache_dir))?;
    let site = staging.path().join(SITE);
    std::fs::create_dir_all(&site).map_err(io("creating", &site))?;
    let file = std::fs::File::open(archive.path()).map_err(io("opening the install's archive", archive.path()))?;
    let mut tar = tar::Archive::new(file);
    let reading = io("reading the install's archive", archive.path());
    for entry in tar.entries().map_err(&reading)? {
        let mut entry = entry.map_err(&reading)?;
        let path = entry.path().map_err(&reading)?.into_owned();
        let mut relative = PathBuf::new();
        for component in path.components() {
            match component {
                Component::CurDir => {}
                Component::Normal(part) => relative.push(part),
                _ => {
                    return Err(SandboxError::Packages {
                        detail: format!("the installed packages hold an unsafe path {}", path.display()),
                    });
                }
            }
        }
        let kind = entry.header().entry_type();
        // Never rated, so never installed (package_rating.rs).
        let suffix = if kind.is_dir() { "/" } else { "" };
        if crate::package_rating::is_test_suite(&format!("{}{suffix}", relative.to_string_lossy())) {
            continue;
        }
        let target = site.join(&relative);
        if kind.is_dir() {
            std::fs::create_dir_all(&target).map_err(io("creating", &target))?;
        } else if kind.is_file() {
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(io("creating", parent))?;
            }
            let executable = entry.header().mode().map(|m| m & 0o111 != 0).unwrap_or(false);
            let mut out = std::fs::File::create(&target).map_err(io("creating", &target))?;
            std::io::copy(&mut entry, &mut out).map_err(io("writing", &target))?;
            use std::os::unix::fs::PermissionsExt;
            let mode = if executable { 0o755 } else { 0o644 };
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode))
                .map_err(io("setting the mode of", &target))?;
        } else {
            tracing::debug!(path = %path.display(), ?kind, "skipping a non-regular entry of the installed packages");
        }
    }
    set_dir_modes(&site).map_err(io("setting directory modes in", &site))?;
    let marker = staging.path().join(COMPLETE_MARKER);
    std::fs::write(&marker, image::recipe_hash()).map_err(io("writing", &marker))?;
    let staged = staging.keep();
    if let Err(error) = std::fs::rename(&staged, final_dir) {
        // Another executor finished the same set first: theirs is as good.
        let _ = std::fs::remove_dir_all(&staged);
        if !final_dir.join(COMPLETE_MARKER).exists() {
            return Err(io("moving a package set into", final_dir)(error));
        }
    }
    Ok(())
}

/// Unpacks a download's tar into `dir`: regular files at its top level named `*.whl`, nothing
/// else (pip downloads nothing else). Returns each file's name and path.
pub(crate) fn unpack_flat(
    archive: &tempfile::NamedTempFile,
    dir: &Path,
) -> Result<Vec<(String, PathBuf)>, SandboxError> {
    let reading = |source| SandboxError::Io {
        action: "reading the download's archive",
        path: archive.path().to_path_buf(),
        source,
    };
    let file = std::fs::File::open(archive.path()).map_err(reading)?;
    let mut tar = tar::Archive::new(file);
    let mut files = Vec::new();
    for entry in tar.entries().map_err(reading)? {
        let mut entry = entry.map_err(reading)?;
        if entry.header().entry_type().is_dir() {
            continue;
        }
        let path = entry.path().map_err(reading)?.into_owned();
        let mut parts = path.components().filter(|c| !matches!(c, Component::CurDir));
        let name = match (parts.next(), parts.next()) {
            (Some(Component::Normal(name)), None) => name.to_string_lossy().into_owned(),
            _ => {
                return Err(SandboxError::Packages {
                    detail: format!("the download holds an unexpected path {}", path.display()),
                });
            }
        };
        if !entry.header().entry_type().is_file() || !name.ends_with(".whl") || name.starts_with('.') {
            return Err(SandboxError::Packages {
                detail: format!("the download holds {name:?}, which is not a wheel"),
            });
        }
        let target = dir.join(&name);
        let mut out = std::fs::File::create(&target).map_err(|source| SandboxError::Io {
            action: "creating",
            path: target.clone(),
            source,
        })?;
        std::io::copy(&mut entry, &mut out).map_err(|source| SandboxError::Io {
            action: "writing",
            path: target.clone(),
            source,
        })?;
        files.push((name, target));
    }
    Ok(files)
}

fn set_dir_modes(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            set_dir_modes(&entry.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_is_made_private_and_foreign_or_linked_ones_are_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let root = tempfile::tempdir().unwrap();
        let cache = root.path().join("cache");
        std::fs::create_dir(&cache).unwrap();
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
        ensure_private_dir(&cache).unwrap();
        let mode = std::fs::metadata(&cache).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);

        let link = root.path().join("link");
        std::os::unix::fs::symlink(&cache, &link).unwrap();
        let refused = ensure_private_dir(&link).unwrap_err().to_string();
        assert!(refused.contains("symbolic link"), "{refused}");

        // A directory of another user: only testable as root, which CI is.
        if unsafe { libc::geteuid() } == 0 {
            let foreign = root.path().join("foreign");
            std::fs::create_dir(&foreign).unwrap();
            std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
            let refused = ensure_private_dir(&foreign).unwrap_err().to_string();
            assert!(refused.contains("uid 65534"), "{refused}");
        }
    }

    #[test]
    fn resolution_key_ignores_order_and_spelling() {
        let config = SandboxConfig::default();
        let a = resolution_key(&config, "img", &["Six==1.16.0".into(), "zope.interface".into()]);
        let b = resolution_key(&config, "img", &["zope_interface".into(), "six==1.16.0".into()]);
        assert_eq!(a, b);
        assert_ne!(
            a,
            resolution_key(&config, "other-image", &["six==1.16.0".into(), "zope.interface".into()])
        );
        assert_ne!(
            a,
            resolution_key(&config, "img", &["six==1.17.0".into(), "zope.interface".into()])
        );
    }

    #[test]
    fn an_installed_set_is_keyed_by_its_wheels_digests() {
        let wheel = |bytes: &[u8]| Wheel {
            name: "six".into(),
            version: "1.16.0".into(),
            file: "six-1.16.0-py3-none-any.whl".into(),
            sha256: airlock_protocol::CodeDigest::of(bytes),
        };
        let other = Wheel {
            name: "pkg".into(),
            version: "1".into(),
            file: "pkg-1-py3-none-any.whl".into(),
            sha256: airlock_protocol::CodeDigest::of(b"p"),
        };
        let a = set_key("img", &[wheel(b"a"), other.clone()]);
        assert_eq!(a, set_key("img", &[other.clone(), wheel(b"a")]));
        assert_ne!(
            a,
            set_key("img", &[wheel(b"b"), other.clone()]),
            "other bytes, other set"
        );
        assert_ne!(a, set_key("img2", &[wheel(b"a"), other]));
    }

    fn tar_with(entries: &[(&str, tar::EntryType, &[u8])]) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        let mut builder = tar::Builder::new(file.reopen().unwrap());
        for (path, kind, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_size(data.len() as u64);
            header.set_mode(0o4755);
            if *kind == tar::EntryType::Symlink {
                header.set_link_name("/etc/passwd").unwrap();
            }
            // Raw names, so that unsafe ones reach the unpacker as they would from a container.
            let name = &mut header.as_old_mut().name;
            name[..path.len()].copy_from_slice(path.as_bytes());
            header.set_cksum();
            builder.append(&header, *data).unwrap();
        }
        builder.finish().unwrap();
        file
    }

    #[test]
    fn unpacking_keeps_plain_files_only() {
        let cache = tempfile::tempdir().unwrap();
        let archive = tar_with(&[
            ("./pkg/", tar::EntryType::Directory, b""),
            ("./pkg/__init__.py", tar::EntryType::Regular, b"X = 1\n"),
            ("./bin/tool", tar::EntryType::Regular, b"#!/bin/sh\n"),
            ("./pkg/link", tar::EntryType::Symlink, b""),
        ]);
        let dest = cache.path().join("key");
        unpack_into_cache(&archive, cache.path(), &dest).unwrap();
        assert_eq!(std::fs::read(dest.join("site/pkg/__init__.py")).unwrap(), b"X = 1\n");
        assert!(!dest.join("site/pkg/link").exists(), "symlinks are dropped");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dest.join("site/bin/tool"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777;
        assert_eq!(mode, 0o755, "setuid bits never survive");
        assert!(dest.join(COMPLETE_MARKER).exists());
    }

    #[test]
    fn a_packages_test_suite_is_not_installed() {
        let cache = tempfile::tempdir().unwrap();
        let archive = tar_with(&[
            ("./pkg/", tar::EntryType::Directory, b""),
            ("./pkg/tests/", tar::EntryType::Directory, b""),
            ("./pkg/tests/test_io.py", tar::EntryType::Regular, b"import pickle\n"),
            ("./pkg/core/conftest.py", tar::EntryType::Regular, b"x = 1\n"),
            (
                "./pkg/testing/asserts.py",
                tar::EntryType::Regular,
                b"def check(): pass\n",
            ),
            ("./pkg/test.py", tar::EntryType::Regular, b"y = 2\n"),
        ]);
        let dest = cache.path().join("key");
        unpack_into_cache(&archive, cache.path(), &dest).unwrap();
        assert!(
            !dest.join("site/pkg/tests").exists(),
            "the suite's directory is left out"
        );
        assert!(!dest.join("site/pkg/core/conftest.py").exists());
        assert!(
            dest.join("site/pkg/testing/asserts.py").exists(),
            "helpers for users are library code"
        );
        assert!(
            dest.join("site/pkg/test.py").exists(),
            "a module named test is a module"
        );
    }

    #[test]
    fn unpacking_refuses_escapes() {
        let cache = tempfile::tempdir().unwrap();
        let archive = tar_with(&[("../escape.py", tar::EntryType::Regular, b"x")]);
        let err = unpack_into_cache(&archive, cache.path(), &cache.path().join("key")).unwrap_err();
        assert!(err.to_string().contains("unsafe path"), "{err}");
        assert!(!cache.path().join("escape.py").exists());
    }
}
