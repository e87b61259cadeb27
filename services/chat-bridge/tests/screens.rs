//! The pictures of what approvers see (`docs/screens/`, made by `ops/screens`) are of what the
//! bridge draws now: each page there is what the current renderer writes, and each picture was
//! taken of the page as it is (their digests, recorded by `ops/screens` when it took them).

#[allow(dead_code)]
#[path = "../examples/screens.rs"]
mod screens;

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn docs_screens() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/screens")
}

#[test]
fn the_pictures_in_the_docs_are_of_the_current_renderer() {
    let dir = docs_screens();
    let regenerate = "run ops/screens, look at the pictures, and commit docs/screens";
    for (name, page) in screens::pages() {
        let path = dir.join(format!("{name}.html"));
        let kept = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}; {regenerate}", path.display()));
        assert!(
            kept == page,
            "{} is not what the renderer draws now: {regenerate}",
            path.display()
        );
    }
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).expect("docs/screens/SHA256SUMS");
    let recorded: BTreeMap<&str, &str> = sums
        .lines()
        .filter_map(|l| l.split_once("  ").map(|(sum, file)| (file.trim(), sum.trim())))
        .collect();
    for (name, _) in screens::pages() {
        for file in [
            format!("{name}.html"),
            format!("{name}-desktop.png"),
            format!("{name}-phone.png"),
        ] {
            let bytes = std::fs::read(dir.join(&file)).unwrap_or_else(|e| panic!("{file}: {e}; {regenerate}"));
            let digest = hex::encode(Sha256::digest(&bytes));
            assert_eq!(
                recorded.get(file.as_str()).copied(),
                Some(digest.as_str()),
                "{file} is not the one ops/screens recorded (a page changed after its pictures were taken): {regenerate}"
            );
        }
    }
}
