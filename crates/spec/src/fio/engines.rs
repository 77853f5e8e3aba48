//! fio's I/O engines: which ones streamcap runs and as what, and why the others are refused. The engine is
//! looked at before anything else in a job, so that a file written for an engine streamcap does not run gets one
//! message about the engine, not one per option of that engine.
//!
//! Local engines are the ones that do I/O on files and block devices of this machine through the kernel's
//! ordinary read and write paths (and fio's file and directory engines); docs/fio.md lists the others with their
//! reasons. This file only classifies names; what a phase does with the result is the mapping's.

use crate::spec::{EngineChoice, FileOp};

/// What a job's engine becomes in streamcap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineUse {
    /// Reads and writes through one of streamcap's engines.
    Io(EngineChoice),
    /// fio's file and directory engines: one file-system operation per file (a file-set phase).
    FileOps(FileOpsEngine),
}

/// fio's filecreate, filestat, filedelete, dircreate, dirstat and dirdelete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileOpsEngine {
    /// The operation each "I/O" is.
    pub op: FileOp,
    /// On directories (dircreate, dirstat, dirdelete) rather than files.
    pub dirs: bool,
    /// The files (or directories) must exist before the phase: fio lays them out first.
    pub needs_existing: bool,
}

/// The engine named `name` (fio's spelling), or why streamcap does not run it.
pub fn classify(name: &str) -> Result<EngineUse, String> {
    let name = name.trim();
    let file_ops = |op, dirs, needs_existing| Ok(EngineUse::FileOps(FileOpsEngine { op, dirs, needs_existing }));
    match name {
        "psync" | "sync" | "pvsync" | "pvsync2" | "vsync" => Ok(EngineUse::Io(EngineChoice::Sync)),
        "libaio" | "io_uring" | "posixaio" => Ok(EngineUse::Io(EngineChoice::IoUring)),
        "null" => Ok(EngineUse::Io(EngineChoice::Null)),
        "filecreate" => file_ops(FileOp::Create, false, false),
        "filestat" => file_ops(FileOp::Getattr, false, true),
        "filedelete" => file_ops(FileOp::Delete, false, true),
        "dircreate" => file_ops(FileOp::Mkdir, true, false),
        "dirstat" => file_ops(FileOp::Getattr, true, true),
        "dirdelete" => file_ops(FileOp::Rmdir, true, true),
        _ => Err(refusal(name)),
    }
}

/// Why an engine is not run, in one sentence that names it.
fn refusal(name: &str) -> String {
    let see = "see docs/fio.md";
    let local = |what: &str| format!("ioengine={name} ({what}) is not supported: {RUNS}; {see}");
    match name {
        "mmap" => local("memory-mapped I/O"),
        "splice" => local("I/O through a pipe with splice"),
        "falloc" => local("fallocate and hole punching"),
        "ftruncate" => local("truncating files"),
        "e4defrag" => local("ext4 online defragmentation"),
        "cpuio" | "exec" => local("no storage I/O at all"),
        "sg" | "bsg" => local("SCSI commands through the generic driver"),
        "io_uring_cmd" | "xnvme" | "spdk" => local("NVMe passthrough commands"),
        "libzbc" => local("commands to zoned SMR disks"),
        "mtd" => local("raw flash (MTD) devices"),
        "libpmem" | "dev-dax" | "pmemblk" => local("persistent memory"),
        "windowsaio" | "solarisaio" => format!("ioengine={name} is for another operating system; use io_uring; {see}"),
        _ if name.starts_with("external:") || name.contains('/') || name.ends_with(".so") => {
            format!("ioengine={name} is an external engine that streamcap cannot load; {see}")
        }
        _ => format!("ioengine={name} is not a local engine: streamcap runs files and block devices; {see}"),
    }
}

const RUNS: &str = "streamcap measures reads and writes of files and block devices";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_engines_map_and_others_say_why() {
        assert_eq!(classify("libaio"), Ok(EngineUse::Io(EngineChoice::IoUring)));
        assert_eq!(classify(" psync "), Ok(EngineUse::Io(EngineChoice::Sync)));
        let EngineUse::FileOps(stat) = classify("dirstat").unwrap() else { panic!() };
        assert!(stat.dirs && stat.needs_existing && stat.op == FileOp::Getattr);
        assert_eq!(
            classify("rbd").unwrap_err(),
            "ioengine=rbd is not a local engine: streamcap runs files and block devices; see docs/fio.md"
        );
        assert!(classify("falloc").unwrap_err().contains("fallocate"));
        assert!(classify("external:/opt/x.so").unwrap_err().contains("external"));
        assert!(classify("mmap").unwrap_err().contains("memory-mapped"));
    }
}
