//! Multi-host runs under a real `mpirun` (Open MPI) on this one host: several ranks give one result with the
//! totals and a per-rank breakdown, a failure on one rank is named with its rank and host, and a build without
//! the `mpi` feature refuses to run as one of several ranks. The tests that start mpirun need the binary built
//! with `--features mpi` (scripts/test does so) and skip loudly when mpirun is missing.

mod common;

use std::path::Path;

#[cfg(not(feature = "mpi"))]
use common::streamcap;

/// No work directory or data file is left in `dir` (work directories live in `dir/.streamcap/`).
fn nothing_left(dir: &Path) -> bool {
    let no_runs = |d: &Path| {
        std::fs::read_dir(d)
            .map_or(true, |entries| entries.flatten().all(|e| !e.file_name().to_string_lossy().starts_with("run-")))
    };
    no_runs(dir) && no_runs(&dir.join(".streamcap"))
}

/// Without the `mpi` feature, a process that a launcher started as one of several ranks would run alone and
/// write over the others' result: it refuses, says how to build with the feature, and creates nothing.
#[cfg(not(feature = "mpi"))]
#[test]
fn a_build_without_the_feature_refuses_to_run_as_one_of_several_ranks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("r.json");
    let out = streamcap()
        .args(["run", "--rw", "read", "--size", "1M", "--runtime", "1s", "--json"])
        .arg(&json)
        .arg(dir.path())
        .env("OMPI_COMM_WORLD_SIZE", "2")
        .env("OMPI_COMM_WORLD_RANK", "0")
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("built without the `mpi` feature") && stderr.contains("--features mpi"), "{stderr}");
    assert!(!json.exists() && nothing_left(dir.path()));
}

/// One rank alone under a launcher runs as usual without the feature (`mpirun -np 1` is a plain run).
#[cfg(not(feature = "mpi"))]
#[test]
fn a_build_without_the_feature_runs_as_the_only_rank() {
    let dir = tempfile::tempdir().expect("temp dir");
    streamcap()
        .args(["run", "--rw", "read", "--size", "1M", "--runtime", "1s", "--quiet"])
        .arg(dir.path())
        .env("OMPI_COMM_WORLD_SIZE", "1")
        .assert()
        .success();
}

/// `cache` does not run across ranks yet: as one of several ranks it refuses (in either build) rather than have
/// each rank run alone and write over the others' result.
#[test]
fn cache_refuses_to_run_as_one_of_several_ranks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = common::streamcap().arg("cache").arg(dir.path()).env("OMPI_COMM_WORLD_SIZE", "3").output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`streamcap cache` does not run across ranks yet"), "{stderr}");
    assert!(nothing_left(dir.path()));
}

/// Without the feature, `streams` and `check` as one of several ranks refuse like `run`: each rank would run
/// alone and write over the others' result.
#[cfg(not(feature = "mpi"))]
#[test]
fn streams_and_check_without_the_feature_refuse_to_run_as_one_of_several_ranks() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (command, args) in [("streams", &["--bitrate", "3Mbit", "--count", "2"][..]), ("check", &[][..])] {
        let out = streamcap()
            .arg(command)
            .args(args)
            .arg(dir.path())
            .env("OMPI_COMM_WORLD_SIZE", "3")
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(stderr.contains("built without the `mpi` feature"), "{command}: {stderr}");
        assert!(nothing_left(dir.path()));
    }
}

/// Four ranks read at once: one result whose totals are the sum of the ranks' operations, with every rank in the
/// per-host breakdown (terminal and JSON), the stonewall figures, a merged p99 that lies within the ranks' own
/// (a percentile of the merged histograms, never an average), and no data file left behind.
#[cfg(feature = "mpi")]
#[test]
fn four_ranks_give_one_result_with_totals_and_a_per_rank_breakdown() {
    let Some(mut cmd) = common::mpirun("four_ranks_give_one_result_with_totals_and_a_per_rank_breakdown", 4) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("r.json");
    let out = cmd
        .arg(common::streamcap_path())
        .args(["run", "--rw", "randread", "--bs", "4k", "--size", "8M", "--runtime", "2s", "--json"])
        .arg(&json)
        .arg(dir.path())
        .output()
        .expect("mpirun runs");
    let (stdout, stderr) = common::output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout.matches("per rank:").count(), 1, "one summary, from rank 0:\n{stdout}");
    assert!(stdout.contains("4 ranks: rank 0 on"), "{stdout}");
    assert!(stdout.contains("first done (rank") && stdout.contains("last done (rank"), "{stdout}");

    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).expect("the JSON")).expect("JSON");
    let phase = &result["phases"][0];
    let cluster = &result["cluster"];
    assert_eq!(cluster["ranks"], 4);
    assert_eq!(cluster["hosts"].as_array().map(Vec::len), Some(4));
    let ranks = cluster["phases"][0]["ranks"].as_array().expect("per-rank rows");
    assert_eq!(ranks.iter().map(|r| r["rank"].as_u64().expect("rank")).collect::<Vec<_>>(), [0, 1, 2, 3]);
    let per_rank: u64 = ranks.iter().map(|r| r["ops"].as_u64().expect("ops")).sum();
    let total = phase["read"]["ops"].as_u64().expect("merged ops");
    assert!(total > 0 && ranks.iter().all(|r| r["ops"].as_u64() > Some(0)), "{ranks:?}");
    assert_eq!(total, per_rank, "the totals are every rank's operations");
    let series: u64 =
        phase["intervals"].as_array().expect("intervals").iter().map(|i| i["read"]["ops"].as_u64().unwrap_or(0)).sum();
    assert_eq!(series, total, "the merged interval series holds every operation");
    assert_eq!(cluster["phases"][0]["last_done"]["ops"].as_u64(), Some(total));
    let first = cluster["phases"][0]["first_done"]["ops"].as_u64().expect("first done");
    assert!(first <= total);
    first_done_lies_between_the_slowest_and_all(&cluster["phases"][0]);
    // A percentile of a mixture lies between the parts' percentiles; an average of percentiles need not be a
    // bucket at all, and merged buckets keep every value on the same bucket bounds.
    let p99 = |v: &serde_json::Value| v.as_u64().expect("a p99");
    let merged = phase["read"]["latency"]["percentiles_ns"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["p"].as_f64() == Some(99.0)))
        .map(|p| p99(&p["ns"]))
        .expect("merged p99");
    let own: Vec<u64> = ranks.iter().map(|r| p99(&r["p99_latency_ns"])).collect();
    assert!(own.iter().min() <= Some(&merged) && Some(&merged) <= own.iter().max(), "{merged} against {own:?}");
    assert!(nothing_left(dir.path()), "every rank removed its work directory");
}

/// A rank whose target does not exist (MPMD: rank 1 is given another directory) stops every rank before any
/// I/O; rank 0 names it with its host and error, and nothing is written.
#[cfg(feature = "mpi")]
#[test]
fn a_failing_rank_is_named_and_stops_all() {
    let Some(mut cmd) = common::mpirun("a_failing_rank_is_named_and_stops_all", 1) else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("r.json");
    let missing = dir.path().join("missing");
    let args = ["run", "--rw", "read", "--size", "1M", "--runtime", "1s", "--json"];
    let out = cmd
        .arg(common::streamcap_path())
        .args(args)
        .arg(&json)
        .arg(dir.path())
        .args([":", "-np", "1"])
        .arg(common::streamcap_path())
        .args(args)
        .arg(&json)
        .arg(&missing)
        .output()
        .expect("mpirun runs");
    let (stdout, stderr) = common::output_text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "rank 0 alone says it:\n{stderr}");
    assert!(errors[0].starts_with("error: rank 1 (") && errors[0].contains("missing does not exist"), "{stderr}");
    assert!(!json.exists() && nothing_left(dir.path()));
}

/// Ctrl-C on mpirun (SIGINT; mpirun sends SIGTERM to every rank) stops every rank cleanly: one partial result
/// with the part that ran (its totals still the sum of the ranks), exit code non-zero, and no data file left.
/// Under Open MPI's default `odls_base_sigkill_timeout` (SIGKILL 1 s after SIGTERM). This test used to give the
/// ranks 5 s: a traced run had written the partial result 0.46 s after SIGTERM on a busy host, and every rank was
/// then killed in MPI_Finalize. Now each rank removes its data first, rank 0's save at the phase's end is the
/// partial result, and the ranks leave without MPI_Finalize (docs/multi-host.md).
#[cfg(feature = "mpi")]
#[test]
fn ctrl_c_on_mpirun_keeps_the_partial_result_and_leaves_no_data() {
    use std::time::Duration;
    let Some(mut cmd) = common::mpirun("ctrl_c_on_mpirun_keeps_the_partial_result_and_leaves_no_data", 2) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("r.json");
    cmd.arg(common::streamcap_path())
        .args(["run", "--rw", "randread", "--bs", "4k", "--size", "8M", "--runtime", "60s", "--json"])
        .arg(&json)
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut running = common::Running(cmd.spawn().expect("mpirun starts"));
    // The JSON is first written when the phase starts; let it run a little after that.
    common::wait_for_file_while_running(&mut running.0, &json, Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(1500));
    let status = common::interrupt_and_wait(&mut running.0, Duration::from_secs(60));
    assert!(!status.success());
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).expect("the JSON")).expect("JSON");
    assert_eq!(result["status"], "interrupted", "{result}");
    let phase = &result["phases"][0];
    assert_eq!(phase["status"], "interrupted");
    let total = phase["read"]["ops"].as_u64().expect("merged ops");
    let ranks = result["cluster"]["phases"][0]["ranks"].as_array().expect("per-rank rows");
    assert_eq!(ranks.len(), 2);
    assert!(total > 0);
    assert_eq!(total, ranks.iter().map(|r| r["ops"].as_u64().expect("ops")).sum::<u64>());
    assert!(nothing_left(dir.path()), "every rank removed its data files");
}

/// Stonewalling: each rank's budget is 24 MiB of reads; the first rank to finish it stops the other, which is no
/// failure (exit 0, every rank `completed`), no rank reads past its budget, and the result gives both the "first
/// done" and the "last done" figures (whether the other rank was stopped short depends on timing).
#[cfg(feature = "mpi")]
#[test]
fn the_first_rank_done_ends_the_phase_for_all_and_both_figures_are_given() {
    let Some(mut cmd) = common::mpirun("the_first_rank_done_ends_the_phase_for_all_and_both_figures_are_given", 2)
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("r.json");
    let out = cmd
        .arg(common::streamcap_path())
        .args(["run", "--rw", "randread", "--bs", "4k", "--size", "8M", "--io-size", "24M", "--runtime", "60s"])
        .arg("--json")
        .arg(&json)
        .arg(dir.path())
        .output()
        .expect("mpirun runs");
    let (stdout, stderr) = common::output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).expect("the JSON")).expect("JSON");
    assert_eq!(result["phases"][0]["status"], "completed");
    let cluster = &result["cluster"]["phases"][0];
    let budget = 24 * 1024 * 1024 / 4096;
    let ops: Vec<u64> =
        cluster["ranks"].as_array().expect("rows").iter().map(|r| r["ops"].as_u64().expect("ops")).collect();
    assert!(ops.iter().all(|&n| n <= budget) && ops.contains(&budget), "{ops:?}");
    assert!(cluster["ranks"].as_array().expect("rows").iter().all(|r| r["status"] == "completed"));
    let (first, last) = (&cluster["first_done"], &cluster["last_done"]);
    assert_eq!(last["ops"].as_u64(), Some(ops.iter().sum::<u64>()));
    assert!(first["ops"].as_u64() <= last["ops"].as_u64());
    assert!(first["elapsed_s"].as_f64() <= last["elapsed_s"].as_f64());
    first_done_lies_between_the_slowest_and_all(cluster);
    assert!(nothing_left(dir.path()));
}

/// Every rank's work up to the first finish, over that time, lies between the slowest rank's rate and all of
/// theirs together (within 1 %: the interval the first rank finished in is counted in proportion).
#[cfg(feature = "mpi")]
fn first_done_lies_between_the_slowest_and_all(phase: &serde_json::Value) {
    let rows = phase["ranks"].as_array().expect("per-rank rows");
    let rates: Vec<f64> = rows.iter().map(|r| r["iops"].as_f64().expect("a rate")).collect();
    let first = phase["first_done"]["iops"].as_f64().expect("first done");
    let slowest = rates.iter().copied().fold(f64::MAX, f64::min);
    assert!(slowest * 0.99 <= first && first <= rates.iter().sum::<f64>() * 1.01, "{first} against {rates:?}");
}

/// The stream settings of the capacity test: as tests/streams_throttled.rs (3 Mbit/s in 256 KiB chunks, 1.43
/// chunks/s per viewer, a short buffer so that a count above the bound runs dry within a step). Each step judges
/// 5 s of playback (8 s before, 159 → 121 s for the test): the assertion compares two searches with the same
/// settings, so a shorter judged playback moves both edges alike.
#[cfg(feature = "mpi")]
const STREAM_ARGS: &str = "--bitrate 3Mbit --chunk 256k --duration 5s --ramp 1s --buffer 2s --prebuffer 1s \
     --media-length 60s --estimate-time 2s --precision 10 --max --limit 70 --quiet";

/// Streams across clients: on a loop device throttled to 80 reads/s (the root blkio group, so every rank's reads
/// share the one limit), four ranks searching the total count find the capacity one process finds, within
/// 10 %: the viewers are spread over the ranks and each step's stalls are counted over all of them. The result
/// names each client's share of every step and the clients' verdict, in the terminal and the JSON, and no rank
/// leaves its work directory (its own test media) behind.
#[cfg(feature = "mpi")]
#[test]
fn streams_across_four_ranks_find_the_capacity_of_one_process() {
    let test = "streams_across_four_ranks_find_the_capacity_of_one_process";
    if !common::can_use_loop_devices(test) || !common::can_throttle(test) {
        return;
    }
    let Some(mut cmd) = common::mpirun(test, 4) else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    // Room for four ranks' own test media.
    let device = common::LoopDevice::new(&dir.path().join("disk.img"), 1 << 30);
    device.mkfs_ext4();
    let mount = common::Mount::new(device.device.to_str().expect("a path"), &dir.path().join("mnt"), &[]);
    let _throttle = common::RootThrottle::new(std::slice::from_ref(&device), [0, 0, 80, 0]);
    let (one, many) = (dir.path().join("one.json"), dir.path().join("many.json"));
    let out = common::streamcap()
        .arg("streams")
        .arg(&mount.point)
        .args(STREAM_ARGS.split_whitespace())
        .arg("--json")
        .arg(&one)
        .env("STREAMCAP_NO_HISTORY", "1")
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = cmd
        .args(["-x", "STREAMCAP_NO_HISTORY=1"])
        .arg(common::streamcap_path())
        .arg("streams")
        .arg(&mount.point)
        .args(STREAM_ARGS.split_whitespace().filter(|a| *a != "--quiet"))
        .arg("--json")
        .arg(&many)
        .output()
        .expect("mpirun runs");
    let (stdout, stderr) = common::output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");

    let capacity = |path: &Path| {
        let result = common::read_json(path);
        (result["streams"]["capacity"]["streams"].as_f64().expect("a capacity"), result)
    };
    let ((alone, _), (together, result)) = (capacity(&one), capacity(&many));
    eprintln!("{test}: one process {alone} streams, four ranks {together}");
    assert!((alone - together).abs() <= 0.1 * alone.max(together), "{alone} against {together}\n{stdout}");

    let cluster = &result["cluster"];
    assert_eq!(cluster["ranks"], 4);
    let steps = cluster["steps"].as_array().expect("each step per client");
    assert_eq!(steps.len(), result["streams"]["steps"].as_array().map(Vec::len).expect("steps"));
    for step in steps {
        let clients = step["clients"].as_array().expect("clients");
        assert_eq!(clients.len(), 4, "{step}");
        let viewers: u64 = clients.iter().map(|c| c["viewers"].as_u64().expect("viewers")).sum();
        assert_eq!(Some(viewers), step["count"].as_u64(), "every viewer ran on one client: {step}");
    }
    let verdict = cluster["verdicts"][0][1].as_str().expect("the clients' verdict");
    assert!(verdict.starts_with("4 clients"), "{verdict}");
    assert!(stdout.contains("4 ranks: rank 0 on") && stdout.contains("per client, each step:"), "{stdout}");
    assert!(stdout.contains(&format!("clients: {verdict}")), "{stdout}");
    assert!(nothing_left(&mount.point), "every rank removed its work directory and media");
}

/// `check` across two ranks: one check whose every phase holds both ranks' work (the raw phases' totals are the
/// sum of the ranks'), each stream search spread over both clients, one summary with the per-rank table and the
/// verdict for every format, and nothing left in the directory (each rank built its own small-file tree).
#[cfg(feature = "mpi")]
#[test]
fn check_across_two_ranks_gives_one_check_of_both() {
    let Some(mut cmd) = common::mpirun("check_across_two_ranks_gives_one_check_of_both", 2) else { return };
    let (dir, out_dir) = (tempfile::tempdir().expect("temp dir"), tempfile::tempdir().expect("temp dir"));
    let json = out_dir.path().join("r.json");
    let out = cmd
        .args(["-x", "STREAMCAP_NO_HISTORY=1"])
        .arg(common::streamcap_path())
        .arg("check")
        .arg(dir.path())
        .args(["--quick", "--no-html", "--json"])
        .arg(&json)
        .output()
        .expect("mpirun runs");
    let (stdout, stderr) = common::output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout.matches("Verdict: concurrent streams").count(), 1, "one summary, from rank 0:\n{stdout}");
    assert!(stdout.contains("2 ranks: rank 0 on") && stdout.contains("per client, each step:"), "{stdout}");

    let result = common::read_json(&json);
    assert_eq!(result["status"], "completed");
    assert_eq!(result["check"]["partial"], false);
    assert_eq!(result["check"]["verdict"].as_array().map(Vec::len), Some(3));
    let phases = result["phases"].as_array().expect("phases");
    let cluster = &result["cluster"];
    let rows = cluster["phases"].as_array().expect("per-rank phases");
    assert_eq!(rows.len(), phases.len());
    assert!(rows.iter().all(|p| p["ranks"].as_array().map(Vec::len) == Some(2)), "{rows:?}");
    let ops = |v: &serde_json::Value, class: &str| v[class]["ops"].as_u64().unwrap_or(0);
    let first = &phases[0];
    let per_rank: u64 = rows[0]["ranks"].as_array().expect("rows").iter().map(|r| r["ops"].as_u64().unwrap_or(0)).sum();
    assert_eq!(ops(first, "read") + ops(first, "write"), per_rank, "{first}");
    let steps = cluster["steps"].as_array().expect("stream steps per client");
    assert!(!steps.is_empty());
    for step in steps {
        let viewers: u64 =
            step["clients"].as_array().expect("clients").iter().map(|c| c["viewers"].as_u64().unwrap_or(0)).sum();
        assert_eq!(Some(viewers), step["count"].as_u64(), "{step}");
    }
    assert!(common::entries(dir.path()).is_empty(), "left behind: {:?}", common::entries(dir.path()));
}

/// Ranks on one host writing into one filesystem must fit in it together: on a 160 MiB tmpfs, one rank's 60 MiB
/// data set fits (with the 64 MiB headroom), two do not. Every rank stops before any I/O, rank 0 names the host
/// and the ranks, and nothing is written; the same job with one rank runs.
#[cfg(feature = "mpi")]
#[test]
fn ranks_sharing_a_filesystem_must_fit_in_it_together() {
    let test = "ranks_sharing_a_filesystem_must_fit_in_it_together";
    if !common::is_root() {
        common::skip(&format!("{test}: mounting a tmpfs needs root"));
        return;
    }
    let Some(mut two) = common::mpirun(test, 2) else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let mount = common::Mount::new("tmpfs", &dir.path().join("mnt"), &["-t", "tmpfs", "-o", "size=160M"]);
    let json = dir.path().join("r.json");
    let args = ["run", "--rw", "read", "--bs", "1M", "--size", "60M", "--runtime", "1s", "--quiet", "--json"];
    let out = two
        .args(["-x", "STREAMCAP_NO_HISTORY=1"])
        .arg(common::streamcap_path())
        .args(args)
        .arg(&json)
        .arg(&mount.point)
        .output()
        .expect("mpirun runs");
    let (stdout, stderr) = common::output_text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "rank 0 alone says it:\n{stderr}");
    assert!(
        errors[0].contains("not enough free space on ") && errors[0].contains("for ranks 0, 1 together"),
        "{stderr}"
    );
    assert!(!json.exists() && nothing_left(&mount.point));

    let Some(mut one) = common::mpirun(test, 1) else { return };
    let out = one
        .args(["-x", "STREAMCAP_NO_HISTORY=1"])
        .arg(common::streamcap_path())
        .args(args)
        .arg(&json)
        .arg(&mount.point)
        .output()
        .expect("mpirun runs");
    assert_eq!(out.status.code(), Some(0), "{:?}", common::output_text(&out));
    assert!(json.exists() && nothing_left(&mount.point));
}
