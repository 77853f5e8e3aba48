//! Redundancy profiles (btrfs profiles and md levels) and the usable capacity they give over a set of members.
//!
//! The arithmetic follows what the kernel does, so that a pool's usable size can be stated before anything is
//! written: btrfs allocates each chunk on the members with the most unallocated space (so unequal members are
//! filled greedily, and a raid1 of 1 + 1 + 2 GiB holds 2 GiB), md uses the same component size on every member.
//! This file is pure: it reads no file and knows nothing about how the members were found.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::units::{Bytes, MIB};

/// How a pool spreads data over its members: a btrfs profile or an md RAID level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// One copy on one member at a time (btrfs `single`; also a filesystem on one device).
    Single,
    /// Two copies on the same member (btrfs `dup`).
    Dup,
    /// Members concatenated (md `linear`).
    Linear,
    /// Striped, no redundancy.
    Raid0,
    /// Two copies on different members (btrfs); a mirror over every member (md).
    Raid1,
    /// Three copies on different members (btrfs).
    Raid1c3,
    /// Four copies on different members (btrfs).
    Raid1c4,
    /// Striped with one dedicated parity member (md).
    Raid4,
    /// Striped with one parity block per stripe.
    Raid5,
    /// Striped with two parity blocks per stripe.
    Raid6,
    /// Striped mirrors: two copies (btrfs), or the copies of the md layout.
    Raid10,
}

impl Profile {
    /// The kernel's name: the directory under /sys/fs/btrfs/<uuid>/allocation/data/, or md/level.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Single => "single",
            Profile::Dup => "dup",
            Profile::Linear => "linear",
            Profile::Raid0 => "raid0",
            Profile::Raid1 => "raid1",
            Profile::Raid1c3 => "raid1c3",
            Profile::Raid1c4 => "raid1c4",
            Profile::Raid4 => "raid4",
            Profile::Raid5 => "raid5",
            Profile::Raid6 => "raid6",
            Profile::Raid10 => "raid10",
        }
    }

    /// Reads a kernel name; `None` for anything else (md `multipath`, `faulty`, `container`).
    pub fn from_name(name: &str) -> Option<Profile> {
        const ALL: [Profile; 11] = [
            Profile::Single,
            Profile::Dup,
            Profile::Linear,
            Profile::Raid0,
            Profile::Raid1,
            Profile::Raid1c3,
            Profile::Raid1c4,
            Profile::Raid4,
            Profile::Raid5,
            Profile::Raid6,
            Profile::Raid10,
        ];
        let name = name.trim().to_ascii_lowercase();
        // md names raid levels both "raid5" and "5"; btrfs only the former.
        ALL.into_iter().find(|p| p.name() == name || p.name().strip_prefix("raid") == Some(name.as_str()))
    }

    /// How many copies of each block btrfs keeps (its `ncopies`; parity profiles count 1). statvfs on btrfs
    /// divides the raw size by this, which is why it shows a raid5 pool at its raw size.
    pub fn btrfs_copies(self) -> u64 {
        match self {
            Profile::Dup | Profile::Raid1 | Profile::Raid10 => 2,
            Profile::Raid1c3 => 3,
            Profile::Raid1c4 => 4,
            _ => 1,
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// btrfs never allocates the first MiB of a member (BTRFS_DEVICE_RANGE_RESERVED: boot loaders live there).
const BTRFS_RESERVED: u64 = MIB;

/// The chunk-allocation rules of a btrfs profile (the kernel's `btrfs_raid_array`): stripes per chunk, how many
/// of them hold data, and how many stripes one member takes.
struct ChunkRule {
    /// Fixed stripe count, or `None` for "every member with space" (raid0, raid5, raid6, raid10).
    fixed: Option<usize>,
    /// Fewest members a chunk can use.
    min: usize,
    /// The member count is rounded down to a multiple of this (raid10 pairs).
    increment: usize,
    /// Stripes one member takes per chunk (2 for dup).
    per_member: u64,
}

fn chunk_rule(profile: Profile) -> ChunkRule {
    let fixed = |n| ChunkRule { fixed: Some(n), min: n, increment: 1, per_member: 1 };
    let every = |min, increment| ChunkRule { fixed: None, min, increment, per_member: 1 };
    match profile {
        Profile::Single | Profile::Linear => fixed(1),
        Profile::Dup => ChunkRule { per_member: 2, ..fixed(1) },
        Profile::Raid1 => fixed(2),
        Profile::Raid1c3 => fixed(3),
        Profile::Raid1c4 => fixed(4),
        Profile::Raid0 => every(1, 1),
        Profile::Raid10 => every(2, 2),
        Profile::Raid4 | Profile::Raid5 => every(2, 1),
        Profile::Raid6 => every(3, 1),
    }
}

/// Data stripes among `stripes` stripes of one chunk.
fn data_stripes(profile: Profile, stripes: usize) -> u64 {
    let n = stripes as u64;
    match profile {
        Profile::Dup | Profile::Single | Profile::Linear => 1,
        Profile::Raid1 | Profile::Raid1c3 | Profile::Raid1c4 => 1,
        Profile::Raid0 => n,
        Profile::Raid10 => n / 2,
        Profile::Raid4 | Profile::Raid5 => n.saturating_sub(1),
        Profile::Raid6 => n.saturating_sub(2),
    }
}

/// What a btrfs pool with `members` (their sizes) holds when every chunk is a data chunk of `profile`.
///
/// The allocator is replayed in steps of 1/65 536 of the raw size (at least 1 MiB): each step places one chunk
/// on the members with the most unallocated space, as `btrfs_alloc_chunk` does. Equal members give the closed
/// forms (raid1 n/2, raid10 n/2, raid5 n−1, raid6 n−2 members' worth); unequal ones give what the greedy
/// allocator really reaches, which no closed form does for parity profiles. The error is at most one step per
/// member. Metadata and system chunks take some of this space in a real pool.
pub fn btrfs_usable(profile: Profile, members: &[Bytes]) -> Bytes {
    let mut free: Vec<u64> = members.iter().map(|b| b.0.saturating_sub(BTRFS_RESERVED)).collect();
    let raw: u64 = free.iter().sum();
    let step = (raw / 65_536).max(MIB);
    let rule = chunk_rule(profile);
    let mut usable = 0u64;
    loop {
        free.sort_unstable_by_key(|&f| std::cmp::Reverse(f));
        // A member with less than a MiB per stripe left takes no more chunks.
        let with_space = free.iter().filter(|&&f| f >= rule.per_member * MIB).count();
        let stripes = match rule.fixed {
            Some(n) => n,
            None => with_space - with_space % rule.increment,
        };
        if stripes < rule.min || stripes > with_space {
            break;
        }
        // Every chosen member gets the same stripe: as much as the smallest of them can take, up to one step.
        let stripe = (free[stripes - 1] / rule.per_member).min(step);
        for f in &mut free[..stripes] {
            *f -= stripe * rule.per_member;
        }
        usable += stripe * data_stripes(profile, stripes);
    }
    Bytes(usable)
}

/// What an md array of `members` components of `component` bytes each holds at a RAID level. `copies` is the
/// raid10 layout's copy count (near × far; 2 by default). Linear and raid0 use every member whole, so they
/// take the members' own sizes (`member_sizes`) instead of the component size.
pub fn md_usable(profile: Profile, members: u64, component: Bytes, copies: u64, member_sizes: &[Bytes]) -> Bytes {
    let c = component.0;
    Bytes(match profile {
        Profile::Linear | Profile::Raid0 | Profile::Single => member_sizes.iter().map(|b| b.0).sum(),
        Profile::Raid1 | Profile::Raid1c3 | Profile::Raid1c4 | Profile::Dup => c,
        Profile::Raid4 | Profile::Raid5 => members.saturating_sub(1) * c,
        Profile::Raid6 => members.saturating_sub(2) * c,
        Profile::Raid10 => members * c / copies.max(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: u64 = 1 << 30;

    fn gib(sizes: &[u64]) -> Vec<Bytes> {
        sizes.iter().map(|&n| Bytes(n * G)).collect()
    }

    /// Within one allocation step per member plus the reserved MiB of each member.
    fn close(actual: Bytes, expected: u64, members: usize) {
        let slack = (members as u64 + 1) * 2 * MIB;
        assert!(actual.0.abs_diff(expected) <= slack, "{actual} is not about {}", Bytes(expected));
    }

    #[test]
    fn equal_members_give_the_textbook_figures() {
        close(btrfs_usable(Profile::Raid5, &gib(&[1, 1, 1])), 2 * G, 3);
        close(btrfs_usable(Profile::Raid1, &gib(&[1, 1, 1])), 3 * G / 2, 3);
        close(btrfs_usable(Profile::Raid10, &gib(&[1, 1, 1, 1])), 2 * G, 4);
        close(btrfs_usable(Profile::Raid6, &gib(&[1, 1, 1, 1, 1])), 3 * G, 5);
        close(btrfs_usable(Profile::Raid1c3, &gib(&[1, 1, 1])), G, 3);
        close(btrfs_usable(Profile::Raid1c4, &gib(&[2, 2, 2, 2])), 2 * G, 4);
        close(btrfs_usable(Profile::Single, &gib(&[1, 2])), 3 * G, 2);
        close(btrfs_usable(Profile::Raid0, &gib(&[1, 1, 1])), 3 * G, 3);
        close(btrfs_usable(Profile::Dup, &gib(&[2])), G, 1);
    }

    #[test]
    fn unequal_members_follow_the_greedy_allocator() {
        // raid1 can mirror the big member only against the others: min(sum/2, sum − largest).
        close(btrfs_usable(Profile::Raid1, &gib(&[1, 1, 4])), 2 * G, 3);
        close(btrfs_usable(Profile::Raid1, &gib(&[1, 1, 2])), 2 * G, 3);
        // raid5 stripes over three until the small ones are full; one member alone cannot hold a raid5 chunk.
        close(btrfs_usable(Profile::Raid5, &gib(&[1, 1, 3])), 2 * G, 3);
        // raid10 with an odd count uses the largest even number of members per chunk.
        close(btrfs_usable(Profile::Raid10, &gib(&[1, 1, 1, 1, 1])), 5 * G / 2, 5);
    }

    #[test]
    fn too_few_members_hold_nothing() {
        assert_eq!(btrfs_usable(Profile::Raid1, &gib(&[1])), Bytes(0));
        assert_eq!(btrfs_usable(Profile::Raid6, &gib(&[1, 1])), Bytes(0));
        assert_eq!(btrfs_usable(Profile::Raid1c3, &gib(&[4, 4])), Bytes(0));
        assert_eq!(btrfs_usable(Profile::Raid5, &[]), Bytes(0));
    }

    #[test]
    fn md_levels_use_the_component_size() {
        let c = Bytes(G);
        let members = gib(&[1, 1, 1, 1]);
        assert_eq!(md_usable(Profile::Raid5, 4, c, 2, &members), Bytes(3 * G));
        assert_eq!(md_usable(Profile::Raid6, 4, c, 2, &members), Bytes(2 * G));
        assert_eq!(md_usable(Profile::Raid1, 4, c, 2, &members), Bytes(G));
        assert_eq!(md_usable(Profile::Raid10, 4, c, 2, &members), Bytes(2 * G));
        assert_eq!(md_usable(Profile::Raid10, 3, c, 3, &members[..3]), Bytes(G));
        assert_eq!(md_usable(Profile::Raid0, 2, Bytes(0), 2, &gib(&[1, 3])), Bytes(4 * G));
    }

    #[test]
    fn profile_names_round_trip() {
        for name in ["single", "dup", "raid0", "raid1", "raid1c3", "raid1c4", "raid10", "raid5", "raid6", "linear"] {
            assert_eq!(Profile::from_name(name).map(Profile::name), Some(name));
        }
        assert_eq!(Profile::from_name("5"), Some(Profile::Raid5));
        assert_eq!(Profile::from_name("RAID6\n"), Some(Profile::Raid6));
        assert_eq!(Profile::from_name("multipath"), None);
        assert_eq!(serde_json::to_string(&Profile::Raid1c3).unwrap(), "\"raid1c3\"");
    }
}
