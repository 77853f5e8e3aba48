//! fio's own example job files (Debian's fio package: /usr/share/doc/fio/examples): every one for a local engine
//! is dry-run unchanged and counted, each refusal must name the option that refuses it, and the examples that
//! need fio's job controls (exitall, flow, latency_target) run for real with a small size and runtime. docs/fio.md has the table.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::streamcap;

const EXAMPLES: &str = "/usr/share/doc/fio/examples";

/// Engines streamcap runs (docs/fio.md); a file is for local engines when every ioengine it names is one.
const LOCAL_ENGINES: &[&str] = &[
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "libaio",
    "io_uring",
    "posixaio",
    "null",
    "filecreate",
    "filestat",
    "filedelete",
    "dircreate",
    "dirstat",
    "dirdelete",
];

/// Files that name no engine because their comments give it on fio's command line (xNVMe).
const ENGINE_ON_COMMAND_LINE: &[&str] = &["xnvme-compare", "xnvme-zoned"];

/// The local-engine examples streamcap refuses, and what the refusal must name.
const REFUSED: &[(&str, &str)] = &[
    ("cross-stripe-verify", "free space"),
    ("enospc-pressure", "option 'ignore_error'"),
    ("zbd-rand-write", "option 'zonemode'"),
    ("zbd-seq-read", "option 'zonemode'"),
];

/// The examples' job files, unpacked into `dir` where Debian ships them compressed.
fn example_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(EXAMPLES).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if let Some(stem) = name.strip_suffix(".fio") {
            files.push((stem.to_string(), path));
        } else if let Some(stem) = name.strip_suffix(".fio.gz") {
            let out = Command::new("gzip").arg("-dc").arg(&path).output().expect("gzip runs");
            let copy = dir.join(format!("{stem}.fio"));
            std::fs::write(&copy, out.stdout).unwrap();
            files.push((stem.to_string(), copy));
        }
    }
    files.sort();
    files
}

fn is_local(name: &str, path: &Path) -> bool {
    let text = std::fs::read_to_string(path).unwrap();
    let engines = text.lines().filter_map(|l| l.trim().strip_prefix("ioengine")).filter_map(|rest| {
        let value = rest.trim_start().strip_prefix('=')?;
        value.split([';', '#']).next().map(|v| v.trim().to_string())
    });
    !ENGINE_ON_COMMAND_LINE.contains(&name) && engines.into_iter().all(|e| LOCAL_ENGINES.contains(&e.as_str()))
}

/// A dry run of `job` against `target`: `Ok` or the error text. A file refused only because the test
/// directory's filesystem has less free space than the file asks for is tried again with a 1 GiB data set.
fn dry_run(target: &Path, job: &Path) -> Result<(), String> {
    let run = |extra: &[&str]| {
        let out = streamcap().arg("run").arg(target).arg("--job").arg(job).arg("--dry-run").args(extra).output();
        let out = out.unwrap();
        if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).to_string()) }
    };
    match run(&[]) {
        Err(e) if e.contains("not enough free space") => run(&["--size", "1g"]).map_err(|again| format!("{e}{again}")),
        other => other,
    }
}

#[test]
fn nine_in_ten_local_engine_examples_run_and_each_refusal_names_its_option() {
    if !Path::new(EXAMPLES).is_dir() {
        common::skip(&format!(
            "nine_in_ten_…: {EXAMPLES} is missing (install Debian's fio package; scripts/test does)"
        ));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let local: Vec<_> = example_files(dir.path()).into_iter().filter(|(n, p)| is_local(n, p)).collect();
    assert!(local.len() >= 40, "fio's examples for local engines: {}", local.len());
    let mut runs = 0;
    let mut refused = Vec::new();
    for (name, path) in &local {
        match dry_run(&target, path) {
            Ok(()) => runs += 1,
            Err(error) => {
                let expected = REFUSED.iter().find(|(n, _)| n == name).map(|(_, why)| *why);
                let expected = expected.unwrap_or_else(|| panic!("{name} is refused: {error}"));
                assert!(error.contains(expected), "{name} is refused without naming {expected}: {error}");
                refused.push(name.clone());
            }
        }
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0, "a dry run of {name} left files behind");
    }
    eprintln!("{runs} of {} local-engine examples run; refused: {refused:?}", local.len());
    // The floor measured on 2026-11-26 (docs/fio.md): 36 of 40, with steadystate, latency_target, dedupe,
    // zonemode=strided and fill_device; the target is 90 %.
    assert!(runs * 100 >= local.len() * 90, "{runs} of {} run", local.len());
}

/// Runs an example for real: a 16 MiB data set, at most a second per phase, in a temp dir. Returns the result.
fn real_run(name: &str) -> Option<serde_json::Value> {
    let path = Path::new(EXAMPLES).join(format!("{name}.fio"));
    if !path.is_file() {
        common::skip(&format!("real run of {name}: {} is missing", path.display()));
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let json = dir.path().join("r.json");
    // fio's logs (write_lat_log=…) go to the working directory: the temp dir's, never the repository's.
    let out = streamcap()
        .current_dir(dir.path())
        .arg("run")
        .arg(&target)
        .args(["--job", path.to_str().unwrap(), "--size", "16m", "--runtime", "1", "--quiet", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0, "{name} left files behind");
    Some(common::read_json(&json))
}

fn phases(result: &serde_json::Value) -> Vec<(String, String, u64)> {
    let list = result["phases"].as_array().unwrap().iter();
    list.map(|p| {
        let ops = p["read"]["ops"].as_u64().unwrap_or(0) + p["write"]["ops"].as_u64().unwrap_or(0);
        (p["name"].as_str().unwrap().to_string(), p["status"].as_str().unwrap().to_string(), ops)
    })
    .collect()
}

#[test]
fn the_flow_and_butterfly_examples_run() {
    for name in ["flow", "butterfly"] {
        let Some(result) = real_run(name) else { continue };
        let phases = phases(&result);
        assert_eq!(phases.len(), 2, "{name}: {phases:?}");
        assert!(phases.iter().all(|(_, stop, ops)| stop == "completed" && *ops > 0), "{name}: {phases:?}");
    }
}

#[test]
fn the_cmdprio_examples_run_with_their_priorities() {
    for (name, phases_expected) in [("cmdprio-percentage", 1), ("cmdprio-bssplit", 3)] {
        let Some(result) = real_run(name) else { continue };
        let phases = phases(&result);
        assert_eq!(phases.len(), phases_expected, "{name}: {phases:?}");
        assert!(phases.iter().all(|(_, stop, ops)| stop == "completed" && *ops > 0), "{name}: {phases:?}");
        assert!(result["phases"][0]["fio"]["cmdprio"]["read"].is_array(), "{name}");
    }
}

#[test]
fn the_latency_profile_example_runs_its_depth_search() {
    let Some(result) = real_run("latency-profile") else { return };
    let phases = phases(&result);
    assert!(phases.len() == 1 && phases[0].1 == "completed" && phases[0].2 > 0, "{phases:?}");
    let target = &result["phases"][0]["latency_target"];
    assert_eq!((target["target_ns"].as_u64(), target["window_us"].as_u64()), (Some(500_000_000), Some(5_000_000)));
    assert_eq!(target["percentile"], 99.9);
    // The real run lasts a second, under the example's 5 s window: the search is still at its first depth.
    let found = &target["workers"][0];
    assert_eq!(
        (found["depth"].as_u64(), found["max_depth"].as_u64(), found["windows"].as_u64()),
        (Some(1), Some(128), Some(0))
    );
}

#[test]
fn the_exitwhat_example_runs_its_groups() {
    let Some(result) = real_run("exitwhat") else { return };
    let names: Vec<String> = phases(&result).into_iter().map(|(n, _, _)| n).collect();
    assert_eq!(names, ["slow1", "fast1", "slow2", "fast2", "runsnever"]);
    assert!(phases(&result).iter().all(|(_, stop, _)| stop == "completed"), "{:?}", phases(&result));
}

/// Runs a job file given as text on the null engine; returns the result.
fn run_text(text: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.fio");
    std::fs::write(&job, text).unwrap();
    let json = dir.path().join("r.json");
    let mut cmd = streamcap();
    let out = cmd
        .current_dir(dir.path())
        .arg("run")
        .arg(dir.path())
        .arg("--job")
        .arg(&job)
        .arg("--quiet")
        .arg("--json")
        .arg(&json)
        .output();
    let out = out.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    common::read_json(&json)
}

#[test]
fn exitall_stops_the_jobs_running_with_the_one_that_finished() {
    // Without exitall, 'endless' would run for two minutes. 'short' is paced over about half a second, so that
    // 'endless' has surely started when it ends (unpaced, its 1,000 null I/Os took about a millisecond on a quiet
    // machine and could end before 'endless' issued one).
    let result = run_text(
        "[global]\nioengine=null\nsize=16m\nrw=read\n[short]\nnumber_ios=1000\nrate_iops=2000\nexitall\n\
         [endless]\ntime_based\nruntime=120\n[after]\nstonewall\nnumber_ios=10\nexit_what=all\n",
    );
    let phases = phases(&result);
    assert_eq!(phases.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(), ["short", "endless", "after"]);
    assert!(phases.iter().all(|(_, status, ops)| status == "completed" && *ops > 0), "{phases:?}");
    assert_eq!(phases[0].2, 1000);
    let endless = &result["phases"][1];
    assert!(endless["duration_s"].as_f64().unwrap() < 60.0, "{endless}");
    assert_eq!(endless["fio"]["exit_all"], "group");
}

#[test]
fn flow_weights_share_the_io_between_jobs() {
    let result = run_text(
        "[global]\nioengine=null\nsize=16m\nbs=4k\ntime_based\nruntime=1\n[heavy]\nrw=read\nflow=3\n\
         [light]\nrw=write\nflow=1\n",
    );
    let phases = phases(&result);
    let (heavy, light) = (phases[0].2 as f64, phases[1].2 as f64);
    assert!(light > 100.0 && (2.5..3.5).contains(&(heavy / light)), "{phases:?}");
    assert_eq!(result["phases"][1]["fio"]["flow"]["weight"], 1);
}
