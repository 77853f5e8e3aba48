//! The layout of a verified block, stamping it, and judging it when it is read back.
//!
//! ```text
//! piece 0 (the first 4 KiB):  0  magic "SCVERIF1"          8  offset (u64)    16  length (u32)   20  file (u32)
//!                            24  seed (u64)               32  generation (u8) 33  algorithm (u8) 34  zero (2)
//!                            36  CRC-32C of bytes 0..36   40  checksum of the block without bytes 40..72 (32)
//!                            72  payload
//! pieces 1.. (each further 4 KiB):  0  !offset of the piece (u64)   8  generation (u8)   9  zero (3)
//!                                  12  CRC-32C of bytes 0..12, seeded with the run's seed   16  payload
//! ```
//! All integers are little-endian. The header says which write this is; its own CRC tells a damaged header from
//! a foreign one. The piece tags make a torn block visible (pieces of different generations, or pieces that
//! never saw this write), which a checksum alone would only call corrupted. A tag stores the piece's offset
//! inverted, so that no tag, even with a flipped bit, looks like the pre-fill stamp (which starts every 4 KiB
//! with its plain offset, see `run/pattern.rs`). The payload is left as the caller filled it (random bytes)
//! and covered by the checksum, or, for `Pattern`, overwritten with the block's pattern.
//!
//! [`verify_block`] is the fast path: no allocation, a yes or no. Only a bad block goes on to [`diagnose`],
//! which takes its time to say what kind of bad it is.

use std::ops::Range;

use super::checksum::{DIGEST_LEN, digest, digest_width, pattern_base, pattern_word};
use super::{Algorithm, BadKind, BlockId, Diagnosis};

/// The size of the pieces that carry tags, and the unit in which a torn block is seen.
pub const PIECE: usize = 4096;
/// Bytes of the header at the start of a block: the smallest block that can be verified.
pub const HEADER_LEN: usize = 72;
const MAGIC: [u8; 8] = *b"SCVERIF1";
const TAG_LEN: usize = 16;
const HEADER_CRC: Range<usize> = 36..40;
const DIGEST: Range<usize> = 40..40 + DIGEST_LEN;

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("eight bytes"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("four bytes"))
}

/// A header whose magic and CRC are right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    offset: u64,
    len: u32,
    file: u32,
    seed: u64,
    generation: u8,
    algorithm: u8,
}

enum HeaderState {
    Intact(Header),
    /// The magic is there but the header's CRC does not match.
    Damaged,
    Missing,
}

fn read_header(block: &[u8]) -> HeaderState {
    if block.len() < HEADER_LEN || block[..8] != MAGIC {
        return HeaderState::Missing;
    }
    if crc32c::crc32c(&block[..HEADER_CRC.start]) != u32_at(block, HEADER_CRC.start) {
        return HeaderState::Damaged;
    }
    HeaderState::Intact(Header {
        offset: u64_at(block, 8),
        len: u32_at(block, 16),
        file: u32_at(block, 20),
        seed: u64_at(block, 24),
        generation: block[32],
        algorithm: block[33],
    })
}

fn tag_crc(seed: u64, tag: &[u8]) -> u32 {
    crc32c::crc32c_append((seed ^ (seed >> 32)) as u32, &tag[..12])
}

/// Pieces after the first that are long enough to carry a tag.
fn tagged_pieces(len: usize) -> impl Iterator<Item = usize> {
    (1..len.div_ceil(PIECE)).filter(move |p| len - p * PIECE >= TAG_LEN)
}

/// The payload's byte ranges: everything but the header and the tags.
fn payload_ranges(len: usize) -> impl Iterator<Item = Range<usize>> {
    (0..len.div_ceil(PIECE)).map(move |p| {
        let (start, end) = (p * PIECE, (p * PIECE + PIECE).min(len));
        let skip = if p == 0 {
            HEADER_LEN
        } else if end - start >= TAG_LEN {
            TAG_LEN
        } else {
            0
        };
        (start + skip).min(end)..end
    })
}

/// Stamps `block` (the whole block, `id.len` bytes) as the write `id`: header, tags, the pattern for `Pattern`,
/// then the checksum. A block shorter than [`HEADER_LEN`] is left alone (the plan refuses such block sizes).
pub fn stamp(block: &mut [u8], id: &BlockId, algorithm: Algorithm) {
    let len = block.len();
    if len < HEADER_LEN {
        return;
    }
    block[..8].copy_from_slice(&MAGIC);
    block[8..16].copy_from_slice(&id.offset.to_le_bytes());
    block[16..20].copy_from_slice(&(len as u32).to_le_bytes());
    block[20..24].copy_from_slice(&id.file.to_le_bytes());
    block[24..32].copy_from_slice(&id.seed.to_le_bytes());
    block[32] = id.generation;
    block[33] = algorithm.code();
    block[34..36].fill(0);
    let crc = crc32c::crc32c(&block[..HEADER_CRC.start]);
    block[HEADER_CRC].copy_from_slice(&crc.to_le_bytes());
    for piece in tagged_pieces(len) {
        let tag = &mut block[piece * PIECE..piece * PIECE + TAG_LEN];
        tag[..8].copy_from_slice(&(!(id.offset + (piece * PIECE) as u64)).to_le_bytes());
        tag[8] = id.generation;
        tag[9..12].fill(0);
        let crc = tag_crc(id.seed, tag);
        tag[12..16].copy_from_slice(&crc.to_le_bytes());
    }
    if algorithm == Algorithm::Pattern {
        let base = pattern_base(id.seed, id.file, id.offset, id.generation);
        for range in payload_ranges(len) {
            for at in range.clone().step_by(8) {
                let n = (range.end - at).min(8);
                block[at..at + n].copy_from_slice(&pattern_word(base, at).to_le_bytes()[..n]);
            }
        }
    }
    let sum = digest(algorithm, &block[..DIGEST.start], &block[DIGEST.end..]);
    block[DIGEST].copy_from_slice(&sum);
}

/// Whether `block` is exactly the write `id` stamped: the fast path, no allocation.
pub fn verify_block(block: &[u8], id: &BlockId, algorithm: Algorithm) -> bool {
    let expected = Header {
        offset: id.offset,
        len: id.len,
        file: id.file,
        seed: id.seed,
        generation: id.generation,
        algorithm: algorithm.code(),
    };
    if block.len() != id.len as usize || !matches!(read_header(block), HeaderState::Intact(h) if h == expected) {
        return false;
    }
    let tags_right = tagged_pieces(block.len()).all(|piece| {
        let tag = &block[piece * PIECE..piece * PIECE + TAG_LEN];
        u64_at(tag, 0) == !(id.offset + (piece * PIECE) as u64)
            && tag[8] == id.generation
            && u32_at(tag, 12) == tag_crc(id.seed, tag)
    });
    tags_right && payload_right(block, id, algorithm)
}

fn payload_right(block: &[u8], id: &BlockId, algorithm: Algorithm) -> bool {
    if algorithm == Algorithm::Pattern {
        // The checksum field is unused and must hold zeros, so that every byte of the block is checked.
        block[DIGEST].iter().all(|&b| b == 0) && first_pattern_difference(block, id).is_none()
    } else {
        block[DIGEST] == digest(algorithm, &block[..DIGEST.start], &block[DIGEST.end..])
    }
}

/// The first byte of the payload that differs from the pattern: (position, expected, found).
fn first_pattern_difference(block: &[u8], id: &BlockId) -> Option<(usize, u8, u8)> {
    let base = pattern_base(id.seed, id.file, id.offset, id.generation);
    for range in payload_ranges(block.len()) {
        for at in range.clone().step_by(8) {
            let n = (range.end - at).min(8);
            let want = pattern_word(base, at).to_le_bytes();
            if block[at..at + n] != want[..n] {
                let i = (0..n).find(|&i| block[at + i] != want[i]).expect("the slices differ");
                return Some((at + i, want[i], block[at + i]));
            }
        }
    }
    None
}

/// What one 4 KiB piece holds, as far as it can be told from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    Zeros,
    /// Starts with its own offset, as the pre-fill writes every 4 KiB.
    Prefill,
    /// A tag of this block, of this generation.
    Ours(u8),
    /// An intact tag of another offset.
    Foreign,
    /// Neither zeros, pre-fill nor an intact tag.
    Damaged,
    /// Too short for a tag (a block whose length is not a multiple of 16): nothing to tell.
    Untagged,
}

fn piece_state(block: &[u8], id: &BlockId, piece: usize) -> Piece {
    let bytes = &block[piece * PIECE..(piece * PIECE + PIECE).min(block.len())];
    let at = id.offset + (piece * PIECE) as u64;
    if bytes.iter().all(|&b| b == 0) {
        return Piece::Zeros;
    }
    if bytes.len() < TAG_LEN {
        return Piece::Untagged;
    }
    if piece > 0 && u32_at(bytes, 12) == tag_crc(id.seed, bytes) {
        return if u64_at(bytes, 0) == !at { Piece::Ours(bytes[8]) } else { Piece::Foreign };
    }
    if at.is_multiple_of(PIECE as u64) && u64_at(bytes, 0) == at {
        return Piece::Prefill;
    }
    Piece::Damaged
}

/// Says what kind of bad `block` is, when [`verify_block`] said it is not the write `id`. `name` gives a file
/// index's name, for misdirected blocks.
pub fn diagnose(block: &[u8], id: &BlockId, algorithm: Algorithm, name: &dyn Fn(u32) -> String) -> Diagnosis {
    let bad = |kind, expected: String, found: String| Diagnosis { kind, expected, found };
    let expected_generation = format!("generation {}", id.generation);
    if block.len() < HEADER_LEN {
        return bad(BadKind::Corrupted, format!("{} bytes", id.len), format!("{} bytes", block.len()));
    }
    let pieces: Vec<Piece> = (0..block.len().div_ceil(PIECE)).map(|p| piece_state(block, id, p)).collect();
    let never_written = |p: &Piece| matches!(p, Piece::Zeros | Piece::Prefill | Piece::Untagged);
    match read_header(block) {
        HeaderState::Intact(h) => judge_intact(block, id, algorithm, h, &pieces, name),
        HeaderState::Damaged => bad(BadKind::Corrupted, "an intact header".into(), "a damaged header".into()),
        HeaderState::Missing if pieces.iter().all(never_written) => {
            bad(BadKind::Lost, expected_generation, describe_unwritten(&pieces))
        }
        HeaderState::Missing if never_written(&pieces[0]) && pieces.iter().any(|p| matches!(p, Piece::Ours(_))) => {
            let found = format!(
                "no header: piece 0 holds {}; {}",
                describe_unwritten(&pieces[..1]),
                describe_generations(&pieces)
            );
            bad(BadKind::Torn, format!("{expected_generation} in every 4 KiB piece"), found)
        }
        HeaderState::Missing => {
            let first: String = block[..8].iter().map(|b| format!("{b:02x}")).collect();
            bad(BadKind::Corrupted, "a block header".into(), format!("no header (first bytes {first})"))
        }
    }
}

/// The diagnosis of a block with an intact header.
fn judge_intact(
    block: &[u8],
    id: &BlockId,
    algorithm: Algorithm,
    h: Header,
    pieces: &[Piece],
    name: &dyn Fn(u32) -> String,
) -> Diagnosis {
    let bad = |kind, expected: String, found: String| Diagnosis { kind, expected, found };
    if h.seed != id.seed {
        let found = format!("an intact block of another run (seed {:#x}, generation {})", h.seed, h.generation);
        return bad(BadKind::Stale, format!("generation {} of this run", id.generation), found);
    }
    if h.file != id.file || h.offset != id.offset {
        let expected = format!("the block for offset {} of {}", id.offset, name(id.file));
        let found =
            format!("an intact block for offset {} of {} (generation {})", h.offset, name(h.file), h.generation);
        return bad(BadKind::Misdirected, expected, found);
    }
    if h.len != id.len || h.algorithm != algorithm.code() {
        let found = format!("a header for {} bytes, algorithm code {}", h.len, h.algorithm);
        return bad(BadKind::Corrupted, format!("a header for {} bytes of {algorithm}", id.len), found);
    }
    let mixed =
        pieces[1..].iter().any(|p| !matches!(p, Piece::Damaged | Piece::Untagged) && *p != Piece::Ours(h.generation));
    if mixed {
        let expected = format!("generation {} in every 4 KiB piece", id.generation);
        return bad(
            BadKind::Torn,
            expected,
            format!("header of generation {}; {}", h.generation, describe_generations(pieces)),
        );
    }
    if h.generation != id.generation {
        let found = format!("an intact block of generation {}", h.generation);
        return bad(BadKind::Stale, format!("generation {}", id.generation), found);
    }
    let damaged: Vec<usize> = (1..pieces.len()).filter(|&p| pieces[p] == Piece::Damaged).collect();
    if !damaged.is_empty() {
        let found = format!("a damaged tag in 4 KiB piece {}", ranges(&damaged));
        return bad(BadKind::Corrupted, "an intact tag in every 4 KiB piece".into(), found);
    }
    if algorithm == Algorithm::Pattern {
        return match first_pattern_difference(block, id) {
            Some((at, want, got)) => {
                bad(BadKind::Corrupted, format!("pattern byte {want:#04x} at byte {at}"), format!("{got:#04x}"))
            }
            None => bad(BadKind::Corrupted, "zeros in the checksum field".into(), hex(&block[DIGEST])),
        };
    }
    let width = digest_width(algorithm);
    let stored = hex(&block[DIGEST][..width]);
    let computed = hex(&digest(algorithm, &block[..DIGEST.start], &block[DIGEST.end..])[..width]);
    bad(BadKind::Corrupted, format!("{algorithm} {stored}"), format!("{algorithm} {computed}"))
}

/// A digest as a number (little-endian, as stored) for CRC-32C and XXH3, as hex bytes for SHA-256.
fn hex(bytes: &[u8]) -> String {
    if bytes.len() <= 8 {
        let mut word = [0u8; 8];
        word[..bytes.len()].copy_from_slice(bytes);
        format!("{:#0width$x}", u64::from_le_bytes(word), width = bytes.len() * 2 + 2)
    } else {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}

fn describe_unwritten(pieces: &[Piece]) -> String {
    let zeros = pieces.iter().all(|p| *p == Piece::Zeros);
    let prefill = pieces.iter().all(|p| *p == Piece::Prefill);
    match (zeros, prefill) {
        (true, _) => "zeros".into(),
        (_, true) => "the pre-fill data (never written)".into(),
        _ => "zeros and pre-fill data (never written)".into(),
    }
}

/// Which pieces hold which generation or other data, e.g. "pieces 0–3: generation 5; 4–15: zeros".
fn describe_generations(pieces: &[Piece]) -> String {
    let label = |p: &Piece| match p {
        Piece::Zeros => "zeros".to_string(),
        Piece::Prefill => "pre-fill data".to_string(),
        Piece::Ours(g) => format!("generation {g}"),
        Piece::Foreign => "another block's data".to_string(),
        Piece::Damaged => "damaged data".to_string(),
        Piece::Untagged => "a short tail".to_string(),
    };
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, p) in pieces.iter().enumerate().skip(1) {
        let l = label(p);
        match groups.iter_mut().find(|(g, _)| *g == l) {
            Some((_, members)) => members.push(i),
            None => groups.push((l, vec![i])),
        }
    }
    let parts: Vec<String> = groups.iter().map(|(l, m)| format!("{}: {l}", ranges(m))).collect();
    format!("4 KiB pieces {}", parts.join("; "))
}

/// "1–3, 7" from [1, 2, 3, 7].
fn ranges(indices: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < indices.len() {
        let mut j = i;
        while j + 1 < indices.len() && indices[j + 1] == indices[j] + 1 {
            j += 1;
        }
        out.push(if i == j { indices[i].to_string() } else { format!("{}–{}", indices[i], indices[j]) });
        i = j + 1;
    }
    out.join(", ")
}

#[cfg(test)]
mod tests;
