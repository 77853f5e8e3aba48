//! Native TOML job files: any text must give a job or an error, never a panic, and any job a plan or an error.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(job) = streamcap::spec::parse_toml_job(Path::new("fuzz.toml"), text) {
        streamcap_fuzz::plan_job(&job);
    }
});
