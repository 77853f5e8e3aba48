//! Output formats pinned by snapshots of a fixed `RunResult` (tests/fixtures/result-v1.json, a real result
//! with an error and a cache-affected phase edited in): the terminal summary and the interval CSV. A change to
//! either shows up here as a diff to review. To accept an intended change, run the test with
//! `UPDATE_SNAPSHOTS=1` and commit the new files. The fixture also guards that schema-1 results stay readable.

use std::path::Path;

use streamcap::report::{CsvSink, write_summary};
use streamcap::results::read_result;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/result-v1.json");

fn check_snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} is missing: run with UPDATE_SNAPSHOTS=1 to create it", path.display()));
    assert!(
        expected == actual,
        "{name} changed; if intended, run with UPDATE_SNAPSHOTS=1.\n--- expected\n{expected}\n--- actual\n{actual}"
    );
}

#[test]
fn terminal_summary_of_a_fixed_result() {
    let result = read_result(Path::new(FIXTURE)).expect("schema-1 results stay readable");
    let mut out = Vec::new();
    write_summary(&mut out, &result).unwrap();
    let text = String::from_utf8(out).unwrap();
    check_snapshot("result-v1.summary.txt", &text);
    // The parts a person looks for, whatever the layout.
    assert!(text.contains("write the data set") && text.contains("random 4k reads"));
    assert!(text.contains("[cache]") && text.contains("cache:"));
    assert!(text.contains("read /srv/media/.streamcap/run-mediabox-1-1/data.0 at offset 1048576"));
}

#[test]
fn interval_csv_of_a_fixed_result() {
    let result = read_result(Path::new(FIXTURE)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.csv");
    let mut sink = CsvSink::create(&path).unwrap();
    for phase in &result.phases {
        for point in &phase.intervals {
            sink.write(phase.index, &phase.name, point).unwrap();
        }
    }
    drop(sink);
    check_snapshot("result-v1.intervals.csv", &std::fs::read_to_string(&path).unwrap());
}
