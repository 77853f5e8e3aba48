//! fio job files: any text must give a job or an error, never a panic, and any job a plan or an error. Includes
//! and environment variables come from a host that has none, so a run never depends on this machine's files.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use streamcap::spec::{FioHost, parse_fio_job_with};

struct Bare;

impl FioHost for Bare {
    fn var(&self, name: &str) -> Option<String> {
        (name == "SIZE").then(|| "64m".to_string())
    }
    fn ncpus(&self) -> u64 {
        4
    }
    fn mb_memory(&self) -> u64 {
        8192
    }
    fn pagesize(&self) -> u64 {
        4096
    }
    fn read(&self, _path: &Path) -> std::io::Result<String> {
        Err(std::io::ErrorKind::NotFound.into())
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(job) = parse_fio_job_with(Path::new("/nonexistent/fuzz.fio"), text, &Bare) {
        streamcap_fuzz::plan_job(&job);
    }
});
