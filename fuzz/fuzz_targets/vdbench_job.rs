//! vdbench parameter files: any text must give a job or an error, never a panic, and any job a plan or an error.
//! Includes are looked up under a directory that does not exist; `$size` and `$files` are set as with `--set`.
#![no_main]

use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use streamcap::spec::{ReadOptions, parse_vdbench_job};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let options = ReadOptions {
        anchors: vec![("H:".to_string(), PathBuf::from("/srv"))],
        sets: Vec::new(),
        ..Default::default()
    };
    if let Ok(job) = parse_vdbench_job(Path::new("/nonexistent/fuzz.vdb"), text, &options) {
        streamcap_fuzz::plan_job(&job);
    }
});
