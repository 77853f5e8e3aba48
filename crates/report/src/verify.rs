//! The verification section of the terminal summary: what was checked, the first bad blocks with their kind,
//! expected and found, the ranges lost because a file ended early or was missing (with their offsets), and the
//! reads of the read-back pass that failed. "All good" only when nothing at all was wrong. The JSON result lists
//! every bad block (up to 1,000); this shows the first few.

use std::io::{self, Write};

use super::{Renderer, Summary};

use crate::results::VerifyResult;
use crate::units::Bytes;

/// Bad blocks and failed reads shown before "… and N more".
const SHOWN: usize = 10;

/// The verification on its own (`run --verify-only`, and why a quiet run failed).
impl Renderer<VerifyResult> for Summary {
    fn render(&self, v: &VerifyResult, out: &mut dyn Write) -> io::Result<()> {
        write_verify(out, v)
    }
}

/// The verification section, also of the run summary.
pub(super) fn write_verify(out: &mut dyn Write, v: &VerifyResult) -> io::Result<()> {
    let checked = format!(
        "{} blocks ({}) checked with {} over blocks of {}",
        v.blocks_checked,
        Bytes(v.bytes_checked),
        v.algorithm,
        Bytes(v.block_bytes)
    );
    let from = v.from.as_ref().map(|f| format!(" in {f}")).unwrap_or_default();
    match (v.bad_count, v.read_errors.count) {
        (0, 0) => writeln!(out, "verify: {checked}{from}: all good")?,
        (0, n) => writeln!(out, "verify: {checked}{from}: no bad block among them, but {n} read(s) failed (below)")?,
        (1, _) => writeln!(out, "verify: {checked}{from}: 1 bad block:")?,
        (n, _) => writeln!(out, "verify: {checked}{from}: {n} bad blocks:")?,
    }
    for b in v.bad_blocks.iter().take(SHOWN) {
        writeln!(
            out,
            "  {} at offset {} ({} bytes): {} — expected {}, found {}",
            b.file, b.offset, b.len, b.kind, b.expected, b.found
        )?;
    }
    let listed = v.bad_blocks.len().min(SHOWN) as u64;
    let in_ranges: u64 = v.lost_ranges.iter().map(|r| r.blocks).sum();
    let more = v.bad_count.saturating_sub(listed + in_ranges);
    if more > 0 {
        writeln!(out, "  … and {more} more (the JSON result lists up to 1,000)")?;
    }
    write_lost_ranges(out, &v.lost_ranges)?;
    if v.read_errors.count > 0 {
        writeln!(out, "verify: {} reads of the read-back failed; their blocks were not checked:", v.read_errors.count)?;
        for e in v.read_errors.records.iter().take(SHOWN) {
            writeln!(out, "  {} {} at offset {} ({} bytes): {}", e.op, e.path, e.offset, e.len, e.message)?;
        }
    }
    if !v.pass_complete {
        writeln!(out, "verify: the read-back of everything written did not run to its end (interrupted)")?;
    }
    if let Some(n) = v.in_flight {
        writeln!(
            out,
            "verify: journal: {n} block(s) were being written when the run ended; each may hold its new data, its \
             old data or a mix of the two, and only anything else is reported"
        )?;
    }
    if let Some(manifest) = &v.manifest {
        writeln!(out, "verify: kept for a later --verify-only ({manifest})")?;
    }
    Ok(())
}

/// The ranges lost because a file ended early or was missing, with their offsets (the first few).
fn write_lost_ranges(out: &mut dyn Write, ranges: &[crate::results::LostRange]) -> io::Result<()> {
    for r in ranges.iter().take(SHOWN) {
        let plural = if r.blocks == 1 { "" } else { "s" };
        let (from, to) = (r.offset, r.offset + r.len);
        writeln!(
            out,
            "  {} bytes {from}–{to} ({} written block{plural}, {}): lost — {}",
            r.file,
            r.blocks,
            Bytes(r.len),
            r.why
        )?;
    }
    if ranges.len() > SHOWN {
        writeln!(out, "  … and {} more lost ranges (in the JSON result)", ranges.len() - SHOWN)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{BadBlock, BadKind, ErrorSummary};

    #[test]
    fn bad_blocks_are_listed_with_kind_expected_and_found() {
        let bad = BadBlock {
            file: "/t/data.0".into(),
            offset: 65536,
            len: 65536,
            kind: BadKind::Misdirected,
            expected: "the block for offset 65536 of /t/data.0".into(),
            found: "an intact block for offset 0 of /t/data.0 (generation 1)".into(),
        };
        let v = VerifyResult {
            algorithm: "crc32c".into(),
            block_bytes: 65536,
            blocks_checked: 256,
            bytes_checked: 16 << 20,
            bad_count: 12,
            bad_blocks: vec![bad; 12],
            pass_complete: true,
            read_errors: ErrorSummary::default(),
            lost_ranges: Vec::new(),
            from: None,
            manifest: None,
            in_flight: None,
        };
        let mut out = Vec::new();
        write_verify(&mut out, &v).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("verify: 256 blocks (16 MiB) checked with crc32c over blocks of 64 KiB: 12 bad"),
            "{text}"
        );
        assert!(text.contains("/t/data.0 at offset 65536 (65536 bytes): misdirected — expected the block"), "{text}");
        assert!(text.contains("… and 2 more"), "{text}");
    }

    /// Guards issue 25 (item 10): a truncated data file printed "0 blocks checked … all good", then a short read.
    #[test]
    fn a_lost_range_or_a_failed_read_is_never_all_good() {
        let mut v = VerifyResult {
            algorithm: "crc32c".into(),
            block_bytes: 4096,
            blocks_checked: 1280,
            bytes_checked: 5 << 20,
            bad_count: 768,
            bad_blocks: Vec::new(),
            pass_complete: true,
            read_errors: ErrorSummary::default(),
            lost_ranges: vec![crate::results::LostRange {
                file: "/t/data.0".into(),
                offset: 5 << 20,
                len: 3 << 20,
                blocks: 768,
                why: "the file ends at byte 5242880 (it was truncated)".into(),
            }],
            from: None,
            manifest: None,
            in_flight: None,
        };
        let text = |v: &VerifyResult| {
            let mut out = Vec::new();
            write_verify(&mut out, v).unwrap();
            String::from_utf8(out).unwrap()
        };
        let said = text(&v);
        assert!(said.contains(": 768 bad blocks:") && !said.contains("all good") && !said.contains("more"), "{said}");
        assert!(
            said.contains("/t/data.0 bytes 5242880–8388608 (768 written blocks, 3 MiB): lost — the file ends"),
            "{said}"
        );
        v.bad_count = 0;
        v.lost_ranges.clear();
        v.read_errors.count = 1;
        assert!(text(&v).contains("no bad block among them, but 1 read(s) failed"), "{}", text(&v));
    }
}
