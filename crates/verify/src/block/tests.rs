//! Unit and property tests of stamping and judging blocks: every kind of bad block is told apart, and every
//! single flipped bit is caught, with every algorithm.

use proptest::prelude::*;

use super::*;

const SEED: u64 = 0x5eed_0000_c0ff_ee01;

fn id(offset: u64, len: usize, generation: u8) -> BlockId {
    BlockId { file: 1, offset, len: len as u32, generation, seed: SEED }
}

/// Random bytes, as a write buffer holds before it is stamped.
fn noise(len: usize, salt: u64) -> Vec<u8> {
    let mut x = salt.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn written(id: &BlockId, algorithm: Algorithm, salt: u64) -> Vec<u8> {
    let mut block = noise(id.len as usize, salt);
    stamp(&mut block, id, algorithm);
    block
}

/// What the pre-fill leaves: random bytes with every 4 KiB starting with its offset and a counter.
fn prefilled(offset: u64, len: usize) -> Vec<u8> {
    let mut block = noise(len, 77);
    for (i, piece) in block.chunks_mut(PIECE).enumerate() {
        piece[..8].copy_from_slice(&(offset + (i * PIECE) as u64).to_le_bytes());
        piece[8..16].copy_from_slice(&3u64.to_le_bytes());
    }
    block
}

fn name(file: u32) -> String {
    format!("data.{file}")
}

/// `None` for a good block, else the kind of bad.
fn judge(block: &[u8], id: &BlockId, algorithm: Algorithm) -> Option<Diagnosis> {
    (!verify_block(block, id, algorithm)).then(|| diagnose(block, id, algorithm, &name))
}

fn kind(block: &[u8], id: &BlockId, algorithm: Algorithm) -> Option<BadKind> {
    judge(block, id, algorithm).map(|d| d.kind)
}

#[test]
fn good_blocks_pass_with_every_algorithm_and_size() {
    for algorithm in Algorithm::ALL {
        for len in [512, 4096, 8192, 65536, 12800, 4096 + 8] {
            let id = id(len as u64 * 3, len, 5);
            assert_eq!(kind(&written(&id, algorithm, 1), &id, algorithm), None, "{algorithm} {len}");
        }
    }
}

#[test]
fn a_flipped_payload_bit_is_corrupted_and_names_both_checksums() {
    let id = id(65536, 65536, 2);
    let mut block = written(&id, Algorithm::Crc32c, 1);
    block[30_000] ^= 0x10;
    let d = judge(&block, &id, Algorithm::Crc32c).unwrap();
    assert_eq!(d.kind, BadKind::Corrupted);
    assert!(d.expected.starts_with("crc32c 0x") && d.found.starts_with("crc32c 0x"), "{d:?}");
    assert_ne!(d.expected, d.found);

    let mut block = written(&id, Algorithm::Pattern, 1);
    block[30_000] ^= 0x10;
    let d = judge(&block, &id, Algorithm::Pattern).unwrap();
    assert_eq!(d.kind, BadKind::Corrupted);
    assert!(d.expected.contains("at byte 30000"), "{d:?}");
}

#[test]
fn a_block_of_two_writes_is_torn() {
    let old = id(0, 16384, 3);
    let new = BlockId { generation: 4, ..old };
    let mut block = written(&new, Algorithm::Xxhash, 1);
    block[8192..].copy_from_slice(&written(&old, Algorithm::Xxhash, 2)[8192..]);
    let d = judge(&block, &new, Algorithm::Xxhash).unwrap();
    assert_eq!(d.kind, BadKind::Torn, "{d:?}");
    assert!(d.found.contains("2–3: generation 3"), "{d:?}");
    // The new write reached only the end of the block: the header is of the older generation.
    let mut block = written(&old, Algorithm::Xxhash, 2);
    block[4096..].copy_from_slice(&written(&new, Algorithm::Xxhash, 1)[4096..]);
    assert_eq!(kind(&block, &new, Algorithm::Xxhash), Some(BadKind::Torn));
    // The new write reached only the start: the rest is still the pre-fill.
    let mut block = prefilled(0, 16384);
    block[..4096].copy_from_slice(&written(&new, Algorithm::Xxhash, 1)[..4096]);
    assert_eq!(kind(&block, &new, Algorithm::Xxhash), Some(BadKind::Torn));
    // Only the end arrived, over zeros.
    let mut block = vec![0u8; 16384];
    block[4096..].copy_from_slice(&written(&new, Algorithm::Xxhash, 1)[4096..]);
    assert_eq!(kind(&block, &new, Algorithm::Xxhash), Some(BadKind::Torn));
}

#[test]
fn an_intact_older_block_is_stale() {
    let old = id(4096, 4096, 126);
    let d = judge(&written(&old, Algorithm::Sha256, 1), &BlockId { generation: 127, ..old }, Algorithm::Sha256);
    let d = d.unwrap();
    assert_eq!(
        (d.kind, d.expected.as_str(), d.found.as_str()),
        (BadKind::Stale, "generation 127", "an intact block of generation 126")
    );
    // A block another run left there is stale too.
    let other_run = BlockId { seed: 42, ..old };
    assert_eq!(kind(&written(&other_run, Algorithm::Sha256, 1), &old, Algorithm::Sha256), Some(BadKind::Stale));
}

#[test]
fn zeros_and_prefill_are_lost() {
    let want = id(1 << 20, 65536, 1);
    let d = judge(&vec![0u8; 65536], &want, Algorithm::Crc32c).unwrap();
    assert_eq!((d.kind, d.found.as_str()), (BadKind::Lost, "zeros"));
    let d = judge(&prefilled(1 << 20, 65536), &want, Algorithm::Crc32c).unwrap();
    assert_eq!(d.kind, BadKind::Lost);
    assert!(d.found.contains("pre-fill"), "{d:?}");
}

#[test]
fn a_block_naming_another_place_is_misdirected() {
    let want = id(65536, 65536, 1);
    let d = judge(&written(&id(0, 65536, 1), Algorithm::Crc32c, 1), &want, Algorithm::Crc32c).unwrap();
    assert_eq!(d.kind, BadKind::Misdirected);
    assert_eq!(d.expected, "the block for offset 65536 of data.1");
    assert_eq!(d.found, "an intact block for offset 0 of data.1 (generation 1)");
    let other_file = BlockId { file: 2, ..want };
    let d = judge(&written(&other_file, Algorithm::Crc32c, 1), &want, Algorithm::Crc32c).unwrap();
    assert_eq!(d.kind, BadKind::Misdirected);
    assert!(d.found.contains("data.2"), "{d:?}");
}

#[test]
fn a_damaged_header_or_garbage_is_corrupted() {
    let want = id(0, 8192, 1);
    let mut block = written(&want, Algorithm::Crc32c, 1);
    block[12] ^= 1;
    assert_eq!(judge(&block, &want, Algorithm::Crc32c).unwrap().found, "a damaged header");
    assert_eq!(kind(&noise(8192, 5), &want, Algorithm::Crc32c), Some(BadKind::Corrupted));
}

fn block_len() -> impl Strategy<Value = usize> {
    prop_oneof![Just(512usize), Just(4096), Just(8192), Just(20480), Just(65536)]
}

fn algorithm() -> impl Strategy<Value = Algorithm> {
    prop_oneof![Just(Algorithm::Crc32c), Just(Algorithm::Xxhash), Just(Algorithm::Sha256), Just(Algorithm::Pattern)]
}

proptest! {
    #[test]
    fn every_single_bit_flip_is_corrupted(
        len in block_len(), algorithm in algorithm(), index in 0u64..1000, generation in 1u8..=127,
        bit in any::<prop::sample::Index>(), salt in any::<u64>(),
    ) {
        let want = id(index * len as u64, len, generation);
        let mut block = written(&want, algorithm, salt);
        let bit = bit.index(len * 8);
        block[bit / 8] ^= 1 << (bit % 8);
        prop_assert_eq!(kind(&block, &want, algorithm), Some(BadKind::Corrupted), "bit {}", bit);
    }

    #[test]
    fn pieces_of_two_generations_are_torn(
        pieces in 2usize..17, algorithm in algorithm(), a in 1u8..=127, b in 1u8..=127,
        cut in any::<prop::sample::Index>(), salt in any::<u64>(), zeros in any::<bool>(),
    ) {
        prop_assume!(a != b);
        let len = pieces * PIECE;
        let new = id(len as u64 * 7, len, b);
        let cut = (1 + cut.index(pieces - 1)) * PIECE;
        let rest = if zeros { vec![0u8; len] } else { written(&BlockId { generation: a, ..new }, algorithm, salt ^ 1) };
        let mut block = written(&new, algorithm, salt);
        block[cut..].copy_from_slice(&rest[cut..]);
        prop_assert_eq!(kind(&block, &new, algorithm), Some(BadKind::Torn));
    }

    #[test]
    fn whole_blocks_of_other_generations_places_or_none_are_told_apart(
        len in block_len(), algorithm in algorithm(), a in 1u8..=127, b in 1u8..=127,
        x in 0u64..1000, y in 0u64..1000, salt in any::<u64>(),
    ) {
        let at = |i: u64, g: u8| id(i * len as u64, len, g);
        prop_assert_eq!(kind(&written(&at(x, a), algorithm, salt), &at(x, a), algorithm), None);
        if a != b {
            prop_assert_eq!(kind(&written(&at(x, a), algorithm, salt), &at(x, b), algorithm), Some(BadKind::Stale));
        }
        if x != y {
            prop_assert_eq!(kind(&written(&at(x, a), algorithm, salt), &at(y, a), algorithm), Some(BadKind::Misdirected));
        }
        prop_assert_eq!(kind(&vec![0u8; len], &at(x, a), algorithm), Some(BadKind::Lost));
        // The pre-fill stamps every 4 KiB of the file, so it is recognised in blocks that start on one.
        if (x * len as u64).is_multiple_of(PIECE as u64) {
            prop_assert_eq!(kind(&prefilled(x * len as u64, len), &at(x, a), algorithm), Some(BadKind::Lost));
        }
    }
}

#[test]
fn ranges_are_compact() {
    assert_eq!(ranges(&[1, 2, 3, 7, 9, 10]), "1–3, 7, 9–10");
}
