//! `check --quick --during library-scan` on an emulated disk (a loop device with ext4, reads throttled to
//! 16 MiB/s with cgroup v1 blkio, as tests/streams_during.rs): the check runs every format's search alone and
//! again beside the scan, and its summary carries the "what breaks first" table — every format with its
//! capacity alone and beside the load, the scan's own rate, the sentence — in the JSON and in the terminal
//! summary; nothing is left under the mount point. Counts are not compared (a throttled 2160p remux plays one
//! or two streams, where a busy machine moves an edge by one). Root only; skipped loudly otherwise.

mod common;

use common::{ThrottledExt4, read_json};

#[test]
fn a_quick_check_with_a_load_adds_the_what_breaks_first_table() {
    let test = "check --quick --during library-scan on a throttled disk";
    let Some(disk) = ThrottledExt4::new(test, 512 << 20, "sc-during-check", "read_bps_device", 16 << 20) else {
        return;
    };
    let (dir, mount, group) = (&disk.dir, &disk.mount, &disk.group);
    let (json, summary) = (dir.path().join("check.json"), dir.path().join("summary.txt"));
    group.run_streamcap(&format!(
        "check {} --quick --during library-scan --library-size 128M --remove-library --no-html --json {} > {}",
        mount.point.display(),
        json.display(),
        summary.display()
    ));
    let left: Vec<String> = std::fs::read_dir(&mount.point)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n != "lost+found")
        .collect();
    assert!(left.is_empty(), "the check left {left:?}");
    let check = &read_json(&json)["check"];
    let table = &check["breaks_first"];
    eprintln!("{test}: {table}");
    assert_eq!(table["loads"], serde_json::json!(["library-scan"]));
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "a row per format: {table}");
    for row in rows {
        assert!(row["alone"].as_u64().is_some(), "every format ran alone: {row}");
        assert!(row["with"][0].as_u64().is_some(), "and beside the scan: {row}");
    }
    let scan = &table["rates"][0];
    assert_eq!(scan["load"], "library-scan");
    assert!(scan["files"].as_u64().unwrap() > 0 && scan["read_bytes"].as_u64().unwrap() > 0, "{scan}");
    assert!(!table["words"].as_str().unwrap().is_empty());
    let printed = std::fs::read_to_string(&summary).unwrap();
    assert!(printed.contains("What breaks first") && printed.contains("library-scan"), "{printed}");
}
