//! The checksums and the byte pattern of verified blocks.
//!
//! A checksum covers the whole block except the field that holds it, given as the two slices around that field,
//! so nothing is copied. CRC-32C comes from the `crc32c` crate (SSE4.2 where present), XXH3 from `xxhash-rust`,
//! SHA-256 from `sha2`; all three work on the stack. The pattern is a stateless function of a block's identity
//! and the position of each 8-byte word, so any word can be checked without generating the ones before it.

use sha2::Digest;

use super::Algorithm;

/// The checksum field's width: room for the longest digest (SHA-256).
pub const DIGEST_LEN: usize = 32;

/// The checksum of `a` followed by `b`, zero-padded to [`DIGEST_LEN`]; all zeros for `Pattern`.
pub fn digest(algorithm: Algorithm, a: &[u8], b: &[u8]) -> [u8; DIGEST_LEN] {
    let mut out = [0u8; DIGEST_LEN];
    match algorithm {
        Algorithm::Crc32c => {
            let crc = crc32c::crc32c_append(crc32c::crc32c(a), b);
            out[..4].copy_from_slice(&crc.to_le_bytes());
        }
        Algorithm::Xxhash => {
            let mut hasher = xxhash_rust::xxh3::Xxh3::new();
            hasher.update(a);
            hasher.update(b);
            out[..8].copy_from_slice(&hasher.digest().to_le_bytes());
        }
        Algorithm::Sha256 => {
            let mut hasher = sha2::Sha256::new();
            hasher.update(a);
            hasher.update(b);
            out.copy_from_slice(&hasher.finalize());
        }
        Algorithm::Pattern => {}
    }
    out
}

/// How many bytes of the digest field an algorithm uses (for display).
pub fn digest_width(algorithm: Algorithm) -> usize {
    match algorithm {
        Algorithm::Crc32c => 4,
        Algorithm::Xxhash => 8,
        Algorithm::Sha256 => 32,
        Algorithm::Pattern => 0,
    }
}

/// The pattern's starting point for one block: the seed, file, offset and generation mixed together.
pub fn pattern_base(seed: u64, file: u32, offset: u64, generation: u8) -> u64 {
    mix(seed ^ mix(offset ^ (u64::from(file) << 40) ^ (u64::from(generation) << 56)))
}

/// The pattern word at byte `position` (a multiple of 8) of a block whose base is `base`.
#[inline]
pub fn pattern_word(base: u64, position: usize) -> u64 {
    mix(base.wrapping_add(position as u64))
}

/// SplitMix64's finaliser: a bijection that spreads every input bit over the output.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_cover_both_slices_and_match_the_whole() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
        for algorithm in [Algorithm::Crc32c, Algorithm::Xxhash, Algorithm::Sha256] {
            let split = digest(algorithm, &data[..100], &data[100..]);
            assert_eq!(split, digest(algorithm, &data, &[]), "{algorithm}: split or whole, same digest");
            let mut other = data.clone();
            other[4000] ^= 1;
            assert_ne!(split, digest(algorithm, &other[..100], &other[100..]), "{algorithm}");
            assert!(split[digest_width(algorithm)..].iter().all(|&b| b == 0), "padded with zeros");
        }
        assert_eq!(digest(Algorithm::Crc32c, b"123456789", &[])[..4], 0xE306_9283u32.to_le_bytes(), "CRC-32C check");
    }

    #[test]
    fn the_pattern_depends_on_every_part_of_the_identity() {
        let base = pattern_base(1, 2, 4096, 3);
        for other in [pattern_base(9, 2, 4096, 3), pattern_base(1, 9, 4096, 3), pattern_base(1, 2, 8192, 3)] {
            assert_ne!(base, other);
        }
        assert_ne!(base, pattern_base(1, 2, 4096, 4));
        assert_ne!(pattern_word(base, 0), pattern_word(base, 8));
    }
}
