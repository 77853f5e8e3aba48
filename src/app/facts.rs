//! Gathering the facts a plan and a result need, from `sysinfo`: what the target is, how much space it has,
//! whether a device is safe to write, which devices lie beneath it and which cgroup throttles limit them, and
//! what the machine is.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::engine::io_uring_available;
use crate::plan::{AnchorFacts, AnchorState, Facts, Mirrors, ResourceLimits, ScrubTarget, TargetFacts};
use crate::results::{KeptLibraryFacts, TargetInfo};
use crate::spec::JobSpec;
use crate::sysinfo::{
    BlockDevice, DeviceThrottle, FilesystemFacts, HostFacts, PoolFacts, PoolKind, ProcessLimits, Profile,
    devices_beneath, direct_io_alignment_in_dir, filesystem_of, inspect_device, inspect_device_usage, pool_of,
    throttle_words, throttles_for,
};
use crate::units::Bytes;

/// Why the target's data lives in RAM, if it does: a memory filesystem, or the first memory-backed device beneath
/// (tmpfs accepts O_DIRECT on recent kernels, so direct I/O alone does not keep the page cache out).
fn memory_backed(filesystem: Option<&FilesystemFacts>, devices: &[BlockDevice]) -> Option<String> {
    if let Some(fs) = filesystem
        && matches!(fs.fs_type.as_str(), "tmpfs" | "ramfs" | "hugetlbfs" | "devtmpfs")
    {
        return Some(format!("{} is a {}, which keeps files in RAM", fs.mount_point.display(), fs.fs_type));
    }
    devices.iter().find_map(BlockDevice::memory_backed)
}

impl Gathered {
    /// The target as a result records it; `kind` is "directory", "file" or "block_device".
    pub fn target_info(&self, kind: &str) -> TargetInfo {
        TargetInfo {
            path: self.canonical.display().to_string(),
            kind: kind.into(),
            served_from: None,
            filesystem: self.filesystem.clone(),
            devices: self.devices.clone(),
            pool: self.pool.clone(),
            memory_backed: self.facts.memory_backed.clone(),
            throttles: self.throttles.clone(),
            kept_library: self.facts.kept_library.as_ref().map(KeptLibraryFacts::of),
        }
    }
}

#[derive(Clone)]
pub struct Gathered {
    pub facts: Facts,
    pub canonical: PathBuf,
    pub host: HostFacts,
    pub filesystem: Option<FilesystemFacts>,
    pub devices: Vec<BlockDevice>,
    /// The pool beneath the target (btrfs, md or one device), if a block device is beneath.
    pub pool: Option<PoolFacts>,
    /// The cgroup I/O limits that bind this process on those devices.
    pub throttles: Vec<DeviceThrottle>,
}

/// `writes`: whether the job writes; only then is a block device's content probed for signatures.
pub fn gather(target: &Path, writes: bool) -> Result<Gathered> {
    gather_at(target, writes, true)
}

/// The facts of a directory streamcap must not touch at all (the user's media library): as `gather`, but the
/// direct-I/O alignment is not asked of an unnamed temporary file made in it (nor of anything else).
pub fn gather_untouched(target: &Path) -> Result<Gathered> {
    gather_at(target, false, false)
}

fn gather_at(target: &Path, writes: bool, probe: bool) -> Result<Gathered> {
    let metadata = std::fs::metadata(target).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow::anyhow!(
            "{} does not exist: give an existing directory (streamcap creates its data files inside it), a file \
             to read, or a block device",
            target.display()
        ),
        _ => anyhow::Error::new(e).context(format!("cannot look at {}", target.display())),
    })?;
    let canonical = std::fs::canonicalize(target).with_context(|| format!("cannot resolve {}", target.display()))?;
    let host = HostFacts::gather();
    let file_type = metadata.file_type();
    let (target_facts, filesystem) = if file_type.is_dir() {
        let fs = filesystem_of(&canonical)
            .with_context(|| format!("cannot find the filesystem holding {}", canonical.display()))?;
        let dio_align = if probe { direct_io_alignment_in_dir(&canonical).map(|a| a.offset) } else { None };
        // A filesystem that reports no blocks at all (ramfs, some FUSE filesystems) keeps no accounts: its free
        // space is unknown, not zero.
        let free = (fs.total.0 > 0).then_some(fs.free);
        (TargetFacts::Directory { path: canonical.clone(), free, dio_align }, Some(fs))
    } else if file_type.is_file() {
        let fs = filesystem_of(&canonical).ok();
        (TargetFacts::File { path: canonical.clone(), size: Bytes(metadata.len()) }, fs)
    } else if file_type.is_block_device() {
        (block_device_facts(&canonical, writes)?, None)
    } else {
        bail!(
            "{} is neither a directory, a regular file nor a block device: give a directory to test the \
             filesystem, or a block device to test the raw device",
            target.display()
        );
    };
    let devices = devices_beneath(&canonical);
    let pool = pool_of(&canonical);
    let throttles = throttles_for(&devices);
    let scrub = scrub_target(&target_facts, pool.as_ref(), &devices);
    let facts = Facts {
        target: target_facts,
        ram: host.usable_ram(),
        io_uring: io_uring_available().map_err(|e| e.to_string()),
        memory_backed: memory_backed(filesystem.as_ref(), &devices),
        throttles: throttle_words(&throttles),
        anchors: Vec::new(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        media_libraries: Vec::new(),
        playlists: Vec::new(),
        limits: resource_limits(),
        mirrors: pool.as_ref().and_then(mirrors),
        fuse: filesystem
            .as_ref()
            .map(|fs| fs.fs_type.clone())
            .filter(|t| t == "fuse" || t == "fuseblk" || t.starts_with("fuse.")),
        scrub,
        devices: Vec::new(),
        // Found only under a directory (`TARGET/.streamcap/library`); never created or changed here.
        kept_library: crate::run::find_kept_library(&canonical),
    };
    Ok(Gathered { facts, canonical, host, filesystem, devices, pool, throttles })
}

/// A block device target: its size and block, and what uses it (every use, when the run writes to it).
fn block_device_facts(canonical: &Path, writes: bool) -> Result<TargetFacts> {
    let safety = if writes { inspect_device(canonical)? } else { inspect_device_usage(canonical)? };
    Ok(TargetFacts::BlockDevice {
        path: canonical.to_path_buf(),
        size: safety.device.size,
        logical_block: safety.device.logical_block_size as u32,
        mounted_at: safety.mounted_at.clone(),
        in_use_by: safety.in_use_by.clone(),
        overlaps: safety.overlaps.clone(),
        signature: safety.signature.clone(),
    })
}

/// What `--during scrub` runs under a directory: btrfs's scrub where the directory is on btrfs, otherwise a full
/// read of the block device its filesystem sits on (the one `stat` names as the directory's device).
fn scrub_target(target: &TargetFacts, pool: Option<&PoolFacts>, devices: &[BlockDevice]) -> Option<ScrubTarget> {
    let TargetFacts::Directory { path, .. } = target else { return None };
    if pool.is_some_and(|p| p.kind == PoolKind::Btrfs) {
        return Some(ScrubTarget::Btrfs { path: path.clone() });
    }
    let dev = std::fs::metadata(path).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let device = devices.iter().find(|d| (d.major, d.minor) == (major, minor))?;
    Some(ScrubTarget::Device { path: device.path.clone(), size: device.size.0 })
}

/// The facts of each device the job's phases name as their own (`plan::job_devices`: a fio file's jobs mapped
/// with `run --device`), in that order, into `gathered`: the plan checks each, and the devices beneath each are
/// sampled with the target's. A device that is missing or not a block device is refused ([`check_mapped_device`]).
pub fn gather_devices(gathered: &mut Gathered, devices: &[PathBuf], writes: bool) -> Result<()> {
    for device in devices {
        check_mapped_device(device)?;
        let found = gather(device, writes)?;
        gathered.facts.devices.push(found.facts.target);
        for beneath in found.devices {
            if !gathered.devices.iter().any(|d| d.name == beneath.name) {
                gathered.devices.push(beneath);
            }
        }
        for throttle in found.throttles {
            if !gathered.throttles.contains(&throttle) {
                gathered.throttles.push(throttle);
            }
        }
        gathered.facts.memory_backed = gathered.facts.memory_backed.take().or(found.facts.memory_backed);
    }
    gathered.facts.throttles = throttle_words(&gathered.throttles);
    Ok(())
}

/// Refuses a device `--device` maps onto that is missing or not a block device, naming --device.
pub fn check_mapped_device(device: &Path) -> Result<()> {
    let is_block = match std::fs::metadata(device) {
        Ok(m) => m.file_type().is_block_device(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "--device maps a device of the job file onto {}, which does not exist: give a block device of this \
             machine (lsblk lists them), or a directory or file to run the device's jobs there",
            device.display()
        ),
        Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot look at {}", device.display()))),
    };
    if !is_block {
        bail!(
            "--device maps a device of the job file onto {}, which is not a block device, a directory or a file: \
             give one of those (lsblk lists the block devices)",
            device.display()
        );
    }
    Ok(())
}

/// A btrfs pool's copies and read policy, when its data profile keeps more than one copy on different
/// members (raid1, raid1c3, raid1c4, raid10; not dup, whose copies share a device).
fn mirrors(pool: &PoolFacts) -> Option<Mirrors> {
    let profile = pool.profile?;
    let copies = profile.btrfs_copies() as u32;
    (pool.kind == PoolKind::Btrfs && copies > 1 && profile != Profile::Dup).then(|| Mirrors {
        profile: profile.name().to_string(),
        copies,
        members: pool.members.len() as u32,
        policy: pool.read_policy.clone(),
    })
}

/// The memory and threads this process may still take, for the plan's resource check.
pub fn resource_limits() -> ResourceLimits {
    let limits = ProcessLimits::gather();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    ResourceLimits {
        memory: limits.memory,
        memory_bound: limits.memory_bound,
        malloc_arenas: cpus * crate::limits::MALLOC_ARENAS_PER_CPU,
        threads: limits.threads,
        sockets: None,
    }
}

/// What bounds a remote run's connections, after raising this process's soft open-file limit to its hard one
/// (each viewer holds a connection for its whole watch).
pub fn socket_limits() -> crate::plan::SocketLimits {
    let files = crate::sysinfo::OpenFiles::raise();
    crate::plan::SocketLimits {
        open_files: files.soft,
        open_files_hard: files.hard,
        open_now: files.open,
        ports: crate::sysinfo::ephemeral_ports(),
    }
}

/// What is at each anchor the job's file-set trees name: missing, not a directory, or a directory with its free
/// space. Looks only; creates nothing.
pub fn anchor_facts(job: &JobSpec) -> Vec<AnchorFacts> {
    let mut anchors: Vec<AnchorFacts> = Vec::new();
    let named = job.phases.iter().filter_map(|p| p.fileset()).flat_map(|f| &f.trees).filter_map(|t| t.anchor.as_ref());
    for path in named {
        if anchors.iter().any(|a| &a.path == path) {
            continue;
        }
        let state = match std::fs::metadata(path) {
            Err(_) => AnchorState::Missing,
            Ok(m) if !m.is_dir() => AnchorState::NotDirectory,
            Ok(_) => match std::fs::canonicalize(path) {
                Err(_) => AnchorState::Missing,
                Ok(canonical) => {
                    let free = filesystem_of(&canonical).ok().filter(|fs| fs.total.0 > 0).map(|fs| fs.free);
                    AnchorState::Directory { canonical, free }
                }
            },
        };
        anchors.push(AnchorFacts { path: path.clone(), state });
    }
    anchors
}
