//! A Storage Spaces layout's own settings, as `New-VirtualDisk` takes them: `-NumberOfColumns` and
//! `-Interleave`. Unset, each is what Windows chooses (columns from the drives, at most 8; 256 KiB interleave,
//! `spaces`). Spelled after the layout's name with colons, so a `--layouts` list keeps its commas:
//! `storage-spaces-parity:columns=4:interleave=64k`. Parsing and the rules a setting must meet live here;
//! the arithmetic that uses them is `spaces`.

use std::fmt;

use crate::units::Bytes;

/// Interleave bounds accepted: a 4 KiB sector at least, and no more than the 256 MiB slab a column is cut from.
const MIN_INTERLEAVE: u64 = 4096;
const MAX_INTERLEAVE: u64 = 256 * 1024 * 1024;
/// Windows stripes a space over at most this many columns whatever is asked (`NumberOfColumns` is a UInt16, but
/// a pool's drives bound it; 64 keeps a typo from planning a 5,000-column space).
const MAX_TUNED_COLUMNS: u16 = 64;

/// Columns and interleave given for a space; 0 in either means "as Windows chooses".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Tune {
    pub columns: u16,
    pub interleave: u64,
}

impl Tune {
    /// Windows' own choice for both.
    pub const WINDOWS: Tune = Tune { columns: 0, interleave: 0 };

    pub fn is_default(self) -> bool {
        self == Tune::WINDOWS
    }

    /// Reads the `:key=value` settings after a space's name (`columns=4:interleave=64k`).
    pub fn parse(settings: &str) -> Result<Tune, String> {
        let mut tune = Tune::WINDOWS;
        for setting in settings.split(':').filter(|s| !s.trim().is_empty()) {
            let (key, value) = setting.split_once('=').ok_or_else(|| {
                format!("'{setting}' is not KEY=VALUE; a Storage Spaces layout takes columns=N and interleave=SIZE")
            })?;
            match key.trim().to_ascii_lowercase().as_str() {
                "columns" | "numberofcolumns" => tune.columns = parse_columns(value)?,
                "interleave" => tune.interleave = parse_interleave(value)?,
                other => {
                    return Err(format!(
                        "'{other}' is not a Storage Spaces setting; give columns=N (New-VirtualDisk -NumberOfColumns) \
                         or interleave=SIZE (-Interleave)"
                    ));
                }
            }
        }
        Ok(tune)
    }
}

fn parse_columns(value: &str) -> Result<u16, String> {
    match value.trim().parse::<u16>() {
        Ok(n) if (1..=MAX_TUNED_COLUMNS).contains(&n) => Ok(n),
        _ => Err(format!("columns={value}: give a whole number of columns from 1 to {MAX_TUNED_COLUMNS}")),
    }
}

fn parse_interleave(value: &str) -> Result<u64, String> {
    let bytes = value.trim().parse::<Bytes>().map_err(|e| format!("interleave={value}: {e}"))?.0;
    if !(MIN_INTERLEAVE..=MAX_INTERLEAVE).contains(&bytes) || !bytes.is_multiple_of(MIN_INTERLEAVE) {
        return Err(format!(
            "interleave={value}: give a multiple of 4 KiB from 4 KiB to 256 MiB (Windows' default is 256 KiB)"
        ));
    }
    Ok(bytes)
}

/// The settings as they are spelled after a layout's name (empty when both are Windows' own).
impl fmt::Display for Tune {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.columns > 0 {
            write!(f, ":columns={}", self.columns)?;
        }
        if self.interleave > 0 {
            write!(f, ":interleave={}", Bytes(self.interleave).exact().to_ascii_lowercase())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_print_back() {
        let tune = Tune::parse("columns=4:interleave=64k").unwrap();
        assert_eq!(tune, Tune { columns: 4, interleave: 65536 });
        assert_eq!(tune.to_string(), ":columns=4:interleave=64k");
        assert_eq!(Tune::parse("interleave=1m").unwrap().to_string(), ":interleave=1m");
        assert!(Tune::parse("").unwrap().is_default());
    }

    #[test]
    fn bad_settings_say_what_to_give() {
        assert!(Tune::parse("columns=0").unwrap_err().contains("from 1 to 64"));
        assert!(Tune::parse("columns=four").unwrap_err().contains("whole number"));
        assert!(Tune::parse("interleave=5000").unwrap_err().contains("multiple of 4 KiB"));
        assert!(Tune::parse("interleave=1g").unwrap_err().contains("256 MiB"));
        assert!(Tune::parse("stripes=4").unwrap_err().contains("-NumberOfColumns"));
        assert!(Tune::parse("columns").unwrap_err().contains("KEY=VALUE"));
    }
}
