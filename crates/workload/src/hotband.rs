//! vdbench's hot band (`hotband=(lo,hi)`) as zones: where in the band random I/O lands, worked out once per
//! worker from the band's size. No I/O, no allocation after setup.
//!
//! vdbench 5.04's `HotBand.get_rec_index` draws z uniform in [0, 1) and reads an offset M from a fixed curve of
//! cache sizes against the probability of a hit: M rises linearly on each of 28 segments, from 0 to 16 at
//! z = 0.087 (8.7 % of draws), to 1,024 at z = 0.326, to 1,048,576 at z = 0.675, up to about 1.3e9 at z → 1.
//! The curve is named in MB, but `(long)(M) * 1000` is then divided by the transfer size in *bytes*, so the
//! byte offset is 1,000 × M: a third of all I/O in the band's first MB, two thirds in its first GB. That offset
//! is folded into the band (record number modulo the band's records; the band counted in whole millions of
//! bytes), so what the curve puts past the band's end comes round again from its start, and bands smaller than
//! the curve's reach get an even floor under the peak at their start.
//!
//! The curve is uniform on each segment, so the folded density is constant between the folded segment ends:
//! the zones here are exactly those pieces, with the share of draws each receives. vdbench adds 1 % of the band
//! to writes (its `add_one_pct_to_writes`); streamcap places reads and writes alike.

use super::distribution::{Zone, ZoneSize};

/// vdbench's cache sizes (the curve's M at each segment's start) …
const SIZES: [f64; 29] = [
    0.0,
    16.0,
    32.0,
    64.0,
    128.0,
    256.0,
    512.0,
    1024.0,
    2048.0,
    4096.0,
    8192.0,
    16384.0,
    32768.0,
    65536.0,
    131072.0,
    262144.0,
    524288.0,
    1048576.0,
    2097152.0,
    4194304.0,
    8388608.0,
    16777216.0,
    33554432.0,
    67108864.0,
    134217728.0,
    268435456.0,
    536870912.0,
    1073741824.0,
    10737418240.0,
];

/// … the share of draws below each …
const CUMULATIVE: [f64; 29] = [
    0.0, 0.087217, 0.10101, 0.132206, 0.159946, 0.201713, 0.262602, 0.32645, 0.366902, 0.386175, 0.436941, 0.482631,
    0.523752, 0.56076, 0.594068, 0.624045, 0.651024, 0.675305, 0.697159, 0.716827, 0.734528, 0.750459, 0.764797,
    0.777701, 0.789314, 0.799767, 0.809174, 0.81764, 1.0,
];

/// … and the slope of M on each segment, as vdbench's table gives it (the last one does not reach the last size:
/// the curve ends near M = 1.3e9, and that is where vdbench's draws end).
const SLOPES: [f64; 28] = [
    183.4511752,
    1159.945628,
    1025.778015,
    2307.172362,
    3064.644852,
    4204.331611,
    8019.055699,
    25313.90019,
    106263.1067,
    80683.52498,
    179296.7222,
    398437.1604,
    885415.912,
    1967590.916,
    4372424.257,
    9716498.348,
    21592218.55,
    47982707.89,
    106628239.8,
    236951643.9,
    526559208.7,
    1170131575.0,
    2600292389.0,
    5778427530.0,
    12840950067.0,
    28535444594.0,
    63412099098.0,
    1313220630.0,
];

/// Bytes of offset per unit of M: vdbench divides M × 1,000 by the transfer size in bytes.
const BYTES_PER_M: f64 = 1000.0;

/// The smallest band vdbench accepts ("Minimum hotband size of one megabyte").
pub const MIN_BAND: u64 = 1_000_000;

/// The zones of a hot band of `band` bytes for operations of `unit` bytes: consecutive from the band's start,
/// each a whole number of units with its percent of the accesses. A band below [`MIN_BAND`] gets one zone
/// (the plan refuses it first).
pub fn zones(band: u64, unit: u64) -> Vec<Zone> {
    let unit = unit.max(1);
    // vdbench counts the band in whole millions of bytes and its records in whole transfers.
    let period = (band / MIN_BAND * MIN_BAND / unit * unit) as f64;
    if period == 0.0 {
        return vec![Zone { access_percent: 100.0, size: ZoneSize::Bytes(band) }];
    }
    let segments: Vec<(f64, f64, f64)> = (0..SLOPES.len())
        .map(|i| {
            let share = CUMULATIVE[i + 1] - CUMULATIVE[i];
            (SIZES[i] * BYTES_PER_M, (SIZES[i] + share * SLOPES[i]) * BYTES_PER_M, share)
        })
        .collect();
    let mut ends: Vec<f64> = segments.iter().flat_map(|&(a, b, _)| [a % period, b % period]).collect();
    ends.extend([0.0, period]);
    // Zone ends on whole units, so that each zone's share stays with the units it covers.
    let mut ends: Vec<u64> = ends.iter().map(|e| ((e / unit as f64).round() as u64) * unit).collect();
    ends.sort_unstable();
    ends.dedup();
    ends.windows(2)
        .map(|w| {
            let (from, to) = (w[0] as f64, w[1] as f64);
            let share: f64 =
                segments.iter().map(|&(a, b, p)| p * folded_overlap(a, b, from, to, period) / (b - a)).sum();
            Zone { access_percent: share * 100.0, size: ZoneSize::Bytes(w[1] - w[0]) }
        })
        .collect()
}

/// The length of [a, b) that folds (modulo `period`) into [from, to), for 0 ≤ from ≤ to ≤ period.
fn folded_overlap(a: f64, b: f64, from: f64, to: f64, period: f64) -> f64 {
    // Length of [0, t) that folds into [from, to).
    let below = |t: f64| (t / period).floor() * (to - from) + (t % period - from).clamp(0.0, to - from);
    below(b) - below(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share_below(zones: &[Zone], bytes: u64) -> f64 {
        let mut start = 0;
        let mut share = 0.0;
        for z in zones {
            let ZoneSize::Bytes(len) = z.size else { panic!("byte zones") };
            let inside = bytes.saturating_sub(start).min(len);
            share += z.access_percent * inside as f64 / len as f64;
            start += len;
        }
        share
    }

    #[test]
    fn the_shares_add_up_and_the_zones_cover_the_band_in_whole_units() {
        for band in [MIN_BAND, 32 << 20, 1 << 30, 100 << 30, 3 << 40] {
            let zones = zones(band, 4096);
            let total: f64 = zones.iter().map(|z| z.access_percent).sum();
            assert!((total - 100.0).abs() < 1e-6, "{band}: {total}");
            let covered: u64 = zones.iter().map(|z| if let ZoneSize::Bytes(b) = z.size { b } else { 0 }).sum();
            assert_eq!(covered, band / MIN_BAND * MIN_BAND / 4096 * 4096, "{band}");
            assert!(zones.iter().all(|z| matches!(z.size, ZoneSize::Bytes(b) if b > 0 && b % 4096 == 0)));
        }
    }

    #[test]
    fn a_large_band_follows_vdbench_s_curve_from_its_start() {
        // 1 TB: the curve's M up to 1e9 lies inside it unfolded. vdbench: 8.7 % of draws below M = 16 (16 KB
        // here), 32.6 % below 1,024 (1.024 MB), 67.5 % below 1,048,576 (1.05 GB).
        let zones = zones(1 << 40, 4096);
        assert!((share_below(&zones, 16_000) - 8.72).abs() < 0.5, "{}", share_below(&zones, 16_000));
        assert!((share_below(&zones, 1_024_000) - 32.6).abs() < 0.5, "{}", share_below(&zones, 1_024_000));
        assert!((share_below(&zones, 1_048_576_000) - 67.5).abs() < 0.5);
    }

    #[test]
    fn a_small_band_folds_the_curve_over_itself() {
        // 32 MiB (33 whole MB): the first MB holds the curve's first 32.6 % and its share of the folded rest; the
        // remainder of the band gets an even floor of what folds onto it.
        let zones = zones(32 << 20, 4096);
        let first_mb = share_below(&zones, 1_024_000);
        assert!(first_mb > 32.6 && first_mb < 40.0, "{first_mb}");
        let last_half = 100.0 - share_below(&zones, 16_500_000);
        assert!(last_half > 10.0 && last_half < 40.0, "{last_half}");
    }
}
