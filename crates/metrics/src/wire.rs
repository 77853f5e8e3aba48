//! Histograms and recorders as bytes, to send one rank's interval to another in a multi-host run. Exact: every
//! bucket count, the exact minimum, maximum and sums travel, so a histogram merged from decoded pieces is the
//! histogram of every sample, and percentiles over all hosts are exact (to the bucket), never averages of
//! percentiles.
//!
//! Only the buckets that hold samples are sent (index and count): an interval of 4 KiB reads touches a few
//! hundred of the 4 864 buckets. Little-endian throughout; a version byte leads a recorder.

use super::histogram::{BUCKETS, Histogram};
use super::recorder::{OpStats, Recorder};

const VERSION: u8 = 1;

/// Bytes that are not an encoded histogram or recorder of this version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a measurement from another rank could not be read ({0}); are all ranks the same streamcap version?")]
pub struct WireError(pub &'static str);

/// Appends `h` to `out`.
pub fn encode_histogram(h: &Histogram, out: &mut Vec<u8>) {
    out.extend_from_slice(&h.count.to_le_bytes());
    if h.count == 0 {
        return;
    }
    for v in [h.min, h.max] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for v in [h.sum, h.sum_squares] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let used = h.counts.iter().filter(|&&n| n > 0).count() as u32;
    out.extend_from_slice(&used.to_le_bytes());
    for (index, &n) in h.counts.iter().enumerate().filter(|(_, n)| **n > 0) {
        out.extend_from_slice(&(index as u16).to_le_bytes());
        out.extend_from_slice(&n.to_le_bytes());
    }
}

/// Reads a histogram from the front of `bytes`, advancing it.
pub fn decode_histogram(bytes: &mut &[u8]) -> Result<Histogram, WireError> {
    let mut h = Histogram::new();
    h.count = take_u64(bytes)?;
    if h.count == 0 {
        return Ok(h);
    }
    h.min = take_u64(bytes)?;
    h.max = take_u64(bytes)?;
    h.sum = u128::from_le_bytes(take(bytes)?);
    h.sum_squares = u128::from_le_bytes(take(bytes)?);
    h.allocate();
    let used = u32::from_le_bytes(take(bytes)?);
    let mut total = 0u64;
    for _ in 0..used {
        let index = usize::from(u16::from_le_bytes(take(bytes)?));
        let n = take_u64(bytes)?;
        *h.counts.get_mut(index).ok_or(WireError("bucket out of range"))? += n;
        total = total.saturating_add(n);
    }
    if total != h.count || h.counts.len() != BUCKETS {
        return Err(WireError("bucket counts do not add up"));
    }
    Ok(h)
}

fn encode_stats(s: &OpStats, out: &mut Vec<u8>) {
    for v in [s.ops, s.bytes, s.errors] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    encode_histogram(&s.latency, out);
    for h in [&s.due_latency, &s.lag] {
        match h {
            Some(h) => {
                out.push(1);
                encode_histogram(h, out);
            }
            None => out.push(0),
        }
    }
}

fn decode_stats(s: &mut OpStats, bytes: &mut &[u8]) -> Result<(), WireError> {
    s.ops = take_u64(bytes)?;
    s.bytes = take_u64(bytes)?;
    s.errors = take_u64(bytes)?;
    s.latency = decode_histogram(bytes)?;
    for h in [&mut s.due_latency, &mut s.lag] {
        let [present] = take(bytes)?;
        *h = if present == 1 { Some(decode_histogram(bytes)?) } else { None };
    }
    Ok(())
}

/// A recorder as bytes.
pub fn encode_recorder(r: &Recorder) -> Vec<u8> {
    let mut out = vec![VERSION, r.classes.len() as u8];
    for stats in &r.classes {
        encode_stats(stats, &mut out);
    }
    out
}

/// A recorder from [`encode_recorder`]'s bytes.
pub fn decode_recorder(mut bytes: &[u8]) -> Result<Recorder, WireError> {
    let [version, classes] = take(&mut bytes)?;
    let mut r = Recorder::new(false);
    if version != VERSION || usize::from(classes) != r.classes.len() {
        return Err(WireError("another version"));
    }
    for stats in &mut r.classes {
        decode_stats(stats, &mut bytes)?;
    }
    if !bytes.is_empty() {
        return Err(WireError("bytes left over"));
    }
    Ok(r)
}

fn take<const N: usize>(bytes: &mut &[u8]) -> Result<[u8; N], WireError> {
    let (head, rest) = bytes.split_at_checked(N).ok_or(WireError("cut short"))?;
    *bytes = rest;
    Ok(head.try_into().expect("split at N"))
}

fn take_u64(bytes: &mut &[u8]) -> Result<u64, WireError> {
    take(bytes).map(u64::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::super::{DEFAULT_PERCENTILES, OpClass};
    use super::*;

    /// The reduction of a multi-host run: each rank's recorder crosses the wire and rank 0 merges them. The merged
    /// percentiles must be those of one histogram fed every sample.
    #[test]
    fn merged_decoded_recorders_equal_one_recorder_fed_every_sample() {
        let mut all = Recorder::new(true);
        let mut ranks: Vec<Recorder> = (0..4).map(|_| Recorder::new(true)).collect();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for i in 0..40_000u64 {
            // xorshift: latencies spread over six decades, ranks with different shapes.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let rank = (i % 4) as usize;
            let latency = (x % 10_000_000) >> (rank * 3);
            let class = if i % 3 == 0 { OpClass::Write } else { OpClass::Read };
            for r in [&mut ranks[rank], &mut all] {
                r.record(class, 4096, latency);
                r.record_due(class, latency + 17);
                if i % 101 == 0 {
                    r.record_error(OpClass::Sync);
                }
            }
        }
        let mut merged = Recorder::new(false);
        for r in &ranks {
            merged.merge(&decode_recorder(&encode_recorder(r)).expect("decodes"));
        }
        assert_eq!(merged.total_ops(), ranks.iter().map(Recorder::total_ops).sum::<u64>());
        assert_eq!(merged.total_ops(), all.total_ops());
        for class in [OpClass::Read, OpClass::Write] {
            let (m, a) = (merged.stats(class), all.stats(class));
            assert_eq!((m.ops, m.bytes), (a.ops, a.bytes));
            assert_eq!(m.latency.percentiles(&DEFAULT_PERCENTILES), a.latency.percentiles(&DEFAULT_PERCENTILES));
            assert_eq!(
                (m.latency.min(), m.latency.max(), m.latency.mean()),
                (a.latency.min(), a.latency.max(), a.latency.mean())
            );
            assert_eq!(m.latency.stddev(), a.latency.stddev());
            let (md, ad) = (m.due_latency.as_ref().expect("paced"), a.due_latency.as_ref().expect("paced"));
            assert_eq!(md.percentiles(&DEFAULT_PERCENTILES), ad.percentiles(&DEFAULT_PERCENTILES));
        }
        assert_eq!(merged.stats(OpClass::Sync).errors, all.stats(OpClass::Sync).errors);
    }

    #[test]
    fn an_empty_recorder_is_small_and_round_trips() {
        let bytes = encode_recorder(&Recorder::new(false));
        assert!(bytes.len() < 14 * 40, "{}", bytes.len());
        assert_eq!(decode_recorder(&bytes).expect("decodes").total_ops(), 0);
    }

    #[test]
    fn damaged_bytes_are_refused_not_misread() {
        let mut r = Recorder::new(false);
        r.record(OpClass::Read, 4096, 1234);
        let bytes = encode_recorder(&r);
        assert!(decode_recorder(&bytes[..bytes.len() - 1]).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_recorder(&longer).is_err());
        let mut other = bytes;
        other[0] = 9;
        assert_eq!(decode_recorder(&other).err(), Some(WireError("another version")));
    }
}
