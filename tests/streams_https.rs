//! `streamcap streams https://…` against the test's own nginx with TLS on loopback, its certificate made by the
//! test (`openssl req`, self-signed for 127.0.0.1): without `--insecure` the run is refused naming the flag;
//! with it, paced ranges are fetched over rustls without a stall. Skips loudly without nginx or openssl.

mod common;

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{read_json, streamcap};

/// nginx serving TLS on a free loopback port with a certificate made for the test; killed and reaped on drop.
struct TlsNginx {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl TlsNginx {
    fn start(test: &str) -> Option<TlsNginx> {
        let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"].iter().map(PathBuf::from).find(|p| p.exists());
        let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl"].iter().map(PathBuf::from).find(|p| p.exists());
        let (Some(nginx), Some(openssl)) = (nginx, openssl) else {
            common::skip(&format!("{test}: nginx or openssl is not installed (apt-get install nginx openssl)"));
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        std::fs::create_dir(dir.path().join("tmp")).unwrap();
        let d = dir.path().display().to_string();
        let made = Command::new(openssl)
            .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"])
            .args(["-addext", "subjectAltName=IP:127.0.0.1"])
            .args(["-keyout", &format!("{d}/key.pem"), "-out", &format!("{d}/cert.pem")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(made.success(), "openssl req made no certificate");
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let conf = format!(
            "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
             events {{ worker_connections 256; }}\n\
             http {{\n  access_log {d}/access.log;\n  keepalive_requests 100000;\n  \
             client_body_temp_path {d}/tmp; proxy_temp_path {d}/tmp; fastcgi_temp_path {d}/tmp;\n  \
             uwsgi_temp_path {d}/tmp; scgi_temp_path {d}/tmp;\n  \
             server {{ listen 127.0.0.1:{port} ssl; root {d}/root;\n    \
             ssl_certificate {d}/cert.pem; ssl_certificate_key {d}/key.pem; }}\n}}\n"
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let child = Command::new(nginx)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts");
        let mut server = TlsNginx { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            let log = std::fs::read_to_string(server.dir.path().join("error.log")).unwrap_or_default();
            assert!(server.child.try_wait().unwrap().is_none() && Instant::now() < deadline, "nginx: {log}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(server)
    }

    fn media(&self, name: &str, bytes: usize) -> String {
        let data: Vec<u8> = (0..bytes).map(|i| (i * 31 % 251) as u8).collect();
        std::fs::write(self.dir.path().join("root").join(name), data).unwrap();
        format!("https://127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for TlsNginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn https_viewers_fetch_paced_ranges_from_a_self_signed_nginx_with_insecure() {
    let Some(nginx) = TlsNginx::start("https_viewers_fetch_paced_ranges_from_a_self_signed_nginx_with_insecure") else {
        return;
    };
    let url = nginx.media("media.bin", 16 << 20);
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
    let log = std::fs::read_to_string(nginx.dir.path().join("access.log")).unwrap_or_default();
    let ranged = log.lines().filter(|l| l.contains("\"GET /media.bin HTTP/1.1\" 206 1048576")).count();
    assert!(ranged >= 8, "nginx served {ranged} ranged chunks over TLS:\n{log}");
}
