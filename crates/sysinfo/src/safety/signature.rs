//! Signature probing: what a device holds, judged from magic numbers in its first 256 KiB and near its end.
//!
//! Pure functions over byte buffers, so every magic is unit-tested with synthetic buffers; reading the device
//! and asking blkid for a second opinion happen in `safety`. The probe errs towards "something is there": a
//! false alarm costs the user a `--force`, a miss costs them their data. Offsets and magics follow the on-disk
//! formats (and libblkid, which knows them best).

/// Bytes to read from the start of a device: ZFS keeps its uberblock ring at 128–256 KiB of the first label,
/// btrfs its superblock at 64 KiB, iso9660 at 32 KiB.
pub const PROBE_LEN: usize = 256 * 1024;

/// md RAID superblock magic, stored little-endian by v1.x and in host order by v0.90.
const MD_MAGIC: u32 = 0xa92b_4efc;
const BCACHE_MAGIC: [u8; 16] =
    [0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81];
const BCACHEFS_MAGIC: [u8; 16] =
    [0xc6, 0x85, 0x73, 0xf6, 0x66, 0xce, 0x90, 0xa9, 0xd9, 0x6a, 0x60, 0xcf, 0x80, 0x3d, 0xf7, 0xef];
const ZFS_UBERBLOCK_MAGIC: u64 = 0x00ba_b10c;
const BTRFS_SUPER_OFFSET: usize = 0x1_0000;

/// Names what the start of a device holds, or `None` when no known signature is present. Filesystems and
/// containers (RAID, LVM, LUKS, ZFS, bcache) are checked before partition tables, because a FAT or NTFS boot
/// sector also ends in 0x55AA and must not be reported as an MBR. Buffers shorter than [`PROBE_LEN`] are
/// probed as far as they go.
pub fn probe_signature(first_bytes: &[u8]) -> Option<&'static str> {
    probe_volumes(first_bytes).or_else(|| probe_boot_sectors_and_tables(first_bytes))
}

/// Containers (LUKS, md, LVM, bcache, ZFS), swap and the Linux filesystems: each has a magic no boot sector
/// carries, so they are checked first.
fn probe_volumes(b: &[u8]) -> Option<&'static str> {
    let at = |offset: usize, magic: &[u8]| magic_at(b, offset, magic);
    let u32_le = |offset: usize| le_u32_at(b, offset);

    if at(0, b"LUKS\xba\xbe") {
        return Some("LUKS encrypted volume");
    }
    if at(0, b"XFSB") {
        return Some("XFS filesystem");
    }
    if at(0, b"hsqs") || at(0, b"sqsh") {
        return Some("squashfs filesystem");
    }
    // md v1.1 keeps its superblock at 0, v1.2 at 4 KiB; the word after the magic is the major version (1).
    for offset in [0, 4096] {
        if u32_le(offset) == Some(MD_MAGIC) && u32_le(offset + 4) == Some(1) {
            return Some("Linux md RAID member");
        }
    }
    if at(BTRFS_SUPER_OFFSET + 0x40, b"_BHRfS_M") {
        return Some("btrfs filesystem");
    }
    if let Some(ext) = probe_ext(b) {
        return Some(ext);
    }
    if u32_le(0x400) == Some(0xf2f5_2010) {
        return Some("f2fs filesystem");
    }
    // Swap's signature ends its first page; check the page sizes Linux uses (4 KiB x86, up to 64 KiB arm64).
    for page in [4096, 8192, 16384, 65536] {
        if at(page - 10, b"SWAPSPACE2") || at(page - 10, b"SWAP-SPACE") {
            return Some("Linux swap space");
        }
        if [&b"S1SUSPEND"[..], b"S2SUSPEND", b"ULSUSPEND", b"LINHIB0001"].iter().any(|m| at(page - 10, m)) {
            return Some("Linux swap space holding a hibernation image");
        }
    }
    // The LVM2 label may sit in any of the first four sectors; "LVM2 001" follows 24 bytes after LABELONE.
    if (0..4).any(|s| at(s * 512, b"LABELONE") && at(s * 512 + 24, b"LVM2 001")) {
        return Some("LVM2 physical volume");
    }
    if at(4096 + 24, &BCACHE_MAGIC) {
        return Some("bcache device");
    }
    if at(4096 + 24, &BCACHEFS_MAGIC) {
        return Some("bcachefs filesystem");
    }
    if has_zfs_uberblock(b) {
        return Some("ZFS pool member");
    }
    None
}

/// Filesystems that start with a boot sector (NTFS, exFAT, FAT), ISO 9660, then the partition tables: an MBR
/// only where no boot sector of a filesystem explains the 0x55AA.
fn probe_boot_sectors_and_tables(b: &[u8]) -> Option<&'static str> {
    let at = |offset: usize, magic: &[u8]| magic_at(b, offset, magic);
    if at(3, b"NTFS    ") {
        return Some("NTFS filesystem");
    }
    if at(3, b"EXFAT   ") {
        return Some("exFAT filesystem");
    }
    let boot_signature = at(510, &[0x55, 0xaa]);
    if boot_signature && (at(0x36, b"FAT1") || at(0x36, b"FAT ") || at(0x52, b"FAT32")) {
        return Some("FAT filesystem");
    }
    if at(0x8001, b"CD001") {
        return Some("ISO 9660 filesystem");
    }
    // GPT header at LBA 1: offset 512 on 512-byte-sector disks, 4096 on 4Kn disks.
    if at(512, b"EFI PART") || at(4096, b"EFI PART") {
        return Some("GPT partition table");
    }
    if boot_signature && has_mbr_partition(b) {
        return Some("MBR (DOS) partition table");
    }
    None
}

/// `magic` stands at `offset` of `b`; a magic beyond the end of what was read is not there.
fn magic_at(b: &[u8], offset: usize, magic: &[u8]) -> bool {
    b.get(offset..offset + magic.len()) == Some(magic)
}

/// The little-endian 32-bit word at `offset` of `b`, if `b` holds it.
fn le_u32_at(b: &[u8], offset: usize) -> Option<u32> {
    b.get(offset..offset + 4).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes)
}

/// ext2/3/4: magic 0xEF53 at byte 0x38 of the superblock at 1024. The generation is read from feature flags:
/// ext4-only incompat or ro_compat features make it ext4, a journal makes it ext3 (or an external journal).
fn probe_ext(b: &[u8]) -> Option<&'static str> {
    const SB: usize = 1024;
    let u32_le = |offset: usize| le_u32_at(b, offset);
    if b.get(SB + 0x38..SB + 0x3a) != Some(&[0x53, 0xef][..]) {
        return None;
    }
    let compat = u32_le(SB + 0x5c).unwrap_or(0);
    let incompat = u32_le(SB + 0x60).unwrap_or(0);
    let ro_compat = u32_le(SB + 0x64).unwrap_or(0);
    const INCOMPAT_JOURNAL_DEV: u32 = 0x8;
    // extents, 64bit, mmp, flex_bg, ea_inode, dirdata, csum_seed, largedir, inline_data, encrypt, casefold.
    const INCOMPAT_EXT4: u32 =
        0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x1000 | 0x2000 | 0x4000 | 0x8000 | 0x10000 | 0x20000;
    // huge_file, gdt_csum, dir_nlink, extra_isize, quota, bigalloc, metadata_csum.
    const RO_COMPAT_EXT4: u32 = 0x8 | 0x10 | 0x20 | 0x40 | 0x100 | 0x200 | 0x400;
    const COMPAT_HAS_JOURNAL: u32 = 0x4;
    Some(if incompat & INCOMPAT_JOURNAL_DEV != 0 {
        "ext3/4 external journal"
    } else if incompat & INCOMPAT_EXT4 != 0 || ro_compat & RO_COMPAT_EXT4 != 0 {
        "ext4 filesystem"
    } else if compat & COMPAT_HAS_JOURNAL != 0 {
        "ext3 filesystem"
    } else {
        "ext2 filesystem"
    })
}

/// ZFS vdev label 0 starts the device; its second half (128–256 KiB) is a ring of uberblocks of at least 1 KiB,
/// each starting with the 64-bit magic 0x00bab10c in the pool's byte order.
fn has_zfs_uberblock(b: &[u8]) -> bool {
    (128 * 1024..256 * 1024).step_by(1024).any(|offset| {
        b.get(offset..offset + 8).and_then(|s| <[u8; 8]>::try_from(s).ok()).is_some_and(|raw| {
            u64::from_le_bytes(raw) == ZFS_UBERBLOCK_MAGIC || u64::from_be_bytes(raw) == ZFS_UBERBLOCK_MAGIC
        })
    })
}

/// At least one of the four primary entries at 446 has a partition type and a valid boot flag (0x00 or 0x80):
/// 0x55AA alone is also found on unpartitioned boot sectors.
fn has_mbr_partition(b: &[u8]) -> bool {
    (0..4).any(|i| {
        let entry = 446 + i * 16;
        matches!((b.get(entry), b.get(entry + 4)), (Some(0x00 | 0x80), Some(&t)) if t != 0)
    })
}

/// Where md keeps superblocks at the end of a device of `size` bytes: v0.90 at the last 64 KiB boundary minus
/// 64 KiB, v1.0 at 8 KiB before the end rounded down to 4 KiB. Offsets that do not fit are left out.
pub fn md_superblock_offsets_at_end(size: u64) -> Vec<(u64, &'static str)> {
    const K64: u64 = 64 * 1024;
    let mut out = Vec::new();
    if size >= 2 * K64 {
        out.push(((size & !(K64 - 1)) - K64, "Linux md RAID member (v0.90 superblock at the end)"));
    }
    if size >= 16 * 1024 {
        out.push(((size - 8192) & !4095, "Linux md RAID member (v1.0 superblock at the end)"));
    }
    out
}

/// Whether `sb` (bytes at one of the [`md_superblock_offsets_at_end`]) starts with an md superblock: the
/// magic in either byte order (v0.90 is written in the host's), followed by major version 0 or 1.
pub fn is_md_superblock(sb: &[u8]) -> bool {
    let word = |o: usize| sb.get(o..o + 4).and_then(|s| <[u8; 4]>::try_from(s).ok());
    let (Some(magic), Some(version)) = (word(0), word(4)) else { return false };
    (u32::from_le_bytes(magic) == MD_MAGIC && u32::from_le_bytes(version) <= 1)
        || (u32::from_be_bytes(magic) == MD_MAGIC && u32::from_be_bytes(version) <= 1)
}

/// The btrfs filesystem UUID (fsid) from the primary superblock, formatted like /sys/fs/btrfs/<uuid>.
pub fn btrfs_fsid(first_bytes: &[u8]) -> Option<String> {
    if first_bytes.get(BTRFS_SUPER_OFFSET + 0x40..BTRFS_SUPER_OFFSET + 0x48) != Some(&b"_BHRfS_M"[..]) {
        return None;
    }
    let id = first_bytes.get(BTRFS_SUPER_OFFSET + 0x20..BTRFS_SUPER_OFFSET + 0x30)?;
    let hex: String = id.iter().map(|byte| format!("{byte:02x}")).collect();
    Some(format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32]))
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn with(parts: &[(usize, &[u8])]) -> Vec<u8> {
        let mut buf = vec![0u8; PROBE_LEN];
        for (offset, bytes) in parts {
            buf[*offset..offset + bytes.len()].copy_from_slice(bytes);
        }
        buf
    }

    #[test]
    fn all_zero_and_short_buffers_hold_nothing() {
        assert_eq!(probe_signature(&vec![0u8; PROBE_LEN]), None);
        assert_eq!(probe_signature(&[]), None);
        assert_eq!(probe_signature(&[0xffu8; 700]), None, "short garbage must not panic or match");
    }

    #[test]
    fn each_magic_is_recognised() {
        let md = [MD_MAGIC.to_le_bytes(), 1u32.to_le_bytes()].concat();
        let zfs = ZFS_UBERBLOCK_MAGIC.to_le_bytes();
        let zfs_be = ZFS_UBERBLOCK_MAGIC.to_be_bytes();
        let f2fs = 0xf2f5_2010u32.to_le_bytes();
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (with(&[(0, b"LUKS\xba\xbe")]), "LUKS encrypted volume"),
            (with(&[(0, b"XFSB")]), "XFS filesystem"),
            (with(&[(0, b"hsqs")]), "squashfs filesystem"),
            (with(&[(0, &md)]), "Linux md RAID member"),
            (with(&[(4096, &md)]), "Linux md RAID member"),
            (with(&[(0x10040, b"_BHRfS_M")]), "btrfs filesystem"),
            (with(&[(0x400, &f2fs)]), "f2fs filesystem"),
            (with(&[(4086, b"SWAPSPACE2")]), "Linux swap space"),
            (with(&[(4086, b"SWAP-SPACE")]), "Linux swap space"),
            (with(&[(65526, b"SWAPSPACE2")]), "Linux swap space"),
            (with(&[(4086, b"S1SUSPEND")]), "Linux swap space holding a hibernation image"),
            (with(&[(512, b"LABELONE"), (536, b"LVM2 001")]), "LVM2 physical volume"),
            (with(&[(1536, b"LABELONE"), (1560, b"LVM2 001")]), "LVM2 physical volume"),
            (with(&[(4096 + 24, &BCACHE_MAGIC)]), "bcache device"),
            (with(&[(4096 + 24, &BCACHEFS_MAGIC)]), "bcachefs filesystem"),
            (with(&[(128 * 1024 + 3 * 1024, &zfs)]), "ZFS pool member"),
            (with(&[(255 * 1024, &zfs_be)]), "ZFS pool member"),
            (with(&[(3, b"NTFS    "), (510, &[0x55, 0xaa])]), "NTFS filesystem"),
            (with(&[(3, b"EXFAT   "), (510, &[0x55, 0xaa])]), "exFAT filesystem"),
            (with(&[(0x8001, b"CD001")]), "ISO 9660 filesystem"),
            (with(&[(512, b"EFI PART"), (446 + 4, &[0xee]), (510, &[0x55, 0xaa])]), "GPT partition table"),
            (with(&[(4096, b"EFI PART")]), "GPT partition table"),
            (with(&[(446, &[0x80]), (446 + 4, &[0x83]), (510, &[0x55, 0xaa])]), "MBR (DOS) partition table"),
        ];
        for (i, (buf, want)) in cases.iter().enumerate() {
            assert_eq!(probe_signature(buf), Some(*want), "case {i}");
        }
    }

    #[test]
    fn near_misses_are_not_signatures() {
        let md_v0_at_start = [MD_MAGIC.to_le_bytes(), 0u32.to_le_bytes()].concat();
        assert_eq!(probe_signature(&with(&[(0, &md_v0_at_start)])), None, "v0.90 lives at the end, not at 0");
        assert_eq!(probe_signature(&with(&[(512, b"LABELONE")])), None, "LABELONE without LVM2 001");
        assert_eq!(probe_signature(&with(&[(510, &[0x55, 0xaa])])), None, "0x55AA with no partition entries");
        let bad_flag = with(&[(446, &[0x12]), (446 + 4, &[0x83]), (510, &[0x55, 0xaa])]);
        assert_eq!(probe_signature(&bad_flag), None, "an entry with an invalid boot flag is not a partition");
        assert_eq!(probe_signature(&with(&[(0x52, b"FAT32   ")])), None, "FAT needs the boot signature");
    }

    #[test]
    fn a_fat_boot_sector_is_a_filesystem_not_an_mbr() {
        // FAT boot code often has bytes at 446 that look like a partition entry; the filesystem wins.
        let fat32 = with(&[(0x52, b"FAT32   "), (446, &[0x00]), (450, &[0x0c]), (510, &[0x55, 0xaa])]);
        assert_eq!(probe_signature(&fat32), Some("FAT filesystem"));
        let fat16 = with(&[(0x36, b"FAT16   "), (510, &[0x55, 0xaa])]);
        assert_eq!(probe_signature(&fat16), Some("FAT filesystem"));
    }

    #[test]
    fn ext_generation_comes_from_feature_flags() {
        let magic: (usize, &[u8]) = (0x438, &[0x53, 0xef]);
        assert_eq!(probe_signature(&with(&[magic])), Some("ext2 filesystem"));
        assert_eq!(probe_signature(&with(&[magic, (1024 + 0x5c, &[0x04])])), Some("ext3 filesystem"));
        assert_eq!(probe_signature(&with(&[magic, (1024 + 0x60, &[0x40])])), Some("ext4 filesystem"));
        assert_eq!(probe_signature(&with(&[magic, (1024 + 0x64, &[0x00, 0x04])])), Some("ext4 filesystem"));
        assert_eq!(probe_signature(&with(&[magic, (1024 + 0x60, &[0x08])])), Some("ext3/4 external journal"));
    }

    #[test]
    fn md_end_offsets_follow_the_kernel_layout() {
        let gib = 1u64 << 30;
        let offsets = md_superblock_offsets_at_end(gib);
        assert_eq!(offsets.iter().map(|o| o.0).collect::<Vec<_>>(), vec![gib - 65536, gib - 8192]);
        let odd = md_superblock_offsets_at_end(200_000);
        assert_eq!(odd.iter().map(|o| o.0).collect::<Vec<_>>(), vec![131_072, 188_416]);
        assert!(md_superblock_offsets_at_end(100_000).iter().all(|o| o.0 + 4096 <= 100_000));
        assert!(md_superblock_offsets_at_end(1000).is_empty());
        let le = [MD_MAGIC.to_le_bytes(), 0u32.to_le_bytes()].concat();
        let be = [MD_MAGIC.to_be_bytes(), 0u32.to_be_bytes()].concat();
        assert!(is_md_superblock(&le) && is_md_superblock(&be));
        assert!(!is_md_superblock(&[0u8; 8]) && !is_md_superblock(&le[..6]));
    }

    #[test]
    fn btrfs_fsid_is_formatted_like_sysfs() {
        let fsid: Vec<u8> = (0u8..16).collect();
        let buf = with(&[(0x10040, b"_BHRfS_M"), (0x10020, &fsid)]);
        assert_eq!(btrfs_fsid(&buf).as_deref(), Some("00010203-0405-0607-0809-0a0b0c0d0e0f"));
        assert_eq!(btrfs_fsid(&with(&[])), None);
    }

    #[test]
    fn real_mkfs_output_is_recognised() {
        // The real tools on plain files (no root needed): guards against a wrong offset in a synthetic test.
        let cases: [(&str, &[&str], &str); 5] = [
            ("mkfs.ext2", &["-q", "-F"], "ext2 filesystem"),
            ("mkfs.ext3", &["-q", "-F"], "ext3 filesystem"),
            ("mkfs.ext4", &["-q", "-F"], "ext4 filesystem"),
            ("mkfs.btrfs", &["-q", "-f"], "btrfs filesystem"),
            ("mkswap", &[], "Linux swap space"),
        ];
        let dir = tempfile::tempdir().expect("tempdir");
        for (tool, args, want) in cases {
            let image = dir.path().join(format!("{tool}.img"));
            let file = std::fs::File::create(&image).expect("create image");
            file.set_len(256 << 20).expect("size image");
            let status = std::process::Command::new(tool).args(args).arg(&image).output();
            match status {
                Ok(out) if out.status.success() => {}
                Ok(out) => panic!("{tool} failed: {}", String::from_utf8_lossy(&out.stderr)),
                Err(e) => {
                    eprintln!("SKIPPED {tool}: not runnable here ({e})");
                    continue;
                }
            }
            let mut head = vec![0u8; PROBE_LEN];
            std::fs::File::open(&image).and_then(|mut f| f.read_exact(&mut head)).expect("read image head");
            assert_eq!(probe_signature(&head), Some(want), "{tool}");
        }
    }
}
