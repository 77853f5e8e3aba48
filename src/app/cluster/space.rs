//! Free space shared by several ranks: ranks on the same machine whose targets lie on the same filesystem write
//! into the same free space, so each rank's own check (its plan against the free space it sees) is not enough —
//! their needs must fit together. Every rank says its host, filesystem (device number), free space and need;
//! the ranks that share one filesystem are checked together, and a refusal names the host, the ranks and the
//! figures. Also how many ranks share this rank's filesystem, so that a command sizing its data set from the
//! free space (`check`) can take its share.
//!
//! "The same machine" is the same running kernel (its boot id), not the same host name: a device number means
//! one filesystem only within one kernel, and ranks in containers or network namespaces of one machine have host
//! names of their own yet share its filesystems, while hosts cloned from one image may share a host name and
//! nothing else (two clients' root filesystems, or their mounts of one NFS export, often have equal device
//! numbers). The host name stands in only when a rank cannot read its boot id.
//!
//! What it must not do: guess that filesystems on different machines are the same (a network share mounted on
//! several clients is seen by each as its own; its free space is checked per machine).

use std::path::Path;

use anyhow::{Result, anyhow};
use serde::{Deserialize, Serialize};

use super::{Session, kind};
use crate::plan::{Plan, TargetFacts, defaults};
use crate::run::cluster::Key;
use crate::units::Bytes;

/// What one rank says of the space it writes into.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RankSpace {
    pub rank: u32,
    pub host: String,
    /// The kernel the rank runs on (`/proc/sys/kernel/random/boot_id`), `None` when it could not be read.
    #[serde(default)]
    pub machine: Option<String>,
    /// The filesystem's device number (`st_dev` of the target), `None` when it could not be read.
    pub device: Option<u64>,
    /// Free space the rank saw before planning, `None` when the filesystem does not say.
    pub free: Option<Bytes>,
    /// What the rank will write there (its created data files and test media).
    pub need: Bytes,
}

/// The filesystem a target lies on, as a number that is equal for two paths on one filesystem of one host.
pub fn device_of(target: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(target).ok().map(|m| m.dev())
}

/// This machine's running kernel, as a string equal on every process of one boot of one machine (containers
/// and network namespaces included) and different on any other machine.
pub fn machine_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_string()).filter(|id| !id.is_empty())
}

impl RankSpace {
    /// Whether `other` writes into the same filesystem as this rank: the same device number on the same kernel.
    fn shares_with(&self, other: &RankSpace) -> bool {
        let same_machine = match (&self.machine, &other.machine) {
            (Some(mine), Some(theirs)) => mine == theirs,
            _ => self.host == other.host,
        };
        same_machine && self.device.is_some() && self.device == other.device
    }
}

/// Free space in a directory target, when its filesystem says.
pub fn free_in(target: &TargetFacts) -> Option<Bytes> {
    match target {
        TargetFacts::Directory { free, .. } => *free,
        _ => None,
    }
}

/// Bytes rank `rank`'s plan writes in its target: the files streamcap creates, but not those that only other
/// ranks' workers use (vdbench's hds: this rank creates another hd's sds sparse and never fills them). An upper
/// bound where a phase on the null engine never fills its sparse files.
pub fn need_of(plan: &Plan, rank: u32) -> Bytes {
    let listed: Vec<u32> = plan.phases.iter().flat_map(|p| p.files_on(None)).collect();
    let listed = |f: u32| listed.contains(&f);
    let filled: Vec<u32> = plan.phases.iter().flat_map(|p| p.files_on(Some(rank))).collect();
    let files = plan.target.files.iter().enumerate().filter(|(_, f)| f.created);
    // A file no phase lists (test media) is written all the same.
    let mine = files.filter(|(i, _)| !listed(*i as u32) || filled.contains(&(*i as u32)));
    Bytes(mine.map(|(_, f)| f.size.0).sum())
}

impl Session {
    /// Every rank's space, in rank order, on every rank. Collective.
    fn spaces(&self, what: u64, mine: &RankSpace) -> Vec<RankSpace> {
        let bytes = serde_json::to_vec(mine).expect("plain data");
        let all = self.cluster.exchange(Key::new(kind::SPACE, what, 0), &bytes);
        all.iter().filter_map(|b| serde_json::from_slice(b).ok()).collect()
    }

    /// How many ranks (this one included) write into the filesystem of `target` on this machine. Collective.
    pub fn sharers(&self, target: &Path) -> u32 {
        let mine = self.space(target, None, Bytes::ZERO);
        let all = self.spaces(0, &mine);
        all.iter().filter(|s| s.shares_with(&mine)).count().max(1) as u32
    }

    /// Whether the ranks that share a filesystem fit in it together; refused on every rank otherwise.
    /// Collective.
    pub fn agree_space(&self, target: &Path, free: Option<Bytes>, plan: &Plan) -> Result<()> {
        let mine = self.space(target, free, need_of(plan, self.cluster.rank()));
        let all = self.spaces(1, &mine);
        if let Some(clash) = self.is_root().then(|| name_clash(&all)).flatten() {
            crate::app::output::say(&format!("note: {clash}"));
        }
        match crowded(&all, defaults::FREE_SPACE_RESERVE) {
            None => Ok(()),
            Some(refusal) => Err(anyhow!(refusal)),
        }
    }

    fn space(&self, target: &Path, free: Option<Bytes>, need: Bytes) -> RankSpace {
        let rank = self.cluster.rank();
        let host = self.cluster.hosts().get(rank as usize).cloned().unwrap_or_default();
        RankSpace { rank, host, machine: machine_id(), device: device_of(target), free, need }
    }
}

/// Ranks on different machines (boot ids) with one host name, said as a notice: the per-rank rows and messages
/// tell them apart only by rank, and work directories (`run-<host>-<pid>-<secs>`) are kept apart by host name.
pub fn name_clash(all: &[RankSpace]) -> Option<String> {
    let differ = |a: &RankSpace, b: &RankSpace| a.machine.is_some() && b.machine.is_some() && a.machine != b.machine;
    let (a, b) = all
        .iter()
        .enumerate()
        .find_map(|(i, a)| all[i + 1..].iter().find(|b| b.host == a.host && differ(a, b)).map(|b| (a, b)))?;
    Some(format!(
        "ranks {} and {} run on two machines that are both named {}: the per-rank rows tell them apart only by \
         rank, and their work directories on a shared target only by host name; give each host a name of its own",
        a.rank, b.rank, a.host
    ))
}

/// The first filesystem whose ranks need more together (plus `reserve`) than it has free, as a refusal naming
/// the host (or the host names of one machine), the ranks and the figures; `None` when every shared filesystem
/// has room.
pub fn crowded(all: &[RankSpace], reserve: Bytes) -> Option<String> {
    for (i, first) in all.iter().enumerate() {
        let group: Vec<&RankSpace> = all.iter().filter(|s| s.shares_with(first)).collect();
        // Each group once (at its lowest rank), and only groups of several ranks: one rank's plan checked itself.
        if group.len() < 2 || all[..i].iter().any(|s| s.shares_with(first)) {
            continue;
        }
        let Some(free) = group.iter().filter_map(|s| s.free).min() else { continue };
        let need: u64 = group.iter().map(|s| s.need.0).sum();
        if need.saturating_add(reserve.0) > free.0 {
            let ranks: Vec<String> = group.iter().map(|s| s.rank.to_string()).collect();
            let share = Bytes(free.0.saturating_sub(reserve.0) / group.len() as u64);
            let mut names: Vec<&str> = Vec::new();
            for space in &group {
                if !names.contains(&space.host.as_str()) {
                    names.push(&space.host);
                }
            }
            let (place, there) = match names[..] {
                [one] => (one.to_string(), one.to_string()),
                _ => (format!("{} (one machine: the same kernel)", names.join(", ")), "that machine".to_string()),
            };
            return Some(format!(
                "not enough free space on {place} for ranks {} together: they write into one filesystem, and need \
                 {} plus {reserve} of headroom, but only {free} is free; give each rank at most {share} (--size), \
                 run fewer ranks on {there}, or give each rank a target on another filesystem",
                ranks.join(", "),
                Bytes(need),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(rank: u32, host: &str, device: u64, free: u64, need: u64) -> RankSpace {
        let machine = Some(format!("boot-of-{host}"));
        RankSpace { rank, host: host.into(), machine, device: Some(device), free: Some(Bytes(free)), need: Bytes(need) }
    }

    #[test]
    fn ranks_sharing_a_filesystem_must_fit_together() {
        let reserve = Bytes(10);
        // Each of ranks 0 and 2 fits alone in 100 bytes; together they do not. Rank 1 is on another host.
        let all = [space(0, "a", 7, 100, 60), space(1, "b", 7, 100, 60), space(2, "a", 7, 100, 60)];
        let refusal = crowded(&all, reserve).expect("refused");
        assert!(refusal.contains("on a for ranks 0, 2 together"), "{refusal}");
        assert!(refusal.contains("need 120 B") && refusal.contains("at most 45 B"), "{refusal}");
        // On two filesystems of host a, each fits.
        let apart = [space(0, "a", 7, 100, 60), space(1, "b", 7, 100, 60), space(2, "a", 8, 100, 60)];
        assert_eq!(crowded(&apart, reserve), None);
        // Small enough together.
        let small = [space(0, "a", 7, 100, 40), space(1, "a", 7, 100, 40)];
        assert_eq!(crowded(&small, reserve), None);
        // A filesystem that does not say its free space is not refused.
        let unknown =
            [RankSpace { free: None, ..space(0, "a", 7, 0, 60) }, RankSpace { free: None, ..space(1, "a", 7, 0, 60) }];
        assert_eq!(crowded(&unknown, reserve), None);
    }

    /// Guards issue 14's gap: every rank counted every hd's sds in the joint check. A rank needs the files its
    /// own parts fill; the other hd's file it creates stays sparse.
    #[test]
    fn a_rank_needs_only_the_files_its_own_parts_fill() {
        use crate::plan::{Facts, RunOptions, build_plan};
        use crate::spec::{JobSpec, PhaseSpec, RwMode, SpecOrigin};
        let part = |rank, file: &str, gib| PhaseSpec {
            rank: Some(rank),
            file_names: Some(vec![file.into()]),
            size: Some(Bytes::gib(gib)),
            ..Default::default()
        };
        let phase = PhaseSpec {
            rw: Some(RwMode::RandRead),
            parts: Some(vec![part(0, "sd1", 1), part(1, "sd2", 3)]),
            ..Default::default()
        };
        let job =
            JobSpec { origin: SpecOrigin::Flags, target: None, interval: None, phases: vec![phase], notices: vec![] };
        let facts = Facts { ram: Bytes::gib(8), ..Facts::directory(Some(Bytes::gib(50))) };
        let plan = |rank| build_plan(&job, &facts, &RunOptions { rank: Some(rank), ..Default::default() });
        assert_eq!(need_of(&plan(0).expect("planned"), 0), Bytes::gib(1));
        assert_eq!(need_of(&plan(1).expect("planned"), 1), Bytes::gib(3));
    }

    /// Guards the namespace hosts of tests/mpi_hosts.rs: ranks with host names of their own on one kernel
    /// (containers, network namespaces) write into one filesystem, and were checked apart by host name. And
    /// hosts cloned from one image share a name but not a filesystem, though the device numbers may be equal.
    #[test]
    fn the_same_kernel_not_the_same_host_name_means_one_filesystem() {
        let reserve = Bytes(10);
        let on = |machine: &str, s: RankSpace| RankSpace { machine: Some(machine.into()), ..s };
        let one_machine = [on("k", space(0, "pod-a", 7, 100, 60)), on("k", space(1, "pod-b", 7, 100, 60))];
        let refusal = crowded(&one_machine, reserve).expect("refused");
        assert!(
            refusal.contains("on pod-a, pod-b (one machine: the same kernel) for ranks 0, 1 together"),
            "{refusal}"
        );
        assert!(refusal.contains("run fewer ranks on that machine"), "{refusal}");
        let clones = [on("k1", space(0, "ubuntu", 7, 100, 60)), on("k2", space(1, "ubuntu", 7, 100, 60))];
        assert_eq!(crowded(&clones, reserve), None);
        // Without a boot id, the host name stands for the machine.
        let unknown = |s: RankSpace| RankSpace { machine: None, ..s };
        let named = [unknown(space(0, "a", 7, 100, 60)), unknown(space(1, "a", 7, 100, 60))];
        assert!(crowded(&named, reserve).is_some());
        let apart = [unknown(space(0, "a", 7, 100, 60)), on("k", space(1, "b", 7, 100, 60))];
        assert_eq!(crowded(&apart, reserve), None);
    }

    #[test]
    fn two_machines_of_one_name_are_noted_and_one_machine_of_many_names_is_not() {
        let on = |machine: &str, s: RankSpace| RankSpace { machine: Some(machine.into()), ..s };
        let clones =
            [on("k1", space(0, "a", 1, 9, 0)), on("k2", space(1, "b", 1, 9, 0)), on("k3", space(2, "a", 2, 9, 0))];
        let note = name_clash(&clones).expect("a clash");
        assert!(note.starts_with("ranks 0 and 2 run on two machines that are both named a:"), "{note}");
        let pods = [on("k", space(0, "a", 1, 9, 0)), on("k", space(1, "a", 1, 9, 0)), on("k", space(2, "b", 1, 9, 0))];
        assert_eq!(name_clash(&pods), None);
        let unknown = [RankSpace { machine: None, ..space(0, "a", 1, 9, 0) }, on("k", space(1, "a", 1, 9, 0))];
        assert_eq!(name_clash(&unknown), None);
    }

    #[test]
    fn sharers_count_the_ranks_on_one_filesystem_of_one_machine() {
        use crate::run::cluster::local::ranks;
        let dir = tempfile::tempdir().expect("temp dir");
        let got = ranks(3, |cluster| Session::new(cluster).sharers(dir.path()));
        // The in-process ranks have host names host0..host2, but they are threads of one process on one kernel.
        assert_eq!(got, [3, 3, 3]);
        let apart: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir_in("/dev/shm").expect("tmpfs")).collect();
        let got = ranks(3, |cluster| {
            let rank = cluster.rank() as usize;
            Session::new(cluster).sharers(if rank == 2 { apart[2].path() } else { dir.path() })
        });
        assert_eq!(got, [2, 2, 1]);
    }
}
