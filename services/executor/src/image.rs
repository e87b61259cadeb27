//! The sandbox image: built offline from Debian packages by `image/recipe.sh` (mmdebstrap, no
//! registry), imported with the recipe's hash in a label, and rebuilt only when that hash
//! changes.
//!
//! Only images of the recipe's repository (`airlock-sandbox:<tag>`) are Airlock's to build. An
//! image an operator names in `[executor.images]` under any other name is theirs (built `FROM
//! airlock-sandbox:latest` with more in it, say: docs/sandbox.md): it must exist, and is never
//! rebuilt or replaced.

use crate::config::SandboxConfig;
use crate::docker::ContainerEngine;
use crate::error::SandboxError;
use bollard::query_parameters::CreateImageOptionsBuilder;
use futures::StreamExt;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

/// The recipe, compiled in so the hash always matches what would be built.
pub const RECIPE: &str = include_str!("../image/recipe.sh");
/// Label holding the recipe's hash.
pub const RECIPE_LABEL: &str = "airlock.recipe";
/// The repository of the images the recipe builds.
pub const RECIPE_REPOSITORY: &str = "airlock-sandbox";

/// Whether `image` is one the recipe builds (`airlock-sandbox` with any tag), rather than an
/// operator's own.
pub fn built_by_recipe(image: &str) -> bool {
    let repository = match image.rsplit_once(':') {
        Some((repository, tag)) if !tag.contains('/') => repository,
        _ => image,
    };
    repository == RECIPE_REPOSITORY
}

pub fn recipe_hash() -> String {
    hex::encode(Sha256::digest(RECIPE.as_bytes()))
}

/// What [`ensure_image`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageStatus {
    /// Images that were already current.
    pub up_to_date: Vec<String>,
    /// Images built now.
    pub built: Vec<String>,
}

/// Builds each configured image of the recipe's repository that is missing or was built from
/// another recipe, and checks that an operator's own images exist. Needs root and `mmdebstrap`
/// (`ops/install-deps` installs it) and Debian's package mirror; takes a minute or two when it
/// builds, milliseconds when it does not.
pub async fn ensure_image(config: &SandboxConfig) -> Result<ImageStatus, SandboxError> {
    let engine = ContainerEngine::connect(config).await?;
    let names: BTreeSet<&str> = [config.images.python.as_str(), config.images.bash.as_str()].into();
    let mut status = ImageStatus {
        up_to_date: vec![],
        built: vec![],
    };
    let wanted = recipe_hash();
    for name in names {
        if !built_by_recipe(name) {
            check_image(&engine, name).await?;
            status.up_to_date.push(name.to_owned());
            continue;
        }
        if recipe_of(&engine, name).await?.as_deref() == Some(wanted.as_str()) {
            status.up_to_date.push(name.to_owned());
            continue;
        }
        tracing::info!(image = name, "building the sandbox image from its recipe");
        build(&engine, name, &wanted).await?;
        status.built.push(name.to_owned());
    }
    Ok(status)
}

/// The recipe hash an image was built from; `None` when the image is missing (or was not made
/// by the recipe).
pub async fn recipe_of(engine: &ContainerEngine, name: &str) -> Result<Option<String>, SandboxError> {
    match engine.docker.inspect_image(name).await {
        Ok(image) => Ok(image
            .config
            .and_then(|c| c.labels)
            .and_then(|mut l| l.remove(RECIPE_LABEL))),
        Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => Ok(None),
        Err(e) => Err(engine.err("inspect an image", e)),
    }
}

/// Fails with [`SandboxError::ImageMissing`] when the image is not there; warns when an image
/// of the recipe's repository was built from an older recipe (it still runs).
pub async fn check_image(engine: &ContainerEngine, name: &str) -> Result<(), SandboxError> {
    match engine.docker.inspect_image(name).await {
        Ok(image) => {
            let label = image
                .config
                .and_then(|c| c.labels)
                .and_then(|mut l| l.remove(RECIPE_LABEL));
            if built_by_recipe(name) && label.as_deref() != Some(recipe_hash().as_str()) {
                tracing::warn!(
                    image = name,
                    "the sandbox image was not built from the current recipe; `airlock image build` rebuilds it"
                );
            }
            Ok(())
        }
        Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => {
            Err(SandboxError::ImageMissing { image: name.to_owned() })
        }
        Err(e) => Err(engine.err("inspect an image", e)),
    }
}

async fn build(engine: &ContainerEngine, name: &str, hash: &str) -> Result<(), SandboxError> {
    let io = |action: &'static str, path: &std::path::Path| {
        let path = path.to_path_buf();
        move |source| SandboxError::Io {
            action,
            path: path.clone(),
            source,
        }
    };
    let work = tempfile::tempdir().map_err(io("creating a build directory in", &std::env::temp_dir()))?;
    let script = work.path().join("recipe.sh");
    let rootfs = work.path().join("rootfs.tar");
    std::fs::write(&script, RECIPE).map_err(io("writing the image recipe to", &script))?;
    let output = tokio::process::Command::new("bash")
        .arg(&script)
        .arg(&rootfs)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(io("running the image recipe", &script))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: String = stderr
            .lines()
            .rev()
            .take(15)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        let hint = if stderr.contains("mmdebstrap: command not found") || stderr.contains("mmdebstrap: not found") {
            " (mmdebstrap is missing: ops/install-deps installs it)"
        } else {
            ""
        };
        return Err(SandboxError::ImageBuild {
            detail: format!("the recipe failed{hint}: {tail}"),
        });
    }
    let (repo, tag) = match name.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => (repo, tag),
        _ => (name, "latest"),
    };
    let file = tokio::fs::File::open(&rootfs)
        .await
        .map_err(io("reading the image's root filesystem", &rootfs))?;
    let body = bollard::body_try_stream(tokio_util::io::ReaderStream::new(file));
    let options = CreateImageOptionsBuilder::default()
        .from_src("-")
        .repo(repo)
        .tag(tag)
        .changes(vec![
            format!("LABEL {RECIPE_LABEL}={hash}"),
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_owned(),
            "ENV LANG=C.UTF-8".to_owned(),
            "USER 1000:1000".to_owned(),
            "WORKDIR /tmp".to_owned(),
        ])
        .build();
    let mut progress = engine.docker.create_image(Some(options), Some(body), None);
    while let Some(step) = progress.next().await {
        step.map_err(|e| engine.err("import the image's root filesystem", e))?;
    }
    match recipe_of(engine, name).await? {
        Some(label) if label == hash => Ok(()),
        other => Err(SandboxError::ImageBuild {
            detail: format!("the imported image {name} carries recipe label {other:?}, expected {hash}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_recipes_repository_is_built_by_it() {
        assert!(built_by_recipe("airlock-sandbox:latest"));
        assert!(built_by_recipe("airlock-sandbox"));
        assert!(built_by_recipe(crate::config::DEFAULT_IMAGE));
        assert!(!built_by_recipe("airlock-sandbox-data:1"));
        assert!(!built_by_recipe("registry.local:5000/airlock-sandbox"));
        assert!(!built_by_recipe("ours/data-science:2026"));
    }

    #[test]
    fn recipe_carries_both_languages_pip_and_the_data_stacks_libraries() {
        assert!(RECIPE.contains("--include=python3,python3-pip"));
        for library in ["libstdc++6", "libgomp1", "libgfortran5", "zlib1g", "fonts-dejavu-core"] {
            assert!(RECIPE.contains(library), "{library}");
        }
        assert!(
            RECIPE.contains("--variant=essential"),
            "bash and coreutils come with the essential set"
        );
        assert_eq!(recipe_hash().len(), 64);
    }
}
