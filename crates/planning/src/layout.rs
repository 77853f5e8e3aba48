//! The layouts the planner compares, what each is made of (its family: how data, copies and parity lie on the
//! members), which pools it can be built from, and the capacity each member really stores — including unequal
//! drives, as each implementation allocates them. Pure arithmetic; the service model is in `members`.
//!
//! Capacity rules (sources in docs/planning.md, "Capacity"):
//! - md RAID5/6, RAID10 and ZFS raidz use the smallest member's size on every member;
//! - btrfs raid1/raid1c3 put each 1 GiB chunk on the `copies` devices with the most free space, so the usable
//!   size is the largest U with Σ min(Cᵢ, U) ≥ copies × U (for two copies: min(ΣC ÷ 2, ΣC − max C));
//! - btrfs raid10/5/6 stripe each chunk over every device that still has free space, so the usable size is a
//!   water-fill: while enough devices have room, add a band as high as the smallest of them;
//! - Unraid and SnapRAID keep whole files on data drives and use the largest drive(s) as parity: the usable size
//!   is the sum of the data drives;
//! - mirror vdevs / RAID1 sets pair drives of similar size (sorted), each set storing its smallest member's size.

use std::fmt;
use std::str::FromStr;

use super::spaces::{self, Shape};
use super::spaces_tune::Tune;

/// btrfs's fixed stripe unit (BTRFS_STRIPE_LEN).
pub const BTRFS_STRIPE: u64 = 64 * 1024;
/// mdadm's default chunk since mdadm 3.1.
pub const MD_CHUNK: u64 = 512 * 1024;
/// ZFS's default recordsize.
pub const ZFS_RECORD: u64 = 128 * 1024;

/// A layout of N drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layout {
    Single,
    Mirror2,
    Mirror3,
    Raid10,
    Raid5,
    Raid6,
    Raidz1,
    Raidz2,
    BtrfsRaid1,
    BtrfsRaid1c3,
    BtrfsRaid10,
    BtrfsRaid5,
    BtrfsRaid6,
    Unraid,
    Unraid2,
    Snapraid,
    Snapraid2,
    // A Storage Spaces layout carries its columns and interleave (`spaces_tune`; Windows' own unless given).
    SpacesSimple(Tune),
    SpacesMirror(Tune),
    SpacesMirror3(Tune),
    SpacesParity(Tune),
    SpacesParity2(Tune),
    SpacesParityCache(Tune),
    SpacesParity2Cache(Tune),
}

/// How data, copies and parity lie on the members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Each file lies whole on one data drive; the `parity` largest drives hold parity. With `live` parity
    /// (Unraid) every write updates parity at once (read/modify/write); without (SnapRAID) parity is computed
    /// later by `snapraid sync`.
    WholeFile { parity: usize, live: bool },
    /// Fixed sets of `copies` drives (md RAID1, ZFS mirror vdevs); reads balanced within a set.
    MirrorSets { copies: usize },
    /// btrfs raid1/raid1c3: each 1 GiB chunk on `copies` devices; the copy a read uses is picked by the reading
    /// thread's pid (`pid % copies`).
    Chunks { copies: usize },
    /// Striped rows of `unit` bytes per member: 2 `copies` (RAID10) or `parity` members per row (RAID5/6).
    /// `pid`: btrfs picks the copy of a RAID10 pair by pid. `record`: ZFS raidz reads and writes a whole record
    /// split over the data members. `water_fill`: btrfs allocation over unequal drives.
    Striped { copies: usize, parity: usize, unit: u64, pid: bool, record: Option<u64>, water_fill: bool, rmw: Rmw },
    /// Windows Storage Spaces: 256 MiB slabs striped over columns (and copies), placed on the drives with the
    /// most free space (`spaces`).
    Slabs(Shape),
}

/// How a parity layout updates parity on a write smaller than a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rmw {
    /// Not a parity layout.
    None,
    /// md: the cheaper of read/modify/write (old data and parity) and reconstruct-write (the rest of the row).
    Md,
    /// btrfs (6.2 and later): reads the whole row (data and parity, to verify checksums) before writing.
    Btrfs,
    /// ZFS raidz: never; every write is a new full (variable-width) stripe.
    Never,
}

const ALL: [(Layout, &str, &str); 24] = [
    (Layout::Single, "single", "single / JBOD (btrfs single)"),
    (Layout::Mirror2, "mirror", "2-way mirror sets (md RAID1, ZFS mirrors)"),
    (Layout::Mirror3, "mirror3", "3-way mirror sets"),
    (Layout::Raid10, "raid10", "md RAID10 (near 2, 512 KiB chunks)"),
    (Layout::Raid5, "raid5", "md RAID5 (512 KiB chunks)"),
    (Layout::Raid6, "raid6", "md RAID6 (512 KiB chunks)"),
    (Layout::Raidz1, "raidz1", "ZFS raidz1 (128 KiB records)"),
    (Layout::Raidz2, "raidz2", "ZFS raidz2 (128 KiB records)"),
    (Layout::BtrfsRaid1, "btrfs-raid1", "btrfs raid1 (pid read policy)"),
    (Layout::BtrfsRaid1c3, "btrfs-raid1c3", "btrfs raid1c3 (pid read policy)"),
    (Layout::BtrfsRaid10, "btrfs-raid10", "btrfs raid10 (64 KiB stripes, pid read policy)"),
    (Layout::BtrfsRaid5, "btrfs-raid5", "btrfs raid5 (64 KiB stripes)"),
    (Layout::BtrfsRaid6, "btrfs-raid6", "btrfs raid6 (64 KiB stripes)"),
    (Layout::Unraid, "unraid", "file per disk, 1 live parity (Unraid)"),
    (Layout::Unraid2, "unraid2", "file per disk, 2 live parity (Unraid)"),
    (Layout::Snapraid, "snapraid", "file per disk, 1 snapshot parity (mergerfs + SnapRAID)"),
    (Layout::Snapraid2, "snapraid2", "file per disk, 2 snapshot parity (mergerfs + SnapRAID)"),
    (Layout::SpacesSimple(Tune::WINDOWS), "storage-spaces-simple", "Storage Spaces simple (256 KiB interleave)"),
    (
        Layout::SpacesMirror(Tune::WINDOWS),
        "storage-spaces-mirror",
        "Storage Spaces two-way mirror (256 KiB interleave)",
    ),
    (
        Layout::SpacesMirror3(Tune::WINDOWS),
        "storage-spaces-mirror3",
        "Storage Spaces three-way mirror (256 KiB interleave)",
    ),
    (
        Layout::SpacesParity(Tune::WINDOWS),
        "storage-spaces-parity",
        "Storage Spaces parity (256 KiB interleave, no write-back cache)",
    ),
    (
        Layout::SpacesParity2(Tune::WINDOWS),
        "storage-spaces-parity2",
        "Storage Spaces dual parity (256 KiB interleave, no cache)",
    ),
    (
        Layout::SpacesParityCache(Tune::WINDOWS),
        "storage-spaces-parity-wbc",
        "Storage Spaces parity, 1 GiB write-back cache on SSDs",
    ),
    (
        Layout::SpacesParity2Cache(Tune::WINDOWS),
        "storage-spaces-parity2-wbc",
        "Storage Spaces dual parity, 1 GiB write-back cache",
    ),
];

/// The layouts compared when `--layouts` is not given.
pub const DEFAULT_LAYOUTS: [Layout; 9] = [
    Layout::Single,
    Layout::Mirror2,
    Layout::Mirror3,
    Layout::Raid10,
    Layout::Raid5,
    Layout::Raid6,
    Layout::BtrfsRaid1,
    Layout::Unraid,
    Layout::Snapraid,
];

impl Layout {
    pub fn all() -> impl Iterator<Item = Layout> {
        ALL.iter().map(|(l, ..)| *l)
    }

    /// The layout's name without its settings (`storage-spaces-parity`); `Display` adds them.
    pub fn name(self) -> &'static str {
        ALL.iter().find(|(l, ..)| l.untuned() == self.untuned()).map_or("?", |(_, n, _)| n)
    }

    /// What the layout is, in words, with a space's columns and interleave when they were given.
    pub fn label(self) -> String {
        let label = ALL.iter().find(|(l, ..)| l.untuned() == self.untuned()).map_or("?", |(.., d)| d);
        match self.tune().filter(|t| !t.is_default()) {
            Some(tune) => format!("{label}; given{}", tune.to_string().replace(':', " ")),
            None => label.to_string(),
        }
    }

    /// A Storage Spaces layout's settings; `None` for every other layout.
    pub fn tune(self) -> Option<Tune> {
        use Layout::*;
        match self {
            SpacesSimple(t)
            | SpacesMirror(t)
            | SpacesMirror3(t)
            | SpacesParity(t)
            | SpacesParity2(t)
            | SpacesParityCache(t)
            | SpacesParity2Cache(t) => Some(t),
            _ => None,
        }
    }

    /// The same layout with a space's settings set (`self` for a layout that has none).
    pub fn tuned(self, tune: Tune) -> Layout {
        use Layout::*;
        match self {
            SpacesSimple(_) => SpacesSimple(tune),
            SpacesMirror(_) => SpacesMirror(tune),
            SpacesMirror3(_) => SpacesMirror3(tune),
            SpacesParity(_) => SpacesParity(tune),
            SpacesParity2(_) => SpacesParity2(tune),
            SpacesParityCache(_) => SpacesParityCache(tune),
            SpacesParity2Cache(_) => SpacesParity2Cache(tune),
            other => other,
        }
    }

    fn untuned(self) -> Layout {
        self.tuned(Tune::WINDOWS)
    }

    pub fn family(self) -> Family {
        use Layout::*;
        let md = |copies, parity| Family::Striped {
            copies,
            parity,
            unit: MD_CHUNK,
            pid: false,
            record: None,
            water_fill: false,
            rmw: if parity > 0 { Rmw::Md } else { Rmw::None },
        };
        let btrfs = |copies, parity| Family::Striped {
            copies,
            parity,
            unit: BTRFS_STRIPE,
            pid: copies > 1,
            record: None,
            water_fill: true,
            rmw: if parity > 0 { Rmw::Btrfs } else { Rmw::None },
        };
        let raidz = |parity| Family::Striped {
            copies: 1,
            parity,
            unit: ZFS_RECORD,
            pid: false,
            record: Some(ZFS_RECORD),
            water_fill: false,
            rmw: Rmw::Never,
        };
        match self {
            Single => Family::WholeFile { parity: 0, live: false },
            Mirror2 => Family::MirrorSets { copies: 2 },
            Mirror3 => Family::MirrorSets { copies: 3 },
            Raid10 => md(2, 0),
            Raid5 => md(1, 1),
            Raid6 => md(1, 2),
            Raidz1 => raidz(1),
            Raidz2 => raidz(2),
            BtrfsRaid1 => Family::Chunks { copies: 2 },
            BtrfsRaid1c3 => Family::Chunks { copies: 3 },
            BtrfsRaid10 => btrfs(2, 0),
            BtrfsRaid5 => btrfs(1, 1),
            BtrfsRaid6 => btrfs(1, 2),
            Unraid => Family::WholeFile { parity: 1, live: true },
            Unraid2 => Family::WholeFile { parity: 2, live: true },
            Snapraid => Family::WholeFile { parity: 1, live: false },
            Snapraid2 => Family::WholeFile { parity: 2, live: false },
            SpacesSimple(tune) => Family::Slabs(Shape { copies: 1, parity: 0, cache: false, tune }),
            SpacesMirror(tune) => Family::Slabs(Shape { copies: 2, parity: 0, cache: false, tune }),
            SpacesMirror3(tune) => Family::Slabs(Shape { copies: 3, parity: 0, cache: false, tune }),
            SpacesParity(tune) => Family::Slabs(Shape { copies: 1, parity: 1, cache: false, tune }),
            SpacesParity2(tune) => Family::Slabs(Shape { copies: 1, parity: 2, cache: false, tune }),
            SpacesParityCache(tune) => Family::Slabs(Shape { copies: 1, parity: 1, cache: true, tune }),
            SpacesParity2Cache(tune) => Family::Slabs(Shape { copies: 1, parity: 2, cache: true, tune }),
        }
    }

    /// Drives that may fail without losing data.
    pub fn tolerates(self) -> usize {
        match self.family() {
            Family::WholeFile { parity, .. } => parity,
            Family::MirrorSets { copies } | Family::Chunks { copies } => copies - 1,
            Family::Striped { copies, parity, .. } => copies - 1 + parity,
            Family::Slabs(shape) => shape.copies - 1 + shape.parity,
        }
    }

    /// Why `n` drives cannot make this layout, if they cannot.
    pub fn refuses(self, n: usize) -> Option<String> {
        let need = |min: usize| (n < min).then(|| format!("needs at least {min} drives"));
        match self.family() {
            Family::WholeFile { parity, .. } => need(parity + 1),
            Family::MirrorSets { copies } => need(copies)
                .or_else(|| (!n.is_multiple_of(copies)).then(|| format!("needs a multiple of {copies} drives"))),
            Family::Chunks { copies } => need(copies),
            Family::Striped { copies: 2, .. } => {
                need(4).or_else(|| (!n.is_multiple_of(2)).then(|| "needs an even number of drives".to_string()))
            }
            Family::Striped { parity, .. } => need(parity + 2),
            Family::Slabs(shape) => spaces_refuses(shape, n),
        }
    }
}

/// Why `n` drives cannot make a space of `shape`: fewer than Windows' minimum, or fewer than the columns given
/// (each column, and each copy of it, on its own drive), or a column count the kind cannot have.
fn spaces_refuses(shape: Shape, n: usize) -> Option<String> {
    if n < shape.min_drives() {
        return Some(format!("needs at least {} drives (Windows' minimum)", shape.min_drives()));
    }
    let given = shape.tune.columns as usize;
    if given == 0 {
        return None;
    }
    if given < shape.min_columns() {
        return Some(format!("columns={given} is too few: this kind needs at least {}", shape.min_columns()));
    }
    (given * shape.copies > n).then(|| {
        format!("columns={given} needs {} drives (each column and copy on its own drive)", given * shape.copies)
    })
}

/// The name with a space's settings after it (`storage-spaces-parity:columns=4`), as `--layouts` reads it.
impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        match self.tune() {
            Some(tune) => write!(f, "{tune}"),
            None => Ok(()),
        }
    }
}

impl FromStr for Layout {
    type Err = String;
    fn from_str(s: &str) -> Result<Layout, String> {
        let (name, settings) = s.split_once(':').unwrap_or((s, ""));
        let layout = base_layout(name)?;
        if settings.trim().is_empty() {
            return Ok(layout);
        }
        if layout.tune().is_none() {
            return Err(format!(
                "'{s}': only Storage Spaces layouts take settings (columns=N, interleave=SIZE); give '{}' alone",
                layout.name()
            ));
        }
        Tune::parse(settings).map(|tune| layout.tuned(tune)).map_err(|e| format!("'{s}': {e}"))
    }
}

/// A layout by its name or one of its other spellings, with Windows' own settings for a space.
fn base_layout(s: &str) -> Result<Layout, String> {
    let key = s.trim().to_ascii_lowercase();
    let key = match key.as_str() {
        "mirror2" | "raid1" => "mirror",
        "parity" => "raid5",
        "btrfs-raid1c2" => "btrfs-raid1",
        "storage-spaces" | "spaces-simple" => "storage-spaces-simple",
        "spaces-mirror" | "storage-spaces-mirror2" => "storage-spaces-mirror",
        "spaces-mirror3" => "storage-spaces-mirror3",
        "spaces-parity" => "storage-spaces-parity",
        "spaces-parity2" | "storage-spaces-dual-parity" => "storage-spaces-parity2",
        other => other,
    };
    ALL.iter().find(|(_, name, _)| *name == key).map(|(l, ..)| *l).ok_or_else(|| {
        let names: Vec<&str> = ALL.iter().map(|(_, n, _)| *n).collect();
        format!("'{s}' is not a layout; known layouts: {} (or 'all')", names.join(", "))
    })
}

/// Parses `--layouts`: a comma-separated list, or `all`.
pub fn parse_layouts(s: &str) -> Result<Vec<Layout>, String> {
    if s.trim().eq_ignore_ascii_case("all") {
        return Ok(Layout::all().collect());
    }
    let mut layouts = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let layout: Layout = part.parse()?;
        if !layouts.contains(&layout) {
            layouts.push(layout);
        }
    }
    if layouts.is_empty() {
        return Err("--layouts needs at least one layout".into());
    }
    Ok(layouts)
}

/// What each member stores, in bytes, and what the pool offers.
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    /// User data the pool can hold.
    pub usable: f64,
    /// Bytes each member holds when the pool is full (data, copies and parity).
    pub stored: Vec<f64>,
    /// Share of the pool's data each member holds (the data a read may find there), summing to 1 over the
    /// members that hold data (a copy counts for each member holding it).
    pub data_share: Vec<f64>,
    /// The members of each mirror set (`MirrorSets` only), by index.
    pub sets: Vec<Vec<usize>>,
    /// Parity-only members (`WholeFile` with parity), by index.
    pub parity_members: Vec<usize>,
}

/// How `layout` allocates `capacities` (bytes, one per member).
pub fn allocate(layout: Layout, capacities: &[f64]) -> Allocation {
    let n = capacities.len();
    let min = capacities.iter().copied().fold(f64::INFINITY, f64::min);
    let mut sets = Vec::new();
    let mut parity_members = Vec::new();
    let (usable, stored) = match layout.family() {
        Family::WholeFile { parity, .. } => {
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by(|&a, &b| capacities[b].total_cmp(&capacities[a]).then(a.cmp(&b)));
            parity_members = order[..parity.min(n)].to_vec();
            let data: f64 = (0..n).filter(|i| !parity_members.contains(i)).map(|i| capacities[i]).sum();
            let stored = (0..n)
                .map(
                    |i| if parity_members.contains(&i) { data_max(capacities, &parity_members) } else { capacities[i] },
                )
                .collect();
            (data, stored)
        }
        Family::MirrorSets { copies } => {
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by(|&a, &b| capacities[b].total_cmp(&capacities[a]).then(a.cmp(&b)));
            sets = order.chunks(copies).map(<[usize]>::to_vec).collect();
            let mut stored = vec![0.0; n];
            let mut usable = 0.0;
            for set in &sets {
                let size = set.iter().map(|&i| capacities[i]).fold(f64::INFINITY, f64::min);
                set.iter().for_each(|&i| stored[i] = size);
                usable += size;
            }
            (usable, stored)
        }
        Family::Chunks { copies } => {
            let usable = chunk_usable(capacities, copies);
            (usable, capacities.iter().map(|&c| c.min(usable)).collect())
        }
        Family::Striped { copies, parity, water_fill: true, .. } => water_fill(capacities, copies, parity),
        Family::Slabs(shape) => spaces::allocate(shape, capacities),
        Family::Striped { copies, parity, .. } => {
            let rows = min * (n as f64);
            (rows * (n - parity) as f64 / n as f64 / copies as f64, vec![min; n])
        }
    };
    let stored_sum: f64 = stored.iter().sum::<f64>().max(1.0);
    let data_share =
        (0..n).map(|i| if parity_members.contains(&i) { 0.0 } else { stored[i] / stored_sum }).collect::<Vec<_>>();
    let data_sum: f64 = data_share.iter().sum::<f64>().max(1e-12);
    let data_share = data_share.iter().map(|s| s / data_sum).collect();
    Allocation { usable, stored, data_share, sets, parity_members }
}

/// The largest data drive's size: what a parity drive of a file-per-disk pool holds.
fn data_max(capacities: &[f64], parity: &[usize]) -> f64 {
    (0..capacities.len()).filter(|i| !parity.contains(i)).map(|i| capacities[i]).fold(0.0, f64::max)
}

/// btrfs raid1/raid1c3: the largest U with Σ min(Cᵢ, U) ≥ copies × U (each chunk's copies on distinct
/// devices, so no device holds more than U; the allocator's most-free-space rule reaches this bound).
fn chunk_usable(capacities: &[f64], copies: usize) -> f64 {
    let total: f64 = capacities.iter().sum();
    let (mut low, mut high) = (0.0, total / copies as f64);
    for _ in 0..100 {
        let mid = (low + high) / 2.0;
        let fits: f64 = capacities.iter().map(|&c| c.min(mid)).sum();
        if fits >= copies as f64 * mid { low = mid } else { high = mid }
    }
    low
}

/// btrfs striped profiles: each band is striped over every device with room (an even number for raid10), as
/// high as the smallest of them, until too few devices have room (btrfs's devs_min: 4 for raid10, 2 for raid5,
/// 3 for raid6).
fn water_fill(capacities: &[f64], copies: usize, parity: usize) -> (f64, Vec<f64>) {
    let min_devices = if copies == 2 { 4 } else { parity + 1 };
    let mut free = capacities.to_vec();
    let mut stored = vec![0.0; free.len()];
    let mut usable = 0.0;
    loop {
        let mut active: Vec<usize> = (0..free.len()).filter(|&i| free[i] > 0.0).collect();
        active.sort_by(|&a, &b| free[b].total_cmp(&free[a]));
        if copies == 2 && active.len() % 2 == 1 {
            active.pop();
        }
        if active.len() < min_devices {
            break;
        }
        let band = active.iter().map(|&i| free[i]).fold(f64::INFINITY, f64::min);
        for &i in &active {
            free[i] -= band;
            stored[i] += band;
        }
        usable += band * (active.len() - parity) as f64 / copies as f64;
    }
    (usable, stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TB: f64 = 1e12;

    #[test]
    fn btrfs_raid1_of_unequal_drives_is_limited_by_the_largest() {
        // 4 + 8 TB: the 8 TB drive can only mirror 4 TB.
        assert!((allocate(Layout::BtrfsRaid1, &[4.0 * TB, 8.0 * TB]).usable - 4.0 * TB).abs() < 1e6);
        // 4 + 4 + 8: min(16/2, 16-8) = 8.
        assert!((allocate(Layout::BtrfsRaid1, &[4.0 * TB, 4.0 * TB, 8.0 * TB]).usable - 8.0 * TB).abs() < 1e6);
        // 2 + 3 + 4: min(9/2, 9-4) = 4.5.
        assert!((allocate(Layout::BtrfsRaid1, &[2.0 * TB, 3.0 * TB, 4.0 * TB]).usable - 4.5 * TB).abs() < 1e6);
    }

    #[test]
    fn unraid_uses_the_largest_drive_for_parity() {
        let a = allocate(Layout::Unraid, &[4.0 * TB, 8.0 * TB, 6.0 * TB]);
        assert_eq!(a.usable, 10.0 * TB);
        assert_eq!(a.parity_members, vec![1]);
        assert_eq!(a.data_share[1], 0.0);
        assert!((a.data_share[0] - 0.4).abs() < 1e-9);
    }

    #[test]
    fn md_parity_is_limited_by_the_smallest_member_and_btrfs_fills_the_rest() {
        let caps = [4.0 * TB, 8.0 * TB, 8.0 * TB];
        assert_eq!(allocate(Layout::Raid5, &caps).usable, 8.0 * TB);
        // btrfs raid5: a 4 TB band over three devices (8 TB of data), then a 4 TB band over two (4 TB).
        assert!((allocate(Layout::BtrfsRaid5, &caps).usable - 12.0 * TB).abs() < 1e6);
        assert_eq!(allocate(Layout::Raid10, &[4.0 * TB; 4]).usable, 8.0 * TB);
        assert_eq!(allocate(Layout::Raid6, &[4.0 * TB; 4]).usable, 8.0 * TB);
    }

    #[test]
    fn mirror_sets_pair_similar_drives() {
        let a = allocate(Layout::Mirror2, &[4.0 * TB, 8.0 * TB, 4.0 * TB, 8.0 * TB]);
        assert_eq!(a.usable, 12.0 * TB);
        assert_eq!(a.sets, vec![vec![1, 3], vec![0, 2]]);
        assert_eq!(Layout::Mirror3.refuses(4).unwrap(), "needs a multiple of 3 drives");
        assert_eq!(Layout::Raid6.refuses(3).unwrap(), "needs at least 4 drives");
    }

    #[test]
    fn names_parse_back() {
        for layout in Layout::all() {
            assert_eq!(layout.name().parse::<Layout>().unwrap(), layout);
        }
        assert!(parse_layouts("mirror,raid5,bogus").unwrap_err().contains("btrfs-raid1"));
        assert_eq!(parse_layouts("all").unwrap().len(), 24);
        assert_eq!(
            parse_layouts("spaces-mirror,storage-spaces-parity").unwrap(),
            [Layout::SpacesMirror(Tune::WINDOWS), Layout::SpacesParity(Tune::WINDOWS)]
        );
        assert_eq!(
            Layout::SpacesMirror3(Tune::WINDOWS).refuses(4).unwrap(),
            "needs at least 5 drives (Windows' minimum)"
        );
        assert_eq!(Layout::SpacesMirror(Tune::WINDOWS).refuses(3), None);
    }

    #[test]
    fn a_space_takes_its_columns_and_interleave_after_its_name() {
        let tuned = Tune { columns: 4, interleave: 64 * 1024 };
        let list = parse_layouts("raid10,storage-spaces-parity:columns=4:interleave=64k,spaces-parity").unwrap();
        assert_eq!(list, [Layout::Raid10, Layout::SpacesParity(tuned), Layout::SpacesParity(Tune::WINDOWS)]);
        // The name reads back, and the settings show in the name and the words.
        assert_eq!(list[1].to_string(), "storage-spaces-parity:columns=4:interleave=64k");
        assert_eq!(list[1].to_string().parse::<Layout>().unwrap(), list[1]);
        assert_eq!(list[1].name(), "storage-spaces-parity");
        assert!(list[1].label().ends_with("given columns=4 interleave=64k"), "{}", list[1].label());
        // Only a space takes settings; four columns need four drives, parity at least three columns.
        assert!("raid5:columns=4".parse::<Layout>().unwrap_err().contains("only Storage Spaces"));
        assert_eq!(list[1].refuses(3).unwrap(), "columns=4 needs 4 drives (each column and copy on its own drive)");
        assert_eq!(list[1].refuses(6), None);
        let two: Layout = "storage-spaces-parity:columns=2".parse().unwrap();
        assert!(two.refuses(6).unwrap().contains("at least 3"));
        let mirror: Layout = "storage-spaces-mirror:columns=2".parse().unwrap();
        assert!(mirror.refuses(3).unwrap().contains("needs 4 drives"));
    }
}
