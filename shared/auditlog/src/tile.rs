//! The C2SP tlog-tiles layout: hash tiles `tile/<L>/<N>[.p/<W>]`, entry bundles
//! `tile/entries/<N>[.p/<W>]`, and their contents.

use crate::hash::Hash;
use std::fmt;

/// Hashes in a full tile; entries in a full bundle.
pub const TILE_WIDTH: u64 = 256;
/// Tree levels one tile spans.
pub const TILE_HEIGHT: u32 = 8;
/// Entries are length-prefixed with a big-endian uint16.
pub const MAX_ENTRY_BYTES: usize = u16::MAX as usize;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TileError {
    #[error("tile is {len} bytes; a tile of width {width} is {expected}")]
    WrongTileLength { len: usize, width: u64, expected: usize },
    #[error("entry bundle is cut short inside entry {0}")]
    TruncatedBundle(usize),
    #[error("entry bundle holds {found} entries, expected {expected}")]
    WrongBundleCount { found: usize, expected: u64 },
    #[error("entry of {0} bytes is larger than a bundle can hold")]
    EntryTooLarge(usize),
}

/// What a tile holds: Merkle hashes at a tile level, or log entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TileKind {
    Hashes(u8),
    Entries,
}

/// One tile or bundle: its kind, index at its level, and width (256 for a full tile).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TileId {
    pub kind: TileKind,
    pub index: u64,
    pub width: u64,
}

impl TileId {
    pub fn hashes(level: u8, index: u64, width: u64) -> Self {
        Self {
            kind: TileKind::Hashes(level),
            index,
            width,
        }
    }

    pub fn entries(index: u64, width: u64) -> Self {
        Self {
            kind: TileKind::Entries,
            index,
            width,
        }
    }

    pub fn is_full(&self) -> bool {
        self.width == TILE_WIDTH
    }

    /// The object path, relative to the log's prefix.
    pub fn path(&self) -> String {
        let level = match self.kind {
            TileKind::Hashes(l) => l.to_string(),
            TileKind::Entries => "entries".to_owned(),
        };
        let mut out = format!("tile/{level}/{}", encode_index(self.index));
        if !self.is_full() {
            out.push_str(&format!(".p/{}", self.width));
        }
        out
    }

    /// Parses a path written by [`TileId::path`]; anything else is `None`.
    pub fn parse(path: &str) -> Option<TileId> {
        let rest = path.strip_prefix("tile/")?;
        let (level, rest) = rest.split_once('/')?;
        let kind = if level == "entries" {
            TileKind::Entries
        } else {
            if level.is_empty()
                || (level.len() > 1 && level.starts_with('0'))
                || !level.bytes().all(|b| b.is_ascii_digit())
            {
                return None;
            }
            let l: u8 = level.parse().ok()?;
            if l > 63 {
                return None;
            }
            TileKind::Hashes(l)
        };
        let (index, width) = match rest.split_once(".p/") {
            Some((index, width)) => {
                if width.is_empty() || width.starts_with('0') || !width.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let w: u64 = width.parse().ok()?;
                if !(1..TILE_WIDTH).contains(&w) {
                    return None;
                }
                (index, w)
            }
            None => (rest, TILE_WIDTH),
        };
        let index = decode_index(index)?;
        let id = TileId { kind, index, width };
        (id.path() == path).then_some(id)
    }
}

impl fmt::Display for TileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path())
    }
}

/// `1234067` → `x001/x234/067`: three-digit groups, all but the last prefixed with `x`.
pub fn encode_index(mut n: u64) -> String {
    let mut groups = vec![format!("{:03}", n % 1000)];
    n /= 1000;
    while n > 0 {
        groups.push(format!("x{:03}", n % 1000));
        n /= 1000;
    }
    groups.reverse();
    groups.join("/")
}

fn decode_index(text: &str) -> Option<u64> {
    let groups: Vec<&str> = text.split('/').collect();
    let (last, init) = groups.split_last()?;
    let mut n: u64 = 0;
    for (i, group) in init.iter().enumerate() {
        let digits = group.strip_prefix('x')?;
        if digits.len() != 3 || !digits.bytes().all(|b| b.is_ascii_digit()) || (i == 0 && digits == "000") {
            return None;
        }
        n = n.checked_mul(1000)?.checked_add(digits.parse().ok()?)?;
    }
    if last.len() != 3 || !last.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.checked_mul(1000)?.checked_add(last.parse().ok()?)
}

/// The tiles of every level that a tree of `size` leaves is stored in: the full ones and the
/// partial rightmost one of each level (entry bundles are listed as level-0 shaped tiles).
pub fn tiles_for_size(size: u64) -> Vec<TileId> {
    let mut out = Vec::new();
    let mut hashes_at_level = size;
    let mut level: u8 = 0;
    while hashes_at_level > 0 {
        let full = hashes_at_level / TILE_WIDTH;
        for index in 0..full {
            out.push(TileId::hashes(level, index, TILE_WIDTH));
        }
        if !hashes_at_level.is_multiple_of(TILE_WIDTH) {
            out.push(TileId::hashes(level, full, hashes_at_level % TILE_WIDTH));
        }
        hashes_at_level /= TILE_WIDTH;
        level += 1;
    }
    out
}

/// The entry bundles of a tree of `size` entries.
pub fn bundles_for_size(size: u64) -> Vec<TileId> {
    let full = size / TILE_WIDTH;
    let mut out: Vec<TileId> = (0..full).map(|i| TileId::entries(i, TILE_WIDTH)).collect();
    if !size.is_multiple_of(TILE_WIDTH) {
        out.push(TileId::entries(full, size % TILE_WIDTH));
    }
    out
}

/// The hashes of a tile of `width`.
pub fn parse_hash_tile(bytes: &[u8], width: u64) -> Result<Vec<Hash>, TileError> {
    let expected = width as usize * 32;
    if bytes.len() != expected {
        return Err(TileError::WrongTileLength {
            len: bytes.len(),
            width,
            expected,
        });
    }
    Ok(bytes.chunks_exact(32).filter_map(Hash::from_slice).collect())
}

pub fn encode_hash_tile(hashes: &[Hash]) -> Vec<u8> {
    hashes.iter().flat_map(|h| h.0).collect()
}

/// Appends one length-prefixed entry to a bundle.
pub fn push_bundle_entry(bundle: &mut Vec<u8>, entry: &[u8]) -> Result<(), TileError> {
    let len = u16::try_from(entry.len()).map_err(|_| TileError::EntryTooLarge(entry.len()))?;
    bundle.extend_from_slice(&len.to_be_bytes());
    bundle.extend_from_slice(entry);
    Ok(())
}

/// The entries of a bundle, which must hold exactly `width` of them.
pub fn parse_bundle(bytes: &[u8], width: u64) -> Result<Vec<&[u8]>, TileError> {
    let mut entries = Vec::with_capacity(width as usize);
    let mut rest = bytes;
    while !rest.is_empty() {
        let [a, b, tail @ ..] = rest else {
            return Err(TileError::TruncatedBundle(entries.len()));
        };
        let len = u16::from_be_bytes([*a, *b]) as usize;
        if tail.len() < len {
            return Err(TileError::TruncatedBundle(entries.len()));
        }
        entries.push(&tail[..len]);
        rest = &tail[len..];
    }
    if entries.len() as u64 != width {
        return Err(TileError::WrongBundleCount {
            found: entries.len(),
            expected: width,
        });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_the_spec() {
        assert_eq!(encode_index(1234067), "x001/x234/067");
        assert_eq!(encode_index(5), "005");
        assert_eq!(encode_index(1000), "x001/000");
        assert_eq!(TileId::hashes(0, 1234067, 256).path(), "tile/0/x001/x234/067");
        assert_eq!(TileId::hashes(2, 0, 1).path(), "tile/2/000.p/1");
        assert_eq!(TileId::entries(3, 17).path(), "tile/entries/003.p/17");
        for id in [
            TileId::hashes(0, 1234067, 256),
            TileId::hashes(63, 0, 255),
            TileId::entries(999_999_999, 1),
        ] {
            assert_eq!(TileId::parse(&id.path()), Some(id));
        }
        for bad in [
            "tile/0/5",
            "tile/0/x000/005",
            "tile/00/005",
            "tile/64/005",
            "tile/0/005.p/0",
            "tile/0/005.p/256",
            "tile/0/005.p/07",
            "tile/e/005",
            "tile/0/x1/005",
            "checkpoint",
        ] {
            assert_eq!(TileId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_spec_example_of_size_70000() {
        let tiles = tiles_for_size(70_000);
        let full0 = tiles
            .iter()
            .filter(|t| t.kind == TileKind::Hashes(0) && t.is_full())
            .count();
        assert_eq!(full0, 273);
        assert!(tiles.contains(&TileId::hashes(0, 273, 112)));
        assert!(tiles.contains(&TileId::hashes(1, 0, 256)));
        assert!(tiles.contains(&TileId::hashes(1, 1, 17)));
        assert!(tiles.contains(&TileId::hashes(2, 0, 1)));
        assert_eq!(tiles.len(), 273 + 1 + 1 + 1 + 1);
        assert_eq!(
            tiles_for_size(256),
            vec![TileId::hashes(0, 0, 256), TileId::hashes(1, 0, 1)]
        );
    }

    #[test]
    fn bundles_round_trip_and_refuse_bad_lengths() {
        let mut bundle = Vec::new();
        push_bundle_entry(&mut bundle, b"one").unwrap();
        push_bundle_entry(&mut bundle, b"").unwrap();
        assert_eq!(parse_bundle(&bundle, 2).unwrap(), vec![&b"one"[..], &b""[..]]);
        assert!(parse_bundle(&bundle, 3).is_err());
        assert!(parse_bundle(&bundle[..bundle.len() - 1], 2).is_err());
        assert!(push_bundle_entry(&mut bundle, &vec![0; 70_000]).is_err());
    }
}
