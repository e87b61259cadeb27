//! RFC 6962 proof verification against the transparency-dev/merkle test vectors (copied into
//! testdata/, see its NOTICE): every positive case verifies, every negative case is rejected.

use airlock_auditlog::hash::{Hash, empty_root, leaf_hash};
use airlock_auditlog::merkle::{self, verify_consistency, verify_inclusion};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use std::path::{Path, PathBuf};

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/merkle-vectors")
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("vector directory") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            json_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

fn b64(value: &serde_json::Value) -> Vec<u8> {
    B64.decode(value.as_str().expect("base64 string"))
        .expect("valid base64")
}

fn proof(value: &serde_json::Value) -> Vec<Vec<u8>> {
    value
        .as_array()
        .map(|a| a.iter().map(b64).collect())
        .unwrap_or_default()
}

/// Runs every vector of one kind through `verify`: positive cases must verify, every case marked
/// `wantErr` must be rejected. Returns (positive, negative) counts.
fn run_vectors<E: std::fmt::Debug>(kind: &str, verify: impl Fn(&serde_json::Value) -> Result<(), E>) -> (usize, usize) {
    let mut files = Vec::new();
    json_files(&vectors_dir().join(kind), &mut files);
    assert_eq!(files.len(), 98, "{kind} vectors missing");
    let (mut positive, mut negative) = (0, 0);
    for file in files {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let result = verify(&v);
        if v["wantErr"].as_bool().unwrap() {
            assert!(result.is_err(), "{} should be rejected", file.display());
            negative += 1;
        } else {
            assert!(result.is_ok(), "{}: {result:?}", file.display());
            positive += 1;
        }
    }
    (positive, negative)
}

#[test]
fn inclusion_vectors() {
    let (positive, negative) = run_vectors("inclusion", |v| {
        verify_inclusion(
            v["leafIdx"].as_u64().unwrap(),
            v["treeSize"].as_u64().unwrap(),
            &b64(&v["leafHash"]),
            &proof(&v["proof"]),
            &b64(&v["root"]),
        )
    });
    assert!(
        positive >= 5 && negative >= 90,
        "{positive} positive, {negative} negative"
    );
}

#[test]
fn consistency_vectors() {
    let (positive, negative) = run_vectors("consistency", |v| {
        verify_consistency(
            v["size1"].as_u64().unwrap(),
            v["size2"].as_u64().unwrap(),
            &proof(&v["proof"]),
            &b64(&v["root1"]),
            &b64(&v["root2"]),
        )
    });
    assert!(
        positive >= 5 && negative >= 80,
        "{positive} positive, {negative} negative"
    );
}

const REFERENCE_LEAVES: [&str; 8] = [
    "",
    "00",
    "10",
    "2021",
    "3031",
    "40414243",
    "5051525354555657",
    "606162636465666768696a6b6c6d6e6f",
];

const REFERENCE_ROOTS: [&str; 9] = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];

fn reference_leaves() -> Vec<Hash> {
    REFERENCE_LEAVES
        .iter()
        .map(|h| leaf_hash(&hex::decode(h).unwrap()))
        .collect()
}

#[test]
fn reference_tree_roots() {
    let leaves = reference_leaves();
    assert_eq!(empty_root().to_hex(), REFERENCE_ROOTS[0]);
    for (size, expected) in REFERENCE_ROOTS.iter().enumerate() {
        assert_eq!(merkle::root_of(&leaves[..size]).to_hex(), *expected, "size {size}");
    }
}

/// Proofs generated here verify, and match the vectors' happy paths byte for byte.
#[test]
fn generated_proofs_match_the_vectors() {
    let leaves = reference_leaves();
    let perfect = |level: u32, index: u64| -> Result<Hash, ()> {
        let start = (index << level) as usize;
        Ok(merkle::root_of(&leaves[start..start + (1 << level)]))
    };
    let mut files = Vec::new();
    json_files(&vectors_dir(), &mut files);
    let mut compared = 0;
    for file in files.iter().filter(|f| f.ends_with("happy-path.json")) {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        let expected: Vec<Vec<u8>> = proof(&v["proof"]);
        let generated = if v.get("leafIdx").is_some() {
            merkle::inclusion_proof(v["leafIdx"].as_u64().unwrap(), v["treeSize"].as_u64().unwrap(), perfect)
        } else {
            merkle::consistency_proof(v["size1"].as_u64().unwrap(), v["size2"].as_u64().unwrap(), perfect)
        };
        let generated: Vec<Vec<u8>> = generated.unwrap().unwrap().iter().map(|h| h.0.to_vec()).collect();
        assert_eq!(generated, expected, "{}", file.display());
        compared += 1;
    }
    assert!(compared >= 9, "{compared} happy paths");
}
