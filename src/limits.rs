//! Hard limits on what streamcap accepts from outside, in one place, and the one bounded reader for the text
//! files it is handed (job files, their includes, saved results).
//!
//! Every input a user controls must be refused before it can exhaust memory, threads or time: a job file is read
//! with a size cap (reading `/dev/zero` or a 10 GB file ends at once with a message), include chains are capped in
//! depth and in the number of files read (10 includes × 9 levels would be a billion reads), and counts are checked
//! against what the machine can hold before anything is allocated (`plan::resources`, `streams::limits`). Layer 0:
//! imports nothing from streamcap and does no I/O besides reading the file it is asked to read.

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
/// Phases (fio jobs, vdbench runs, TOML `[[phase]]` tables) in one job after expansion.
pub const MAX_PHASES: usize = 100_000;

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
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadLimitError::TooLarge { limit });
    }
    String::from_utf8(bytes).map_err(|e| ReadLimitError::NotText { at: e.utf8_error().valid_up_to() })
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
