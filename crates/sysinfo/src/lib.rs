//! Host facts, block-device topology, /proc sampling and device safety checks (layer 1).
//!
//! This module answers "what machine is this, how much RAM may this process use, which devices and which pool
//! sit beneath a path, which throttle limits them, how busy are they, and is it safe to write to this block
//! device". It only reads: it never writes to a device, never mounts, never
//! changes a sysfs setting (the one thing it sets is this process's own soft open-file limit, raised to its hard
//! one by `sockets::OpenFiles::raise` for a run of many connections). It imports `crate::units` and nothing else from streamcap. Every parser takes text
//! so that it can be tested with fixed samples; thin wrappers read the live files.

#![deny(unsafe_code)]

// The crates below this one that its code names as `crate::NAME::…` (docs/architecture.md, "Layers").
pub(crate) use ::units;
// This crate, as `crate::sysinfo::…` names it.
#[cfg(test)]
use crate as sysinfo;

use std::io;
use std::path::{Path, PathBuf};

pub mod cgroup;
pub mod host;
pub mod limits;
pub mod proc;
pub mod safety;
pub mod sockets;
pub mod throttle;
pub mod topology;

mod sysfs;

#[cfg(test)]
mod loop_tests;

pub use cgroup::{MemoryCgroupDir, MemoryLimit, memory_limit, own_memory_cgroup};
pub use host::{HostFacts, effective_ram};
pub use limits::ProcessLimits;
pub use proc::{
    DiskActivity, DiskStat, MemInfo, ProcessCpu, SystemCpu, SystemCpuUsage, parse_diskstats, parse_meminfo,
    parse_proc_stat, read_diskstats,
};
pub use safety::{DeviceSafety, inspect_device, inspect_device_usage, probe_signature};
pub use sockets::{OpenFiles, ephemeral_ports, usable_cpus};
pub use throttle::{DeviceThrottle, ThrottleKind, read_limit_words, throttle_words, throttles_for};
pub use topology::{
    BlockDevice, BtrfsSpace, DeviceKind, DioAlign, FilesystemFacts, MdArray, MountEntry, PoolFacts, PoolKind, Profile,
    devices_beneath, direct_io_alignment, direct_io_alignment_in_dir, filesystem_of, parse_mountinfo, pool_of,
    read_mountinfo,
};

/// Everything that can go wrong while gathering system facts. Messages say what happened and what to do.
#[derive(Debug, thiserror::Error)]
pub enum SysinfoError {
    /// A file under /proc, /sys or /dev could not be read or queried.
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A kernel file did not have the layout this code understands.
    #[error("{what} is not in the expected format: {detail}")]
    Malformed { what: &'static str, detail: String },
    /// No block device of that name or number is known to sysfs.
    #[error("no block device {name} in /sys/class/block: check the name with `lsblk`")]
    NoSuchDevice { name: String },
    /// A block device was required but the path is something else.
    #[error(
        "{} is {what}, not a block device: pass a block device node such as /dev/sdb or /dev/loop0 \
         (to measure the filesystem under a directory, pass the directory as the target instead)",
        path.display()
    )]
    NotBlockDevice { path: PathBuf, what: &'static str },
    /// No entry of /proc/self/mountinfo holds the path (it may live in another mount namespace).
    #[error("no mount in /proc/self/mountinfo holds {}: is /proc mounted, and is the path in this mount namespace?", path.display())]
    NotMounted { path: PathBuf },
    /// The start of a device could not be read, so nothing can be said about what it holds.
    #[error(
        "cannot read {} to look for an existing filesystem or partition table, and without that check it is \
         not safe to write to it: raw devices usually need root, and some VMs and containers deny raw access \
         even to root (for a scratch device, attach a file with `losetup -f --show FILE`)",
        path.display()
    )]
    Probe {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl SysinfoError {
    pub(crate) fn read(path: impl AsRef<Path>, source: io::Error) -> SysinfoError {
        SysinfoError::Read { path: path.as_ref().to_path_buf(), source }
    }
}

/// Reads a whole kernel file as text, mapping the error to [`SysinfoError::Read`] with the path.
pub(crate) fn read_text(path: impl AsRef<Path>) -> Result<String, SysinfoError> {
    let path = path.as_ref();
    std::fs::read_to_string(path).map_err(|e| SysinfoError::read(path, e))
}
