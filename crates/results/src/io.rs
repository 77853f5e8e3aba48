//! Reading and writing result files. Writes go to a temporary file in the same directory and are renamed into
//! place (`crate::outfile`), so a reader (or a crash mid-write) never sees half a result.

use std::io;
use std::path::{Path, PathBuf};

use super::{RunResult, SCHEMA, SCHEMA_VERSION};

#[derive(Debug, thiserror::Error)]
pub enum ResultIoError {
    #[error("cannot write the result to {path}: {}", crate::limits::explain(.cause))]
    Write { path: PathBuf, cause: io::Error },
    #[error("{0}")]
    Output(#[from] crate::outfile::OutFileError),
    #[error("cannot read {path}: {cause}")]
    Read { path: PathBuf, cause: crate::limits::ReadLimitError },
    #[error("{path} is not a streamcap result: {detail}")]
    Format { path: PathBuf, detail: String },
}

pub fn write_result_atomically(result: &RunResult, path: &Path) -> Result<(), ResultIoError> {
    write_json_atomically(result, path)
}

/// Any result type (a run, a plan) as pretty JSON, renamed into place under the output-file rule
/// (`crate::outfile`: a regular file or nothing, never through a symlink, never an input); `-` is stdout.
pub fn write_json_atomically<T: serde::Serialize>(value: &T, path: &Path) -> Result<(), ResultIoError> {
    let mut text = serde_json::to_vec_pretty(value)
        .map_err(|e| ResultIoError::Write { path: path.to_path_buf(), cause: io::Error::other(e) })?;
    text.push(b'\n');
    crate::outfile::write(path, &text)?;
    Ok(())
}

pub fn read_result(path: &Path) -> Result<RunResult, ResultIoError> {
    let text = crate::limits::read_text_file(path, crate::limits::MAX_INPUT_FILE_BYTES)
        .map_err(|cause| ResultIoError::Read { path: path.to_path_buf(), cause })?;
    parse_result(path, &text)
}

/// Reads a result from the text of a file (`path` names it in messages). Never panics, whatever the text.
///
/// The schema and its version are read first by a pass that keeps nothing else, then the text is parsed straight
/// into the `RunResult`. Parsing into a `serde_json::Value` first (as this did) held every number and key of a
/// long interval series as a tree of maps at about ten times the text's size: `report` of an 8 MB result took
/// 102 MB, too much for a 64 MiB memory cgroup.
pub fn parse_result(path: &Path, text: &str) -> Result<RunResult, ResultIoError> {
    let format = |detail: String| ResultIoError::Format { path: path.to_path_buf(), detail };
    #[derive(serde::Deserialize)]
    struct Header {
        schema: Option<serde_json::Value>,
        schema_version: Option<serde_json::Value>,
    }
    let header: Header = serde_json::from_str(text).map_err(|e| format(e.to_string()))?;
    if header.schema.as_ref().and_then(|s| s.as_str()) != Some(SCHEMA) {
        return Err(format(format!("no \"schema\": \"{SCHEMA}\"")));
    }
    let version = header.schema_version.as_ref().and_then(|v| v.as_u64()).unwrap_or(0);
    if version > u64::from(SCHEMA_VERSION) {
        return Err(format(format!(
            "schema version {version} is newer than this streamcap understands ({SCHEMA_VERSION}); upgrade streamcap"
        )));
    }
    serde_json::from_str(text).map_err(|e| format(e.to_string()))
}
