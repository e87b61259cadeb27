//! Converts the built-in rule files (rules/*.toml) to JSON at build time: the engine reads JSON
//! several times faster than TOML, which is most of a fresh `airlock assess` process's start.

use sha2::{Digest, Sha256};
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=rules");
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let out = Path::new(&out).join("rules-json");
    std::fs::create_dir_all(&out).expect("OUT_DIR is writable");
    let mut entries: Vec<_> = std::fs::read_dir("rules")
        .expect("rules/ is beside build.rs")
        .map(|e| e.expect("rules/ is readable").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    entries.sort();
    // The rules' version, as the engine computes it over the TOML files (name, NUL, text, NUL,
    // in name order), so a fresh process need not hash them again.
    let mut hasher = Sha256::new();
    for path in &entries {
        let name = path.file_name().expect("a file name").to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).expect("a rule file is readable");
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update(text.as_bytes());
        hasher.update([0]);
    }
    let version = format!("rules-{}", &hex::encode(hasher.finalize())[..12]);
    std::fs::write(out.join("version.txt"), version).expect("OUT_DIR is writable");
    for path in entries {
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(&path).expect("a rule file is readable");
        // A file that is not valid TOML is left for the engine to refuse with its own error.
        let json = match toml::from_str::<toml::Value>(&text) {
            Ok(value) => serde_json::to_string(&value).expect("TOML values convert to JSON"),
            Err(_) => String::from("{\"__invalid_toml\": true}"),
        };
        let name = path
            .file_name()
            .expect("a file name")
            .to_string_lossy()
            .replace(".toml", ".json");
        std::fs::write(out.join(name), json).expect("OUT_DIR is writable");
    }
}
