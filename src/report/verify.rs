//! The verification section of the terminal summary: what was checked, the first bad blocks with their kind,
//! expected and found, and the reads of the read-back pass that failed. The JSON result lists every bad block
//! (up to 1,000); this shows the first few.

use std::io::{self, Write};

use crate::results::VerifyResult;
use crate::units::Bytes;

/// Bad blocks and failed reads shown before "… and N more".
const SHOWN: usize = 10;

pub fn write_verify_summary(out: &mut dyn Write, v: &VerifyResult) -> io::Result<()> {
    let checked = format!(
        "{} blocks ({}) checked with {} over blocks of {}",
        v.blocks_checked,
        Bytes(v.bytes_checked),
        v.algorithm,
        Bytes(v.block_bytes)
    );
    let from = v.from.as_ref().map(|f| format!(" in {f}")).unwrap_or_default();
    match v.bad_count {
        0 => writeln!(out, "verify: {checked}{from}: all good")?,
        1 => writeln!(out, "verify: {checked}{from}: 1 bad block:")?,
        n => writeln!(out, "verify: {checked}{from}: {n} bad blocks:")?,
    }
    for b in v.bad_blocks.iter().take(SHOWN) {
        writeln!(
            out,
            "  {} at offset {} ({} bytes): {} — expected {}, found {}",
            b.file, b.offset, b.len, b.kind, b.expected, b.found
        )?;
    }
    let listed = v.bad_blocks.len().min(SHOWN) as u64;
    if v.bad_count > listed {
        writeln!(out, "  … and {} more (the JSON result lists up to 1,000)", v.bad_count - listed)?;
    }
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
            from: None,
            manifest: None,
            in_flight: None,
        };
        let mut out = Vec::new();
        write_verify_summary(&mut out, &v).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("verify: 256 blocks (16 MiB) checked with crc32c over blocks of 64 KiB: 12 bad"),
            "{text}"
        );
        assert!(text.contains("/t/data.0 at offset 65536 (65536 bytes): misdirected — expected the block"), "{text}");
        assert!(text.contains("… and 2 more"), "{text}");
    }
}
