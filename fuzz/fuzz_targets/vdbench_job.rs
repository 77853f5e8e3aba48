//! vdbench parameter files, as `streamcap run DIR --job FILE --dry-run` reads them: any text must give a job or an
//! error, never a panic, and any job (read, mapped) a plan or an error. Includes are looked up under a directory
//! that does not exist; anchors `H:` map to a made-up directory; the target on the command line is an existing
//! directory, so that luns in several places are mapped too. A file with several `hd=` records is also read as
//! under `mpirun -np HDS` and planned as its ranks, so that the hosts' mapping is reached.
#![no_main]

use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use streamcap::spec::{ReadOptions, parse_vdbench_job};

/// The `hd=` records of `text` other than `hd=default`: the ranks mpirun would have to start for it. A guess
/// from the text (includes and variables are not seen), which is all a fuzz input needs.
fn hosts(text: &str) -> u32 {
    let named = |line: &str| {
        let line = line.trim_start();
        let is_hd = line.get(..3).is_some_and(|k| k.eq_ignore_ascii_case("hd="));
        is_hd && !line[3..].split([',', ' ', '\t']).next().is_some_and(|n| n.eq_ignore_ascii_case("default"))
    };
    text.lines().filter(|l| named(l)).count().try_into().unwrap_or(u32::MAX)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let options = ReadOptions {
        anchors: vec![("H:".to_string(), PathBuf::from("/srv"))],
        target: Some(std::env::temp_dir()),
        ..Default::default()
    };
    let path = Path::new("/nonexistent/fuzz.vdb");
    if let Ok(job) = parse_vdbench_job(path, text, &options) {
        streamcap_fuzz::plan_job(&job);
    }
    let ranks = hosts(text);
    if ranks > 1 {
        if let Ok(job) = parse_vdbench_job(path, text, &ReadOptions { ranks: Some(ranks), ..options }) {
            streamcap_fuzz::plan_ranks(&job, ranks);
        }
    }
});
