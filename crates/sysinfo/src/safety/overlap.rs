//! Devices by identity: a device that is, under another name, the bytes of something in use. A second loop
//! device over a mounted filesystem's image (at offset 0 or 128 MiB into it), a loop device over a partition
//! that is mounted, one over a swap file: none is mounted or held itself, yet writing it changes what a mounted
//! filesystem, a pool or swap holds.
//!
//! Every device in use — the devices of every mounted filesystem (each btrfs pool member), active swap areas
//! (devices and files) and devices held by md, dm or bcache — is followed down to the stores its bytes lie in
//! (`topology::extents_of`: disks, backing files by device and inode, with ranges), and so is the device to be
//! written; any shared byte of one store is an overlap. `--force` never overrides one: it is not a signature
//! that may be stale, but a user of the data right now. Only reads.

use std::path::{Path, PathBuf};

use super::super::sysfs::dir_names;
use super::super::topology::{
    BlockDevice, BtrfsPool, Extent, MountEntry, block_numbers, extents_of, file_extent, first_overlap, pool_of_source,
};
use crate::units::Bytes;

/// One user of storage and the stores its bytes lie in.
pub(super) struct Busy {
    /// The device's number (`None` for a swap file).
    number: Option<(u32, u32)>,
    /// "loop3", or "the swap file /swapfile".
    name: String,
    /// Why it is in use: "mounted at /mnt/img", "active swap", "held by md0".
    why: Vec<String>,
    extents: Vec<Extent>,
}

/// Every device and file in use on this machine: mounted filesystems' devices, swap, held devices.
pub(super) fn busy(mounts: &[MountEntry], pools: &[BtrfsPool], swaps: &[PathBuf]) -> Vec<Busy> {
    let mut out: Vec<Busy> = Vec::new();
    let mut add = |dev: BlockDevice, why: String| {
        let number = Some((dev.major, dev.minor));
        match out.iter_mut().find(|b| b.number == number) {
            Some(known) if !known.why.contains(&why) => known.why.push(why),
            Some(_) => {}
            None => out.push(Busy { number, name: dev.name.clone(), why: vec![why], extents: extents_of(&dev) }),
        }
    };
    for m in mounts {
        let why = format!("mounted at {}", m.mount_point.display());
        for dev in mounted_devices(m, pools) {
            add(dev, why.clone());
        }
    }
    let mut swap_files = Vec::new();
    for swap in swaps {
        match block_numbers(swap).ok().and_then(|(major, minor)| BlockDevice::from_dev(major, minor).ok()) {
            Some(dev) => add(dev, "active swap".into()),
            None => swap_files.extend(file_extent(swap).map(|e| (swap.clone(), e))),
        }
    }
    for name in dir_names("/sys/class/block") {
        let Ok(dev) = BlockDevice::from_name(&name) else { continue };
        let holders = dev.holders();
        if !holders.is_empty() {
            add(dev, format!("held by {}", holders.join(", ")));
        }
    }
    for (path, extent) in swap_files {
        let name = format!("the swap file {}", path.display());
        out.push(Busy { number: None, name, why: vec!["active swap".into()], extents: vec![extent] });
    }
    out
}

/// The block devices a mounted filesystem lives on: its st_dev, every member of a btrfs pool (anonymous st_dev),
/// or the block-device parts of its source.
fn mounted_devices(m: &MountEntry, pools: &[BtrfsPool]) -> Vec<BlockDevice> {
    if m.major != 0 {
        return BlockDevice::from_dev(m.major, m.minor).into_iter().collect();
    }
    if m.fs_type == "btrfs"
        && let Some(pool) = pool_of_source(pools, &m.source)
    {
        return pool.members.iter().filter_map(|(name, _, _)| BlockDevice::from_name(name).ok()).collect();
    }
    m.source
        .split(':')
        .filter(|p| p.starts_with('/'))
        .filter_map(|p| block_numbers(Path::new(p)).ok())
        .filter_map(|(major, minor)| BlockDevice::from_dev(major, minor).ok())
        .collect()
}

/// What `device` shares bytes with, one phrase each. Users among `own` (the device and its partitions) are left
/// out: the mount, holder and swap checks name those in their own words.
pub(super) fn overlaps(device: &BlockDevice, own: &[(u32, u32)], busy: &[Busy]) -> Vec<String> {
    let mine = extents_of(device);
    busy.iter()
        .filter(|b| !b.number.is_some_and(|n| own.contains(&n)))
        .filter_map(|b| {
            let (this, that) = first_overlap(&mine, &b.extents)?;
            Some(format!(
                "the same bytes as {} ({}): {} is {}, which overlaps {}",
                b.name,
                b.why.join(", "),
                device.name,
                range(this),
                range(that)
            ))
        })
        .collect()
}

/// "bytes 128 MiB–428 MiB of /tmp/fs.img (inode 12 on device 254:1)".
fn range(e: &Extent) -> String {
    let exact = e.to_string();
    let place = exact.split_once(" of ").map_or(exact.as_str(), |(_, place)| place);
    format!("bytes {}–{} of {place}", Bytes(e.start), Bytes(e.end))
}

#[cfg(test)]
mod tests {
    use super::super::super::topology::Store;
    use super::*;

    #[test]
    fn an_overlap_names_the_user_and_both_ranges() {
        let file = Store::File { major: 254, minor: 1, ino: 12 };
        let at = |start: u64, end: u64| Extent { store: file, start, end, name: "/tmp/fs.img".into() };
        let busy = [Busy {
            number: Some((7, 3)),
            name: "loop3".into(),
            why: vec!["mounted at /mnt/img".into()],
            extents: vec![at(0, 300 << 20)],
        }];
        let mine = [at(128 << 20, 428 << 20)];
        let (this, that) = first_overlap(&mine, &busy[0].extents).expect("they overlap");
        assert_eq!(
            range(this),
            "bytes 128 MiB–428 MiB of /tmp/fs.img (inode 12 on device 254:1)",
            "the exact place, in units a user reads"
        );
        assert_eq!(range(that), "bytes 0 B–300 MiB of /tmp/fs.img (inode 12 on device 254:1)");
    }

    #[test]
    fn the_mounted_filesystems_of_this_machine_are_all_in_use() {
        let mounts = super::super::super::topology::read_mountinfo().expect("mountinfo");
        let pools = super::super::super::topology::btrfs_pools();
        let busy = busy(&mounts, &pools, &[]);
        for m in mounts.iter().filter(|m| m.major != 0 && BlockDevice::from_dev(m.major, m.minor).is_ok()) {
            let listed = busy.iter().find(|b| b.number == Some((m.major, m.minor))).expect("listed");
            assert!(listed.why.iter().any(|w| w.starts_with("mounted at")), "{:?}", listed.why);
            assert!(!listed.extents.is_empty());
        }
    }
}
