//! Where a data set smaller than the pool lies, for the one family where that changes who serves the reads:
//! btrfs raid1/raid1c3 (`Family::Chunks`). btrfs allocates data in chunks, each on the `copies` devices with
//! the most unallocated space, so a data set of D bytes fills ⌈D ÷ K⌉ chunks of K bytes and lies on at most
//! `copies × ⌈D ÷ K⌉` devices: on a pool of more than `copies` drives, a small data set is read from a few of
//! them. K is btrfs's data chunk size per device (`chunk_size`). Striped layouts (raid10/5/6, md, raidz) spread
//! every chunk or stripe over every member, so any data set touches them all; whole-file layouts (Unraid's
//! high-water fill) are not modelled here. Pure arithmetic over an `Allocation`; docs/planning.md, "A data set
//! smaller than the pool".

use super::layout::{Allocation, Family, Layout};
use crate::units::Bytes;

/// btrfs's largest data stripe per device (`max_stripe_size` of a data chunk, `SZ_1G`).
const BTRFS_DATA_STRIPE_MAX: f64 = (1u64 << 30) as f64;
/// btrfs rounds a chunk's stripe up to 16 MiB when the 10 % limit shrinks it.
const BTRFS_STRIPE_ROUND: f64 = (16u64 << 20) as f64;

/// btrfs's data chunk size on each device of a raid1/raid1c3 pool of `raw` bytes: 1 GiB, but no chunk larger
/// than 10 % of the pool's writable bytes, rounded up to 16 MiB (`init_alloc_chunk_ctl_policy_regular` and
/// `decide_stripe_size_regular` in fs/btrfs/volumes.c; one data stripe per chunk for raid1).
pub fn btrfs_data_chunk(raw: f64) -> f64 {
    let tenth = (raw / 10.0 / BTRFS_STRIPE_ROUND).ceil() * BTRFS_STRIPE_ROUND;
    BTRFS_DATA_STRIPE_MAX.min(tenth)
}

/// How a data set lies on a btrfs raid1 pool of more members than copies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Holding {
    /// Data chunk size per device, bytes.
    pub chunk: f64,
    /// Data chunks the data set fills.
    pub chunks: u64,
    /// Members holding a copy of some of the data.
    pub members: usize,
}

/// How `data` bytes lie on `layout` over `capacities`, when the layout allocates whole chunks to a few members
/// and the pool has more members than copies; `None` otherwise.
pub fn chunk_holding(layout: Layout, capacities: &[f64], data: f64) -> Option<Holding> {
    let Family::Chunks { copies } = layout.family() else {
        return None;
    };
    let n = capacities.len();
    if n <= copies {
        return None;
    }
    let chunk = btrfs_data_chunk(capacities.iter().sum());
    let chunks = (data / chunk).ceil().max(1.0) as u64;
    let members = (chunks as usize).saturating_mul(copies).min(n);
    Some(Holding { chunk, chunks, members })
}

/// Puts the data on the `holding.members` members with the most room (btrfs sorts devices by unallocated
/// space; ties by index), an even share each: every chunk is the same size on each of its devices.
pub fn hold(alloc: &mut Allocation, capacities: &[f64], holding: Holding) {
    let n = capacities.len();
    if holding.members >= n {
        return;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| capacities[b].total_cmp(&capacities[a]).then(a.cmp(&b)));
    alloc.data_share = vec![0.0; n];
    for &m in &order[..holding.members] {
        alloc.data_share[m] = 1.0 / holding.members as f64;
    }
}

/// The sentence a plan prints about where a btrfs raid1 pool's data lies: how many members hold a given data
/// set, or, without one, that the figures assume data on every member.
pub fn note(layout: Layout, capacities: &[f64], data: Option<f64>) -> Option<String> {
    let Family::Chunks { copies } = layout.family() else {
        return None;
    };
    let n = capacities.len();
    let holding = chunk_holding(layout, capacities, data.unwrap_or(f64::INFINITY))?;
    let chunk = Bytes(holding.chunk as u64);
    match data {
        Some(d) if holding.members < n => Some(format!(
            "{layout} × {n}: {} of data fills {} data chunk(s) of {chunk}, each on the {copies} devices with the \
             most room: {} of the {n} members hold the data, and reads use only those.",
            Bytes(d as u64),
            holding.chunks,
            holding.members,
        )),
        Some(_) => None,
        None => Some(format!(
            "{layout} × {n}: the figures assume data on every member; {} of data or less ({chunk} chunks, each \
             on {copies} devices) lies on fewer members and reads slower: give --data-set.",
            Bytes((holding.chunk * (n.div_ceil(copies) - 1) as f64) as u64),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planning::layout::allocate;

    const MIB: f64 = (1u64 << 20) as f64;

    #[test]
    fn a_small_pool_has_chunks_of_a_tenth_of_its_size_and_a_large_one_of_1_gib() {
        // 4 × 768 MiB: 307.2 MiB, rounded up to 320 MiB (measured: two 320 MiB data chunks on devids 1 and 2).
        assert_eq!(btrfs_data_chunk(4.0 * 768.0 * MIB), 320.0 * MIB);
        assert_eq!(btrfs_data_chunk(4.0 * 20e12), 1024.0 * MIB);
    }

    #[test]
    fn a_data_set_in_one_chunk_lies_on_two_of_four_members() {
        let caps = [768.0 * MIB; 4];
        let h = chunk_holding(Layout::BtrfsRaid1, &caps, 64.0 * MIB).unwrap();
        assert_eq!((h.chunks, h.members), (1, 2));
        let h = chunk_holding(Layout::BtrfsRaid1, &caps, 400.0 * MIB).unwrap();
        assert_eq!((h.chunks, h.members), (2, 4));
        assert!(chunk_holding(Layout::BtrfsRaid1, &caps[..2], 64.0 * MIB).is_none());
        assert!(chunk_holding(Layout::BtrfsRaid10, &caps, 64.0 * MIB).is_none());
        let mut alloc = allocate(Layout::BtrfsRaid1, &caps);
        hold(&mut alloc, &caps, chunk_holding(Layout::BtrfsRaid1, &caps, 64.0 * MIB).unwrap());
        assert_eq!(alloc.data_share, vec![0.5, 0.5, 0.0, 0.0]);
        let said = note(Layout::BtrfsRaid1, &caps, Some(64.0 * MIB)).unwrap();
        assert!(said.contains("2 of the 4 members hold the data"), "{said}");
        assert!(note(Layout::BtrfsRaid1, &caps, None).unwrap().contains("--data-set"));
        assert!(note(Layout::BtrfsRaid1, &caps, Some(2000.0 * MIB)).is_none());
    }
}
