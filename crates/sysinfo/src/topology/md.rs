//! Linux software RAID (md) arrays as sysfs describes them under /sys/block/mdX/md/: level, member count,
//! chunk and component size, raid10 layout, state, and each member's slot and state (`dev-NAME/`).
//!
//! Written from the kernel's documented layout (Documentation/admin-guide/md.rst) and tested on a fake sysfs
//! tree, because the kernel this project is developed on has no md driver. Like the rest of `topology`, this
//! reads sysfs only: no `mdadm`, no ioctl, nothing written.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::units::{Bytes, KIB};

use super::super::sysfs::{dir_names, read_trimmed, read_u64};
use super::capacity::{Profile, md_usable};

/// One md array.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MdArray {
    /// Kernel name ("md0", "md127").
    pub name: String,
    /// `md/level` as the kernel writes it ("raid5", "linear", "multipath").
    pub level: String,
    /// The level as a profile; `None` for levels that store no data of their own (multipath, faulty, container).
    pub profile: Option<Profile>,
    /// `md/raid_disks`: members the array is built for, present or not.
    pub raid_disks: u64,
    /// Members present (`dev-*` entries), sorted by slot (spares last).
    pub members: Vec<MdMember>,
    /// `md/component_size`: the space used on each member (the smallest member bounds it).
    pub component_size: Bytes,
    /// `md/chunk_size`; `None` for levels without striping (raid1, linear).
    pub chunk: Option<Bytes>,
    /// Copies of each block in a raid10 (near × far copies of `md/layout`); 1 for other levels.
    pub copies: u64,
    /// `md/array_state` ("clean", "active", "inactive", "read-auto", …).
    pub state: String,
    /// `md/degraded`: how many members are missing or failed.
    pub degraded: u64,
    /// The array's own size (`size`, in 512-byte sectors).
    pub size: Bytes,
}

/// One member of an md array.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MdMember {
    /// Kernel name of the member device ("sdb1", "loop3").
    pub name: String,
    /// Position in the array (`slot`); `None` for a spare ("none").
    pub slot: Option<u64>,
    /// `state`: "in_sync", "spare", "faulty", "write_mostly", … (comma-separated).
    pub state: String,
    /// Space of the member device the array may use (`size`, KiB).
    pub size: Bytes,
}

impl MdArray {
    /// What the array holds for its level, computed from the member count and component size (the array's
    /// own `size` should say the same; reports set one beside the other).
    pub fn usable(&self) -> Option<Bytes> {
        let sizes: Vec<Bytes> = self.members.iter().filter(|m| m.slot.is_some()).map(|m| m.size).collect();
        Some(md_usable(self.profile?, self.raid_disks, self.component_size, self.copies, &sizes))
    }
}

/// Reads an md array from its sysfs directory (/sys/class/block/mdX resolved, or a fake tree with the same
/// layout). `None` when the directory has no `md/level`: not an md array, or one that is not yet assembled.
pub fn md_array_at(dir: &Path) -> Option<MdArray> {
    let md = dir.join("md");
    let level = read_trimmed(md.join("level"))?;
    let profile = Profile::from_name(&level);
    let copies = match profile {
        Some(Profile::Raid10) => raid10_copies(read_u64(md.join("layout")).unwrap_or(0x102)),
        _ => 1,
    };
    let mut members: Vec<MdMember> = dir_names(&md)
        .into_iter()
        .filter_map(|entry| {
            let name = entry.strip_prefix("dev-")?.to_string();
            let member = md.join(&entry);
            Some(MdMember {
                name,
                slot: read_trimmed(member.join("slot")).and_then(|s| s.parse().ok()),
                state: read_trimmed(member.join("state")).unwrap_or_default(),
                size: Bytes(read_u64(member.join("size")).unwrap_or(0).saturating_mul(KIB)),
            })
        })
        .collect();
    members.sort_by_key(|m| (m.slot.is_none(), m.slot, m.name.clone()));
    Some(MdArray {
        name: dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        level,
        profile,
        raid_disks: read_u64(md.join("raid_disks")).unwrap_or(members.len() as u64),
        members,
        component_size: Bytes(read_u64(md.join("component_size")).unwrap_or(0).saturating_mul(KIB)),
        chunk: read_u64(md.join("chunk_size")).filter(|&c| c > 0).map(Bytes),
        copies,
        state: read_trimmed(md.join("array_state")).unwrap_or_default(),
        degraded: read_u64(md.join("degraded")).unwrap_or(0),
        size: Bytes(read_u64(dir.join("size")).unwrap_or(0).saturating_mul(512)),
    })
}

/// Copies of a raid10 layout word: near copies in bits 0–7, far copies in bits 8–15 (bit 16 marks the
/// "offset" variant, which keeps the far count).
fn raid10_copies(layout: u64) -> u64 {
    ((layout & 0xff) * ((layout >> 8) & 0xff)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes a fake /sys/class/block/NAME directory for an md array.
    fn fake_array(root: &Path, name: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
        let dir = root.join(name);
        for (rel, value) in files {
            let path = dir.join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, format!("{value}\n")).expect("write");
        }
        dir
    }

    #[test]
    fn a_raid5_of_three_members_with_a_spare() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = fake_array(
            root.path(),
            "md0",
            &[
                ("size", "4186112"),
                ("md/level", "raid5"),
                ("md/raid_disks", "3"),
                ("md/chunk_size", "524288"),
                ("md/component_size", "1046528"),
                ("md/layout", "2"),
                ("md/array_state", "clean"),
                ("md/degraded", "0"),
                ("md/dev-sdd/slot", "none"),
                ("md/dev-sdd/state", "spare"),
                ("md/dev-sdd/size", "1048576"),
                ("md/dev-sdc/slot", "2"),
                ("md/dev-sdc/state", "in_sync"),
                ("md/dev-sdc/size", "1048576"),
                ("md/dev-sdb/slot", "1"),
                ("md/dev-sdb/state", "in_sync"),
                ("md/dev-sdb/size", "1048576"),
                ("md/dev-sda/slot", "0"),
                ("md/dev-sda/state", "in_sync"),
                ("md/dev-sda/size", "1048576"),
            ],
        );
        let md = md_array_at(&dir).expect("an md array");
        assert_eq!((md.name.as_str(), md.level.as_str(), md.profile), ("md0", "raid5", Some(Profile::Raid5)));
        assert_eq!(md.raid_disks, 3);
        let names: Vec<&str> = md.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["sda", "sdb", "sdc", "sdd"], "by slot, the spare last");
        assert_eq!(md.members[3].slot, None);
        assert_eq!(md.chunk, Some(Bytes::kib(512)));
        assert_eq!(md.component_size, Bytes(1_046_528 * 1024));
        assert_eq!(md.usable(), Some(Bytes(2 * 1_046_528 * 1024)), "n−1 components");
        assert_eq!(md.usable(), Some(md.size), "and the array's own size agrees");
        assert_eq!((md.state.as_str(), md.degraded), ("clean", 0));
    }

    #[test]
    fn raid10_copies_come_from_the_layout() {
        assert_eq!(raid10_copies(0x102), 2, "near=2, the default");
        assert_eq!(raid10_copies(0x201), 2, "far=2");
        assert_eq!(raid10_copies(0x103), 3, "near=3");
        assert_eq!(raid10_copies(0x10201), 2, "offset=2");
        let root = tempfile::tempdir().expect("tempdir");
        let dir = fake_array(
            root.path(),
            "md1",
            &[
                ("md/level", "raid10"),
                ("md/raid_disks", "4"),
                ("md/layout", "258"),
                ("md/component_size", "1024"),
                ("md/degraded", "1"),
            ],
        );
        let md = md_array_at(&dir).expect("an md array");
        assert_eq!(md.copies, 2);
        assert_eq!(md.usable(), Some(Bytes(2 * 1024 * 1024)));
        assert_eq!(md.degraded, 1);
    }

    #[test]
    fn not_an_md_array() {
        let root = tempfile::tempdir().expect("tempdir");
        assert_eq!(md_array_at(&fake_array(root.path(), "sda", &[("size", "8")])), None);
        let multipath = md_array_at(&fake_array(root.path(), "md2", &[("md/level", "multipath")])).expect("md");
        assert_eq!((multipath.profile, multipath.usable()), (None, None));
    }
}
