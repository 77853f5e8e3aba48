//! Hard limits on what streamcap accepts from outside, in one place, and the one bounded reader for the text
//! files it is handed (job files, their includes, saved results).
//!
//! Every input a user controls must be refused before it can exhaust memory, threads or time: a job file is read
//! with a size cap (reading `/dev/zero` or a 10 GB file ends at once with a message), include chains are capped in
//! depth and in the number of files read (10 includes × 9 levels would be a billion reads), and counts are checked
//! against what the machine can hold before anything is allocated (`plan::resources`, `streams::limits`). Also
//! the words for an error that a process limit caused (EFBIG under `ulimit -f`, ENOMEM under `ulimit -v`), with
//! the limit's figure, for whatever reports the error. Layer 0: imports nothing from streamcap and does no I/O
//! besides reading the file it is asked to read (and asking the kernel for this process's rlimits).

#![deny(unsafe_code)]

use std::io::Read;
use std::path::Path;

/// The largest job file, include file or result file streamcap reads (16 MiB). A real fio job file is a few KiB;
/// a result of a many-hour run with its bounded series is a few MiB.
pub const MAX_INPUT_FILE_BYTES: u64 = 16 << 20;
/// Includes nested deeper than this are refused (fio and vdbench job files; a loop is caught earlier by name).
pub const MAX_INCLUDE_DEPTH: usize = 8;
/// Include files read for one job, all levels together.
pub const MAX_INCLUDES: usize = 64;
/// Bytes read for one job, the file and all its includes together.
pub const MAX_JOB_BYTES: u64 = MAX_INPUT_FILE_BYTES;
/// Nesting of parentheses (or signs, or powers) in an expression of a job file: each level is a call of the
/// expression parser, and a stack must hold them all (fio's `size=((((…` of 200,000 levels overflowed it).
pub const MAX_NESTING: usize = 64;
/// Phases (fio jobs, vdbench runs, TOML `[[phase]]` tables) in one job after expansion. Each phase costs about
/// 3 KiB while it is read and planned (its spec, its plan, its worker), so this keeps a job within a few tens of
/// MiB: a job file of 179,166 phases (8.6 MB) took 634 MB to dry-run and was killed in a 64 MiB memory cgroup. A
/// real job has tens of phases; vdbench's for-loops reach hundreds.
pub const MAX_PHASES: usize = 10_000;

/// The refusal of a job with more than [`MAX_PHASES`] phases (`counted`: how many were seen, perhaps only the
/// first that went over).
pub fn too_many_phases(counted: usize) -> String {
    format!(
        "the job has {counted} phases or more, and streamcap runs at most {MAX_PHASES} in one job (each is read, \
         planned and kept in memory): split it into several jobs"
    )
}

/// Address space a thread streamcap starts takes for its stack (Rust's default for spawned threads). It counts
/// against `ulimit -v` though little of it is ever touched.
pub const THREAD_STACK_BYTES: u64 = 2 << 20;

/// Address space glibc reserves for each malloc arena (HEAP_MAX_SIZE on 64-bit): a thread that allocates gets an
/// arena of its own, up to 8 per CPU. Little of it is touched, but under `ulimit -v` it is taken: two worker
/// threads' arenas made a 64 MiB buffer pool fail with ENOMEM below a limit the buffers alone fitted in.
pub const MALLOC_ARENA_BYTES: u64 = 64 << 20;
/// Arenas glibc makes at most per CPU (M_ARENA_MAX's default on 64-bit).
pub const MALLOC_ARENAS_PER_CPU: u64 = 8;

/// What bounds the memory this process may still take (`sysinfo::ProcessLimits`, `plan::ResourceLimits`), so a
/// refusal can say which limit it met.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MemoryBound {
    /// MemAvailable: the machine's free and reclaimable memory.
    #[default]
    Available,
    /// A memory cgroup's limit less what the group uses (the tightest up the hierarchy).
    Cgroup,
    /// The address-space limit (`ulimit -v`, RLIMIT_AS) less what this process maps already; thread stacks count.
    AddressSpace,
}

impl MemoryBound {
    /// Where the figure comes from, for a message: "… is available here (WORDS)".
    pub fn words(self) -> &'static str {
        match self {
            MemoryBound::Available => "MemAvailable: free and reclaimable memory",
            MemoryBound::Cgroup => "the memory cgroup's limit less what the group uses",
            MemoryBound::AddressSpace => "ulimit -v less what this process maps already",
        }
    }
}

/// Why a bounded read failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadLimitError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error(
        "it is larger than {} MiB, the most streamcap reads from such a file: is it the right file?",
        .limit >> 20
    )]
    TooLarge { limit: u64 },
    #[error("it is not UTF-8 text (byte {at}): is it the right file?")]
    NotText { at: usize },
}

/// Reads a text file of at most `limit` bytes. Stops reading after `limit + 1` bytes, so a device or a pipe that
/// never ends (`/dev/zero`) costs no more than the cap.
pub fn read_text_file(path: &Path, limit: u64) -> Result<String, ReadLimitError> {
    let file = std::fs::File::open(path)?;
    // Sized from the file's length when it has one (a device or a pipe says 0): read_to_end doubling its buffer
    // held 16 MiB, and two copies while it moved, for an 8.6 MB job.
    let known = file.metadata().map_or(0, |m| m.len()).min(limit.saturating_add(1));
    let mut bytes = Vec::with_capacity(usize::try_from(known).unwrap_or(0).saturating_add(1));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadLimitError::TooLarge { limit });
    }
    String::from_utf8(bytes).map_err(|e| ReadLimitError::NotText { at: e.utf8_error().valid_up_to() })
}

/// What a failed system call's `errno` means when a limit of this process caused it, with the limit's figure and
/// what to do; `None` for any other errno. EFBIG: a write past the file size limit (`ulimit -f`, whose SIGXFSZ
/// streamcap catches) or past the largest file the filesystem holds. ENOMEM: the address-space limit
/// (`ulimit -v`), a memory cgroup or the machine's RAM.
pub fn errno_hint(errno: i32) -> Option<String> {
    use rustix::process::{Resource, getrlimit};
    match errno {
        libc::EFBIG => Some(match getrlimit(Resource::Fsize).current {
            Some(limit) => format!(
                "the file size limit (ulimit -f) is {}: raise it (ulimit -f unlimited) or use a smaller size",
                bytes_words(limit)
            ),
            None => "the file would be larger than this filesystem allows: use a smaller size".into(),
        }),
        libc::ENOMEM => Some(match getrlimit(Resource::As).current {
            Some(limit) => format!(
                "out of memory: this process may map at most {} (ulimit -v); raise the limit or ask for less \
                 (fewer jobs or viewers, a smaller iodepth or smaller blocks)",
                bytes_words(limit)
            ),
            None => "out of memory (the machine's RAM or a memory cgroup's limit): ask for less (fewer jobs or \
                     viewers, a smaller iodepth or smaller blocks)"
                .into(),
        }),
        _ => None,
    }
}

/// "10240 bytes", or "209715200 bytes (200.0 MiB)" from 1 MiB on (layer 0: `units` is not used here).
fn bytes_words(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{bytes} bytes")
    } else {
        format!("{bytes} bytes ({:.1} MiB)", bytes as f64 / f64::from(1 << 20))
    }
}

/// An OS error's text, followed by [`errno_hint`]'s words when a limit of this process caused it: "File too large
/// (os error 27); the file size limit (ulimit -f) is …".
pub fn explain(error: &std::io::Error) -> String {
    match error.raw_os_error().and_then(errno_hint) {
        Some(hint) => format!("{error}; {hint}"),
        None => error.to_string(),
    }
}

/// Characters of one problem line in a message about an input file, at most: a line that quotes a 400 KB value
/// is shortened in its middle, keeping where it is and what was expected.
pub const MAX_MESSAGE_LINE: usize = 600;

/// `line` whole when it has at most `max` characters, else its start and its end with the count between them.
pub fn shorten(line: &str, max: usize) -> std::borrow::Cow<'_, str> {
    let count = line.chars().count();
    if count <= max {
        return std::borrow::Cow::Borrowed(line);
    }
    let keep = max / 2;
    let head: String = line.chars().take(keep).collect();
    let tail: String = line.chars().skip(count - keep).collect();
    std::borrow::Cow::Owned(format!("{head} …({} characters left out)… {tail}", count - 2 * keep))
}

/// Counts what a job file and its includes cost, so a chain of includes cannot multiply a small file into an
/// unbounded read.
#[derive(Debug, Default)]
pub struct IncludeBudget {
    files: usize,
    bytes: u64,
}

impl IncludeBudget {
    /// Charges one more include of `bytes` at nesting `depth` (1 for an include in the job file itself).
    /// Returns the sentence to show when a limit is passed.
    pub fn charge(&mut self, depth: usize, bytes: u64) -> Result<(), String> {
        if depth > MAX_INCLUDE_DEPTH {
            return Err(format!(
                "includes nest more than {MAX_INCLUDE_DEPTH} levels deep (a loop?): flatten the include chain"
            ));
        }
        self.files += 1;
        if self.files > MAX_INCLUDES {
            return Err(format!(
                "the job includes more than {MAX_INCLUDES} files in all (includes of includes counted): merge \
                 them into fewer files"
            ));
        }
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > MAX_JOB_BYTES {
            return Err(format!(
                "the job and its includes come to more than {} MiB of text: is an include repeated?",
                MAX_JOB_BYTES >> 20
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_dev_zero_stops_at_the_cap() {
        // Guards issue 9: `--job /dev/zero` read without bound until memory ran out.
        let err = read_text_file(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(matches!(err, ReadLimitError::TooLarge { limit } if limit == 1 << 20), "{err}");
        assert!(err.to_string().contains("1 MiB"), "{err}");
    }

    #[test]
    fn small_files_are_read_whole_and_binary_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.toml");
        std::fs::write(&path, "rw = \"read\"\n").unwrap();
        assert_eq!(read_text_file(&path, 12).unwrap(), "rw = \"read\"\n");
        assert!(matches!(read_text_file(&path, 11), Err(ReadLimitError::TooLarge { .. })));
        std::fs::write(&path, b"ok\xff\xfe").unwrap();
        assert!(matches!(read_text_file(&path, 100), Err(ReadLimitError::NotText { at: 2 })));
    }

    #[test]
    fn limit_errors_get_words_and_others_none() {
        assert!(errno_hint(libc::EIO).is_none());
        let efbig = errno_hint(libc::EFBIG).unwrap();
        assert!(efbig.contains("ulimit -f") || efbig.contains("filesystem allows"), "{efbig}");
        let enomem = explain(&std::io::Error::from_raw_os_error(libc::ENOMEM));
        assert!(enomem.contains("out of memory") && enomem.contains("os error 12"), "{enomem}");
        assert_eq!(bytes_words(10240), "10240 bytes");
        assert_eq!(bytes_words(200 << 20), "209715200 bytes (200.0 MiB)");
    }

    #[test]
    fn long_lines_keep_their_start_and_their_end() {
        assert_eq!(shorten("short", 10), "short");
        let long = format!("line 3: '{}' is not a size", "(".repeat(1000));
        let short = shorten(&long, 40);
        assert_eq!(short, "line 3: '((((((((((( …(984 characters left out)… (((((' is not a size");
    }

    #[test]
    fn include_fan_out_and_depth_are_capped() {
        let mut budget = IncludeBudget::default();
        assert!(budget.charge(MAX_INCLUDE_DEPTH + 1, 1).unwrap_err().contains("levels deep"));
        let mut budget = IncludeBudget::default();
        for _ in 0..MAX_INCLUDES {
            budget.charge(1, 10).unwrap();
        }
        assert!(budget.charge(1, 10).unwrap_err().contains("more than 64 files"));
        let mut budget = IncludeBudget::default();
        budget.charge(1, MAX_JOB_BYTES - 5).unwrap();
        assert!(budget.charge(2, 6).unwrap_err().contains("MiB of text"));
    }
}
