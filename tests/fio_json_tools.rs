//! fio's JSON as a drop-in, checked with the real consumers: fio itself (every key it writes, in its order, for
//! the same job file), fio-plot from PyPI (in a virtualenv made here), and Debian's fio package's
//! fio_jsonplus_clat2csv (json+ bins) and fio2gnuplot (fio-format logs). Each test skips loudly where its tool
//! is missing.

mod common;

use std::path::Path;
use std::process::Command;

use common::{entries, streamcap};
use serde_json::Value;

fn have(tool: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success())
}

/// The JSON document in `text` (fio may print notes before it).
fn document(text: &str) -> Value {
    let start = text.find('{').unwrap_or_else(|| panic!("no JSON in: {text}"));
    serde_json::from_str(&text[start..]).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Every key path of `value`, in order, with each object's keys listed where they stand. The names under
/// `bins` are latencies, which differ between runs, so only the presence of `bins` counts.
fn key_paths(value: &Value, path: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let here = format!("{path}/{key}");
                out.push(here.clone());
                if key != "bins" {
                    key_paths(child, &here, out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(first) = items.first() {
                key_paths(first, &format!("{path}[]"), out);
            }
        }
        _ => {}
    }
}

const JOB: &str = "[global]\ndirectory=${DIR}\nsize=4m\nbs=4k\nioengine=psync\n\n[reader]\nrw=randread\nnumjobs=2\n\n\
                   [writer]\nstonewall\nrw=write\n";

#[test]
fn the_json_has_every_key_fio_writes_in_fio_s_order() {
    if !have("fio") {
        common::skip(
            "the_json_has_every_key_fio_writes_in_fio_s_order: fio is not installed (scripts/test installs it)",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.fio");
    std::fs::write(&job, JOB).unwrap();
    let (fio_dir, our_dir) = (dir.path().join("fio"), dir.path().join("streamcap"));
    std::fs::create_dir(&fio_dir).unwrap();
    std::fs::create_dir(&our_dir).unwrap();
    let fio = Command::new("fio").arg(&job).arg("--output-format=json").env("DIR", &fio_dir).output().unwrap();
    assert!(fio.status.success(), "fio: {}", String::from_utf8_lossy(&fio.stderr));
    let ours = streamcap()
        .arg("run")
        .arg("--job")
        .arg(&job)
        .args(["--format", "fio-json"])
        .env("DIR", &our_dir)
        .output()
        .unwrap();
    assert!(ours.status.success(), "streamcap: {}", String::from_utf8_lossy(&ours.stderr));
    let (theirs, ours) =
        (document(&String::from_utf8_lossy(&fio.stdout)), document(&String::from_utf8_lossy(&ours.stdout)));
    // Jobs as fio forms them: each clone on its own (no group_reporting), the groups fio numbers.
    let names = |v: &Value| -> Vec<(String, u64)> {
        v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| (j["jobname"].as_str().unwrap().to_string(), j["groupid"].as_u64().unwrap()))
            .collect()
    };
    assert_eq!(names(&ours), names(&theirs));
    let keys = |v: &Value| -> Vec<String> { v["global options"].as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(&ours), keys(&theirs), "the [global] options (their directories differ)");
    for (mine, fios) in ours["jobs"].as_array().unwrap().iter().zip(theirs["jobs"].as_array().unwrap()) {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        key_paths(mine, "", &mut a);
        key_paths(fios, "", &mut b);
        assert_eq!(a, b, "the same keys in the same order");
        assert_eq!(mine["job options"], fios["job options"]);
        let ios = |v: &Value, d: &str| v[d]["total_ios"].as_u64().unwrap();
        assert_eq!((ios(mine, "read"), ios(mine, "write")), (ios(fios, "read"), ios(fios, "write")), "the same I/O");
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    key_paths(&ours["disk_util"], "", &mut a);
    key_paths(&theirs["disk_util"], "", &mut b);
    assert!(a.is_empty() || b.is_empty() || a == b, "disk_util entries: {a:?} vs {b:?}");
    let top: Vec<&String> = ours.as_object().unwrap().keys().collect();
    let fio_top: Vec<&String> = theirs.as_object().unwrap().keys().collect();
    assert_eq!(top, fio_top);
    assert!(entries(&our_dir).is_empty());
}

#[test]
fn fio_jsonplus_clat2csv_reads_the_bins() {
    if !have("fio_jsonplus_clat2csv") {
        common::skip("fio_jsonplus_clat2csv_reads_the_bins: Debian's fio package is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let output = streamcap()
        .arg("run")
        .arg(dir.path())
        .args(["--rw", "randread", "--bs", "4k", "--size", "8m", "--io-size", "2m", "--format", "fio-jsonplus"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("plus.json");
    std::fs::write(&json, &output.stdout).unwrap();
    let bins = document(&String::from_utf8_lossy(&output.stdout))["jobs"][0]["read"]["clat_ns"]["bins"]
        .as_object()
        .unwrap()
        .len();
    assert!(bins > 0);
    let csv = out.path().join("plus.csv");
    let run = |validate: bool| {
        let mut cmd = Command::new("fio_jsonplus_clat2csv");
        cmd.arg(&json).arg(&csv);
        if validate {
            cmd.arg("--validate");
        }
        let o = cmd.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    run(false);
    assert!(run(true).contains("validated"), "the CSV matches the bins it came from");
    let rows = std::fs::read_to_string(out.path().join("plus_job0.csv")).unwrap().lines().count();
    assert_eq!(rows, bins + 1, "a header and one row per bin");
}

#[test]
fn fio2gnuplot_reads_streamcap_s_logs() {
    if !have("fio2gnuplot") {
        common::skip("fio2gnuplot_reads_streamcap_s_logs: Debian's fio package is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let job = dir.path().join("logs.fio");
    std::fs::write(
        &job,
        "[global]\nsize=8m\nruntime=2\ntime_based\nlog_avg_msec=250\n[reader]\nrw=randread\nbs=4k\nwrite_iops_log=rd\n",
    )
    .unwrap();
    streamcap()
        .current_dir(dir.path())
        .arg("run")
        .arg(&target)
        .arg("--job")
        .arg(&job)
        .arg("--quiet")
        .assert()
        .success();
    let o = Command::new("fio2gnuplot").arg("-i").current_dir(dir.path()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let global = std::fs::read_to_string(dir.path().join("result.global")).unwrap();
    let count: usize = global.lines().find_map(|l| l.strip_prefix("values_count=")).unwrap().parse().unwrap();
    // One line per 250 ms interval in which reads completed (fio, too, writes no line for an interval without
    // I/O, and a stalled host disk can leave one empty: the 04:29 CI of 2026-11-29 had 2 of 4): fio2gnuplot
    // must read every line streamcap wrote, and the lines must fall on the intervals' ends.
    let log = std::fs::read_to_string(dir.path().join("rd_iops.1.log")).unwrap();
    let ends: Vec<u64> = log.lines().map(|l| l.split(',').next().unwrap().trim().parse().unwrap()).collect();
    assert_eq!(count, ends.len(), "fio2gnuplot read every line of the log:\n{log}\n{global}");
    assert!(count >= 2, "reads completed in at least two of eight intervals:\n{log}");
    for (end, next) in ends.iter().zip(&ends[1..]) {
        assert!(next > end, "the lines are in time order:\n{log}");
    }
    for &end in &ends[..ends.len() - 1] {
        assert_eq!(end % 250, 0, "a full interval ends on a multiple of log_avg_msec:\n{log}");
    }
}

/// A virtualenv with fio-plot from PyPI, made in `dir`; `None` (after saying why) when it cannot be made.
fn fio_plot(dir: &Path) -> Option<std::path::PathBuf> {
    let venv = dir.join("venv");
    let made = Command::new("python3").arg("-m").arg("venv").arg(&venv).output();
    if !made.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED fio_plot_draws_from_streamcap_s_json: python3 -m venv does not work here (python3-venv)");
        return None;
    }
    let pip = Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "--disable-pip-version-check", "--timeout", "30", "fio-plot"])
        .output()
        .unwrap();
    if !pip.status.success() {
        eprintln!(
            "SKIPPED fio_plot_draws_from_streamcap_s_json: cannot install fio-plot from PyPI (unreachable?): {}",
            String::from_utf8_lossy(&pip.stderr).lines().last().unwrap_or("")
        );
        return None;
    }
    Some(venv.join("bin/fio-plot"))
}

#[test]
fn fio_plot_draws_from_streamcap_s_json() {
    let dir = tempfile::tempdir().unwrap();
    let Some(plot) = fio_plot(dir.path()) else { return };
    let (data, target) = (dir.path().join("data"), dir.path().join("target"));
    std::fs::create_dir(&data).unwrap();
    std::fs::create_dir(&target).unwrap();
    for depth in ["1", "2", "4"] {
        let output = streamcap()
            .arg("run")
            .arg(&target)
            .args(["--rw", "randread", "--bs", "4k", "--size", "8m", "--io-size", "1m", "--iodepth", depth])
            .args(["--format", "fio-json"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        std::fs::write(data.join(format!("randread-{depth}-1.json")), &output.stdout).unwrap();
    }
    let png = dir.path().join("iops-latency.png");
    let o = Command::new(&plot)
        .arg("-i")
        .arg(&data)
        .args(["-T", "streamcap", "-l", "-r", "randread", "-d", "1", "2", "4", "-n", "1", "-o"])
        .arg(&png)
        .env("MPLBACKEND", "Agg")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let image = std::fs::read(&png).unwrap_or_else(|e| panic!("no chart: {e}: {}", String::from_utf8_lossy(&o.stdout)));
    assert!(image.starts_with(b"\x89PNG"), "fio-plot drew a PNG");
}
