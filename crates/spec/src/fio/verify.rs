//! fio's verify family onto streamcap's verification (docs/reliability.md): `verify` (the checksum, or a
//! pattern), `do_verify`, `verify_pattern`, `verify_backlog` and `verify_only`.
//!
//! streamcap checks every block it reads, reads back each worker's last writes with a backlog, and reads back
//! everything written after the last phase; one algorithm serves the whole run. fio's checksums that streamcap
//! does not compute are verified with the nearest one it does (a CRC with CRC-32C, a cryptographic hash with
//! SHA-256), and the notice says so.

use super::job::fail;
use super::mapping::Job;
use super::options::OptionError;
use crate::spec::{PhaseSpec, VerifyChoice};

pub(super) fn map_verify(job: &Job, phase: &mut PhaseSpec, notices: &mut Vec<String>) -> Result<(), OptionError> {
    let o = &job.options;
    if let Some(said) = o.get("verify_only").filter(|_| o.flag("verify_only")) {
        return Err(fail(
            said,
            "verify_only",
            "checking what an earlier run wrote is `streamcap run TARGET --verify-only ALGO`, on a run kept with \
             --keep; remove verify_only from the job",
        ));
    }
    let pattern = o.get("verify_pattern");
    let said = o.get("verify");
    let algorithm = match said.map(|s| s.raw.trim().to_ascii_lowercase()) {
        Some(word) if matches!(word.as_str(), "0" | "none" | "") => None,
        Some(word) if word == "null" => {
            notices.push(format!("job '{}': verify=null checks nothing, as in fio", job.name));
            None
        }
        Some(word) => Some(choice(&word, &job.name, notices).ok_or_else(|| {
            fail(
                said.expect("said"),
                "verify",
                format!("'{word}' is not a verify algorithm; expected crc32c, xxhash, sha256, md5, crc64 … or pattern"),
            )
        })?),
        // fio: a pattern without an algorithm verifies the pattern.
        None => pattern.map(|_| VerifyChoice::Pattern),
    };
    let Some(algorithm) = algorithm else {
        if let Some(said) = o.get("verify_backlog") {
            return Err(fail(said, "verify_backlog", "needs verify: add verify=crc32c (or remove verify_backlog)"));
        }
        return Ok(());
    };
    if let Some(p) = pattern {
        notices.push(format!(
            "job '{}': verify_pattern={}: streamcap writes and checks its own pattern, derived from the run's seed \
             and each block's place and generation",
            job.name, p.raw
        ));
    }
    if o.bool("do_verify") == Some(false) {
        notices.push(format!(
            "job '{}': do_verify=0: streamcap still checks every read and reads everything back after the last \
             phase",
            job.name
        ));
    }
    phase.verify = Some(algorithm);
    phase.verify_backlog = o.int("verify_backlog").filter(|n| *n > 0);
    Ok(())
}

/// streamcap's algorithm for fio's word; a checksum streamcap does not compute is replaced by the nearest one.
fn choice(word: &str, job: &str, notices: &mut Vec<String>) -> Option<VerifyChoice> {
    if let Ok(choice) = word.parse::<VerifyChoice>() {
        return Some(choice);
    }
    let nearest = match word {
        "crc64" | "crc32" | "crc16" | "crc7" | "meta" => VerifyChoice::Crc32c,
        "md5" | "sha1" | "sha512" | "sha224" | "sha384" | "sha3-224" | "sha3-256" | "sha3-384" | "sha3-512" => {
            VerifyChoice::Sha256
        }
        _ => return None,
    };
    notices.push(format!("job '{job}': verify={word}: streamcap verifies with {nearest}, the nearest it computes"));
    Some(nearest)
}
