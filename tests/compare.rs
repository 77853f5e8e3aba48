//! `streamcap compare` end to end on fixed results: two runs of one job (ext4 and tmpfs) side by side with
//! ratios and verdicts in the terminal, as Markdown and as an HTML page; two `streams --count 10` runs (a loop
//! device throttled to 3 and to 8 MB/s of reads) step by step, with the stream-to-stream noise rule and the
//! overlaid charts; results of different workloads (or fixed counts with no count in common) refused with exit
//! code 2 unless --allow-different; a missing file refused.

mod common;

use std::path::{Path, PathBuf};

use common::streamcap;
use predicates::prelude::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

#[test]
fn two_runs_of_one_job_side_by_side_in_the_terminal_markdown_and_html() {
    let (a, b) = (fixture("compare-ext4.json"), fixture("compare-tmpfs.json"));
    let out = streamcap().arg("compare").arg(&a).arg(&b).assert().success().get_output().stdout.clone();
    let text = String::from_utf8(out).unwrap();
    for words in [
        "A = ",
        "B = ",
        "phase",
        "figure",
        "B/A",
        "verdict",
        "random 4k reads",
        "read IOPS",
        "read p99",
        "no clear difference",
    ] {
        assert!(text.contains(words), "no '{words}' in:\n{text}");
    }
    // Every row has a verdict from the rule, and the rule is stated.
    assert!(text.contains("interval-to-interval variation"));
    assert!(
        text.contains("times faster") || text.contains("times slower"),
        "tmpfs against ext4 shows some clear difference:\n{text}"
    );

    let md =
        streamcap().arg("compare").arg(&a).arg(&b).arg("--markdown").assert().success().get_output().stdout.clone();
    let md = String::from_utf8(md).unwrap();
    assert!(md.contains("| phase | figure | A | B | B/A | verdict |\n|---|---|--:|--:|--:|---|"), "{md}");
    // One spelling with report and check: --format markdown says the same as --markdown.
    let format = streamcap().arg("compare").arg(&a).arg(&b).args(["--format", "markdown"]).output().unwrap();
    assert_eq!(String::from_utf8(format.stdout).unwrap(), md);

    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("cmp.html");
    streamcap().arg("compare").arg(&a).arg(&b).arg("--html").arg(&page).assert().success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("id=\"compare-timeline-0\"") && html.contains("id=\"compare-latency-1\""));
    assert!(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"));
}

#[test]
fn different_workloads_are_refused_unless_allowed() {
    let (run, streams) = (fixture("result-v1.json"), fixture("streams-v1.json"));
    streamcap().arg("compare").arg(&run).arg(&streams).assert().code(2).stdout("").stderr(
        predicate::str::contains("measured different workloads").and(predicate::str::contains("--allow-different")),
    );
    // The fixture's random phase at another block size: one difference named, compared anyway when allowed.
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.json");
    let text = std::fs::read_to_string(&run).unwrap().replace("\"bs\": \"4K\"", "\"bs\": \"64K\"");
    std::fs::write(&other, text).unwrap();
    streamcap()
        .arg("compare")
        .arg(&run)
        .arg(&other)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("phase 'random 4k reads' is randread 4K QD 32 × 1 in one and randread 64K"));
    streamcap().arg("compare").arg(&run).arg(&other).arg("--allow-different").assert().success().stdout(
        predicate::str::contains("warning: A and B: phase 'random 4k reads'")
            .and(predicate::str::contains("write the data set")),
    );
}

#[test]
fn two_streams_runs_side_by_side_step_by_step() {
    // 10 streams of 3 Mbit/s need 3.75 MB/s: at 3 MB/s all ten stalled, at 8 MB/s none did.
    let (a, b) = (fixture("streams-count-3mbs.json"), fixture("streams-count-8mbs.json"));
    let out = streamcap().arg("compare").arg(&a).arg(&b).assert().success().get_output().stdout.clone();
    let text = String::from_utf8(out).unwrap();
    let stalled = text.lines().find(|l| l.contains("streams stalled")).unwrap_or_else(|| panic!("{text}"));
    let cells: Vec<&str> = stalled.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(cells, ["10 streams", "streams stalled", "10", "0", "0.00 ± 0.00", "B better by 100 %"], "{text}");
    for figure in ["start-up p99", "served MB/s"] {
        let row = text.lines().find(|l| l.contains(figure)).unwrap_or_else(|| panic!("no {figure} in {text}"));
        assert!(row.contains("times faster"), "8 MB/s against 3 MB/s is clearly better: {row}");
    }
    assert!(text.contains("stream-to-stream variation"), "the rule names the steps' noise");

    let md =
        streamcap().arg("compare").arg(&a).arg(&b).arg("--markdown").assert().success().get_output().stdout.clone();
    let md = String::from_utf8(md).unwrap();
    assert!(md.contains("| 10 streams | streams stalled | 10 | 0 | 0.00 ± 0.00 | B better by 100 % |"), "{md}");

    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("cmp.html");
    streamcap().arg("compare").arg(&a).arg(&b).arg("--html").arg(&page).assert().success();
    let html = std::fs::read_to_string(&page).unwrap();
    for id in ["compare-capacity-0", "compare-startup-0"] {
        let chart = html.split(&format!("id=\"{id}\"")).nth(1).unwrap_or_else(|| panic!("no chart {id}"));
        assert!(chart.split("</figure>").next().unwrap().contains("data-series=\"2\""), "{id}: both runs drawn");
    }
    assert!(html.contains("<td class=\"better\">B better by 100 %</td>"));
}

#[test]
fn fixed_count_runs_without_a_count_in_common_are_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let twelve = dir.path().join("twelve.json");
    let mut b: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("streams-count-8mbs.json")).unwrap()).unwrap();
    b["streams"]["steps"][0]["count"] = 12.into();
    std::fs::write(&twelve, b.to_string()).unwrap();
    let a = fixture("streams-count-3mbs.json");
    streamcap()
        .arg("compare")
        .arg(&a)
        .arg(&twelve)
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains("the stream counts differ (10 in one, 12 in the other)"));
    let out = streamcap().arg("compare").arg(&a).arg(&twelve).arg("--allow-different").assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("B lacks it") && text.contains("12 streams"), "{text}");
}

#[test]
fn a_missing_result_is_refused() {
    streamcap()
        .arg("compare")
        .arg(fixture("result-v1.json"))
        .arg("/nonexistent/r.json")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot compare /nonexistent/r.json"));
}
