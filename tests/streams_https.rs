//! `streamcap streams https://…` against the test's own nginx with TLS on loopback, its certificate made by the
//! test (`openssl req`, self-signed for 127.0.0.1): without `--insecure` the run is refused naming the flag;
//! with it, paced ranges are fetched over rustls without a stall. Skips loudly without nginx or openssl.

mod common;

use common::nginx::Nginx;
use common::{read_json, streamcap};

#[test]
fn https_viewers_fetch_paced_ranges_from_a_self_signed_nginx_with_insecure() {
    let Some(nginx) = Nginx::start_tls("https_viewers_fetch_paced_ranges_from_a_self_signed_nginx_with_insecure")
    else {
        return;
    };
    nginx.media("media.bin", 16 << 20);
    let url = nginx.url("media.bin");
    let refused = streamcap().args(["streams", &url, "--bitrate", "8Mbit", "--count", "2"]).assert().failure();
    let stderr = String::from_utf8_lossy(&refused.get_output().stderr).to_string();
    assert!(stderr.contains("--insecure") && stderr.contains(&url), "{stderr}");

    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    streamcap()
        .args(["streams", &url, "--insecure", "--bitrate", "8Mbit", "--count", "4", "--duration", "3s"])
        .args(["--quiet", "--json", json.to_str().unwrap()])
        .assert()
        .success();
    let result = read_json(&json);
    assert_eq!(result["status"], "completed");
    let step = &result["streams"]["steps"][0];
    assert_eq!(step["streams_stalled"], 0, "{step}");
    assert_eq!(step["errors"], 0, "{step}");
    assert!(step["lateness"]["samples"].as_u64().unwrap() >= 8, "{step}");
    assert!(step["per_stream"].as_array().unwrap().iter().all(|s| s["bytes"].as_u64().unwrap() >= 2 << 20));
    let log = nginx.access_log();
    let ranged = log.lines().filter(|l| l.contains("\"GET /media.bin HTTP/1.1\" 206 1048576")).count();
    assert!(ranged >= 8, "nginx served {ranged} ranged chunks over TLS:\n{log}");
}
