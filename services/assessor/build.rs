//! Prepares the built-in rule files (rules/*.toml) at build time, for a fresh `airlock assess`
//! process that must start in a few milliseconds:
//! - converts them to JSON, which the engine reads several times faster than TOML;
//! - compiles their regular expressions to DFAs (`rule-automata.bin`, indexed by
//!   `rule-automata.rs`), which the engine loads without compiling anything: compiling the
//!   dozen expressions a small file needs took a third of such a process.

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::Path;

#[path = "src/values/expression.rs"]
mod expression;

fn main() {
    println!("cargo:rerun-if-changed=rules");
    println!("cargo:rerun-if-changed=src/values/expression.rs");
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
    let mut expressions = BTreeSet::new();
    for path in entries {
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(&path).expect("a rule file is readable");
        // A file that is not valid TOML is left for the engine to refuse with its own error.
        let json = match toml::from_str::<toml::Value>(&text) {
            Ok(value) => {
                collect_expressions(&value, "", &mut expressions);
                serde_json::to_string(&value).expect("TOML values convert to JSON")
            }
            Err(_) => String::from("{\"__invalid_toml\": true}"),
        };
        let name = path
            .file_name()
            .expect("a file name")
            .to_string_lossy()
            .replace(".toml", ".json");
        std::fs::write(out.join(name), json).expect("OUT_DIR is writable");
    }
    write_automata(
        Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")),
        &expressions,
    );
}

/// The keys whose values are regular expressions: a pattern's `string` and `text`, a binding's
/// `target`, and every value constraint's `regex`. (Collecting a string that is not one costs
/// only an unused automaton; missing one costs a compilation at run time, which a test catches.)
const EXPRESSION_KEYS: [&str; 4] = ["regex", "string", "text", "target"];

fn collect_expressions(value: &toml::Value, key: &str, into: &mut BTreeSet<String>) {
    match value {
        toml::Value::String(text) if EXPRESSION_KEYS.contains(&key) => {
            into.insert(text.clone());
        }
        toml::Value::Table(table) => {
            for (key, value) in table {
                collect_expressions(value, key, into);
            }
        }
        toml::Value::Array(items) => {
            for item in items {
                collect_expressions(item, key, into);
            }
        }
        _ => {}
    }
}

/// Writes each expression's DFA, serialized, into one blob (each at an offset aligned for the
/// `u32`s it is read as), and a Rust table of (expression, offset, length) sorted by
/// expression. Expressions without a DFA (too large, or a Unicode word boundary, which a DFA
/// cannot hold) are listed apart, with the reason: they are compiled when first used.
fn write_automata(out: &Path, expressions: &BTreeSet<String>) {
    let mut blob: Vec<u8> = Vec::new();
    let mut index = String::from("pub static AUTOMATA: &[(&str, usize, usize)] = &[\n");
    let mut not_prebuilt = String::from("#[allow(dead_code)]\npub static NOT_PREBUILT: &[(&str, &str)] = &[\n");
    for pattern in expressions {
        let Ok(hir) = expression::parse_regex(pattern) else {
            continue; // not an expression, or a bad one the engine refuses with its own error
        };
        let dfa = match expression::build_automaton(&hir) {
            Ok(dfa) => dfa,
            Err(reason) => {
                // Written into generated source: the reason as text is all a table can hold.
                not_prebuilt.push_str(&format!("    ({pattern:?}, {:?}),\n", reason.to_string()));
                continue;
            }
        };
        let (bytes, padding) = dfa.to_bytes_native_endian();
        let bytes = &bytes[padding..];
        while !blob.len().is_multiple_of(8) {
            blob.push(0);
        }
        index.push_str(&format!("    ({pattern:?}, {}, {}),\n", blob.len(), bytes.len()));
        blob.extend_from_slice(bytes);
    }
    index.push_str("];\n");
    not_prebuilt.push_str("];\n");
    std::fs::write(out.join("rule-automata.bin"), blob).expect("OUT_DIR is writable");
    std::fs::write(out.join("rule-automata.rs"), index + &not_prebuilt).expect("OUT_DIR is writable");
}
