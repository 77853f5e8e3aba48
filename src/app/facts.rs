//! Gathering the facts a plan and a result need, from `sysinfo`: what the target is, how much space it has,
//! whether a device is safe to write, which devices lie beneath it, and what the machine is.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::engine::io_uring_available;
use crate::plan::{Facts, TargetFacts};
use crate::sysinfo::{
    BlockDevice, FilesystemFacts, HostFacts, devices_beneath, direct_io_alignment, filesystem_of, inspect_device,
};
use crate::units::Bytes;

pub struct Gathered {
    pub facts: Facts,
    pub canonical: PathBuf,
    pub host: HostFacts,
    pub filesystem: Option<FilesystemFacts>,
    pub devices: Vec<BlockDevice>,
}

pub fn gather(target: &Path) -> Result<Gathered> {
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
        let dio_align = direct_io_alignment(&canonical).map(|a| a.offset);
        // A filesystem that reports no blocks at all (ramfs, some FUSE filesystems) keeps no accounts: its free
        // space is unknown, not zero.
        let free = (fs.total.0 > 0).then_some(fs.free);
        (TargetFacts::Directory { path: canonical.clone(), free, dio_align }, Some(fs))
    } else if file_type.is_file() {
        let fs = filesystem_of(&canonical).ok();
        (TargetFacts::File { path: canonical.clone(), size: Bytes(metadata.len()) }, fs)
    } else if file_type.is_block_device() {
        let safety = inspect_device(&canonical)?;
        let facts = TargetFacts::BlockDevice {
            path: canonical.clone(),
            size: safety.device.size,
            logical_block: safety.device.logical_block_size as u32,
            mounted_at: safety.mounted_at.clone(),
            in_use_by: safety.in_use_by.clone(),
            signature: safety.signature.clone(),
        };
        (facts, None)
    } else {
        bail!(
            "{} is neither a directory, a regular file nor a block device: give a directory to test the \
             filesystem, or a block device to test the raw device",
            target.display()
        );
    };
    let devices = devices_beneath(&canonical);
    let facts =
        Facts { target: target_facts, ram: host.ram, io_uring: io_uring_available().map_err(|e| e.to_string()) };
    Ok(Gathered { facts, canonical, host, filesystem, devices })
}
