//! Tile paths, hash tiles and entry bundles come from the store, which an attacker may control.
#![no_main]
use airlock_auditlog::{TileId, tile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&width, body)) = data.split_first() else { return };
    let width = u64::from(width);
    if let Ok(hashes) = tile::parse_hash_tile(body, width) {
        assert_eq!(tile::encode_hash_tile(&hashes), body, "a hash tile prints back byte for byte");
    }
    if let Ok(entries) = tile::parse_bundle(body, width) {
        let mut again = Vec::new();
        for entry in entries {
            tile::push_bundle_entry(&mut again, entry).expect("a parsed entry fits a bundle");
        }
        assert_eq!(again, body, "a bundle prints back byte for byte");
    }
    if let Ok(path) = std::str::from_utf8(body) {
        if let Some(id) = TileId::parse(path) {
            assert_eq!(TileId::parse(&id.path()), Some(id), "a tile path round-trips");
        }
    }
});
