//! Steady-state detection end to end: fio's `ss`/`ss_dur`/`ss_ramp` in job files and streamcap's SNIA-PTS-style
//! `--steady-state`, each run for real on a file in a temp directory. A paced read of a small file has a steady
//! rate, so it must end at steady state long before its runtime; a window that cannot fill in the runtime must run
//! to the end and say "not attained"; bad values must be refused with exit 2 and a message that names them. No
//! assertion depends on how fast the machine is: the runtimes are far beyond what the windows need.

mod common;

use std::path::Path;

use common::{entries, read_json, streamcap};

/// Runs `streamcap run DIR …` in a fresh temp dir; returns the result (Null when none), stdout and stderr.
fn run(args: &[&str], job: Option<&str>) -> (serde_json::Value, String, String, Option<i32>) {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let json = dir.path().join("r.json");
    let mut cmd = streamcap();
    cmd.current_dir(dir.path()).arg("run").arg(&target).args(args).arg("--json").arg(&json);
    if let Some(text) = job {
        let path = dir.path().join("job.fio");
        std::fs::write(&path, text).unwrap();
        cmd.arg("--job").arg(path);
    }
    let out = cmd.output().unwrap();
    assert!(entries(&target).is_empty(), "left behind: {:?}", entries(&target));
    let result = if Path::new(&json).exists() { read_json(&json) } else { serde_json::Value::Null };
    let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
    (result, text(&out.stdout), text(&out.stderr), out.status.code())
}

/// A paced read of a 1 MiB file: 400 reads a second, whatever the storage, so every round is alike.
const PACED: &str = "[global]\nioengine=psync\nsize=1m\nbs=4k\nrate_iops=400\ntime_based\nruntime=120\n";

#[test]
fn a_fio_job_with_a_steady_rate_ends_at_steady_state_before_its_runtime() {
    let job = format!("{PACED}[paced]\nrw=randread\nss=iops:20%\nss_dur=3\nss_ramp=1\n");
    let (result, stdout, stderr, code) = run(&[], Some(&job));
    assert_eq!(code, Some(0), "{stderr}");
    let phase = &result["phases"][0];
    assert_eq!(phase["status"], "completed", "{phase}");
    assert!(phase["duration_s"].as_f64().unwrap() < 60.0, "ran to its runtime: {}", phase["duration_s"]);
    let steady = &phase["steady_state"];
    assert_eq!(steady["attained"], true, "{steady}");
    assert_eq!(steady["rule"]["kind"], "deviation");
    assert_eq!(steady["window"], 3);
    // ss_ramp=1 leaves out round 1, so the window of 3 is full at round 4 at the earliest.
    assert!(steady["round"].as_u64().unwrap() >= 4, "{steady}");
    assert_eq!(steady["iops"].as_array().unwrap().len(), 3);
    assert!(steady["criterion"].as_f64().unwrap() < 20.0, "{steady}");
    assert!(stdout.contains("paced: steady state attained after round"), "{stdout}");
}

#[test]
fn a_criterion_that_cannot_be_met_runs_to_the_end_and_says_not_attained() {
    // A 10-round window in a 3-second job never fills.
    let job = "[global]\nioengine=psync\nsize=1m\nbs=4k\nrate_iops=400\ntime_based\nruntime=3\n\
               [short]\nrw=randread\nss=bw_slope:1%\nss_dur=10\n";
    let (result, stdout, stderr, code) = run(&[], Some(job));
    assert_eq!(code, Some(0), "{stderr}");
    let phase = &result["phases"][0];
    assert_eq!(phase["status"], "completed");
    assert!(phase["duration_s"].as_f64().unwrap() >= 2.9, "ended early: {}", phase["duration_s"]);
    assert_eq!(phase["steady_state"]["attained"], false);
    assert!(phase["steady_state"]["round"].is_null());
    assert!(stdout.contains("short: steady state not attained (bw_slope:1.000000%"), "{stdout}");
    assert!(stderr.contains("steady state cannot be attained"), "the plan should warn: {stderr}");
}

#[test]
fn the_snia_flag_ends_a_steady_run_and_names_the_round() {
    let flags = ["--rw", "randread", "--bs", "4k", "--size", "1m", "--rate-iops", "400", "--runtime", "120"];
    let (result, stdout, stderr, code) = run(&[&flags[..], &["--steady-state", "--buffered"]].concat(), None);
    assert_eq!(code, Some(0), "{stderr}");
    let phase = &result["phases"][0];
    assert!(phase["duration_s"].as_f64().unwrap() < 60.0, "ran to its runtime: {}", phase["duration_s"]);
    let steady = &phase["steady_state"];
    assert_eq!((steady["rule"]["kind"].as_str(), steady["window"].as_u64()), (Some("snia"), Some(5)), "{steady}");
    assert_eq!(steady["attained"], true);
    assert!(steady["round"].as_u64().unwrap() >= 5);
    assert!(stdout.contains("steady state attained after round"), "{stdout}");
}

#[test]
fn the_snia_flag_says_not_attained_when_its_window_outlasts_the_run() {
    let flags = ["--rw", "read", "--bs", "4k", "--size", "1m", "--rate-iops", "400", "--runtime", "2", "--buffered"];
    let (result, stdout, stderr, code) =
        run(&[&flags[..], &["--steady-state=8", "--steady-state-on", "bw"]].concat(), None);
    assert_eq!(code, Some(0), "{stderr}");
    let steady = &result["phases"][0]["steady_state"];
    assert_eq!((steady["attained"].as_bool(), steady["window"].as_u64()), (Some(false), Some(8)), "{steady}");
    assert_eq!(steady["rule"]["metric"], "bw");
    assert!(stdout.contains("steady state not attained"), "{stdout}");
}

#[test]
fn a_toml_job_takes_the_same_path() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.toml");
    let toml = "[[phase]]\nname = \"paced\"\nrw = \"randread\"\nbs = \"4k\"\nsize = \"1m\"\nrate-iops = 400\n\
                runtime = \"120s\"\ndirect = false\nsteady-state = { criterion = \"iops:20%\", window = \"3s\" }\n";
    std::fs::write(&job, toml).unwrap();
    let (result, stdout, stderr, code) = run(&["--job", job.to_str().unwrap()], None);
    assert_eq!(code, Some(0), "{stderr}");
    let phase = &result["phases"][0];
    assert!(phase["duration_s"].as_f64().unwrap() < 60.0, "ran to its runtime: {}", phase["duration_s"]);
    assert_eq!(
        (phase["steady_state"]["attained"].as_bool(), phase["steady_state"]["window"].as_u64()),
        (Some(true), Some(3))
    );
    assert!(stdout.contains("paced: steady state attained after round"), "{stdout}");
}

#[test]
fn fio_json_carries_fios_steadystate_object() {
    let job = format!("{PACED}[paced]\nrw=randread\nss=iops:20%\nss_dur=2\n");
    let (_, stdout, stderr, code) = run(&["--format", "fio-json"], Some(&job));
    assert_eq!(code, Some(0), "{stderr}");
    let fio: serde_json::Value = serde_json::from_str(&stdout).expect("fio's JSON");
    let ss = &fio["jobs"][0]["steadystate"];
    let keys: Vec<&str> = ss.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["ss", "duration", "attained", "criterion", "max_deviation", "slope", "data"]);
    assert_eq!(
        (ss["ss"].as_str(), ss["duration"].as_u64(), ss["attained"].as_u64()),
        (Some("iops:20.000000%"), Some(2), Some(1))
    );
    assert!(ss["criterion"].as_str().unwrap().ends_with('%'));
    let data: Vec<&str> = ss["data"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(data, ["bw_mean", "iops_mean", "iops", "bw"]);
    assert_eq!(ss["data"]["iops"].as_array().unwrap().len(), 2);
}

#[test]
fn bad_steady_state_values_are_refused_with_exit_2_naming_them() {
    let cases: [(&str, &str); 4] = [
        ("ss=iops\nss_dur=10\n", "option 'steadystate': 'iops' has no threshold"),
        ("ss=speed:5%\nss_dur=10\n", "option 'steadystate': 'speed' is not a steady-state criterion"),
        ("ss=iops:-5%\nss_dur=10\n", "must be above zero"),
        ("ss=iops:5%\nss_dur=1\n", "the steady-state window is 1 round(s)"),
    ];
    for (options, expected) in cases {
        let job = format!("{PACED}[bad]\nrw=read\n{options}");
        let (_, _, stderr, code) = run(&["--dry-run"], Some(&job));
        assert_eq!(code, Some(2), "{options}: {stderr}");
        assert!(stderr.contains(expected), "{options}: expected '{expected}' in {stderr}");
    }
    for (flags, expected) in [
        (&["--rw", "read", "--steady-state=1"][..], "1 is not in 2..=100000"),
        (&["--rw", "read", "--steady-state-on", "bw"][..], "--steady-state"),
    ] {
        let (_, _, stderr, code) = run(&[flags, &["--dry-run"]].concat(), None);
        assert_eq!(code, Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains(expected), "{flags:?}: expected '{expected}' in {stderr}");
    }
}
