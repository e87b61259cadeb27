//! The sandbox image: built from the recipe when missing, and left alone when current.

use airlock_executor::{SandboxConfig, ensure_image, image};

#[tokio::test]
async fn ensure_image_builds_once_and_then_skips() {
    let config = SandboxConfig::default();
    let first = ensure_image(&config)
        .await
        .expect("building the sandbox image (needs root, mmdebstrap, Debian's mirror)");
    assert_eq!(first.built.len() + first.up_to_date.len(), 1, "{first:?}");
    let second = ensure_image(&config).await.unwrap();
    assert_eq!(
        second.up_to_date,
        vec![config.images.python.clone()],
        "a current image is not rebuilt"
    );
    assert!(second.built.is_empty());
    let engine = airlock_executor::docker::ContainerEngine::connect(&config)
        .await
        .unwrap();
    assert_eq!(
        image::recipe_of(&engine, &config.images.python).await.unwrap(),
        Some(image::recipe_hash())
    );
    let inspect = engine.docker.inspect_image(&config.images.python).await.unwrap();
    let user = inspect.config.and_then(|c| c.user).unwrap_or_default();
    assert_eq!(user, "1000:1000");
}
