//! What streamcap writes: pseudo-random bytes, stamped per 4 KiB with the offset and a counter.
//!
//! The stamp keeps deduplicating storage honest (no two written blocks are identical) at a cost of 16 bytes per
//! 4 KiB per write, instead of refilling whole buffers. A compressor that looks across blocks still finds the
//! repeated random bytes (as with fio's default buffers): for data nothing compresses, a phase asks for fresh
//! bytes per write (`data`, fio refill_buffers; `run::shape`).

use crate::workload::Rng;

/// Fills a buffer with pseudo-random bytes. Whole 8-byte words first (`chunks_exact_mut`: one store each, no
/// length check per word; it is the shaper's cost per written byte), then the tail.
#[inline]
pub fn fill_random(buffer: &mut [u8], rng: &mut Rng) {
    let mut words = buffer.chunks_exact_mut(8);
    for word in &mut words {
        word.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    let tail = words.into_remainder();
    if !tail.is_empty() {
        let bytes = rng.next_u64().to_le_bytes();
        tail.copy_from_slice(&bytes[..tail.len()]);
    }
}

/// Writes the offset and a counter into the first 16 bytes of every 4 KiB of a write buffer.
#[inline]
pub fn stamp(buffer: &mut [u8], offset: u64, counter: u64) {
    for (i, block) in buffer.chunks_mut(4096).enumerate() {
        if block.len() >= 16 {
            block[..8].copy_from_slice(&(offset + i as u64 * 4096).to_le_bytes());
            block[8..16].copy_from_slice(&counter.to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_make_every_block_unique() {
        let mut a = vec![0u8; 8192];
        stamp(&mut a, 4096, 1);
        assert_eq!(&a[..8], &4096u64.to_le_bytes());
        assert_eq!(&a[4096..4104], &8192u64.to_le_bytes());
        assert_eq!(&a[8..16], &1u64.to_le_bytes());
        assert_eq!(&a[4104..4112], &1u64.to_le_bytes());
    }

    #[test]
    fn random_fill_covers_odd_lengths() {
        let mut rng = Rng::new(1);
        let mut b = vec![0u8; 13];
        fill_random(&mut b, &mut rng);
        assert!(b.iter().filter(|&&x| x != 0).count() > 8);
    }
}
