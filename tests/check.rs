//! `streamcap check` end to end: the quick profile on a real temp directory prints every section and the
//! verdict table and the planner's one-line hint, writes one JSON result with all sections, `report` prints it
//! again, and the directory is left as it was but for the library kept for the next check; it stays quick although each step is judged only once every
//! player's buffer was full. Bad directories are refused with exit code 2 before anything is written.

mod common;

use common::{entries, interrupt_and_wait, read_json, streamcap, streamcap_path};
use predicates::prelude::*;
use serde_json::Value;

const FORMATS: [&str; 3] = ["1080p H.264", "2160p HEVC", "2160p remux"];

#[test]
fn quick_check_prints_the_verdict_writes_every_section_and_keeps_only_its_library() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let started = std::time::Instant::now();
    let household = "1x2160p-remux,2x1080p";
    let assert = streamcap()
        .arg("check")
        .arg(dir.path())
        .args(["--quick", "--expect", household, "--json"])
        .arg(&json)
        .assert()
        .success();
    // A quick check judges fewer steps, not shorter ones: what keeps it quick is its count of steps (below). The
    // time is bounded only against a hang: 35-72 s here (release build, quiet), and 120 s in a CI run beside the
    // slow tier's other checks, where this bound was 90 s and failed a run that judged its usual steps.
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(300), "check --quick took {took:?}");
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    let sections = [
        "Host & devices",
        "Headline figures",
        "sequential 1 MiB writes",
        "random 4 KiB reads",
        "small files",
        "Verdict",
    ];
    let cache = ["Cache versus device", "page cache", "sustained media", "access time", "served from "];
    for section in sections.into_iter().chain(cache).chain(["Which device did the work", "share"]) {
        assert!(stdout.contains(section), "no '{section}' in:\n{stdout}");
    }
    for header in ["format", "bitrate", "streams", "range", "plan for", "limited by", "sequential ceiling (a bound)"] {
        assert!(stdout.contains(header), "no '{header}' column in:\n{stdout}");
    }
    for format in FORMATS {
        assert!(stdout.contains(format), "no {format} row in:\n{stdout}");
    }
    assert!(!stdout.contains("cache: 'page cache'"), "the page-cache plateau reads RAM on purpose:\n{stdout}");
    assert_only_the_library_is_kept(dir.path(), &stdout);
    // The HTML report goes beside the JSON by default, and check says where.
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    let page = out.path().join("r.html");
    assert!(stderr.contains(&format!("HTML report: {}", page.display())), "{stderr}");
    assert!(std::fs::read_to_string(&page).unwrap().contains("id=\"verdict\""));

    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["status"], "completed");
    // About seven steps in all (src/app/check/profile.rs; 7 on this disk quiet, 15 in a loaded CI run, 2026-11-29):
    // bounded at twice the profile's twelve, against a search that runs away; a first search of a few,
    // a later format one to four.
    let steps: usize =
        r["check"]["verdict"].as_array().unwrap().iter().map(|v| v["steps"].as_array().unwrap().len()).sum();
    assert!((3..=24).contains(&steps), "{steps} steps in a quick check, took {took:?}");
    assert_check_figures(&r["check"]);
    assert_household_answered(&r["check"], &stdout, household);
    assert!(std::fs::read_to_string(&page).unwrap().contains("id=\"household\""));
    // The player profile is stated also when it is the default (issue 27).
    let generic = "generic (10 s buffer, 2 s to start)";
    assert_eq!(
        (r["check"]["player"]["name"].as_str(), r["check"]["player"]["described"].as_str()),
        (Some("generic"), Some(generic))
    );
    assert!(stdout.contains(&format!("player: {generic}")), "{stdout}");
    assert!(std::fs::read_to_string(&page).unwrap().contains(&format!("player: {generic}")));
    // One plan: the raw phases, the small-file phases, the two raw-rate phases of the estimate and a stream
    // phase per format, numbered in order in one result.
    let phases = r["phases"].as_array().unwrap();
    let indices: Vec<u64> = phases.iter().map(|p| p["index"].as_u64().unwrap()).collect();
    assert_eq!(indices, (0..phases.len() as u64).collect::<Vec<_>>());
    assert_eq!(phases.len(), 13);
    assert_eq!(phases[4]["name"], "page cache");
    assert_eq!(
        (phases[4]["direct"].as_bool(), phases[4]["read"]["ops"].as_u64().is_some_and(|n| n > 0)),
        (Some(false), true)
    );
    // The cache section: the plateaus as `streamcap cache` labels them, and where the streams were served from.
    let cache = &r["check"]["cache"];
    let kinds: Vec<&str> = cache["plateaus"].as_array().unwrap().iter().map(|p| p["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["page_cache", "media", "access_time"]);
    assert!(cache["plateaus"].as_array().unwrap().iter().all(|p| p["streams_bound"].as_f64().unwrap() > 0.0));
    assert!(["page_cache", "device_cache", "media"].contains(&cache["served_from"].as_str().unwrap()), "{cache}");
    assert!(cache["viewer_bytes"].as_u64().unwrap() > 0, "{cache}");
    assert!(phases[6]["file_ops"].is_object());
    let streams: Vec<&str> =
        phases.iter().filter(|p| p["streams"].is_object()).map(|p| p["name"].as_str().unwrap()).collect();
    // Named by the formats' labels, not their ids (issue 24: no internal ids where people read).
    assert_eq!(streams, ["streams 2160p remux", "streams 2160p HEVC", "streams 1080p H.264"]);
    assert_steps_judged_at_steady_state(&r["check"]);
    let hint = assert_planner_line(&r, &stdout);
    assert_no_capacity_beyond_its_ceiling_unsaid(&r, &stdout);

    // `report` prints the check summary again, the planner's line too.
    streamcap().arg("report").arg(&json).assert().success().stdout(
        predicate::str::contains("plan for")
            .and(predicate::str::contains("2160p remux"))
            .and(predicate::str::contains(hint.as_str())),
    );
}

/// What a check leaves is its library of titles in `.streamcap/library`, complete, for the next check, which reads
/// it as it is (its plan says so); `--fresh-library` would replace it.
fn assert_only_the_library_is_kept(dir: &std::path::Path, stdout: &str) {
    assert_eq!(entries(dir), [".streamcap"], "left behind: {:?}", entries(dir));
    let base = dir.join(".streamcap");
    assert_eq!(entries(&base), ["library"], "left behind: {:?}", entries(&base));
    let library = base.join("library");
    let marker = std::fs::read_to_string(library.join(".streamcap-library")).unwrap();
    assert!(marker.ends_with("complete\n"), "{marker}");
    let titles = entries(&library).iter().filter(|n| n.starts_with("title-")).count();
    assert!(titles > 0 && marker.contains(&format!("titles {titles}\n")), "{marker} beside {:?}", entries(&library));
    assert!(stdout.contains("kept: written by this run in"), "{stdout}");
    let again = streamcap().arg("check").arg(dir).args(["--quick", "--dry-run"]).assert().success();
    let plan = String::from_utf8_lossy(&again.get_output().stdout).to_string();
    assert!(plan.contains("kept by an earlier run (written 20") && plan.contains("read as it is"), "{plan}");
    let fresh = streamcap().arg("check").arg(dir).args(["--quick", "--dry-run", "--fresh-library"]).assert().success();
    let plan = String::from_utf8_lossy(&fresh.get_output().stdout).to_string();
    assert!(plan.contains("in place of the one kept in"), "{plan}");
}

/// Every step that passed was judged over the quick profile's 3 s of playback after its last viewer's buffer
/// was full, with its viewers arriving over a window; a step that failed says why.
fn assert_steps_judged_at_steady_state(check: &Value) {
    for verdict in check["verdict"].as_array().unwrap() {
        for step in verdict["steps"].as_array().unwrap() {
            if step["count"].as_u64().unwrap() > 1 {
                assert!(step["arrival_s"].as_f64().unwrap() > 0.0, "{step}");
            }
            if step["meets_target"].as_bool().unwrap() {
                let steady = step["steady_at_s"].as_f64().expect("a passing step had every buffer full");
                assert!(step["judged_s"].as_f64().unwrap() >= 2.9, "{step}");
                assert!(step["duration_s"].as_f64().unwrap() >= steady + 2.9, "{step}");
            }
        }
    }
}

/// The check section's figures: the raw rates, the small files and a verdict row per format.
fn assert_check_figures(check: &Value) {
    assert_eq!(check["profile"], "quick");
    assert_eq!(check["partial"], false);
    assert!(check["sequential"]["write_mbps"].as_f64().unwrap() > 0.0);
    assert!(check["sequential"]["read_mbps"].as_f64().unwrap() > 0.0);
    let depths: Vec<u64> =
        check["random_reads"].as_array().unwrap().iter().map(|r| r["queue_depth"].as_u64().unwrap()).collect();
    assert_eq!(depths, [1, 32]);
    assert!(check["random_reads"][1]["p99_ns"].as_u64().unwrap() > 0);
    assert_eq!(check["small_files"]["files"], 500);
    for rate in ["create_per_s", "stat_per_s", "read_per_s"] {
        assert!(check["small_files"][rate].as_f64().unwrap() > 0.0, "{rate}");
    }
    let verdict = check["verdict"].as_array().unwrap();
    let names: Vec<&str> = verdict.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["1080p", "2160p-hevc", "2160p-remux"]);
    for v in verdict {
        assert!(!v["steps"].as_array().unwrap().is_empty(), "{v}");
        assert!(v["limited_by"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(v["estimate"]["streams"].as_u64().is_some(), "{v}");
        // The quick profile runs each edge once: it judges fewer steps (no confirmation), not shorter ones.
        let capacity = &v["capacity"];
        assert_eq!(capacity["edges"].as_array().map(Vec::len), Some(1), "{capacity}");
        let (low, high) = (capacity["low"].as_u64().unwrap(), capacity["high"].as_u64().unwrap());
        let streams = v["streams"].as_u64().unwrap();
        assert!(low <= streams && streams <= high && capacity["plan_for"].as_u64().unwrap() <= low, "{capacity}");
        // Which counts were measured: the failing one beside the capacity, or (a later format, whose step at
        // the earlier edge scaled to its bitrate passed, and so did every probe 10 % above it, up to 0.94 of the
        // format's own estimate and never beyond) derived from that edge and said so.
        match (capacity["first_failing"].as_u64(), capacity["derived_failing"].as_u64()) {
            (Some(failed), None) => assert!(failed > streams, "{capacity}"),
            (None, Some(derived)) => {
                assert!(derived > streams && v["name"] != "2160p-remux", "the first search measures both: {v}");
                let steps = v["steps"].as_array().unwrap();
                let passing = steps.iter().all(|s| s["meets_target"] == true);
                assert!((1..=6).contains(&steps.len()) && passing, "the scaled count and the probes above it: {v}");
                // The unrounded estimate lies below its floored streams + 1: the probes' top is below 0.94 of that.
                let top = (0.94 * (v["estimate"]["streams"].as_u64().unwrap() + 1) as f64).floor() as u64;
                let probes = steps.iter().skip(1).map(|s| s["count"].as_u64().unwrap());
                assert!(probes.max().is_none_or(|p| p <= top), "no probe above 0.94 of the estimate: {v}");
                assert!(capacity["derived_from"].as_str().is_some_and(|f| f.contains("2160p")), "{capacity}");
                assert!(capacity["words"].as_str().unwrap().contains("derived from"), "{capacity}");
            }
            (None, None) => assert_eq!(capacity["at_limit"], true, "{capacity}"),
            (Some(_), Some(_)) => panic!("a failing count is measured or derived, not both: {capacity}"),
        }
        assert!(v["headroom_pct"].as_f64().is_none_or(|h| h >= 0.0), "never a negative headroom: {v}");
    }
}

/// Issue 24: on this machine's virtual disk (host-cached, calling itself rotational) a check reported 728 × 1080p
/// against a sequential ceiling of 448, with a negative headroom and no word of a cache. A capacity more than 15 %
/// beyond its format's ceiling must be called cache-served, in the JSON and on its row of the verdict; and where
/// the device is flagged as a cache beneath the OS, the streams are not said to come from the media.
fn assert_no_capacity_beyond_its_ceiling_unsaid(r: &Value, stdout: &str) {
    for v in r["check"]["verdict"].as_array().unwrap() {
        let (streams, ceiling) = (v["streams"].as_f64().unwrap(), v["bandwidth_ceiling"].as_f64().unwrap_or(f64::NAN));
        let label = v["label"].as_str().unwrap();
        let row = stdout.lines().find(|l| l.trim_start().starts_with(label)).unwrap_or_default();
        eprintln!("{label}: {streams} streams against a sequential ceiling of {ceiling}: {row}");
        if ceiling > 0.0 && streams > ceiling * 1.15 {
            assert_eq!(v["beyond_ceiling"], true, "{label}: {streams} beyond a ceiling of {ceiling} unflagged: {v}");
            assert!(row.contains("cache-served"), "{label}: the row does not say cache-served:\n{stdout}");
        } else {
            assert!(v["beyond_ceiling"] != true, "{v}");
        }
    }
    let cache = &r["check"]["cache"];
    if cache["implausible"].is_string() {
        assert_ne!(cache["served_from"], "media", "a flagged device's figures come from a cache beneath: {cache}");
    }
}

/// The planner's line: 4 drives like the one under the directory, against it alone (docs/planning.md); or, where
/// the check's figures came from a cache (a virtual disk's host cache beneath the OS), why there is none.
fn assert_planner_line(r: &Value, stdout: &str) -> String {
    let devices = r["target"]["devices"].as_array().unwrap();
    let hint = r["check"]["planner_hint"].as_str().unwrap_or_default();
    if devices.len() == 1 {
        let figure = hint.starts_with("planner: 4 drives like this one as ");
        let why_not = hint.starts_with("planner: no hint from this check: ") && hint.contains("served");
        assert!(figure || why_not, "planner_hint: {hint:?}");
        assert!(stdout.contains(hint), "the summary does not end with the planner's line:\n{stdout}");
    } else {
        eprintln!("no planner figure expected: the temporary directory is on {} devices ({hint})", devices.len());
    }
    hint.to_string()
}

#[test]
fn the_plan_says_how_long_a_step_and_the_check_last() {
    let dir = tempfile::tempdir().unwrap();
    let assert = streamcap().arg("check").arg(dir.path()).arg("--quick").arg("--dry-run").assert().success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    for words in ["a step lasts about", "judged from the instant the last buffer was full", "not confirmed"] {
        assert!(stdout.contains(words), "no '{words}' in:\n{stdout}");
    }
    let forecast = stdout.lines().find(|l| l.starts_with("the quick check takes about ")).unwrap_or_default();
    assert!(forecast.contains("capacity-search steps of about"), "no forecast in:\n{stdout}");
    assert!(entries(dir.path()).is_empty(), "a dry run created {:?}", entries(dir.path()));
}

/// The plan and the forecast follow `--player` (issue 27): a real player's viewers are its audience (titles by
/// popularity, seeks), said for every search, and hls.js's 6 s start makes every step longer than the generic
/// viewer's 2 s (the default profile: steps of about 9.6 s, 20 s with hls.js; check::profile's unit tests
/// hold the arithmetic).
#[test]
fn the_plan_and_the_forecast_follow_the_player() {
    let dir = tempfile::tempdir().unwrap();
    let plan = |player: &[&str]| {
        let assert = streamcap().arg("check").arg(dir.path()).arg("--dry-run").args(player).assert().success();
        String::from_utf8_lossy(&assert.get_output().stdout).to_string()
    };
    let step_of = |stdout: &str| -> f64 {
        let forecast = stdout.lines().find(|l| l.starts_with("the default check takes about ")).unwrap_or_default();
        let after = forecast.split("capacity-search steps of about ").nth(1).unwrap_or_default();
        after.split(" s each").next().unwrap_or_default().parse().unwrap_or_else(|_| panic!("{forecast}"))
    };
    let (generic, hls) = (plan(&[]), plan(&["--player", "hls.js"]));
    assert!(
        !generic.contains("audience:"),
        "the generic viewer's audience is each viewer on its own title:\n{generic}"
    );
    let said = hls.lines().filter(|l| l.trim() == "audience: popularity: Zipf s=0.8, seeks every 10 min on average");
    assert_eq!(said.count(), 3, "one audience line per format's search:\n{hls}");
    let (g, h) = (step_of(&generic), step_of(&hls));
    assert!(h > g + 4.0, "hls.js's steps ({h} s) last its 6 s start longer than the generic viewer's ({g} s)");
    assert!(entries(dir.path()).is_empty(), "a dry run created {:?}", entries(dir.path()));
}

#[test]
fn a_missing_directory_or_a_file_is_refused_with_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    streamcap()
        .arg("check")
        .arg(dir.path().join("nope"))
        .arg("--quick")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("does not exist"));
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    streamcap()
        .arg("check")
        .arg(&file)
        .arg("--quick")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a directory"));
    assert_eq!(entries(dir.path()), ["a-file"]);
}

#[test]
fn markdown_is_printed_even_when_quiet_and_quiet_prints_no_progress() {
    // The null engine keeps this short: what is checked is what reaches stdout and stderr, not the figures.
    let dir = tempfile::tempdir().unwrap();
    let assert = streamcap()
        .arg("check")
        .arg(dir.path())
        .args(["--quick", "--engine", "null", "--format", "markdown", "--quiet", "--no-html"])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    assert!(stdout.starts_with("### streamcap check"), "{stdout}");
    let header = "| format | bitrate | streams | range | plan for | limited by | sequential ceiling (a bound) |";
    assert!(stdout.contains(header), "{stdout}");
    for format in FORMATS {
        assert!(stdout.contains(&format!("| {format} |")), "no {format} row in:\n{stdout}");
    }
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(!stderr.contains("[1/5]") && !stderr.contains("viewers of"), "--quiet printed progress:\n{stderr}");
    assert!(stderr.contains("note: streams 1080p H.264: the null engine reads nothing"), "notices stay:\n{stderr}");
    assert!(entries(dir.path()).is_empty(), "left behind: {:?}", entries(dir.path()));
}

/// Issue 24: an interrupted check printed "0 streams sustained" for the formats it never measured. Ctrl-C during
/// the first format's search: every format still has its row, each says "not measured" with the reason, and no
/// sentence claims a count of zero. The null engine keeps it short: the words are what is checked.
#[test]
fn an_interrupted_check_says_not_measured_never_zero_streams() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let mut child = std::process::Command::new(streamcap_path())
        .arg("check")
        .arg(dir.path())
        .args(["--quick", "--engine", "null", "--no-html", "--json"])
        .arg(&json)
        .env_remove("RUST_BACKTRACE")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(120);
    // The JSON is rewritten after every stream step: the first step of the first search has ended.
    let stepped = || {
        let text = std::fs::read_to_string(&json).unwrap_or_default();
        serde_json::from_str::<Value>(&text)
            .is_ok_and(|r| r["streams"]["steps"].as_array().is_some_and(|s| !s.is_empty()))
    };
    while !stepped() {
        assert!(std::time::Instant::now() < give_up, "no stream step was recorded");
        assert!(child.try_wait().unwrap().is_none(), "check ended before its first stream step");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let status = interrupt_and_wait(&mut child, std::time::Duration::from_secs(60));
    assert_eq!(status.code(), Some(130));
    let mut stdout = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
    let r = read_json(&json);
    let verdict = r["check"]["verdict"].as_array().unwrap();
    assert_eq!(verdict.len(), 3, "every format keeps its row: {verdict:?}");
    // The table's rows, in the order of the JSON's verdict (1080p, 2160p HEVC, 2160p remux).
    let rows: Vec<&str> = stdout.lines().filter(|l| FORMATS.iter().any(|f| l.starts_with(&format!(" {f} ")))).collect();
    assert_eq!(rows.len(), 3, "{stdout}");
    // The first search may have found its edge before Ctrl-C (it is then measured, not confirmed); the formats
    // after it never ran.
    for (v, row) in verdict.iter().zip(&rows) {
        let words = v["capacity"]["words"].as_str().unwrap();
        assert!(!words.contains("sustains 0") && stdout.contains(words), "{words}:\n{stdout}");
        if v["capacity"]["not_measured"].is_string() {
            assert_eq!(v["limited_by"], "not measured");
            assert!(words.contains("not measured") && row.contains("not measured"), "{words}\n{row}");
        }
    }
    // Ctrl-C lands during the first search or, when that search ended with its first step (at the search
    // limit, one run of the edge with --quick), during the second: one or two formats were never reached, and
    // the last searched (1080p) is always one of them.
    let unreached = |v: &&Value| v["capacity"]["not_measured"] == "the check did not reach this format";
    let unmeasured = verdict.iter().filter(unreached).count();
    assert!((1..=2).contains(&unmeasured), "{verdict:?}");
    assert!(unreached(&&verdict[0]), "1080p is searched last: {verdict:?}");
    assert!(entries(dir.path()).is_empty(), "left behind: {:?}", entries(dir.path()));
}

/// Regression (issue 30): on a terminal, check printed vdbench's 160-column interval tables in the middle of its
/// small-files stage, and two counters ([1/5] stages beside [3/13] phases). Run under a pseudo-terminal (`script`)
/// so that the progress line is drawn: every "[n/m]" counter says the same m, and no interval table appears.
#[test]
fn on_a_terminal_the_check_shows_one_counter_and_no_interval_tables() {
    if std::process::Command::new("script").arg("--version").output().is_err() {
        return common::skip("script (util-linux) is not installed: no pseudo-terminal to draw on");
    }
    let dir = tempfile::tempdir().unwrap();
    let line = format!(
        "{} check {} --quick --engine null --no-html --no-history",
        common::streamcap_path().display(),
        dir.path().display()
    );
    let output = std::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_remove("RUST_BACKTRACE")
        .env("STREAMCAP_NO_HISTORY", "1")
        .env("TERM", "xterm")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(output.status.success(), "{text}");
    assert!(!text.contains("ReqstdOps") && !text.contains("interval     rate"), "an interval table:\n{text}");
    let mut totals: Vec<&str> = text
        .split('[')
        .skip(1)
        .filter_map(|s| s.split_once(']').map(|(inside, _)| inside))
        .filter_map(|inside| inside.split_once('/'))
        .filter(|(n, m)| n.parse::<u32>().is_ok() && m.parse::<u32>().is_ok())
        .map(|(_, m)| m)
        .collect();
    totals.dedup();
    assert_eq!(totals.len(), 1, "more than one counter: {totals:?}\n{text}");
    assert!(entries(dir.path()).is_empty(), "left behind: {:?}", entries(dir.path()));
}

/// `check --format json` prints the result JSON on stdout (as `--json -`), even with --quiet, and nothing else.
#[test]
fn format_json_prints_the_check_result_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let assert = streamcap()
        .arg("check")
        .arg(dir.path())
        .args(["--quick", "--engine", "null", "--format", "json", "--quiet", "--no-html"])
        .assert()
        .success();
    let r: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).expect("stdout is the JSON alone");
    assert_eq!(r["schema"], "streamcap.run");
    assert_eq!(r["check"]["verdict"].as_array().map(Vec::len), Some(FORMATS.len()));
    assert!(entries(dir.path()).is_empty(), "left behind: {:?}", entries(dir.path()));
}

/// `--expect` (issue 27): the household's grid follows the verdict, each row's capacity is the verdict's, and the
/// answer for all of it together is the rule's: yes within every format's comfortable count (Σ asked ÷ plan for
/// ≤ 1), only without margin within the capacity (Σ asked ÷ streams ≤ 1), no beyond.
fn assert_household_answered(check: &Value, stdout: &str, household: &str) {
    assert!(stdout.contains(&format!("Will it work: {household} (margin 20 %)")), "{stdout}");
    assert!(stdout.contains("together: "), "{stdout}");
    let h = &check["household"];
    let (mut load, mut comfortable) = (0.0, 0.0);
    for row in h["rows"].as_array().unwrap() {
        let verdict = check["verdict"].as_array().unwrap().iter().find(|v| v["name"] == row["format"]).unwrap();
        assert_eq!(row["capacity"], verdict["streams"], "{row}");
        assert_eq!(row["plan_for"], verdict["capacity"]["plan_for"], "{row}");
        let asked = row["wanted"].as_f64().unwrap();
        load += asked / row["capacity"].as_f64().unwrap();
        comfortable += asked / row["plan_for"].as_f64().unwrap();
    }
    let expected = match () {
        _ if comfortable <= 1.0 => "yes",
        _ if load <= 1.0 => "only_without_margin",
        _ => "no",
    };
    assert_eq!(h["together"], expected, "{h}");
}

#[test]
fn a_household_of_formats_the_check_does_not_measure_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    for (expect, says) in
        [("2x720p", "the check measures 1080p, 2160p-hevc, 2160p-remux"), ("2160p-remux", "COUNTxFORMAT")]
    {
        let out = streamcap().arg("check").arg(dir.path()).args(["--quick", "--expect", expect]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{expect}: {stderr}");
        assert!(stderr.contains(says), "{expect}: {stderr}");
        assert!(entries(dir.path()).is_empty(), "{expect}: nothing created");
    }
}
