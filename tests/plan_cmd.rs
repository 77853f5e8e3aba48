//! `streamcap plan` through the real binary: the ranked table from the shipped catalogue, Markdown, the JSON
//! result and its schema, the ranking by goal, and bad input (a missing or malformed catalogue, an unknown pool
//! drive, an unknown layout) exiting 2 with the file, line and key at fault and nothing written.

mod common;

use common::{read_json, streamcap};
use predicates::prelude::PredicateBooleanExt;

const CATALOGUE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/drives.toml");

#[test]
fn the_shipped_catalogue_gives_a_ranked_table_with_limits_and_costs() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("plan.json");
    let out = streamcap()
        .args(["plan", "--drives", CATALOGUE, "--mix", "1080p:70,2160p:30", "--json", json.to_str().unwrap()])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    for words in ["usable", "streams", "degraded", "rebuilding", "per stream", "What limits each answer", "-bound"] {
        assert!(text.contains(words), "the table says {words}:\n{text}");
    }
    let plan = read_json(&json);
    assert_eq!(plan["schema"], "streamcap.planning");
    assert_eq!(plan["schema_version"], 1);
    assert_eq!(plan["goal"], "cost-per-stream");
    assert_eq!(plan["currency"], "USD");
    let answers = plan["answers"].as_array().unwrap();
    // 5 drive models × 8 buildable default layouts of 4 drives (mirror3 needs a multiple of 3).
    assert_eq!(answers.len(), 40);
    assert_eq!(plan["refused"].as_array().unwrap().len(), 5);
    let costs: Vec<f64> = answers.iter().map(|a| a["healthy"]["cost_per_stream"].as_f64().unwrap()).collect();
    assert!(costs.windows(2).all(|w| w[0] <= w[1]), "ranked by cost per stream: {costs:?}");
    for a in answers {
        assert!(a["usable_bytes"].as_u64().unwrap() <= a["raw_bytes"].as_u64().unwrap());
        assert!(a["degraded"]["streams"].as_u64().unwrap() <= a["healthy"]["streams"].as_u64().unwrap(), "{a}");
        assert!(!a["healthy"]["streams_limit"].as_str().unwrap().is_empty());
    }
    // A raid10 of four 20 TB disks: 40 TB usable, 50 % overhead, survives one failure.
    let raid10 = answers.iter().find(|a| a["layout"] == "raid10" && a["pool"] == "4 × mg10-20tb").unwrap();
    assert_eq!(raid10["usable_bytes"], 40_000_000_000_000u64);
    assert_eq!(raid10["overhead_pct"], 50.0);
    assert_eq!(raid10["tolerates"], 1);
}

#[test]
fn markdown_and_goals_and_mixed_pools() {
    let out = streamcap()
        .args(["plan", "--drives", CATALOGUE, "--pool", "mg10-20tb:2,exos-x24-24tb:2", "--layouts", "all"])
        .args(["--optimize", "capacity", "--format", "markdown", "--top", "0"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(text.contains("| # | pool | layout |"), "{text}");
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| #")).collect();
    assert!(rows[0].contains("| single |"), "the most capacity first: {}", rows[0]);
    assert!(text.contains("2 × mg10-20tb + 2 × exos-x24-24tb"));
    // btrfs raid1 of 20+20+24+24 TB: min(88/2, 88−24) = 44 TB.
    let raid1 = rows.iter().find(|r| r.contains("| btrfs-raid1 |")).unwrap();
    assert!(raid1.contains("44.0 TB"), "{raid1}");
}

#[test]
fn a_missing_catalogue_is_exit_2_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("plan.json");
    let missing = dir.path().join("nope.toml");
    streamcap()
        .args(["plan", "--drives", missing.to_str().unwrap(), "--json", json.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(
            predicates::str::contains("cannot read the drive catalogue").and(predicates::str::contains("nope.toml")),
        );
    assert!(!json.exists(), "nothing is written");
}

#[test]
fn a_malformed_catalogue_names_the_line_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("drives.toml");
    let text =
        std::fs::read_to_string(CATALOGUE).unwrap().replacen("capacity = \"24TB\"", "capacity = \"24 zettabytes\"", 1);
    let line = text.lines().position(|l| l.contains("zettabytes")).unwrap() + 1;
    std::fs::write(&bad, text).unwrap();
    streamcap()
        .args(["plan", "--drives", bad.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(format!("drives.toml: line {line}, key `capacity`")));
    std::fs::write(&bad, "[[drive]]\nname = \"x\"\ncapacity = \"1TB\"\nread = \"100MB/s\"\nwrite = \"100MB/s\"\n")
        .unwrap();
    streamcap()
        .args(["plan", "--drives", bad.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("line 1, key `rotational`"));
}

#[test]
fn bad_pools_layouts_and_results_are_exit_2() {
    streamcap()
        .args(["plan", "--drives", CATALOGUE, "--pool", "no-such-drive:4"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("mg10-20tb"));
    streamcap().args(["plan", "--drives", CATALOGUE, "--layouts", "raid7"]).assert().code(2);
    streamcap().args(["plan"]).assert().code(2).stderr(predicates::str::contains("--drives"));
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/result-v1.json");
    streamcap()
        .args(["plan", "--drive-result", fixture, "--price", "100 USD"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no sequential read phase"));
}

/// Issue 28: a Storage Spaces layout takes New-VirtualDisk's columns and interleave after its name; the
/// answer carries them in its name, the parity note follows them, and settings that cannot be are refused.
#[test]
fn a_space_s_columns_and_interleave_change_its_answer() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("plan.json");
    let tuned = "storage-spaces-parity:columns=4:interleave=64k";
    streamcap()
        .args(["plan", "--drives", CATALOGUE, "--pool", "mg10-20tb:6", "--json", json.to_str().unwrap()])
        .args(["--layouts", &format!("storage-spaces-parity,{tuned},storage-spaces-parity:columns=9")])
        .assert()
        .success()
        .stdout(predicates::str::contains("4 columns, 192 KiB of data per stripe"));
    let plan = read_json(&json);
    let answers = plan["answers"].as_array().unwrap();
    let windows = answers.iter().find(|a| a["layout"] == "storage-spaces-parity").unwrap();
    let given = answers.iter().find(|a| a["layout"] == tuned).unwrap();
    // Six 20 TB drives: Windows' six columns keep 5/6 for data (100 TB), four columns 3/4 (90 TB).
    // (The slab allocation is found by bisection: within a GB.)
    let usable = |a: &serde_json::Value| a["usable_bytes"].as_f64().unwrap() / 1e12;
    assert!((usable(windows) - 100.0).abs() < 1e-3 && (usable(given) - 90.0).abs() < 1e-3, "{windows} {given}");
    assert!(given["layout_label"].as_str().unwrap().contains("given columns=4 interleave=64k"), "{given}");
    let refused = plan["refused"].as_array().unwrap();
    assert!(refused.iter().any(|r| r["why"].as_str().unwrap().contains("columns=9 needs 9 drives")), "{refused:?}");
    for (layouts, words) in [
        ("storage-spaces-parity:stripes=4", "-NumberOfColumns"),
        ("storage-spaces-parity:interleave=5000", "multiple of 4 KiB"),
        ("raid5:columns=4", "only Storage Spaces layouts take settings"),
    ] {
        streamcap()
            .args(["plan", "--drives", CATALOGUE, "--layouts", layouts])
            .assert()
            .code(2)
            .stderr(predicates::str::contains(words));
    }
}

/// Issue 28: a controller's read cache that holds the file workload's working set serves its reads; the reason
/// line says so, and a cache given in a wrong form is refused.
#[test]
fn a_controller_cache_holding_the_working_set_serves_the_reads() {
    let plan = |cache: &str| {
        streamcap()
            .args(["plan", "--drives", CATALOGUE, "--pool", "mg10-20tb:4", "--layouts", "raid10"])
            .args(["--file-workload", "threads=32,size=4m,files=512", "--controller-cache", cache])
            .assert()
    };
    plan("4GiB:2000MB/s:50000").success().stdout(predicates::str::contains(
        "file workload 50000 reads/s (controller-cache-bound: its 4 GiB cache holds the working set (2 GiB)",
    ));
    // A 1 GiB cache does not hold 2 GiB: the disks serve the reads, seek-bound.
    plan("1GiB:2000MB/s:50000").success().stdout(predicates::str::contains("controller").not());
    plan("4GiB:2000MB/s").code(2).stderr(predicates::str::contains("SIZE:READ:IOPS"));
}

/// Issue 28: the cost of what was measured came from hand arithmetic. `--result` reads a result of a real
/// target and prints its figures with their costs beside the model's answers.
#[test]
fn a_measured_result_is_priced_beside_the_model() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/result-v1.json");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("plan.json");
    let output = streamcap()
        .args(["plan", "--drives", CATALOGUE, "--count", "2", "--layouts", "mirror", "--result", fixture])
        .args(["--price", "600 USD", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let plan = read_json(&json);
    let m = &plan["measured"][0];
    assert_eq!(m["name"], "result-v1");
    let reads = m["reads_per_s"].as_f64().unwrap();
    // 600 USD ÷ (reads/s ÷ 1000).
    assert!((m["cost_per_1000_reads"].as_f64().unwrap() - 600.0 / (reads / 1000.0)).abs() < 1e-9, "{m}");
    assert!(plan["answers"].as_array().unwrap().len() >= 2, "the model's answers are still there");
    assert!(stdout.contains("Measured (--result):") && stdout.contains("USD per 1,000 reads/s"), "{stdout}");
    // A price in another currency than the catalogue's is refused.
    streamcap()
        .args(["plan", "--drives", CATALOGUE, "--result", fixture, "--price", "600 EUR"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("one currency"));
}
