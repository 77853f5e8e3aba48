//! The journal of a verified run (vdbench's `journal=`): how streamcap records, beside its data, which
//! generation each block holds while the run writes, so that a run killed by a crash or a power loss can still
//! be checked later (`--verify-only`). Only the word lives here; `run/journal.rs` writes the journal.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::values::{ValueError, serde_via_str, value_error};

/// How the journal reaches storage around each write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalMode {
    /// Before each write its blocks are recorded as in flight, and after it completes as written, each record
    /// made durable (fdatasync) before the run goes on (vdbench journal=yes, -j): it survives a power loss.
    Sync,
    /// The same records without waiting for them to be durable (vdbench journal=noflush, -jn): they survive the
    /// process being killed, not necessarily a power loss.
    Noflush,
}

impl FromStr for JournalMode {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sync" | "yes" => Ok(JournalMode::Sync),
            "noflush" => Ok(JournalMode::Noflush),
            _ => Err(value_error(s, "journal mode", "sync or noflush")),
        }
    }
}

impl fmt::Display for JournalMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            JournalMode::Sync => "sync",
            JournalMode::Noflush => "noflush",
        })
    }
}
serde_via_str!(JournalMode);
