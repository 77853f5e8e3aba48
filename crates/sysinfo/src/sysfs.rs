//! Small readers for one-value kernel files (sysfs attributes) and the octal escaping /proc uses in paths.
//!
//! Every reader returns `None` for a missing, unreadable or empty file: sysfs attributes come and go with
//! kernel versions and drivers, and a missing one must degrade a fact to "unknown", never fail a run. This
//! file knows nothing about what the attributes mean.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// The trimmed content of a one-line attribute, or `None` when it is missing or blank.
pub(crate) fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// A decimal attribute such as `size` or `queue/rotational`.
pub(crate) fn read_u64(path: impl AsRef<Path>) -> Option<u64> {
    read_trimmed(path)?.parse().ok()
}

/// The active entry of a choice attribute such as `queue/scheduler` or btrfs `read_policy`: the bracketed
/// entry ("none [mq-deadline] kyber" → "mq-deadline"); a lone word is taken as is (some drivers print just
/// "none").
pub(crate) fn active_choice(text: &str) -> Option<String> {
    let text = text.trim();
    if let Some(start) = text.find('[') {
        let rest = &text[start + 1..];
        let end = rest.find(']')?;
        let name = rest[..end].trim();
        return (!name.is_empty()).then(|| name.to_string());
    }
    let mut words = text.split_whitespace();
    match (words.next(), words.next()) {
        (Some(only), None) => Some(only.to_string()),
        _ => None,
    }
}

/// Parses "MAJ:MIN" as found in `dev` attributes and in /proc/self/mountinfo.
pub(crate) fn parse_dev_numbers(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.trim().split_once(':')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Names of the entries of a directory (`slaves/`, `holders/`, `devices/`), sorted so output is stable;
/// empty when the directory is missing.
pub(crate) fn dir_names(path: impl AsRef<Path>) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(path) else { return Vec::new() };
    let mut names: Vec<String> =
        entries.filter_map(|e| e.ok()).filter_map(|e| e.file_name().into_string().ok()).collect();
    names.sort();
    names
}

/// Undoes the octal escapes (`\040` space, `\011` tab, `\012` newline, `\134` backslash) the kernel writes
/// into paths in /proc/self/mountinfo and /proc/swaps, so that a mount point with a space is a real path.
/// Paths are bytes on Linux, so the result is built from bytes rather than assumed to be UTF-8.
pub(crate) fn unescape_path(field: &str) -> PathBuf {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() && is_octal_escape(&bytes[i + 1..i + 4]) {
            let value = bytes[i + 1..i + 4].iter().fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
            // Three octal digits can reach 0o777; the kernel only escapes single bytes, so anything larger
            // is not an escape and is kept literally.
            if let Ok(byte) = u8::try_from(value) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    PathBuf::from(OsString::from_vec(out))
}

fn is_octal_escape(digits: &[u8]) -> bool {
    digits.len() == 3 && digits.iter().all(|d| (b'0'..=b'7').contains(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescapes_kernel_octal_escapes() {
        assert_eq!(unescape_path(r"/mnt/my\040disk"), PathBuf::from("/mnt/my disk"));
        assert_eq!(unescape_path(r"/a\011b\012c\134d"), PathBuf::from("/a\tb\nc\\d"));
        assert_eq!(unescape_path(r"/plain"), PathBuf::from("/plain"));
        // A trailing or malformed escape is kept as written.
        assert_eq!(unescape_path(r"/x\04"), PathBuf::from(r"/x\04"));
        assert_eq!(unescape_path(r"/x\999"), PathBuf::from(r"/x\999"));
    }

    #[test]
    fn parses_device_numbers() {
        assert_eq!(parse_dev_numbers("254:0\n"), Some((254, 0)));
        assert_eq!(parse_dev_numbers("0:45"), Some((0, 45)));
        assert_eq!(parse_dev_numbers("254"), None);
        assert_eq!(parse_dev_numbers("a:b"), None);
    }

    #[test]
    fn missing_attributes_are_none() {
        assert_eq!(read_trimmed("/sys/this/does/not/exist"), None);
        assert_eq!(read_u64("/sys/this/does/not/exist"), None);
        assert!(dir_names("/sys/this/does/not/exist").is_empty());
    }
}
