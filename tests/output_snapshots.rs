//! Output formats pinned by snapshots of a fixed `RunResult` (tests/fixtures/result-v1.json, a real result
//! with an error and a cache-affected phase edited in): the terminal summary and the interval CSV. A change to
//! either shows up here as a diff to review. To accept an intended change, run the test with
//! `UPDATE_SNAPSHOTS=1` and commit the new files. The fixture also guards that schema-1 results stay readable.

use std::path::Path;

use streamcap::report::{CsvSink, FioJson, Renderer, RunSummary, Summary, fio_json};
use streamcap::results::{flag_implausible_devices, read_result};
use streamcap::units::Bytes;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/result-v1.json");
/// A real `streamcap inspect --json` of a btrfs raid5 (data) / raid1 (metadata) pool of three 1 GiB loop
/// devices, with the paths and host name edited.
const INSPECT_FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/inspect-raid5.json");

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
    RunSummary.render(&result, &mut out).unwrap();
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
    let mut sink = CsvSink::new(&path);
    for phase in &result.phases {
        for point in &phase.intervals {
            sink.write(phase.index, &phase.name, point).unwrap();
        }
    }
    drop(sink);
    check_snapshot("result-v1.intervals.csv", &std::fs::read_to_string(&path).unwrap());
}

#[test]
fn fio_json_of_a_fixed_result() {
    let result = read_result(Path::new(FIXTURE)).unwrap();
    let mut out = Vec::new();
    FioJson.render(&result, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    check_snapshot("result-v1.fio.json", &text);
    // fio's field names, where scripts written for fio look for them.
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    for key in ["fio version", "timestamp", "jobs", "disk_util"] {
        assert!(json.get(key).is_some(), "{key}");
    }
    let job = &json["jobs"][1];
    assert_eq!(job["jobname"], "random 4k reads");
    assert_eq!(job["groupid"], 1);
    for key in ["usr_cpu", "sys_cpu", "job_runtime", "read", "write", "trim", "sync"] {
        assert!(job.get(key).is_some(), "{key}");
    }
    let read = &job["read"];
    for key in ["io_bytes", "io_kbytes", "bw_bytes", "bw", "iops", "runtime", "total_ios", "clat_ns", "lat_ns"] {
        assert!(read.get(key).is_some(), "read.{key}");
    }
    let phase = result.phases[1].read.as_ref().unwrap();
    assert_eq!(read["total_ios"], phase.ops);
    assert_eq!(read["io_kbytes"], phase.bytes / 1024);
    assert_eq!(read["bw"], ((phase.bytes as f64 / result.phases[1].duration_s) / 1024.0).round() as u64);
    assert_eq!(read["clat_ns"]["percentile"]["99.000000"], phase.latency.at(99.0).unwrap());
    assert_eq!(json["disk_util"][0]["name"], "vda");
}

#[test]
fn fio_json_merges_a_reporting_group() {
    let mut result = read_result(Path::new(FIXTURE)).unwrap();
    for phase in &mut result.phases {
        phase.group = Some("together".into());
    }
    let json = fio_json(&result, false);
    let jobs = json["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "group_reporting: one entry for the group");
    assert_eq!(jobs[0]["jobname"], result.phases[0].name);
    let total: u64 = result.phases.iter().map(|p| p.read.as_ref().map_or(0, |r| r.ops)).sum();
    assert_eq!(jobs[0]["read"]["total_ios"], total);
    let writes: u64 = result.phases.iter().map(|p| p.write.as_ref().map_or(0, |w| w.bytes)).sum();
    assert_eq!(jobs[0]["write"]["io_bytes"], writes);
}

#[test]
fn markdown_of_a_fixed_result() {
    use streamcap::report::{Format, render_to_string};
    let result = read_result(Path::new(FIXTURE)).unwrap();
    let text = render_to_string(Format::Markdown.renderer(), &result);
    check_snapshot("result-v1.markdown.md", &text);
    // A table a forum renders: header, alignment rule, one row per operation class.
    assert!(text.contains("| phase | op | IOPS | MB/s | p50 | p99 | p99.9 | max |\n|---|---|--:|"));
    assert!(text.contains("| random 4k reads [cache] | read (1 err) |"));
}

#[test]
fn the_summary_renderer_is_the_terminal_summary() {
    use streamcap::report::{Format, render_to_string};
    let result = read_result(Path::new(FIXTURE)).unwrap();
    let expected = std::fs::read_to_string(Path::new(FIXTURE).with_file_name("result-v1.summary.txt")).unwrap();
    assert_eq!(render_to_string(Format::Summary.renderer(), &result), expected);
    let fio = std::fs::read_to_string(Path::new(FIXTURE).with_file_name("result-v1.fio.json")).unwrap();
    assert_eq!(render_to_string(Format::FioJson.renderer(), &result), fio);
}

/// The streams and check fixtures: real results of `streams --max` on a throttled loop device and `check
/// --quick` (per-stream figures of the check dropped to keep the file small).
fn other_fixture(name: &str) -> streamcap::results::RunResult {
    read_result(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)).unwrap()
}

#[test]
fn summary_and_markdown_of_a_streams_and_a_check_result() {
    use streamcap::report::{Format, render_to_string};
    let streams = other_fixture("streams-v1.json");
    let summary = render_to_string(Format::Summary.renderer(), &streams);
    check_snapshot("streams-v1.summary.txt", &summary);
    assert!(summary.contains("answer: sustains 11 × 1080p"));
    let markdown = render_to_string(Format::Markdown.renderer(), &streams);
    check_snapshot("streams-v1.markdown.md", &markdown);
    assert!(markdown.contains("| 12 | — | 0 | 0 |") && markdown.contains("**sustains 11 × 1080p"));
    assert!(markdown.contains("| missed: 1 took over 2 s to start |"), "why a step missed, in words");

    let check = other_fixture("check-v1.json");
    let summary = render_to_string(Format::Summary.renderer(), &check);
    check_snapshot("check-v1.summary.txt", &summary);
    // Judged before one late start in ten was allowed: its heading keeps the strict rule it was judged by.
    assert!(summary.contains("Verdict: concurrent streams with no stall and start-up within 2 s\n"), "{summary}");
    let mut judged_now = check.clone();
    judged_now.check.as_mut().expect("a check").player = Some(streamcap::results::CheckPlayer {
        name: "generic".into(),
        described: "generic".into(),
        max_startup_s: 2.0,
        late_starts_in_ten: 1,
    });
    let now = render_to_string(Format::Summary.renderer(), &judged_now);
    assert!(now.contains("start-up within 2 s (one in ten within 4 s)\n"), "{now}");
    // A pool's members read what the viewers received beyond the ceiling: the ceiling is blamed, not a cache.
    let verdict = &mut judged_now.check.as_mut().expect("a check").verdict;
    let v = verdict.iter_mut().find(|v| v.name == "1080p").expect("1080p");
    (v.bandwidth_ceiling, v.headroom_pct, v.ceiling_understated) = (30, None, true);
    let now = render_to_string(Format::Summary.renderer(), &judged_now);
    let row = now.lines().find(|l| l.trim_start().starts_with("1080p")).expect("the 1080p row");
    assert!(row.trim_end().ends_with("30 · exceeded, device-served"), "{row}");
    assert!(now.contains("device-served: the pool's members read every byte"), "{now}");
    let markdown = render_to_string(Format::Markdown.renderer(), &check);
    check_snapshot("check-v1.markdown.md", &markdown);
    // A result from before confirmations: its one run of the edge has no range and no comfortable count.
    assert!(markdown.contains("| 2160p HEVC | 25 Mbit/s | 107 | — | — | stalls (bandwidth) | 123 · 13 % unused |"));
}

#[test]
fn inspect_view_of_a_fixed_raid5_pool() {
    let result = read_result(Path::new(INSPECT_FIXTURE)).expect("an inspect result reads as a result");
    let mut out = Vec::new();
    Summary.render(&result, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    check_snapshot("inspect-raid5.txt", &text);
    assert!(text.contains("pool       btrfs raid5 (metadata raid1) over 3 members: loop0, loop1, loop2"), "{text}");
    assert!(text.contains("counts raid5 parity as space"), "{text}");
}

#[test]
fn run_summary_with_a_pool_a_memory_limit_and_an_implausible_device() {
    // The fixed run, as if it had run on the raid5 pool inside a 1 GiB memory cgroup: the pool line, the
    // effective RAM and the flag on vda (rotational, yet 1.9 GB/s sequential) must all be shown.
    let mut result = read_result(Path::new(FIXTURE)).unwrap();
    let inspected = read_result(Path::new(INSPECT_FIXTURE)).unwrap();
    result.host.memory_limit = Some(Bytes::gib(1));
    result.host.memory_limit_file = Some("/sys/fs/cgroup/memory/box/memory.limit_in_bytes".into());
    result.host.effective_ram = Bytes::gib(1);
    result.phases[1].memory.effective_ram_bytes = Bytes::gib(1).0;
    result.target.pool = inspected.target.pool;
    let target = result.target.clone();
    for phase in &mut result.phases {
        flag_implausible_devices(phase, &target);
    }
    let mut out = Vec::new();
    RunSummary.render(&result, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    check_snapshot("result-v1-pool.summary.txt", &text);
    assert!(text.contains("pool: btrfs raid5 (metadata raid1) over 3 members"), "{text}");
    assert!(text.contains("23.54 GiB RAM, 1 GiB effective (memory cgroup limit"), "{text}");
    assert!(text.contains("with 1 GiB of RAM (the memory cgroup's limit)"), "{text}");
    assert!(text.contains("cache beneath: 'write the data set': vda says it is rotational"), "{text}");
}

/// vdbench's own interval lines and averages, as streamcap prints them for jobs from vdbench parameter files:
/// the raw-I/O columns (from the run fixture, with a fixed time of day) and the file-system columns (from a real
/// small-files run, tests/fixtures/vdbench-fs-v1.json).
#[test]
fn vdbench_interval_lines_of_fixed_results() {
    use streamcap::report::{vdbench_fs, vdbench_raw_average, vdbench_raw_header, vdbench_raw_line};
    let raw = read_result(Path::new(FIXTURE)).unwrap();
    let mut text = format!("{}\n", vdbench_raw_header());
    for phase in &raw.phases {
        for (i, point) in phase.intervals.iter().enumerate() {
            text.push_str(&format!("{}\n", vdbench_raw_line("12:00:00.000", i as u64 + 1, point)));
        }
        text.push_str(&format!("{}\n", vdbench_raw_average("12:00:00.000", phase)));
    }
    check_snapshot("result-v1.vdbench.txt", &text);

    let fs = other_fixture("vdbench-fs-v1.json");
    let mut text = format!("{}\n", vdbench_fs::interval_header());
    // The fixture's workload reads and writes (fwd rdpct=90): its requested operations are the transfers.
    let requested = ["read", "write"];
    for phase in &fs.phases {
        for (i, point) in phase.intervals.iter().enumerate() {
            text.push_str(&format!("{}\n", vdbench_fs::interval_line(i as u64 + 1, point, &requested)));
        }
    }
    text.push_str(&vdbench_fs::summary(&fs.phases).unwrap_or_default());
    check_snapshot("vdbench-fs-v1.vdbench.txt", &text);
}

/// Issue 24: one capacity per format. A real default `check` of a directory on this machine's virtio disk (each
/// format's edge run three times; paths edited, per-stream figures and interval series dropped) gives each format
/// one capacity with its range and its comfortable count, and the terminal, Markdown and HTML say the same figures
/// as the JSON: the same row cells, the same sentence. The cache table's bound for 25 Mbit/s is the verdict's
/// ceiling for 2160p HEVC, labelled a bound; no internal format id and no negative headroom anywhere.
#[test]
fn the_one_capacity_reads_the_same_in_every_report() {
    use streamcap::report::{Format, render_to_string};
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/check-v2.json");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let check = other_fixture("check-v2.json");
    let summary = render_to_string(Format::Summary.renderer(), &check);
    check_snapshot("check-v2.summary.txt", &summary);
    let markdown = render_to_string(Format::Markdown.renderer(), &check);
    check_snapshot("check-v2.markdown.md", &markdown);
    let html = render_to_string(Format::Html.renderer(), &check);
    let verdict = json["check"]["verdict"].as_array().unwrap();
    assert_eq!(verdict.len(), 3);
    for v in verdict {
        let label = v["label"].as_str().unwrap();
        let capacity = &v["capacity"];
        let streams = v["streams"].as_u64().unwrap();
        assert_eq!(capacity["streams"].as_u64(), Some(streams), "one capacity: {v}");
        let runs = capacity["edges"].as_array().unwrap().len();
        assert_eq!(runs, 3, "the default profile runs each edge three times: {capacity}");
        let (low, high) = (capacity["low"].as_u64().unwrap(), capacity["high"].as_u64().unwrap());
        assert!(low <= streams && streams <= high, "{capacity}");
        let range = if low == high { format!("{low} (3 runs agree)") } else { format!("{low}–{high} (3 runs)") };
        let plan = capacity["plan_for"].as_u64().unwrap();
        assert!(plan < streams && plan <= low, "a margin below the capacity and the lowest run: {capacity}");
        let bitrate = format!("{} Mbit/s", v["bitrate_bps"].as_f64().unwrap() / 1e6);
        let cells = [label.to_string(), bitrate, streams.to_string(), range, plan.to_string()];
        let row = summary.lines().find(|l| l.trim_start().starts_with(label)).unwrap();
        let at: Vec<usize> =
            cells.iter().map(|c| row.find(c.as_str()).unwrap_or_else(|| panic!("{c}: {row}"))).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{row}");
        assert!(markdown.contains(&format!("| {} |", cells.join(" | "))), "{markdown}");
        let tds: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("<td{}>{c}</td>", if i == 0 { "" } else { " class=\"num\"" }))
            .collect();
        assert!(html.contains(&tds.concat()), "no row {tds:?} in the HTML");
        let words = capacity["words"].as_str().unwrap();
        assert!(words.starts_with(&format!("sustains {streams} × {label} ")), "{words}");
        assert!(words.contains(&format!("; plan for {plan}")), "{words}");
        assert!(summary.contains(words) && markdown.contains(words) && html.contains(words), "{words}");
    }
    // The cache table's 25 Mbit/s bound and the verdict's ceiling for that format are one figure, a bound.
    let media = json["check"]["cache"]["plateaus"].as_array().unwrap().iter().find(|p| p["kind"] == "media").unwrap();
    let hevc = verdict.iter().find(|v| v["bitrate_bps"] == 25_000_000).unwrap();
    assert_eq!(media["streams_bound"].as_f64().unwrap().floor() as u64, hevc["bandwidth_ceiling"].as_u64().unwrap());
    assert!(media["meaning"].as_str().unwrap().contains("(a bound)"), "{media}");
    assert!(summary.contains("sequential ceiling (a bound)") && markdown.contains("sequential ceiling (a bound)"));
    // The ids name the formats only in the configuration (the mix "1080p:1"), never a line a reader reads.
    for text in [&summary, &markdown, &html] {
        for id in ["1080p:", "2160p-hevc:", "2160p-remux:"] {
            let line = text.lines().find(|l| l.trim_start_matches([' ', '-']).starts_with(id));
            assert!(line.is_none() && !text.contains(&format!(">{id}")), "internal id {id} in:\n{text}");
        }
        assert!(!text.contains("headroom -") && !text.contains("· -"), "negative headroom in:\n{text}");
    }
}

/// A real `streamcap cache --size 64M --runtime 1s` of a directory on this machine's virtio disk (paths and host
/// name edited): the plateau table, the device-cache regions and the cache-beneath flags, in the terminal and in
/// Markdown; the HTML report holds the same table and both charts.
#[test]
fn summary_markdown_and_html_of_a_cache_result() {
    use streamcap::report::{Format, render_to_string};
    let cache = other_fixture("cache-v1.json");
    let summary = render_to_string(Format::Summary.renderer(), &cache);
    check_snapshot("cache-v1.summary.txt", &summary);
    assert!(summary.contains(" plateau ") && summary.contains("what it means for serving"), "{summary}");
    assert!(summary.contains("sustained media + load") && summary.contains("device cache by region"), "{summary}");
    assert!(summary.contains("cache beneath: 'media': vda says it is rotational"), "{summary}");
    assert!(!summary.contains("cache beneath: 'page cache"), "the page cache is buffered on purpose: {summary}");
    let markdown = render_to_string(Format::Markdown.renderer(), &cache);
    check_snapshot("cache-v1.markdown.md", &markdown);
    assert!(markdown.contains("| plateau | MB/s | latency | what it means for serving |"), "{markdown}");
    let html = render_to_string(Format::Html.renderer(), &cache);
    assert!(html.contains("Cache and media plateaus") && html.contains("id=\"cache-cliff\""), "no cache charts");
}

/// A real `streamcap sweep --sizes 2M,8M,32M,64M,256M --records 64k,1M --memory 128M` of an ext4 on a loop device
/// throttled to 100 MiB/s of reads (paths edited, phase intervals dropped to keep the file small): the size ×
/// record × mode table, the cliff at the cap and the cache-beneath flags once per device, in the terminal and in
/// Markdown.
#[test]
fn summary_and_markdown_of_a_sweep_result() {
    use streamcap::report::{Format, render_to_string};
    let sweep = other_fixture("sweep-v1.json");
    let summary = render_to_string(Format::Summary.renderer(), &sweep);
    check_snapshot("sweep-v1.summary.txt", &summary);
    let markdown = render_to_string(Format::Markdown.renderer(), &sweep);
    check_snapshot("sweep-v1.markdown.md", &markdown);
    assert!(markdown.starts_with("### streamcap sweep · /srv/media"), "{markdown}");
    let header = "| size | record | I/O | write | +flush | flush | re-write | +flush | read | re-read | random read |\n\
                  |---|---|---|--:|";
    assert!(markdown.contains(header), "{markdown}");
    // The writes without their closing flush (iozone's write), then with it (iozone -e).
    let row = "| 256 MiB | 1 MiB | buffered | 528 | 282 | 445 ms | 292 | 221 | 98.9 | 106 | 166 |";
    assert!(markdown.contains(row), "{markdown}");
    assert!(markdown.contains("the cliff: buffered re-reads came from RAM up to 64 MiB"), "{markdown}");
    assert!(!markdown.contains("used buffered I/O"), "the buffered passes are cache-affected on purpose: {markdown}");
}
