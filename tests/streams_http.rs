//! `streamcap streams` against a real nginx on loopback serving test media from a temp directory: paced range
//! requests over keep-alive connections, lateness and stalls measured as for files, `--max` end to end, a URL
//! list assigned to viewers, and a 404 refused with exit code 2. Skips loudly when nginx is not installed
//! (scripts/test installs it). Loads are a few 8 Mbit/s viewers from loopback: nothing depends on speed.
//!
//! Root only: nginx's document root on an ext4 loop device named with `--served-from` (issue 24): nginx's page
//! cache serving the viewers makes the step cache-served, and nginx reading with O_DIRECT (`directio`) makes
//! the device read what the viewers received.

mod common;

use std::path::Path;

use common::nginx::Nginx;
use common::{read_json, streamcap};

#[test]
fn viewers_fetch_paced_ranges_from_nginx_without_a_stall() {
    let Some(nginx) = Nginx::start("viewers_fetch_paced_ranges_from_nginx_without_a_stall") else { return };
    nginx.media("media.bin", 16 << 20);
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    streamcap()
        .args(["streams", &nginx.url("media.bin"), "--bitrate", "8Mbit", "--count", "4", "--duration", "3s"])
        .args(["--quiet", "--json", json.to_str().unwrap()])
        .assert()
        .success();
    let result = read_json(&json);
    assert_eq!(result["status"], "completed");
    assert_eq!(result["target"]["kind"], "http");
    // nginx runs on this host, but its document root was not named: the steps are not judged, and say why.
    assert!(result["notices"].to_string().contains("pass --served-from DIR"), "{}", result["notices"]);
    let step = &result["streams"]["steps"][0];
    assert_eq!(step["engine"], "http");
    assert_eq!(step["streams_stalled"], 0, "{step}");
    assert_eq!(step["errors"], 0, "{step}");
    assert!(step["device_read_bytes"].is_null() && step["cache_served"].is_null(), "{step}");
    assert!(step["served_words"].as_str().unwrap().contains("its document root was not given"), "{step}");
    // Each viewer prebuffers 2 s of 8 Mbit/s (2 chunks of 1 MiB) at least.
    assert!(step["lateness"]["samples"].as_u64().unwrap() >= 8, "{step}");
    assert!(step["per_stream"].as_array().unwrap().iter().all(|s| s["bytes"].as_u64().unwrap() >= 2 << 20));
    let log = nginx.access_log();
    let ranged = log.lines().filter(|l| l.contains("\"GET /media.bin HTTP/1.1\" 206 1048576")).count();
    assert!(ranged >= 8, "nginx served {ranged} ranged chunks:\n{log}");
}

#[test]
fn max_runs_end_to_end_against_nginx() {
    let Some(nginx) = Nginx::start("max_runs_end_to_end_against_nginx") else { return };
    nginx.media("media.bin", 4 << 20);
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    streamcap()
        .args(["streams", &nginx.url("media.bin"), "--bitrate", "2Mbit", "--max", "--limit", "4"])
        .args(["--duration", "1s", "--chunk", "64k", "--buffer", "1s", "--prebuffer", "250ms", "--quiet"])
        .args(["--json", json.to_str().unwrap()])
        .assert()
        .success();
    let streams = &read_json(&json)["streams"];
    assert_eq!(streams["capacity"]["streams"], 4, "{streams}");
    assert!(streams["estimate"].is_null(), "no raw-rate estimate for a remote target");
    assert!(streams["steps"].as_array().unwrap().iter().all(|s| s["lateness"]["samples"].as_u64().unwrap() > 0));
}

#[test]
fn a_url_list_gives_each_viewer_its_own_url() {
    let Some(nginx) = Nginx::start("a_url_list_gives_each_viewer_its_own_url") else { return };
    nginx.media("a.bin", 2 << 20);
    nginx.media("b.bin", 2 << 20);
    let out = tempfile::tempdir().unwrap();
    let list = out.path().join("urls.txt");
    std::fs::write(&list, format!("# two titles\n{}\n{}\n", nginx.url("a.bin"), nginx.url("b.bin"))).unwrap();
    streamcap()
        .args(["streams", list.to_str().unwrap(), "--bitrate", "2Mbit", "--count", "2", "--files", "each"])
        .args(["--duration", "1s", "--chunk", "64k", "--buffer", "1s", "--prebuffer", "250ms", "--quiet"])
        .assert()
        .success();
    let log = nginx.access_log();
    for name in ["/a.bin", "/b.bin"] {
        assert!(log.contains(&format!("\"GET {name} HTTP/1.1\" 206")), "{name} was not fetched:\n{log}");
    }
}

#[test]
fn a_missing_url_is_refused_with_its_status() {
    let Some(nginx) = Nginx::start("a_missing_url_is_refused_with_its_status") else { return };
    let url = nginx.url("missing.bin");
    let assert = streamcap().args(["streams", &url, "--bitrate", "8Mbit", "--count", "1"]).assert().code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(stderr.contains(&url) && stderr.contains("404"), "{stderr}");
}

/// nginx serving a 16 MiB file from an ext4 loop device mounted in a temp directory, with `directives`; runs
/// `body` with it and the mount point. Skips loudly (returning false) without root, loop devices or nginx.
fn on_a_loop_device(test: &str, directives: &str, body: impl FnOnce(&Nginx, &Path)) -> bool {
    if !common::can_use_loop_devices(test) || Nginx::binary().is_none() {
        if Nginx::binary().is_none() {
            common::skip(&format!("{test}: nginx is not installed"));
        }
        return false;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let device = common::LoopDevice::new(&dir.path().join("disk.img"), 128 << 20);
    device.mkfs_ext4();
    let mount = common::Mount::new(device.device.to_str().unwrap(), &dir.path().join("root"), &[]);
    let data: Vec<u8> = (0..16usize << 20).map(|i| (i * 31 % 251) as u8).collect();
    std::fs::write(mount.point.join("media.bin"), data).unwrap();
    let Some(nginx) = Nginx::serving(test, Some(&mount.point), directives) else { return false };
    body(&nginx, &mount.point);
    true
}

/// Runs four 8 Mbit/s viewers of the loop device's file with `--served-from`; returns the result and summary.
fn served_from_run(nginx: &Nginx, root: &Path) -> (serde_json::Value, String) {
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let run = streamcap()
        .args(["streams", &nginx.url("media.bin"), "--served-from", root.to_str().unwrap()])
        .args(["--bitrate", "8Mbit", "--count", "4", "--duration", "3s", "--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(run.status.success(), "{text}{}", String::from_utf8_lossy(&run.stderr));
    (read_json(&json), text)
}

/// nginx reads through the page cache (sendfile): the file it was just written into is served from RAM, the
/// loop device beneath its document root reads (almost) nothing, and the step says it was cache-served.
#[test]
fn nginx_served_from_its_page_cache_is_cache_served() {
    on_a_loop_device("nginx's page cache under --served-from", "", |nginx, root| {
        let (result, summary) = served_from_run(nginx, root);
        let canonical = std::fs::canonicalize(root).unwrap();
        assert_eq!(result["target"]["served_from"], canonical.to_str().unwrap());
        assert!(result["notices"].to_string().contains("is on this host"), "{}", result["notices"]);
        let step = &result["streams"]["steps"][0];
        let (read, device) = (step["read_bytes"].as_u64().unwrap(), step["device_read_bytes"].as_u64().unwrap());
        assert!(read >= 8 << 20, "{step}");
        assert!(device * 20 < read, "the device read {device} B of the {read} B nginx sent");
        assert_eq!(step["cache_served"], true, "{step}");
        assert!(summary.contains("cache-served"), "{summary}");
    });
}

/// nginx with `directio` reads the file with O_DIRECT: the loop device reads what the viewers received.
#[test]
fn nginx_reading_with_o_direct_is_served_by_the_device() {
    on_a_loop_device(
        "nginx's direct reads under --served-from",
        "directio 4k; directio_alignment 4k;",
        |nginx, root| {
            let (result, summary) = served_from_run(nginx, root);
            let step = &result["streams"]["steps"][0];
            let (read, device) = (step["read_bytes"].as_u64().unwrap(), step["device_read_bytes"].as_u64().unwrap());
            let ratio = device as f64 / read as f64;
            assert!((0.95..=1.10).contains(&ratio), "the device read {device} B of the {read} B nginx sent: {step}");
            assert!(step["cache_served"].is_null(), "{step}");
            assert!(summary.contains("served by the devices"), "{summary}");
        },
    );
}

/// A document root that does not hold the URL's file (or not at its size) is refused before anything runs.
#[test]
fn a_document_root_without_the_url_s_file_is_refused() {
    let Some(nginx) = Nginx::start("--served-from without the file") else { return };
    nginx.media("media.bin", 1 << 20);
    let elsewhere = tempfile::tempdir().unwrap();
    let out = streamcap()
        .args(["streams", &nginx.url("media.bin"), "--served-from", elsewhere.path().to_str().unwrap()])
        .args(["--bitrate", "8Mbit", "--count", "1", "--duration", "1s", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("there is no such file"), "{stderr}");
}
