//! The HTML report as a file: `report --html` on a fixture of each kind (run, streams, check, sweep) writes one
//! self-contained page — no script, no external reference of any kind, a Content-Security-Policy that forbids
//! requests — with the charts each kind should have, every chart carrying as many drawn series as the result
//! holds figures for. `run --html` writes one at the end of a real run. A page a browser renders is tested in
//! tests/browser.rs.

mod common;

use std::path::{Path, PathBuf};

use common::streamcap;
use predicates::prelude::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn report_html(name: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("r.html");
    streamcap()
        .arg("report")
        .arg(fixture(name))
        .arg("--html")
        .arg(&page)
        .assert()
        .success()
        .stderr(predicate::str::contains(format!("HTML report: {}", page.display())));
    std::fs::read_to_string(&page).unwrap()
}

/// (chart id, number of series drawn) for every chart of a page.
fn charts(html: &str) -> Vec<(String, usize)> {
    html.split("<figure class=\"chart\" id=\"")
        .skip(1)
        .map(|rest| {
            let id = rest.split('"').next().unwrap().to_string();
            let n = rest.split("data-series=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
            let body = rest.split("</svg>").next().unwrap();
            assert_eq!(body.matches("class=\"series ").count(), n, "{id}: data-series and drawn series differ");
            (id, n)
        })
        .collect()
}

fn assert_self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    for banned in ["<script", "http://", "https://", "src=", "href=", "url(", "@import", "<link", "<img", "<iframe"] {
        assert!(!html.contains(banned), "the page holds '{banned}'");
    }
    assert!(html.contains("prefers-color-scheme: dark") && html.contains("@media print"));
}

#[test]
fn a_run_report_has_timelines_devices_and_latency_curves() {
    let html = report_html("result-v1.json");
    assert_self_contained(&html);
    let charts = charts(&html);
    let ids: Vec<&str> = charts.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["timeline-mbps", "timeline-iops", "timeline-latency", "devices", "latency-0", "latency-1"]);
    // One phase writes and one reads: two series of MB/s and IOPS, p50 and p99 of each for latency; one device;
    // one operation class per phase.
    let counts: Vec<usize> = charts.iter().map(|c| c.1).collect();
    assert_eq!(counts, [2, 2, 4, 1, 1, 1]);
    for words in
        ["random 4k reads [cache]", "may describe memory rather than storage", "effective configuration", "mediabox"]
    {
        assert!(html.contains(words), "no '{words}'");
    }
}

#[test]
fn a_streams_report_has_the_capacity_charts_and_says_why_there_is_no_device_timeline() {
    let html = report_html("streams-v1.json");
    assert_self_contained(&html);
    let charts = charts(&html);
    assert_eq!(charts, [("capacity-stalls-streams".to_string(), 2), ("capacity-startup-streams".to_string(), 2)]);
    assert!(html.contains("answer 11") && html.contains("target 2 s"));
    assert!(html.contains("random-read and bandwidth bounds 12"));
    assert!(html.contains("no per-device interval series"));
}

#[test]
fn a_check_report_has_the_verdict_and_a_capacity_pair_per_format() {
    let html = report_html("check-v1.json");
    assert_self_contained(&html);
    let ids: Vec<String> = charts(&html).into_iter().map(|c| c.0).collect();
    for format in ["1080p", "2160p-hevc", "2160p-remux"] {
        assert!(ids.contains(&format!("capacity-stalls-{format}")), "{ids:?}");
        assert!(ids.contains(&format!("capacity-startup-{format}")), "{ids:?}");
    }
    assert!(ids.contains(&"timeline-mbps".to_string()) && ids.contains(&"devices".to_string()));
    assert!(html.find("id=\"verdict\"").unwrap() < html.find("id=\"capacity\"").unwrap(), "the verdict comes first");
    assert!(html.contains("<td class=\"num\">107</td>"));
}

#[test]
fn a_sweep_report_has_a_curve_per_pass_with_the_cliff_and_the_ram_marked() {
    let html = report_html("sweep-v1.json");
    assert_self_contained(&html);
    // Two records × buffered and direct: four lines in each pass's chart.
    let passes = ["sweep-reread", "sweep-write", "sweep-write-fsync", "sweep-rewrite", "sweep-read", "sweep-random"];
    assert_eq!(charts(&html), passes.map(|id| (id.to_string(), 4)));
    let reread = html.split("id=\"sweep-reread\"").nth(1).unwrap().split("</figure>").next().unwrap();
    for label in
        [">cliff: RAM up to 64 MiB, disk from 256 MiB<", ">effective RAM 128 MiB<", ">device (direct reads) 102 MB/s<"]
    {
        assert!(reread.contains(label), "no {label} on the re-read chart");
    }
    assert!(reread.contains("class=\"band\"") && reread.contains("file size (log scale)"));
    assert!(reread.contains("<li><span class=\"swatch s1 dashed\"></span>1 MiB direct</li>"));
    // The buffered passes are cache-affected on purpose: the cliff explains them, no flag repeats it 40 times.
    assert!(!html.contains("may describe memory rather than storage"));
    assert!(!html.contains("id=\"timelines\"") && html.contains("the curves above take the place"));
}

#[test]
fn report_html_into_a_missing_directory_is_refused_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    streamcap()
        .arg("report")
        .arg(fixture("result-v1.json"))
        .arg("--html")
        .arg(dir.path().join("no/such/dir/r.html"))
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains("does not exist"));
    assert!(common::entries(dir.path()).is_empty());
}

#[test]
fn run_writes_its_html_report_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let page = out.path().join("run.html");
    streamcap()
        .args(["run", "--rw", "randread", "--bs", "4k", "--size", "8M", "--runtime", "1s", "--interval", "250ms", "-q"])
        .arg(dir.path())
        .arg("--html")
        .arg(&page)
        .assert()
        .success()
        .stderr(predicate::str::contains("HTML report:"));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    let charts = charts(&html);
    assert!(charts.contains(&("timeline-mbps".to_string(), 1)), "{charts:?}");
    assert!(charts.contains(&("latency-0".to_string(), 1)), "{charts:?}");
}

/// Regression (issue 30): the cache page's legend had two entries in the same colour. No legend of any page may:
/// an entry is told from another by its swatch (colour and dash) alone.
#[test]
fn no_legend_has_two_entries_that_look_alike() {
    for name in ["result-v1.json", "check-v2.json", "cache-v1.json", "streams-v1.json", "sweep-v1.json"] {
        let html = report_html(name);
        for legend in html.split("<ul class=\"legend\">").skip(1) {
            let legend = legend.split("</ul>").next().unwrap();
            let swatches: Vec<&str> =
                legend.split("<span class=\"swatch ").skip(1).map(|s| s.split('"').next().unwrap()).collect();
            let mut unique = swatches.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), swatches.len(), "{name}: a legend with look-alike entries: {legend}");
        }
    }
}
