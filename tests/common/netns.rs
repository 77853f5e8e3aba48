//! A real network filesystem for tests: an sshd inside a network namespace of the test's own, reached over a
//! veth pair whose both ends are shaped by `tc` htb, and its export mounted with sshfs from the root namespace.
//! Everything it makes — the namespace, the veth pair, the sshd, the mount, the keys and directories — is
//! undone on drop, also when the test fails. It uses only addresses of its own /30 (10.213.X.Y), checked unused
//! first, and kills only the processes inside its own namespace.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{have, is_root};

/// Returns false (after saying so loudly) when the test cannot build a shaped sshfs link here.
pub fn can_use_sshfs(test: &str) -> bool {
    if !is_root() {
        super::skip(&format!("{test}: needs root for network namespaces and FUSE mounts"));
        return false;
    }
    for tool in ["ip", "tc", "sshfs", "/usr/sbin/sshd", "ssh-keygen", "fusermount3"] {
        if !have(tool) {
            super::skip(&format!("{test}: {tool} is not installed (scripts/test installs sshfs, openssh-server)"));
            return false;
        }
    }
    if !Path::new("/dev/fuse").exists() {
        super::skip(&format!("{test}: /dev/fuse is missing"));
        return false;
    }
    true
}

/// An sshfs mount over a link shaped to `rate_mbit` megabits per second in each direction.
pub struct SshfsLink {
    /// Where the export is mounted in the root namespace (a `fuse.sshfs` filesystem).
    pub mount: PathBuf,
    /// The directory sshd serves (on the local disk: the same files, seen without the network).
    pub export: PathBuf,
    /// The shaped rate, megabits per second.
    pub rate_mbit: u64,
    namespace: String,
    veth: String,
    sshd: Option<Child>,
    mounted: bool,
    made_privsep_dir: bool,
    dir: tempfile::TempDir,
}

/// Runs a set-up command; panics with its stderr when it fails (the guard's drop undoes what was made).
fn run(args: &[&str]) {
    let output = Command::new(args[0]).args(&args[1..]).output().unwrap_or_else(|e| panic!("run {args:?}: {e}"));
    assert!(output.status.success(), "{args:?} failed: {}", String::from_utf8_lossy(&output.stderr));
}

/// A /30 in 10.213.0.0/16 whose /24 no interface here uses: (the root end, the namespace end).
fn free_subnet() -> (String, String) {
    let used = Command::new("ip").args(["-4", "-o", "addr", "show"]).output().expect("run ip addr").stdout;
    let used = String::from_utf8_lossy(&used).to_string();
    // Links made by the tests of one binary, which run at the same time, start their search apart.
    static LINKS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let first = std::process::id() % 200 + 37 * LINKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let n = (0..200)
        .map(|i| 20 + (first + i) % 200)
        .find(|n| !used.contains(&format!("10.213.{n}.")))
        .expect("a free 10.213.N.0/24 among 200");
    (format!("10.213.{n}.1"), format!("10.213.{n}.2"))
}

impl SshfsLink {
    /// Builds the namespace, the shaped veth pair, the sshd and the mount.
    pub fn new(rate_mbit: u64) -> SshfsLink {
        let tag = format!("{}{}", std::process::id(), rand_suffix());
        let dir = tempfile::Builder::new().prefix("streamcap-sshfs-").tempdir().expect("a temp dir");
        let mut link = SshfsLink {
            mount: dir.path().join("mnt"),
            export: dir.path().join("export"),
            rate_mbit,
            namespace: format!("streamcap-{tag}"),
            // Interface names are at most 15 bytes.
            veth: format!("sc{}", &tag[tag.len().saturating_sub(10)..]),
            sshd: None,
            mounted: false,
            made_privsep_dir: false,
            dir,
        };
        std::fs::create_dir(&link.mount).unwrap();
        std::fs::create_dir(&link.export).unwrap();
        let (root_ip, ns_ip) = free_subnet();
        link.network(&root_ip, &ns_ip);
        link.start_sshd(&ns_ip);
        link.mount_export(&ns_ip);
        link
    }

    /// The namespace, the veth pair with one end in it, and htb on both ends (a TCP transfer's data goes one way
    /// and its acknowledgements the other; shaping both keeps reads and writes under the same cap).
    fn network(&mut self, root_ip: &str, ns_ip: &str) {
        let (ns, root_end, ns_end) = (self.namespace.clone(), format!("{}a", self.veth), format!("{}b", self.veth));
        run(&["ip", "netns", "add", &ns]);
        run(&["ip", "link", "add", &root_end, "type", "veth", "peer", "name", &ns_end]);
        run(&["ip", "link", "set", &ns_end, "netns", &ns]);
        run(&["ip", "addr", "add", &format!("{root_ip}/30"), "dev", &root_end]);
        run(&["ip", "link", "set", &root_end, "up"]);
        run(&["ip", "-n", &ns, "addr", "add", &format!("{ns_ip}/30"), "dev", &ns_end]);
        run(&["ip", "-n", &ns, "link", "set", &ns_end, "up"]);
        run(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
        let rate = format!("{}mbit", self.rate_mbit);
        for (netns, dev) in [(None, &root_end), (Some(&ns), &ns_end)] {
            let mut tc: Vec<&str> = vec!["tc"];
            if let Some(ns) = netns {
                tc.extend(["-n", ns.as_str()]);
            }
            let qdisc = [&tc[..], &["qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10"]];
            run(&qdisc.concat());
            // One class holds all traffic; an explicit quantum keeps htb from warning that rate/r2q is too big.
            let class = ["class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb", "rate", &rate];
            run(&[&tc[..], &class, &["ceil", &rate, "quantum", "60000"]].concat());
        }
    }

    /// An sshd of its own inside the namespace: its own host key, authorized key, config and pid file, bound to
    /// the namespace's address only, in the foreground (`-D`) as a child of the test.
    fn start_sshd(&mut self, ns_ip: &str) {
        let keys = self.dir.path();
        for key in ["host_key", "client_key"] {
            run(&["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", keys.join(key).to_str().unwrap()]);
        }
        std::fs::copy(keys.join("client_key.pub"), keys.join("authorized_keys")).unwrap();
        let config = format!(
            "ListenAddress {ns_ip}\nPort 22\nHostKey {k}/host_key\nAuthorizedKeysFile {k}/authorized_keys\n\
             PidFile {k}/sshd.pid\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nSubsystem sftp internal-sftp\n",
            k = keys.display()
        );
        std::fs::write(keys.join("sshd_config"), config).unwrap();
        // sshd refuses to start without its privilege-separation directory; made only if missing, and removed.
        if !Path::new("/run/sshd").exists() {
            std::fs::create_dir("/run/sshd").unwrap();
            self.made_privsep_dir = true;
        }
        let log = std::fs::File::create(keys.join("sshd.log")).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", &self.namespace, "/usr/sbin/sshd", "-D", "-e", "-f"])
            .arg(keys.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start sshd");
        self.sshd = Some(child);
        let address: SocketAddr = format!("{ns_ip}:22").parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err() {
            let log = std::fs::read_to_string(keys.join("sshd.log")).unwrap_or_default();
            assert!(Instant::now() < deadline, "sshd in {} did not listen on {address}: {log}", self.namespace);
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// sshfs from the root namespace, with the test's own key and no known-hosts file. Left at sshfs's defaults
    /// otherwise (no `kernel_cache`), as a user would mount it.
    fn mount_export(&mut self, ns_ip: &str) {
        let key = self.dir.path().join("client_key");
        let options = format!(
            "IdentityFile={},StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,BatchMode=yes,LogLevel=ERROR",
            key.display()
        );
        let source = format!("root@{ns_ip}:{}", self.export.display());
        run(&["sshfs", &source, self.mount.to_str().unwrap(), "-o", &options]);
        self.mounted = true;
    }
}

impl SshfsLink {
    /// Bytes the root end of the link has received since it was made (what the server sent: file data, with
    /// the SSH, TCP, IP and Ethernet framing around it), from the interface's counters.
    pub fn received_bytes(&self) -> u64 {
        let path = format!("/sys/class/net/{}a/statistics/rx_bytes", self.veth);
        std::fs::read_to_string(&path).ok().and_then(|t| t.trim().parse().ok()).unwrap_or(0)
    }
}

fn rand_suffix() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    format!("{}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

impl Drop for SshfsLink {
    fn drop(&mut self) {
        if self.mounted {
            let ok = Command::new("fusermount3").arg("-u").arg(&self.mount).status().is_ok_and(|s| s.success());
            if !ok {
                let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
            }
        }
        if let Some(mut sshd) = self.sshd.take() {
            let _ = sshd.kill();
            let _ = sshd.wait();
        }
        // Whatever still runs in the namespace is ours (sshd's per-connection children): end it by its id.
        if let Ok(out) = Command::new("ip").args(["netns", "pids", &self.namespace]).output() {
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                let _ = Command::new("kill").arg(pid).stderr(std::process::Stdio::null()).status();
            }
        }
        let _ = Command::new("ip").args(["link", "del", &format!("{}a", self.veth)]).status();
        let _ = Command::new("ip").args(["netns", "del", &self.namespace]).status();
        if self.made_privsep_dir {
            let _ = std::fs::remove_dir("/run/sshd");
        }
    }
}
