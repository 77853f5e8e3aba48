//! Faults injected on real I/O: `streamcap run` against a directory inside the FUSE test filesystem
//! (tests/faultfs), which passes through to a backing directory and injects errors, short transfers and latency
//! spikes by rule. Each test compares what streamcap reported with the filesystem's own log of what it
//! injected, checks the exit code, and checks that nothing is left in the backing directory. Root only (FUSE
//! mount); each test says SKIPPED where it cannot run.

mod common;
mod faultfs;

use std::time::Duration;

use faultfs::{Fault, FaultMount, Injected, Op, Rule};
use serde_json::Value;

const MIB: u64 = 1 << 20;

/// What one `streamcap run` left: exit code, output and the JSON result.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    json: Value,
}

/// Runs `streamcap run MOUNT ARGS --json …` against the mounted filesystem.
fn streamcap_run(fs: &FaultMount, args: &str) -> Run {
    let out = tempfile::tempdir().expect("a directory for the result");
    let json = out.path().join("result.json");
    let output = common::streamcap()
        .arg("run")
        .arg(&fs.point)
        .args(args.split_whitespace())
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run streamcap");
    Run {
        code: output.status.code().expect("streamcap exited, not killed"),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        json: common::read_json(&json),
    }
}

/// The error records of the run's first phase.
fn records(run: &Run) -> &Vec<Value> {
    run.json["phases"][0]["errors"]["records"].as_array().expect("an error list")
}

/// Every injected error appears once among the records with the same operation, path, offset, length and errno,
/// and there is no record that was not injected.
fn assert_reported(fs: &FaultMount, run: &Run, injected: &[Injected]) {
    let records = records(run);
    assert_eq!(records.len(), injected.len(), "one record per injected error: {records:#?} vs {injected:#?}");
    assert_eq!(run.json["phases"][0]["errors"]["count"], injected.len());
    for fault in injected {
        let Fault::Errno(errno) = fault.fault else { panic!("only errors are reported: {fault:?}") };
        let op = match fault.op {
            Op::Read => "read",
            Op::Write => "write",
            Op::Unlink => "unlink",
        };
        let path = fs.point.join(&fault.path).display().to_string();
        let found = records.iter().any(|r| {
            r["op"] == op
                && r["path"] == path.as_str()
                && r["offset"] == fault.offset
                && r["len"] == fault.len
                && r["errno"] == errno
        });
        assert!(found, "{fault:?} (path {path}) is not among {records:#?}");
    }
}

/// (offset, length) from "cannot write LEN bytes of data into PATH at offset OFFSET".
fn failed_write(stderr: &str) -> (u64, u64) {
    let number_after = |word: &str| -> u64 {
        let rest = &stderr[stderr.find(word).unwrap_or_else(|| panic!("no '{word}' in {stderr}")) + word.len()..];
        rest.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
    };
    (number_after("at offset "), number_after("cannot write "))
}

fn assert_nothing_left(fs: &FaultMount, run: &Run) {
    assert!(fs.leftovers().is_empty(), "left behind: {:?}\n{}{}", fs.leftovers(), run.stdout, run.stderr);
}

fn errors_injected(fs: &FaultMount) -> Vec<Injected> {
    fs.injected().into_iter().filter(|i| matches!(i.fault, Fault::Errno(_))).collect()
}

#[test]
fn every_injected_error_is_recorded_with_operation_path_offset_and_errno() {
    // Writes fail with EIO in chosen ranges, reads with EBADMSG after 20 good ones; both engines, sequential
    // and random, queue depth 1 and 8. Under --continue-on-error the run goes on and exits 1.
    let cases = [
        ("sync", "--rw write --bs 64k --size 4M", Op::Write, libc::EIO),
        ("io_uring", "--rw randwrite --bs 64k --size 4M --iodepth 8", Op::Write, libc::EIO),
        ("sync", "--rw read --bs 64k --size 4M", Op::Read, libc::EBADMSG),
        ("io_uring", "--rw randread --bs 64k --size 4M --iodepth 8", Op::Read, libc::EBADMSG),
    ];
    for (engine, workload, op, errno) in cases {
        let Some(fs) = FaultMount::new("every_injected_error_is_recorded") else { return };
        // Only the workload's 64 KiB requests: the data files are filled (in 1 MiB requests) before a read or
        // random phase, and an error there would be a set-up failure instead.
        let rule = Rule::new(op, Fault::Errno(errno)).file("data.0").len(64 << 10);
        match op {
            // The first write into each of two 1 MiB ranges (sequential writes meet 1 MiB and 3 MiB exactly;
            // 64 random ones meet each range of 16 blocks all but surely).
            Op::Write => {
                fs.add(rule.clone().range(MIB, 2 * MIB).times(1));
                fs.add(rule.range(3 * MIB, 4 * MIB).times(1));
            }
            Op::Read | Op::Unlink => fs.add(rule.skip(20).times(3)),
        }
        let run = streamcap_run(&fs, &format!("{workload} --engine {engine} --continue-on-error"));
        let injected = errors_injected(&fs);
        assert!(!injected.is_empty(), "{engine} {workload}: no fault was met");
        assert_eq!(run.code, 1, "{engine} {workload}: failed operations exit 1\n{}{}", run.stdout, run.stderr);
        assert_eq!(run.json["status"], "completed");
        assert_eq!(run.json["phases"][0]["direct"], true, "O_DIRECT works on FUSE: no fallback");
        assert_reported(&fs, &run, &injected);
        assert!(run.stdout.contains("failed operation"), "the summary lists them:\n{}", run.stdout);
        assert_nothing_left(&fs, &run);
    }
}

#[test]
fn an_error_stops_the_phase_and_the_partial_result_is_kept() {
    let Some(fs) = FaultMount::new("an_error_stops_the_phase") else { return };
    fs.add(Rule::new(Op::Write, Fault::Errno(libc::EIO)).file("data.0").at(MIB));
    let run = streamcap_run(&fs, "--rw write --bs 64k --size 4M --engine sync");
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.json["status"], "io_error");
    assert_eq!(run.json["phases"][0]["status"], "io_error");
    assert_reported(&fs, &run, &errors_injected(&fs));
    // Queue depth 1, sequential: exactly the 16 writes before the failed one completed, and none after it.
    assert_eq!(run.json["phases"][0]["write"]["ops"], 16);
    assert!(run.stdout.contains("stopped by an I/O error"), "{}", run.stdout);
    assert_nothing_left(&fs, &run);
}

#[test]
fn a_full_filesystem_stops_with_a_clear_message_and_a_saved_partial_result() {
    // ENOSPC from 2 MiB on, as a full disk would answer: the write phase stops at the first one.
    let Some(fs) = FaultMount::new("a_full_filesystem_stops") else { return };
    fs.add(Rule::new(Op::Write, Fault::Errno(libc::ENOSPC)).file("data.0").range(2 * MIB, u64::MAX));
    let run = streamcap_run(&fs, "--rw write --bs 64k --size 4M --engine io_uring");
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.json["status"], "io_error");
    assert_reported(&fs, &run, &errors_injected(&fs));
    assert_eq!(run.json["phases"][0]["write"]["ops"], 32, "the writes before the disk filled are kept");
    assert!(run.stdout.contains("No space left on device"), "{}", run.stdout);
    assert!(run.stdout.contains("the filesystem is full"), "says what it means:\n{}", run.stdout);
    assert_nothing_left(&fs, &run);

    // The same while the data files are being filled before a read phase: a set-up failure (exit 2) that names
    // the write that failed; the result file is kept with status "failed".
    let Some(fs) = FaultMount::new("a_full_filesystem_stops (prefill)") else { return };
    fs.add(Rule::new(Op::Write, Fault::Errno(libc::ENOSPC)).file("data.0").range(2 * MIB, u64::MAX));
    let run = streamcap_run(&fs, "--rw randread --bs 64k --size 4M");
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.json["status"], "failed");
    assert!(run.stderr.contains("No space left on device"), "{}", run.stderr);
    assert!(run.stderr.contains("the filesystem is full"), "{}", run.stderr);
    // The failed write is named with its offset and length, and covers the first byte that could not be stored.
    let first = &errors_injected(&fs)[0];
    let (offset, len) = failed_write(&run.stderr);
    assert!((offset..offset + len).contains(&first.offset), "{first:?} is outside the named write:\n{}", run.stderr);
    assert_nothing_left(&fs, &run);
}

#[test]
fn short_transfers_are_completed_by_the_engine() {
    // A filesystem may transfer less than asked; pread/pwrite loops and io_uring (for regular files) ask again
    // for the rest, so the operation completes and no error is reported.
    for engine in ["sync", "io_uring"] {
        for (op, rw) in [(Op::Read, "read"), (Op::Write, "write")] {
            let Some(fs) = FaultMount::new("short_transfers_are_completed") else { return };
            fs.add(Rule::new(op, Fault::Short(1000)).file("data.0").skip(5).times(3));
            let run = streamcap_run(&fs, &format!("--rw {rw} --bs 64k --size 4M --engine {engine}"));
            assert_eq!(run.code, 0, "{engine} {rw}\n{}{}", run.stdout, run.stderr);
            assert_eq!(fs.injected().len(), 3, "{engine} {rw}: the short transfers happened");
            assert_eq!(run.json["phases"][0][rw]["ops"], 64);
            assert_eq!(run.json["phases"][0]["errors"]["count"], 0);
            assert_nothing_left(&fs, &run);
        }
    }
}

#[test]
fn latency_spikes_show_in_the_percentiles() {
    // Four of 64 reads take 250 ms longer: the top 4 ranks, so p95 (rank 61 of 64) and above include them.
    let spike = Duration::from_millis(250);
    for engine in ["sync", "io_uring"] {
        let Some(fs) = FaultMount::new("latency_spikes_show_in_the_percentiles") else { return };
        fs.add(Rule::new(Op::Read, Fault::Delay(spike)).file("data.0").skip(10).times(4));
        let run = streamcap_run(&fs, &format!("--rw read --bs 64k --size 4M --engine {engine}"));
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        let latency = &run.json["phases"][0]["read"]["latency"];
        assert_eq!(latency["samples"], 64);
        // Percentiles are bucket midpoints, within 0.39 % of the true value.
        let floor = spike.as_nanos() as f64 * 0.99;
        assert!(latency["max_ns"].as_f64().unwrap() >= floor, "{latency}");
        for p in latency["percentiles_ns"].as_array().unwrap() {
            if p["p"].as_f64().unwrap() >= 95.0 {
                assert!(p["ns"].as_f64().unwrap() >= floor, "p{} misses the spikes: {latency}", p["p"]);
            }
        }
        assert_nothing_left(&fs, &run);
    }
}

#[test]
fn a_transfer_cut_short_is_a_failed_operation_with_its_offset() {
    // A read that comes back short and then at end of file (the filesystem returned nothing more) cannot be
    // completed by asking again: it is a failed operation, with its offset.
    for engine in ["sync", "io_uring"] {
        let Some(fs) = FaultMount::new("a_transfer_cut_short") else { return };
        fs.add(Rule::new(Op::Read, Fault::Short(0)).file("data.0").skip(7).times(1));
        let run = streamcap_run(&fs, &format!("--rw read --bs 64k --size 4M --engine {engine}"));
        assert_eq!(run.code, 1, "{engine}\n{}{}", run.stdout, run.stderr);
        let records = records(&run);
        assert_eq!(records.len(), 1, "{records:#?}");
        assert_eq!(records[0]["op"], "read");
        assert_eq!(records[0]["offset"], 7 * 65536);
        assert!(records[0]["message"].as_str().unwrap().contains("short transfer: 0 of 65536"), "{records:#?}");
        assert_eq!(records[0]["errno"], libc::EIO, "a short transfer is reported as EIO, with the words kept");
        assert_nothing_left(&fs, &run);
    }
}
