//! `streamcap streams` against a real nginx on loopback serving test media from a temp directory: paced range
//! requests over keep-alive connections, lateness and stalls measured as for files, `--max` end to end, a URL
//! list assigned to viewers, and a 404 refused with exit code 2. Skips loudly when nginx is not installed
//! (scripts/test installs it). Loads are a few 8 Mbit/s viewers from loopback: nothing depends on speed.

mod common;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{read_json, streamcap};

/// An nginx serving `root` on a free loopback port, killed (only this process) and reaped on drop.
struct Nginx {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Nginx {
    fn binary() -> Option<PathBuf> {
        ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"].iter().map(PathBuf::from).find(|p| p.exists())
    }

    /// Starts nginx, or returns None after saying why the test is skipped.
    fn start(test: &str) -> Option<Nginx> {
        let Some(binary) = Nginx::binary() else {
            common::skip(&format!(
                "{test}: nginx is not installed (apt-get install nginx; scripts/test does it as root)"
            ));
            return None;
        };
        // A port found free may be taken before nginx binds it: try a few.
        for _ in 0..5 {
            let dir = tempfile::tempdir().unwrap();
            // nginx may drop to another user for reading files: let it through the temp directory.
            std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
            std::fs::create_dir(dir.path().join("root")).unwrap();
            std::fs::create_dir(dir.path().join("tmp")).unwrap();
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let d = dir.path().display();
            let conf = format!(
                "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
                 events {{ worker_connections 256; }}\n\
                 http {{\n  access_log {d}/access.log;\n  keepalive_requests 100000;\n  \
                 client_body_temp_path {d}/tmp; proxy_temp_path {d}/tmp; fastcgi_temp_path {d}/tmp;\n  \
                 uwsgi_temp_path {d}/tmp; scgi_temp_path {d}/tmp;\n  \
                 server {{ listen 127.0.0.1:{port}; root {d}/root; }}\n}}\n"
            );
            std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
            let child = Command::new(&binary)
                .arg("-p")
                .arg(dir.path())
                .arg("-c")
                .arg(dir.path().join("nginx.conf"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("nginx starts");
            let mut nginx = Nginx { child, port, dir };
            if nginx.wait_ready() {
                return Some(nginx);
            }
            nginx_log(nginx.dir.path());
            drop(nginx);
        }
        panic!("nginx did not start on a free port in 5 tries");
    }

    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return false;
            }
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}", self.port)
    }

    /// Writes a media file of `bytes` under the served root.
    fn media(&self, name: &str, bytes: usize) {
        let data: Vec<u8> = (0..bytes).map(|i| (i * 31 % 251) as u8).collect();
        std::fs::write(self.dir.path().join("root").join(name), data).unwrap();
    }

    fn access_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default()
    }
}

fn nginx_log(dir: &Path) {
    eprintln!("nginx error log: {}", std::fs::read_to_string(dir.join("error.log")).unwrap_or_default());
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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
