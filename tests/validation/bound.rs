//! The physical bound of each target, from the limits the bench set and what the kernel did with them, with the
//! arithmetic in words. It never uses how fast streamcap's viewers went, only where their reads landed and in
//! what size: the throttle's own counters say how many requests and bytes it charged each loop device.
//!
//! A loop device under the throttle reads at most min(40 MiB/s, 150 requests/s × its request size): a 1 MiB read
//! is split to the device's limits before the throttle counts it (a loop device takes 128 segments, 4 KiB each
//! for a buffer of scattered pages: 512 KiB), and btrfs raid10 cuts every read at its 64 KiB stripes first. A
//! pool delivers D, of which member m reads the share f_m; member m cannot pass its rate c_m, so
//! D ≤ min over m of c_m ÷ f_m. The shares are the kernel's: btrfs raid1 and raid10 pick the mirror of a read by
//! the reading thread's pid (read_policy `pid`: pid modulo 2), so which members work depends on how many threads
//! issue the reads and their pids' parity (streamcap gives every viewer its own thread on such a pool,
//! crates/plan/src/streams_threads.rs, and both copies of a chunk then serve alike), and on which devices each chunk
//! lies. The shares the throttle saw include both, so the bound takes the read policy into account as it acted. A stream of B bit/s takes
//! B ÷ 8 bytes/s: the bound in streams is D × 8 ÷ B.

use crate::bench::{LINK_MBIT, THROTTLE_BPS, THROTTLE_IOPS};

/// What the throttle charged one loop device over a span.
#[derive(Debug, Clone)]
pub struct MemberReads {
    pub name: String,
    pub requests: u64,
    pub bytes: u64,
}

/// A bound in bytes per second, the limit that binds, and the arithmetic.
#[derive(Debug, Clone)]
pub struct Bound {
    pub bytes_per_s: f64,
    pub binding: String,
    pub words: String,
    /// Each member's rate (bytes/s) and share of the reads; empty for the link.
    pub members: Vec<(f64, f64)>,
}

impl Bound {
    /// The bound in streams of `bitrate_bps`.
    pub fn streams(&self, bitrate_bps: f64) -> f64 {
        self.bytes_per_s * 8.0 / bitrate_bps
    }

    /// The bound in whole viewers of `bitrate_bps` where each viewer's reads go to the members its title's chunk
    /// and its thread's pid pick, `part` of its bytes to each (btrfs raid1: all to one member; raid10: half to
    /// one member of each stripe half): member m carries at most ⌊c_m ÷ (part × b)⌋ such parts, and n viewers in
    /// the step's proportions put f_m × n ÷ part on it, so n ≤ ⌊c_m ÷ (part × b)⌋ × part ÷ f_m. A member of 39.32
    /// MB/s carries 3 remux viewers of 10 MB/s, not 3.93: four such members carry at most 12, not 15.7, and only
    /// when the viewers fall 3 / 3 / 3 / 3. For 1080p (39 of 39.32) the difference is under 1 %.
    ///
    /// A member whose requests are too small to carry one viewer at its request rate (a member that read only a
    /// few metadata blocks of 16 KiB: 150 × 16 KiB = 2.5 MB/s) served no viewer: it bounds by its bytes.
    pub fn whole_streams(&self, bitrate_bps: f64, part: f64) -> f64 {
        let unit = bitrate_bps / 8.0 * part;
        let whole = |rate: f64| if rate >= unit { (rate / unit).floor() * unit } else { rate };
        let each = self.members.iter().map(|&(rate, share)| whole(rate) / unit * part / share);
        each.fold(f64::INFINITY, f64::min).min(self.streams(bitrate_bps))
    }
}

pub fn mb(bytes_per_s: f64) -> String {
    format!("{:.2} MB/s", bytes_per_s / 1e6)
}

/// What one throttled loop device reads per second at most with requests of `request` bytes, and which limit
/// binds.
pub fn member_rate(request: f64) -> (f64, &'static str) {
    let by_requests = THROTTLE_IOPS as f64 * request;
    if by_requests < THROTTLE_BPS as f64 { (by_requests, "150 reads/s") } else { (THROTTLE_BPS as f64, "40 MiB/s") }
}

/// The bound of one device or a pool from what the throttle charged each member; `None` when nothing was read.
pub fn pool_bound(members: &[MemberReads]) -> Option<Bound> {
    let total: u64 = members.iter().map(|m| m.bytes).sum();
    if total == 0 {
        return None;
    }
    let mut parts = Vec::new();
    let mut best: Option<(f64, String)> = None;
    let mut rates = Vec::new();
    for m in members.iter().filter(|m| m.requests > 0) {
        let request = m.bytes as f64 / m.requests as f64;
        let share = m.bytes as f64 / total as f64;
        let (rate, binding) = member_rate(request);
        rates.push((rate, share));
        let limit = rate / share;
        parts.push(format!(
            "{}: {:.0} KiB per request, 150 × {:.0} KiB = {} against 40 MiB/s = {}, so {binding} binds; \
             share {:.1} %: {} ÷ {:.3} = {}",
            m.name,
            request / 1024.0,
            request / 1024.0,
            mb(THROTTLE_IOPS as f64 * request),
            mb(THROTTLE_BPS as f64),
            share * 100.0,
            mb(rate),
            share,
            mb(limit)
        ));
        if best.as_ref().is_none_or(|(b, _)| limit < *b) {
            best = Some((limit, format!("{binding} on {}", m.name)));
        }
    }
    let (bytes_per_s, binding) = best?;
    let words = format!("{}; the least: {}", parts.join("; "), mb(bytes_per_s));
    Some(Bound { bytes_per_s, binding, words, members: rates })
}

/// Ethernet frame bytes htb counts per full TCP segment (1500 MTU + 14 Ethernet), and the file data in it
/// (1500 − 20 IP − 20 TCP − 12 timestamp option).
const FRAME: f64 = 1514.0;
const SEGMENT_DATA: f64 = 1448.0;

/// The sshfs link's bound: the shaped rate is of Ethernet frames, of which full TCP segments carry 1448 bytes
/// of data in 1514. SSH's and SFTP's framing inside that data is left out: the link's receive counter (which
/// counts a GRO-merged packet's headers once) showed file data at 99.6 % of it, so it costs under 0.5 %.
pub fn link_bound() -> Bound {
    let wire = LINK_MBIT as f64 * 1e6 / 8.0;
    let bytes_per_s = wire * SEGMENT_DATA / FRAME;
    Bound {
        bytes_per_s,
        binding: format!("the {LINK_MBIT} Mbit/s link"),
        words: format!(
            "{LINK_MBIT} Mbit/s = {} of Ethernet frames (htb counts frames); a full TCP segment carries 1448 \
             bytes of data in a 1514-byte frame (MTU 1500 − 20 IP − 20 TCP − 12 timestamps, + 14 Ethernet): \
             {} × 1448 ÷ 1514 = {} (SSH and SFTP framing, under 0.5 %, left out)",
            mb(wire),
            mb(wire),
            mb(bytes_per_s)
        ),
        members: Vec::new(),
    }
}

/// A count passes against its bound when it lies within ±10 % of it. A count is whole, so the low side is
/// judged against the largest whole count within the bound, ⌊bound⌋: 12 of 13.4 × HEVC is 0.92 of the 13 streams
/// the storage can carry, where 0.895 of 13.4 would fail a count no whole search can better short of 13 (and
/// below 10 streams the floor itself passes, as 4 of 4.19). Where the engine bounds lower than the storage (`low`
/// < `high`: the sync engine's start-up, startup.rs) the count may lie anywhere from 10 % below the engine's
/// bound to 10 % above the storage's.
pub fn passes(measured: f64, low: f64, high: f64) -> bool {
    let whole = low.floor().max(1.0);
    measured <= high * 1.10 && measured >= (whole * 0.90).min(whole)
}

/// Three checks agree when each lies within ±10 % of their median, or within one stream where 10 % is less
/// than one (a count of 4 cannot move by less than 25 %).
pub fn agree(counts: &[f64]) -> bool {
    let mut sorted = counts.to_vec();
    sorted.sort_by(f64::total_cmp);
    let Some(&median) = sorted.get(sorted.len() / 2) else { return false };
    counts.iter().all(|c| (c - median).abs() <= (0.1 * median).max(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_device_with_half_mebibyte_requests_is_bound_by_its_bytes() {
        let reads = [MemberReads { name: "loop0".into(), requests: 200, bytes: 200 * 512 * 1024 }];
        let bound = pool_bound(&reads).unwrap();
        assert!((bound.bytes_per_s - 41_943_040.0).abs() < 1.0, "{bound:?}");
        assert!((bound.streams(8e6) - 41.94).abs() < 0.01);
        assert!(bound.binding.contains("40 MiB/s"), "{bound:?}");
    }

    #[test]
    fn a_raid10_of_stripe_sized_requests_is_bound_by_requests_on_its_busiest_member() {
        let member = |name: &str, requests: u64| MemberReads { name: name.into(), requests, bytes: requests << 16 };
        let reads = [member("loop1", 100), member("loop2", 100), member("loop3", 100), member("loop4", 100)];
        let bound = pool_bound(&reads).unwrap();
        // 150 × 64 KiB = 9.83 MB/s per member, four equal shares.
        assert!((bound.bytes_per_s - 4.0 * 150.0 * 65536.0).abs() < 1.0, "{bound:?}");
        let reads = [member("loop1", 200), member("loop2", 0), member("loop3", 100), member("loop4", 100)];
        let bound = pool_bound(&reads).unwrap();
        assert!((bound.bytes_per_s - 2.0 * 150.0 * 65536.0).abs() < 1.0, "half the reads on one member: {bound:?}");
    }

    #[test]
    fn a_raid1_member_carries_whole_viewers() {
        // Four members of 150 × 256 KiB = 39.32 MB/s; a step of ten remux viewers fell 3 / 3 / 2 / 2.
        let member = |name: &str, viewers: u64| MemberReads {
            name: name.into(),
            requests: viewers * 40,
            bytes: (viewers * 40) << 18,
        };
        let reads = [member("loop1", 3), member("loop2", 3), member("loop3", 2), member("loop4", 2)];
        let bound = pool_bound(&reads).unwrap();
        // By bytes: 39.32 ÷ 0.3 = 131 MB/s, 13.1 × remux; in whole viewers each member carries 3 of 10 MB/s: 10.
        assert!((bound.streams(80e6) - 13.1).abs() < 0.05, "{bound:?}");
        assert!((bound.whole_streams(80e6, 1.0) - 10.0).abs() < 1e-9, "{bound:?}");
        // 1080p: 39 of 39.32 per member, under 1 % less.
        assert!((bound.whole_streams(8e6, 1.0) - 130.0).abs() < 1e-9, "{bound:?}");
        // raid10: half of each viewer's bytes on a member, so a member carries 7 halves of remux (3.5 viewers).
        assert!((bound.whole_streams(80e6, 0.5) - 3.5 / 0.3).abs() < 1e-9, "{bound:?}");
        // A member that read a few metadata blocks of 16 KiB bounds by its bytes, not as a member of no viewer.
        let metadata = MemberReads { name: "loop5".into(), requests: 4, bytes: 4 << 14 };
        let bound = pool_bound(&[member("loop1", 4), member("loop2", 3), metadata]).unwrap();
        assert!((bound.whole_streams(80e6, 1.0) - 3.0 / (4.0 / (7.0 + 1.0 / 160.0))).abs() < 0.01, "{bound:?}");
    }

    #[test]
    fn whole_counts_pass_at_the_floor_of_a_small_bound() {
        assert!(passes(39.0, 41.94, 41.94));
        // 0.9 of the 41 whole streams within 41.94 is 36.9.
        assert!(passes(37.0, 41.94, 41.94) && !passes(36.0, 41.94, 41.94));
        assert!(passes(12.0, 13.4, 13.4) && !passes(11.0, 13.4, 13.4));
        assert!(!passes(47.0, 41.94, 41.94));
        assert!(passes(4.0, 4.19, 4.19));
        assert!(!passes(3.0, 4.19, 4.19));
        assert!(passes(2.0, 2.39, 2.39));
        // The sync engine's start-up with two threads (before a thread per viewer): 2 by its threads, 3.75 by the
        // storage.
        assert!(passes(2.0, 2.0, 3.75) && passes(3.0, 2.0, 3.75) && passes(4.0, 2.0, 3.75));
        assert!(!passes(1.0, 2.0, 3.75) && !passes(5.0, 2.0, 3.75));
        assert!(agree(&[39.0, 40.0, 39.0]));
        assert!(agree(&[3.0, 4.0, 4.0]));
        assert!(!agree(&[30.0, 40.0, 39.0]));
    }
}
