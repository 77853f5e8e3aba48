//! One nginx for the tests that stream over HTTP: started on a free loopback port from a configuration of its
//! own in a temp directory (no master process, no daemon), serving its own `root` directory or a given one,
//! optionally over TLS with a self-signed certificate for 127.0.0.1 made by `openssl req`. Killed (only this
//! process) and reaped on drop. Skips loudly (returning `None`) when nginx or, for TLS, openssl is missing.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// An nginx of the test's own. See the module documentation.
pub struct Nginx {
    child: Child,
    pub port: u16,
    pub dir: tempfile::TempDir,
    tls: bool,
}

/// How to start one: which directory it serves (default: a `root` directory of its own), extra directives for
/// its server block, TLS, and the connections it must hold at once (0: a few hundred).
#[derive(Default, Clone, Copy)]
pub struct Options<'a> {
    pub root: Option<&'a Path>,
    pub directives: &'a str,
    pub tls: bool,
    pub connections: u32,
}

/// (worker_rlimit_nofile, worker_connections) for `viewers` connections at once. nginx closes idle keep-alive
/// connections when fewer than a sixteenth of its worker_connections are free (`ngx_drain_connections`): 2,128
/// for 2,000 viewers made 720 reconnects and 16 failed chunks, so the connections are the viewers' and a quarter
/// more.
fn sized_for(viewers: u32) -> (u32, u32) {
    let viewers = viewers.max(100);
    (viewers * 3 + 256, viewers + viewers / 4 + 128)
}

fn find(candidates: &[&str]) -> Option<PathBuf> {
    candidates.iter().map(PathBuf::from).find(|p| p.exists())
}

impl Nginx {
    pub fn binary() -> Option<PathBuf> {
        find(&["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"])
    }

    /// Plain HTTP, serving a `root` directory of its own.
    pub fn start(test: &str) -> Option<Nginx> {
        Nginx::with(test, Options::default())
    }

    /// TLS with a certificate made for the test (self-signed, for 127.0.0.1).
    pub fn start_tls(test: &str) -> Option<Nginx> {
        Nginx::with(test, Options { tls: true, ..Options::default() })
    }

    /// Plain HTTP serving `root` (or its own), with `directives` added to its server block.
    pub fn serving(test: &str, root: Option<&Path>, directives: &str) -> Option<Nginx> {
        Nginx::with(test, Options { root, directives, ..Options::default() })
    }

    pub fn with(test: &str, options: Options<'_>) -> Option<Nginx> {
        let Some(binary) = Nginx::binary() else {
            super::skip(&format!(
                "{test}: nginx is not installed (apt-get install nginx; scripts/test does it as root)"
            ));
            return None;
        };
        let openssl = find(&["/usr/bin/openssl", "/usr/local/bin/openssl"]);
        if options.tls && openssl.is_none() {
            super::skip(&format!("{test}: openssl is not installed (apt-get install openssl)"));
            return None;
        }
        // A port found free may be taken before nginx binds it: try a few.
        for _ in 0..5 {
            let dir = tempfile::tempdir().unwrap();
            // nginx may drop to another user for reading files: let it through the temp directory.
            std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
            std::fs::create_dir(dir.path().join("root")).unwrap();
            std::fs::create_dir(dir.path().join("tmp")).unwrap();
            let tls = match (&openssl, options.tls) {
                (Some(openssl), true) => certificate(openssl, dir.path()),
                _ => String::new(),
            };
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let d = dir.path().display();
            let served = options.root.map_or_else(|| format!("{d}/root"), |r| r.display().to_string());
            let listen = if options.tls { "ssl" } else { "" };
            let (files, connections) = sized_for(options.connections);
            let conf = format!(
                "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
                 worker_rlimit_nofile {files};\nevents {{ worker_connections {connections}; }}\n\
                 http {{\n  access_log {d}/access.log;\n  keepalive_requests 1000000;\n  keepalive_timeout 120s;\n  \
                 client_body_temp_path {d}/tmp; proxy_temp_path {d}/tmp; fastcgi_temp_path {d}/tmp;\n  \
                 uwsgi_temp_path {d}/tmp; scgi_temp_path {d}/tmp;\n  \
                 server {{ listen 127.0.0.1:{port} {listen}; root {served}; {tls} {} }}\n}}\n",
                options.directives
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
            let mut nginx = Nginx { child, port, dir, tls: options.tls };
            if nginx.wait_ready() {
                return Some(nginx);
            }
            eprintln!("nginx error log: {}", nginx.error_log());
            drop(nginx);
        }
        panic!("nginx did not start on a free port in 5 tries");
    }

    /// The URL of a media file of `bytes` written under its own `root` directory.
    pub fn media_url(&self, name: &str, bytes: usize) -> String {
        self.media(name, bytes);
        self.url(name)
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

    /// The URL of `name` under the served root (`https://` with TLS).
    pub fn url(&self, name: &str) -> String {
        format!("{}://127.0.0.1:{}/{name}", if self.tls { "https" } else { "http" }, self.port)
    }

    /// Writes a media file of `bytes` under its own `root` directory.
    pub fn media(&self, name: &str, bytes: usize) {
        let data: Vec<u8> = (0..bytes).map(|i| (i * 31 % 251) as u8).collect();
        std::fs::write(self.dir.path().join("root").join(name), data).unwrap();
    }

    /// Writes `contents` as `name` under its own `root` directory (a playlist).
    pub fn file(&self, name: &str, contents: &[u8]) {
        std::fs::write(self.dir.path().join("root").join(name), contents).unwrap();
    }

    pub fn access_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default()
    }

    /// The access log once nginx has stopped adding to it (it logs a request when the client has hung up).
    pub fn settled_access_log(&self) -> String {
        let mut log = self.access_log();
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(100));
            let now = self.access_log();
            if now == log {
                break;
            }
            log = now;
        }
        log
    }

    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}

/// A self-signed certificate for 127.0.0.1 in `dir`, and the directives that use it.
fn certificate(openssl: &Path, dir: &Path) -> String {
    let d = dir.display();
    let made = Command::new(openssl)
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .args(["-keyout", &format!("{d}/key.pem"), "-out", &format!("{d}/cert.pem")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(made.success(), "openssl req made no certificate");
    format!("ssl_certificate {d}/cert.pem; ssl_certificate_key {d}/key.pem;")
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
