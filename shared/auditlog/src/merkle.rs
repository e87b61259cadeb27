//! RFC 6962 / RFC 9162 Merkle tree: roots, the compact range a writer keeps, inclusion and
//! consistency proofs (generation over any source of subtree hashes, and verification).

use crate::hash::{Hash, empty_root, node_hash};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    #[error("index {index} is not below tree size {size}")]
    IndexOutOfRange { index: u64, size: u64 },
    #[error("size {size1} is larger than size {size2}")]
    SizesReversed { size1: u64, size2: u64 },
    #[error("a consistency proof from the empty tree proves nothing")]
    EmptyOldTree,
    #[error("equal sizes need an empty proof and equal roots")]
    EqualSizes,
    #[error("the proof has the wrong number of hashes")]
    WrongLength,
    #[error("a proof hash is not 32 bytes")]
    BadHash,
    #[error("the proof leads to root {computed}, not to the expected root")]
    RootMismatch { computed: String },
}

/// The largest power of two strictly smaller than `n` (n >= 2).
fn split_point(n: u64) -> u64 {
    debug_assert!(n >= 2);
    1 << (63 - (n - 1).leading_zeros())
}

/// MTH of a list of leaf hashes.
pub fn root_of(leaves: &[Hash]) -> Hash {
    let mut range = CompactRange::default();
    for leaf in leaves {
        range.append(*leaf);
    }
    range.root()
}

/// The right edge of a growing tree: one hash per perfect subtree (one per set bit of the
/// size, largest first). Enough to append and to compute the root in O(log n).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactRange {
    size: u64,
    peaks: Vec<Hash>,
}

impl CompactRange {
    /// Rebuilds the range of a tree of `size` leaves from its perfect subtrees, given as
    /// `perfect(level, index)` (the hash of leaves `index << level .. (index + 1) << level`).
    pub fn from_perfect<E>(size: u64, mut perfect: impl FnMut(u32, u64) -> Result<Hash, E>) -> Result<Self, E> {
        let mut peaks = Vec::new();
        let mut start = 0u64;
        for level in (0..64u32).rev() {
            if size & (1 << level) != 0 {
                peaks.push(perfect(level, start >> level)?);
                start += 1 << level;
            }
        }
        Ok(Self { size, peaks })
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn append(&mut self, leaf: Hash) {
        self.peaks.push(leaf);
        let mut s = self.size;
        while s & 1 == 1 {
            let (Some(right), Some(left)) = (self.peaks.pop(), self.peaks.pop()) else {
                unreachable!("a set bit of the size always has a peak")
            };
            self.peaks.push(node_hash(&left, &right));
            s >>= 1;
        }
        self.size += 1;
    }

    pub fn root(&self) -> Hash {
        let mut peaks = self.peaks.iter().rev();
        let Some(mut acc) = peaks.next().copied() else {
            return empty_root();
        };
        for peak in peaks {
            acc = node_hash(peak, &acc);
        }
        acc
    }
}

/// MTH of leaves `start..end`, built from perfect subtrees supplied by `perfect(level, index)`.
/// `start` must be aligned to the largest power of two not above `end - start`, as every range
/// in RFC 6962's recursive definitions is.
pub fn subtree_root<E>(start: u64, end: u64, perfect: &mut impl FnMut(u32, u64) -> Result<Hash, E>) -> Result<Hash, E> {
    let n = end - start;
    if n == 0 {
        return Ok(empty_root());
    }
    if n.is_power_of_two() && start.is_multiple_of(n) {
        let level = n.trailing_zeros();
        return perfect(level, start >> level);
    }
    let k = split_point(n);
    let left = subtree_root(start, start + k, perfect)?;
    let right = subtree_root(start + k, end, perfect)?;
    Ok(node_hash(&left, &right))
}

/// RFC 6962 PATH(index, D[0:size]): the inclusion proof of leaf `index` in the tree of `size`.
pub fn inclusion_proof<E>(
    index: u64,
    size: u64,
    mut perfect: impl FnMut(u32, u64) -> Result<Hash, E>,
) -> Result<Result<Vec<Hash>, ProofError>, E> {
    if index >= size {
        return Ok(Err(ProofError::IndexOutOfRange { index, size }));
    }
    let mut proof = Vec::new();
    let (mut start, mut end, mut m) = (0u64, size, index);
    // Walk down from the root, collecting the sibling at each level; reversed at the end so
    // that the leaf's sibling comes first.
    while end - start > 1 {
        let k = split_point(end - start);
        if m < k {
            proof.push(subtree_root(start + k, end, &mut perfect)?);
            end = start + k;
        } else {
            proof.push(subtree_root(start, start + k, &mut perfect)?);
            start += k;
            m -= k;
        }
    }
    proof.reverse();
    Ok(Ok(proof))
}

/// RFC 6962 PROOF(size1, D[0:size2]): the consistency proof between two tree sizes.
pub fn consistency_proof<E>(
    size1: u64,
    size2: u64,
    mut perfect: impl FnMut(u32, u64) -> Result<Hash, E>,
) -> Result<Result<Vec<Hash>, ProofError>, E> {
    if size1 > size2 {
        return Ok(Err(ProofError::SizesReversed { size1, size2 }));
    }
    if size1 == 0 {
        return Ok(Err(ProofError::EmptyOldTree));
    }
    if size1 == size2 {
        return Ok(Ok(Vec::new()));
    }
    let mut proof = Vec::new();
    let (mut start, mut end, mut m, mut complete) = (0u64, size2, size1, true);
    loop {
        let n = end - start;
        if m == n {
            if !complete {
                proof.push(subtree_root(start, end, &mut perfect)?);
            }
            break;
        }
        let k = split_point(n);
        if m <= k {
            proof.push(subtree_root(start + k, end, &mut perfect)?);
            end = start + k;
        } else {
            proof.push(subtree_root(start, start + k, &mut perfect)?);
            start += k;
            m -= k;
            complete = false;
        }
    }
    proof.reverse();
    Ok(Ok(proof))
}

fn as_hash(bytes: &[u8]) -> Result<Hash, ProofError> {
    Hash::from_slice(bytes).ok_or(ProofError::BadHash)
}

/// Root computed from an inclusion proof (RFC 9162 section 2.1.3.2).
pub fn root_from_inclusion<P: AsRef<[u8]>>(
    index: u64,
    size: u64,
    leaf: &Hash,
    proof: &[P],
) -> Result<Hash, ProofError> {
    if index >= size {
        return Err(ProofError::IndexOutOfRange { index, size });
    }
    let (mut f, mut s) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        let p = as_hash(p.as_ref())?;
        if s == 0 {
            return Err(ProofError::WrongLength);
        }
        if f & 1 == 1 || f == s {
            r = node_hash(&p, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node_hash(&r, &p);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return Err(ProofError::WrongLength);
    }
    Ok(r)
}

/// Checks that `leaf` is at `index` in the tree of `size` with `root`.
pub fn verify_inclusion<P: AsRef<[u8]>>(
    index: u64,
    size: u64,
    leaf: &[u8],
    proof: &[P],
    root: &[u8],
) -> Result<(), ProofError> {
    let leaf = as_hash(leaf)?;
    let computed = root_from_inclusion(index, size, &leaf, proof)?;
    if computed.as_bytes().as_slice() != root {
        return Err(ProofError::RootMismatch {
            computed: computed.to_hex(),
        });
    }
    Ok(())
}

/// Checks that the tree of `size2` with `root2` extends the tree of `size1` with `root1`
/// (RFC 9162 section 2.1.4.2).
pub fn verify_consistency<P: AsRef<[u8]>>(
    size1: u64,
    size2: u64,
    proof: &[P],
    root1: &[u8],
    root2: &[u8],
) -> Result<(), ProofError> {
    if size1 > size2 {
        return Err(ProofError::SizesReversed { size1, size2 });
    }
    if size1 == 0 {
        return Err(ProofError::EmptyOldTree);
    }
    if size1 == size2 {
        if !proof.is_empty() || root1 != root2 {
            return Err(ProofError::EqualSizes);
        }
        return Ok(());
    }
    let mut hashes = proof
        .iter()
        .map(|p| as_hash(p.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    if hashes.is_empty() {
        return Err(ProofError::WrongLength);
    }
    if size1.is_power_of_two() {
        hashes.insert(0, as_hash(root1)?);
    }
    let (mut f, mut s) = (size1 - 1, size2 - 1);
    while f & 1 == 1 {
        f >>= 1;
        s >>= 1;
    }
    let (mut fr, mut sr) = (hashes[0], hashes[0]);
    for c in &hashes[1..] {
        if s == 0 {
            return Err(ProofError::WrongLength);
        }
        if f & 1 == 1 || f == s {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return Err(ProofError::WrongLength);
    }
    if fr.as_bytes().as_slice() != root1 {
        return Err(ProofError::RootMismatch { computed: fr.to_hex() });
    }
    if sr.as_bytes().as_slice() != root2 {
        return Err(ProofError::RootMismatch { computed: sr.to_hex() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::leaf_hash;

    fn leaves(n: usize) -> Vec<Hash> {
        (0..n).map(|i| leaf_hash(&(i as u64).to_be_bytes())).collect()
    }

    /// The recursive definition, for checking the iterative code against.
    fn mth(l: &[Hash]) -> Hash {
        match l.len() {
            0 => empty_root(),
            1 => l[0],
            n => {
                let k = split_point(n as u64) as usize;
                node_hash(&mth(&l[..k]), &mth(&l[k..]))
            }
        }
    }

    fn perfect(l: &[Hash]) -> impl FnMut(u32, u64) -> Result<Hash, ()> + '_ {
        move |level, index| {
            let start = (index << level) as usize;
            Ok(mth(&l[start..start + (1usize << level)]))
        }
    }

    #[test]
    fn compact_range_matches_the_recursive_definition() {
        let l = leaves(300);
        let mut range = CompactRange::default();
        for (i, leaf) in l.iter().enumerate() {
            assert_eq!(range.root(), mth(&l[..i]));
            range.append(*leaf);
        }
        for n in [1u64, 2, 3, 7, 8, 9, 255, 256, 257, 300] {
            let rebuilt = CompactRange::from_perfect(n, perfect(&l)).unwrap();
            assert_eq!(rebuilt.root(), mth(&l[..n as usize]), "{n}");
        }
    }

    #[test]
    fn generated_proofs_verify_and_tampered_ones_do_not() {
        let l = leaves(70);
        for size in 1..=70u64 {
            let root = mth(&l[..size as usize]);
            for index in 0..size {
                let proof = inclusion_proof(index, size, perfect(&l)).unwrap().unwrap();
                verify_inclusion(index, size, l[index as usize].as_bytes(), &proof, root.as_bytes()).unwrap();
                if let Some(first) = proof.first() {
                    let mut bad = proof.clone();
                    bad[0] = leaf_hash(first.as_bytes());
                    assert!(
                        verify_inclusion(index, size, l[index as usize].as_bytes(), &bad, root.as_bytes()).is_err()
                    );
                }
            }
            for size1 in 1..=size {
                let root1 = mth(&l[..size1 as usize]);
                let proof = consistency_proof(size1, size, perfect(&l)).unwrap().unwrap();
                verify_consistency(size1, size, &proof, root1.as_bytes(), root.as_bytes()).unwrap();
                if size1 < size {
                    let other = leaf_hash(b"x");
                    assert!(verify_consistency(size1, size, &proof, other.as_bytes(), root.as_bytes()).is_err());
                }
            }
        }
    }
}
