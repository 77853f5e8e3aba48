//! `StridedSpec`: fio's zonemode=strided — transfer `size` bytes of a zone, then move on by `range` + `skip` —
//! as the TOML table `strided` (size, range, skip). A disk's zoned bit rate shows in the figures of each zone.
//! `StrideSpec`: vdbench's skip-sequential `stride=(min,max)`, as the TOML table `stride` (min, max).

use serde::{Deserialize, Serialize};

use crate::units::Bytes;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct StridedSpec {
    /// Bytes transferred in each zone (fio zonesize).
    pub size: Bytes,
    /// Bytes of a zone (fio zonerange); default: `size`. Only the first `size` bytes of a larger zone are read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<Bytes>,
    /// Bytes skipped after each zone (fio zoneskip).
    #[serde(default)]
    pub skip: Bytes,
}

impl StridedSpec {
    pub fn check(&self) -> Result<(), String> {
        if self.size.0 == 0 {
            return Err("strided.size must be above zero: the bytes transferred in each zone".into());
        }
        if let Some(range) = self.range
            && range.0 < self.size.0
        {
            return Err(format!(
                "strided.size ({}) above strided.range ({}) would read each zone more than once, which is not \
                 supported yet: make size at most range",
                self.size, range
            ));
        }
        Ok(())
    }

    /// From the start of one zone to the start of the next.
    pub fn stride(&self) -> u64 {
        self.range.unwrap_or(self.size).0.saturating_add(self.skip.0)
    }
}

/// vdbench's `stride=(min,max)`: where a random offset would be taken, skip forward instead from the end of the
/// last operation by `min` plus a random whole number of transfers below `max − min`, starting again at the
/// beginning past the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct StrideSpec {
    /// Smallest skip, bytes.
    pub min: Bytes,
    /// Largest skip (not reached: skips are below it unless it equals `min`), bytes.
    pub max: Bytes,
}

impl StrideSpec {
    pub fn check(&self) -> Result<(), String> {
        if self.max.0 < self.min.0 {
            return Err(format!("stride.max ({}) is below stride.min ({})", self.max, self.min));
        }
        Ok(())
    }
}
