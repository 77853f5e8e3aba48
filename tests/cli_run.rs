//! Real runs of the binary on real files in a temporary directory: the result's shape and content, the CSV,
//! the built-in default job, TOML jobs, pacing and cleanup.

mod common;

use common::{entries, read_json, streamcap};
use predicates::prelude::*;

#[test]
fn dry_run_prints_the_plan_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    streamcap()
        .arg("run")
        .arg(dir.path())
        .args(["--rw", "randread", "--bs", "4k", "--size", "64M", "--iodepth", "32", "--runtime", "10s", "--dry-run"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("phase 1: rand-read 4k qd32 10s")
                .and(predicate::str::contains("engine"))
                .and(predicate::str::contains("iodepth 32"))
                .and(predicate::str::contains("measures for 10 s"))
                .and(predicate::str::contains(".streamcap")),
        );
    assert!(entries(dir.path()).is_empty());
}

/// A read direction's totals and latency: 4 KiB operations, fio's 17 percentiles in ascending order, between
/// the minimum and the maximum.
fn assert_read_figures(read: &serde_json::Value) {
    assert!(read["ops"].as_u64().unwrap() > 0);
    assert!(read["iops"].as_f64().unwrap() > 0.0);
    assert_eq!(read["bytes"].as_u64().unwrap(), read["ops"].as_u64().unwrap() * 4096);
    let percentiles = read["latency"]["percentiles_ns"].as_array().unwrap();
    assert_eq!(percentiles.len(), 17, "fio's default percentile list");
    let values: Vec<u64> = percentiles.iter().map(|p| p["ns"].as_u64().unwrap()).collect();
    assert!(values.windows(2).all(|w| w[0] <= w[1]), "percentiles ascend: {values:?}");
    assert!(read["latency"]["min_ns"].as_u64().unwrap() <= values[0]);
    assert!(read["latency"]["max_ns"].as_u64().unwrap() >= values[16]);
}

#[test]
fn a_random_read_run_writes_a_complete_result_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let csv = out.path().join("r.csv");
    streamcap()
        .arg("run")
        .arg(dir.path())
        .args(["--rw", "randread", "--bs", "4k", "--size", "32M", "--iodepth", "8", "--runtime", "2s"])
        .args(["--interval", "500ms", "--seed", "7"])
        .arg("--json")
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .assert()
        .success()
        .stdout(predicate::str::contains("IOPS").and(predicate::str::contains("p99")));
    assert!(entries(dir.path()).is_empty(), "left behind: {:?}", entries(dir.path()));

    let r = read_json(&json);
    assert_eq!(r["schema"], "streamcap.run");
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["status"], "completed");
    assert!(r["finished_at"].as_str().unwrap().ends_with('Z'));
    assert!(r["host"]["cpu_count"].as_u64().unwrap() >= 1);
    assert!(r["host"]["ram"].as_u64().unwrap() > 0);
    assert_eq!(r["target"]["kind"], "directory");
    assert_eq!(r["config"]["phases"][0]["seed"], 7);
    let phase = &r["phases"][0];
    assert_eq!(phase["status"], "completed");
    assert_eq!(phase["rw"], "randread");
    assert_eq!(phase["iodepth"], 8);
    let read = &phase["read"];
    assert_read_figures(read);
    assert!(phase["write"].is_null(), "a read-only phase reports no writes");
    assert!(phase["cpu"]["per_op_us"].as_f64().unwrap() > 0.0);
    assert!(phase["cpu"]["system"]["idle_pct"].is_number());
    assert!(phase["memory"]["peak_rss_bytes"].as_u64().unwrap() > 0);
    assert_eq!(phase["direct"], true);
    assert_eq!(phase["cache_affected"], false);
    let intervals = phase["intervals"].as_array().unwrap();
    assert_eq!(intervals.len(), 4, "2 s at 500 ms intervals");
    // Regression: the drain after the deadline used to be reported as an interval of a few microseconds with an
    // absurd rate; it belongs to the last full interval.
    for interval in intervals {
        assert!(interval["length_s"].as_f64().unwrap() >= 0.45, "{interval}");
    }
    let interval_ops: u64 = intervals.iter().map(|i| i["read"]["ops"].as_u64().unwrap_or(0)).sum();
    assert_eq!(interval_ops, read["ops"].as_u64().unwrap(), "intervals add up to the total");

    let rows = std::fs::read_to_string(&csv).unwrap();
    let mut lines = rows.lines();
    assert!(lines.next().unwrap().starts_with("phase,phase_name,start_s,length_s,read_iops"));
    assert_eq!(lines.count(), intervals.len());
}

#[test]
fn the_default_job_runs_six_phases_and_cleans_up() {
    // `streamcap run` with no arguments runs the built-in job in the current directory; the overrides only make
    // it short enough for a test.
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("default.json");
    streamcap()
        .current_dir(dir.path())
        .args(["run", "--runtime", "300ms", "--ramp", "0s", "--size", "64M", "--json"])
        .arg(&json)
        .assert()
        .success()
        .stdout(predicate::str::contains("seq-write 1M qd8").and(predicate::str::contains("rand-write 4k qd1")));
    assert!(entries(dir.path()).is_empty(), "left behind: {:?}", entries(dir.path()));
    let r = read_json(&json);
    assert_eq!(r["config"]["origin"]["kind"], "default");
    let phases = r["phases"].as_array().unwrap();
    let names: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "seq-write 1M qd8",
            "seq-read 1M qd8",
            "rand-read 4k qd32",
            "rand-write 4k qd32",
            "rand-read 4k qd1",
            "rand-write 4k qd1"
        ]
    );
    assert_eq!(phases[2]["iodepth"], 32);
    assert!(phases.iter().all(|p| p["status"] == "completed"));
    assert!(phases[0]["write"]["ops"].as_u64().unwrap() > 0);
    assert!(phases[1]["read"]["ops"].as_u64().unwrap() > 0);
}

#[test]
fn a_two_phase_toml_job_writes_then_reads_the_same_data() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("job.json");
    let job = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/jobs/seq-write-then-random-read.toml");
    streamcap()
        .arg("run")
        .arg(dir.path())
        .args(["--job", job, "--size", "32M", "--runtime", "1s", "--ramp", "0s", "--quiet", "--json"])
        .arg(&json)
        .assert()
        .success()
        .stdout(predicate::str::is_empty());
    let r = read_json(&json);
    let phases = r["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2);
    assert_eq!(phases[0]["name"], "write the data set");
    assert!(phases[0]["write"]["bytes"].as_u64().unwrap() > 0);
    assert_eq!(phases[1]["name"], "random 4k reads");
    assert!(phases[1]["read"]["ops"].as_u64().unwrap() > 0);
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn without_a_runtime_a_phase_does_one_pass_over_the_data_set() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("pass.json");
    streamcap()
        .arg("run")
        .arg(dir.path())
        .args(["--rw", "write", "--bs", "1M", "--size", "24M", "--jobs", "3", "--iodepth", "2", "--quiet", "--json"])
        .arg(&json)
        .assert()
        .success();
    let r = read_json(&json);
    assert_eq!(r["phases"][0]["write"]["bytes"].as_u64().unwrap(), 24 << 20);
}

#[test]
fn fsync_every_flushes_after_every_nth_write_even_at_queue_depth_one() {
    // Regression: the flush needed a second free slot, so at queue depth 1 (and with the sync engine) it never
    // happened.
    for engine in ["sync", "io_uring"] {
        let dir = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let json = out.path().join("fsync.json");
        streamcap()
            .arg("run")
            .arg(dir.path())
            .args(["--rw", "write", "--bs", "4k", "--size", "1M", "--fsync-every", "4", "--engine", engine])
            .args(["--quiet", "--json"])
            .arg(&json)
            .assert()
            .success();
        let phase = &read_json(&json)["phases"][0];
        assert_eq!(phase["write"]["ops"], 256, "{engine}");
        assert_eq!(phase["sync"]["ops"], 64, "{engine}: one fsync per 4 writes");
    }
}

#[test]
fn paced_runs_hold_the_rate_and_report_latency_from_the_due_time() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("paced.json");
    // The null engine completes every request at once, so what is checked is the pacer's schedule, not the
    // speed of the machine's disk: 512 reads (2 MiB of 4 KiB), one due every 1/256 s. A pacer cannot finish
    // before the last one falls due at 511/256 s; a busy machine only makes it later, so this cannot flake.
    streamcap()
        .arg("run")
        .arg(dir.path())
        .args(["--rw", "randread", "--bs", "4k", "--size", "2M", "--rate-iops", "256", "--engine", "null"])
        .args(["--quiet", "--json"])
        .arg(&json)
        .assert()
        .success();
    let r = read_json(&json);
    let phase = &r["phases"][0];
    let ops = phase["read"]["ops"].as_u64().unwrap();
    assert_eq!(ops, 512, "every read of the data set is issued");
    let duration = phase["duration_s"].as_f64().unwrap();
    assert!(duration >= 511.0 / 256.0, "the last read falls due at 1.996 s, the phase took {duration} s");
    assert_eq!(phase["read"]["due_latency"]["samples"].as_u64().unwrap(), ops, "every paced operation has a due time");
}

#[test]
fn sync_engine_and_buffered_io_work_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("sync.json");
    streamcap()
        .arg("run")
        .arg(dir.path())
        .args(["--rw", "randrw", "--rdpct", "70", "--engine", "sync", "--iodepth", "16", "--buffered"])
        .args(["--size", "16M", "--runtime", "1s", "--fsync-every", "16", "--end-fsync", "--json"])
        .arg(&json)
        .assert()
        .success()
        .stderr(predicate::str::contains("--iodepth 16 becomes 1"))
        .stdout(predicate::str::contains("[cache]").and(predicate::str::contains("cache:")));
    let r = read_json(&json);
    let phase = &r["phases"][0];
    assert_eq!(phase["engine"]["name"], "sync");
    assert_eq!(phase["iodepth"], 1);
    assert_eq!(phase["direct"], false);
    assert_eq!(phase["cache_affected"], true, "16M buffered is smaller than twice the RAM");
    let (reads, writes) = (phase["read"]["ops"].as_u64().unwrap(), phase["write"]["ops"].as_u64().unwrap());
    let share = reads as f64 / (reads + writes) as f64;
    assert!((0.6..0.8).contains(&share), "70 % reads, got {share}");
    assert!(phase["sync"]["ops"].as_u64().unwrap() > 0, "fsync operations are timed and counted");
}

#[test]
fn an_existing_file_can_be_read_as_the_target() {
    let dir = tempfile::tempdir().unwrap();
    let media = dir.path().join("movie.mkv");
    std::fs::write(&media, vec![1u8; 8 << 20]).unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("file.json");
    streamcap()
        .arg("run")
        .arg(&media)
        .args(["--rw", "read", "--bs", "1M", "--quiet", "--json"])
        .arg(&json)
        .assert()
        .success();
    let r = read_json(&json);
    assert_eq!(r["target"]["kind"], "file");
    assert_eq!(r["phases"][0]["read"]["bytes"].as_u64().unwrap(), 8 << 20);
    assert_eq!(entries(dir.path()), ["movie.mkv"]);
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{} run {} --rw read --size 16M --dry-run | head -c 10 >/dev/null; echo \"${{PIPESTATUS[0]:-$?}}\"",
            common::streamcap_path().display(),
            dir.path().display()
        ))
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
}

#[test]
fn report_renders_a_saved_result() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("saved.json");
    streamcap()
        .arg("run")
        .arg(dir.path())
        .args(["--rw", "randwrite", "--size", "16M", "--runtime", "500ms", "--quiet", "--json"])
        .arg(&json)
        .assert()
        .success();
    streamcap().arg("report").arg(&json).assert().success().stdout(predicate::str::contains("rand-write 4k qd1"));
    std::fs::write(out.path().join("other.json"), "{\"hello\": 1}").unwrap();
    streamcap()
        .arg("report")
        .arg(out.path().join("other.json"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a streamcap result"));
}

#[test]
fn sequential_writes_cover_every_byte_whatever_the_jobs_and_block_sizes() {
    // Regression: the split between jobs dropped the remainder, and block-size ranges skipped region tails, so a
    // later read phase read holes as if they were data. Every 4 KiB block streamcap writes carries its offset.
    let dir = tempfile::tempdir().unwrap();
    streamcap()
        .arg("run")
        .arg(dir.path())
        .args(["--rw", "write", "--bs", "4k-64k", "--size", "10M", "--files", "4", "--jobs", "3", "--keep", "--quiet"])
        .assert()
        .success();
    let base = dir.path().join(".streamcap");
    let run = std::fs::read_dir(&base).unwrap().next().unwrap().unwrap().path();
    let mut files = 0;
    for entry in std::fs::read_dir(&run).unwrap() {
        let path = entry.unwrap().path();
        if !path.file_name().unwrap().to_string_lossy().starts_with("data.") {
            continue;
        }
        files += 1;
        let data = std::fs::read(&path).unwrap();
        for (i, block) in data.chunks(4096).enumerate() {
            assert_eq!(block[..8], ((i * 4096) as u64).to_le_bytes(), "{} block {i} was never written", path.display());
        }
    }
    assert_eq!(files, 4);
    // --keep marks the directory, so a later run does not remove it as a killed run's leftovers.
    streamcap().arg("run").arg(dir.path()).args(["--rw", "read", "--size", "4M", "--quiet"]).assert().success();
    assert!(run.exists());
}

#[test]
fn io_size_is_exact_and_the_ramp_is_not_counted() {
    // Regression: operations submitted during the ramp were counted when they completed after it (+48 % bytes
    // with a deep queue), and --io-size was split between jobs with truncation.
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("exact.json");
    streamcap()
        .arg("run")
        .arg(dir.path())
        .args(["--rw", "randread", "--bs", "4k", "--size", "16M", "--iodepth", "16", "--jobs", "3"])
        .args(["--io-size", "40M", "--ramp", "300ms", "--quiet", "--json"])
        .arg(&json)
        .assert()
        .success();
    let read = &read_json(&json)["phases"][0]["read"];
    assert_eq!(read["ops"], 10240, "40 MiB of 4 KiB reads, shared by 3 jobs, ramp excluded");
    assert_eq!(read["bytes"], 40 << 20);
}

/// `--format json` prints the result JSON on stdout, as `--json -` does, and creates no file named `-`; a
/// closed pipe ends it quietly; `report --format json` prints the saved result again; `--format json` with
/// `--json -` would print two documents on stdout and is refused before anything runs.
#[test]
fn format_json_prints_the_result_on_stdout_and_a_closed_pipe_ends_it_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let run = ["--rw", "read", "--bs", "1M", "--size", "8M", "--runtime", "300ms"];
    let output = streamcap().arg("run").arg(dir.path()).args(run).args(["--format", "json"]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let r: serde_json::Value = serde_json::from_slice(&output.stdout).expect("stdout is the result JSON alone");
    assert_eq!(r["schema"], "streamcap.run");
    assert_eq!(r["phases"].as_array().map(Vec::len), Some(1));
    let saved = out.path().join("r.json");
    std::fs::write(&saved, &output.stdout).unwrap();
    let again = streamcap().arg("report").arg(&saved).args(["--format", "json"]).output().unwrap();
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&again.stdout).unwrap(), r);
    streamcap()
        .current_dir(out.path())
        .arg("run")
        .arg(dir.path())
        .args(run)
        .args(["--format", "json", "--json", "-"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--format json prints to standard output, and so would --json -"));
    let piped = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "cd {}; {} run {} --rw read --bs 1M --size 8M --runtime 300ms --format json | head -c 10 >/dev/null; \
             echo \"${{PIPESTATUS[0]}}\"",
            out.path().display(),
            common::streamcap_path().display(),
            dir.path().display()
        ))
        .env_remove("RUST_BACKTRACE")
        .env("STREAMCAP_NO_HISTORY", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&piped.stderr);
    assert_eq!(String::from_utf8_lossy(&piped.stdout).trim(), "0", "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe") && !stderr.contains("incomplete"),
        "{stderr}"
    );
    assert_eq!(entries(out.path()), ["r.json"], "no file named -");
    assert!(entries(dir.path()).is_empty());
}
