//! Saved results (`streamcap report FILE`): any text must give a result or an error, and any result must render
//! in every format `report` offers, never panic.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use streamcap::report::{write_check_summary, write_fio_json, write_streams_summary, write_summary};
use streamcap::results::parse_result;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(result) = parse_result(Path::new("fuzz.json"), text) else { return };
    let mut out = Vec::new();
    let _ = write_summary(&mut out, &result);
    let _ = write_fio_json(&mut out, &result);
    if let Some(streams) = &result.streams {
        let _ = write_streams_summary(&mut out, &result, streams);
    }
    if let Some(check) = &result.check {
        let _ = write_check_summary(&mut out, &result, check);
    }
});
