//! Network hosts for MPI tests: two to four network namespaces of the test's own, each joined by a veth pair to a
//! bridge in the root namespace (a name of its own, with mpirun's address on it), each running its own sshd on
//! its own address with a key the fixture makes, its own host name (a UTS namespace) and its own storage: every
//! host sees its own directory at one shared path (`target`), as real hosts with the same mount point would. So
//! `mpirun --host ADDR1,ADDR2 …` over Open MPI's TCP transport starts each rank on its own network stack and
//! host name. The links can be shaped with htb on both ends.
//!
//! Everything it makes — namespaces, bridge, veth pairs, sshds (and whatever runs in the namespaces: orted and
//! the ranks), keys and directories — is undone on drop, also when the test fails. It uses only a /24 of
//! 10.214.0.0/16 that no interface here uses, and kills only processes inside its own namespaces. The
//! namespaces share the filesystem, so every rank runs the same binary at the same path, as on real hosts that
//! were given the same binary.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{have, is_root};

/// Returns false (after saying so loudly) when the test cannot build network hosts here.
pub fn can_use_network_hosts(test: &str) -> bool {
    if !is_root() {
        super::skip(&format!("{test}: needs root for network namespaces, bridges and bind mounts"));
        return false;
    }
    for tool in ["ip", "tc", "/usr/sbin/sshd", "ssh", "ssh-keygen", "unshare", "mpirun"] {
        if !have(tool) {
            super::skip(&format!("{test}: {tool} is not installed (scripts/test installs openssh-server, iproute2)"));
            return false;
        }
    }
    true
}

/// Network hosts, each a namespace with an sshd; see the module's description.
pub struct NetHosts {
    /// Each host's address on the bridge's /24, in host order.
    pub addresses: Vec<String>,
    /// Each host's host name (what `uname -n` says on it), in host order.
    pub names: Vec<String>,
    /// Each host's own directory, as the test sees it; on host `i` it is seen at `target`.
    pub storage: Vec<PathBuf>,
    /// The path at which every host sees its own directory (an empty directory seen from the test).
    pub target: PathBuf,
    /// The hosts' /24, e.g. `10.214.57.0/24`.
    pub subnet: String,
    tag: String,
    namespaces: Vec<String>,
    sshds: Vec<Child>,
    bridge_made: bool,
    dir: tempfile::TempDir,
}

/// Runs a set-up command; panics with its stderr when it fails (the guard's drop undoes what was made).
fn run(args: &[&str]) {
    let output = Command::new(args[0]).args(&args[1..]).output().unwrap_or_else(|e| panic!("run {args:?}: {e}"));
    assert!(output.status.success(), "{args:?} failed: {}", String::from_utf8_lossy(&output.stderr));
}

/// The N of a 10.214.N.0/24 that no interface here uses.
fn free_subnet() -> u32 {
    let used = Command::new("ip").args(["-4", "-o", "addr", "show"]).output().expect("run ip addr").stdout;
    let used = String::from_utf8_lossy(&used).to_string();
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let first = std::process::id() % 200 + 37 * NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    (0..200).map(|i| 20 + (first + i) % 200).find(|n| !used.contains(&format!("10.214.{n}."))).expect("a free /24")
}

impl NetHosts {
    /// `count` hosts; with `rate_mbit`, every link is shaped to that rate in each direction (htb).
    pub fn new(count: usize, rate_mbit: Option<u64>) -> NetHosts {
        NetHosts::build(count, rate_mbit, None)
    }

    /// `count` hosts whose storage directories are made in `parent` (a filesystem of the test's own, which the
    /// hosts then share, as containers on one machine share its disks).
    pub fn on(count: usize, parent: &Path) -> NetHosts {
        NetHosts::build(count, None, Some(parent))
    }

    fn build(count: usize, rate_mbit: Option<u64>, parent: Option<&Path>) -> NetHosts {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let next = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Interface names are at most 15 bytes: "scmn" + 6 + 1 + host + end.
        let tag = format!("{:05x}{next:x}", std::process::id() & 0xfffff);
        let dir = tempfile::Builder::new().prefix("streamcap-mpinet-").tempdir().expect("a temp dir");
        let n = free_subnet();
        let mut hosts = NetHosts {
            addresses: (0..count).map(|i| format!("10.214.{n}.{}", 11 + i)).collect(),
            names: (0..count).map(|i| format!("mpinet{i}-{tag}")).collect(),
            storage: (0..count).map(|i| parent.unwrap_or(dir.path()).join(format!("host{i}-{tag}"))).collect(),
            target: dir.path().join("target"),
            subnet: format!("10.214.{n}.0/24"),
            namespaces: Vec::new(),
            sshds: Vec::new(),
            bridge_made: false,
            tag,
            dir,
        };
        std::fs::create_dir(&hosts.target).expect("the shared mount point");
        hosts.storage.iter().for_each(|d| std::fs::create_dir(d).expect("a host's storage"));
        hosts.bridge(n);
        hosts.keys();
        for i in 0..count {
            hosts.host(i, rate_mbit);
        }
        for i in 0..count {
            hosts.wait_for_sshd(i);
        }
        hosts
    }

    fn bridge_name(&self) -> String {
        format!("scmn{}b", self.tag)
    }

    /// The bridge in the root namespace, with mpirun's address on it.
    fn bridge(&mut self, n: u32) {
        let bridge = self.bridge_name();
        run(&["ip", "link", "add", &bridge, "type", "bridge"]);
        self.bridge_made = true;
        run(&["ip", "addr", "add", &format!("10.214.{n}.1/24"), "dev", &bridge]);
        run(&["ip", "link", "set", &bridge, "up"]);
    }

    /// One host key for every sshd, and the client key mpirun's ssh logs in with.
    fn keys(&self) {
        for key in ["host_key", "client_key"] {
            run(&["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", self.dir.path().join(key).to_str().unwrap()]);
        }
        std::fs::copy(self.dir.path().join("client_key.pub"), self.dir.path().join("authorized_keys")).unwrap();
        // sshd refuses to start without its privilege-separation directory. Made if missing and left in place:
        // another test's sshd may be using it by the time this one ends (it is on /run, a tmpfs).
        let _ = std::fs::create_dir_all("/run/sshd");
    }

    /// Host `i`: its namespace, its veth pair on the bridge (shaped with htb at `rate_mbit`), and its sshd.
    fn host(&mut self, i: usize, rate_mbit: Option<u64>) {
        let ns = format!("sc-mpinet-{}-{i}", self.tag);
        let (outer, inner) = (format!("scmn{}{i}a", self.tag), format!("scmn{}{i}b", self.tag));
        run(&["ip", "netns", "add", &ns]);
        self.namespaces.push(ns.clone());
        run(&["ip", "link", "add", &outer, "type", "veth", "peer", "name", &inner]);
        run(&["ip", "link", "set", &inner, "netns", &ns]);
        run(&["ip", "link", "set", &outer, "master", &self.bridge_name()]);
        run(&["ip", "link", "set", &outer, "up"]);
        run(&["ip", "-n", &ns, "addr", "add", &format!("{}/24", self.addresses[i]), "dev", &inner]);
        run(&["ip", "-n", &ns, "link", "set", &inner, "up"]);
        run(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
        if let Some(rate) = rate_mbit {
            shape(None, &outer, rate);
            shape(Some(&ns), &inner, rate);
        }
        self.start_sshd(i, &ns);
    }

    /// The sshd of host `i` in its namespace, in the foreground (`-D`) as a child of the test, in a UTS namespace
    /// with the host's name and a mount namespace where the host's storage is bind-mounted at `target` (both
    /// namespaces end with the last process in them, so the mount needs no undoing).
    fn start_sshd(&mut self, i: usize, ns: &str) {
        let keys = self.dir.path();
        let config = keys.join(format!("sshd_config{i}"));
        let text = format!(
            "ListenAddress {}\nPort 22\nHostKey {k}/host_key\nAuthorizedKeysFile {k}/authorized_keys\n\
             PidFile {k}/sshd{i}.pid\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n",
            self.addresses[i],
            k = keys.display()
        );
        std::fs::write(&config, text).unwrap();
        let script = format!(
            "hostname {} && mount --bind {} {} && exec /usr/sbin/sshd -D -e -f {}",
            self.names[i],
            self.storage[i].display(),
            self.target.display(),
            config.display()
        );
        let log = std::fs::File::create(keys.join(format!("sshd{i}.log"))).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", ns, "unshare", "--uts", "--mount", "--propagation", "private", "sh", "-c"])
            .arg(script)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start sshd");
        self.sshds.push(child);
    }

    fn wait_for_sshd(&mut self, i: usize) {
        let address: SocketAddr = format!("{}:22", self.addresses[i]).parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err() {
            let log = std::fs::read_to_string(self.dir.path().join(format!("sshd{i}.log"))).unwrap_or_default();
            let ended = self.sshds[i].try_wait().ok().flatten();
            assert!(
                ended.is_none() && Instant::now() < deadline,
                "sshd of host {i} did not listen on {address}: {log}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The rsh agent mpirun starts the hosts' daemons with: ssh with the fixture's key and no known-hosts file.
    pub fn ssh_agent(&self) -> String {
        format!(
            "ssh -i {} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes \
             -o LogLevel=ERROR -o ConnectTimeout=10",
            self.dir.path().join("client_key").display()
        )
    }

    /// `mpirun` with one rank on each host, over TCP on the hosts' subnet only (as root, with the fixture's key),
    /// and no history database; the program and its arguments follow.
    pub fn mpirun(&self) -> Command {
        let mut cmd = Command::new("mpirun");
        cmd.args(["--allow-run-as-root", "-np", &self.addresses.len().to_string(), "--host"])
            .arg(self.addresses.join(","))
            .args(["--mca", "plm_rsh_agent", &self.ssh_agent()])
            // The daemons are started from mpirun, not from one another (no ssh between the hosts needed).
            .args(["--mca", "plm_rsh_no_tree_spawn", "1"])
            .args(["--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", &self.subnet])
            .args(["--mca", "oob_tcp_if_include", &self.subnet])
            .args(["-x", "STREAMCAP_NO_HISTORY=1"]);
        cmd.env_remove("RUST_BACKTRACE");
        cmd
    }

    /// Takes host `i`'s link to the bridge down (`up == false`: a host lost behind a broken link, whose processes
    /// live on) or up again.
    pub fn set_link(&self, i: usize, up: bool) {
        let inner = format!("scmn{}{i}b", self.tag);
        run(&["ip", "-n", &self.namespaces[i], "link", "set", &inner, if up { "up" } else { "down" }]);
    }

    /// The processes running in host `i`'s namespace (its sshd, orted and rank), by id.
    pub fn processes_on(&self, i: usize) -> Vec<u32> {
        let out = Command::new("ip").args(["netns", "pids", &self.namespaces[i]]).output().expect("run ip netns pids");
        String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|p| p.parse().ok()).collect()
    }

    /// The entries in host `i`'s storage (what a rank there left behind), `.streamcap/` looked into.
    pub fn left_on(&self, i: usize) -> Vec<String> {
        let list = |d: &Path| -> Vec<String> {
            std::fs::read_dir(d)
                .map(|entries| entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
                .unwrap_or_default()
        };
        let mut left: Vec<String> = list(&self.storage[i]).into_iter().filter(|e| e != ".streamcap").collect();
        left.extend(list(&self.storage[i].join(".streamcap")).into_iter().map(|e| format!(".streamcap/{e}")));
        left
    }
}

/// htb on `dev` (in namespace `ns`, or the root namespace): one class at `rate_mbit` holds all traffic.
fn shape(ns: Option<&str>, dev: &str, rate_mbit: u64) {
    let rate = format!("{rate_mbit}mbit");
    let mut tc: Vec<&str> = vec!["tc"];
    if let Some(ns) = ns {
        tc.extend(["-n", ns]);
    }
    run(&[&tc[..], &["qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10"]].concat());
    // An explicit quantum keeps htb from warning that rate/r2q is too big.
    let class = ["class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb", "rate", &rate, "ceil", &rate];
    run(&[&tc[..], &class, &["quantum", "60000"]].concat());
}

impl Drop for NetHosts {
    fn drop(&mut self) {
        for sshd in &mut self.sshds {
            let _ = sshd.kill();
            let _ = sshd.wait();
        }
        // Whatever still runs in a namespace is ours (sshd's sessions, orted, ranks): end it by its id.
        for ns in &self.namespaces {
            if let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() {
                for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                    let _ = Command::new("kill").args(["-KILL", pid]).stderr(Stdio::null()).status();
                }
            }
        }
        for (i, ns) in self.namespaces.iter().enumerate() {
            let outer = format!("scmn{}{i}a", self.tag);
            let _ = Command::new("ip").args(["link", "del", &outer]).stderr(Stdio::null()).status();
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        if self.bridge_made {
            let _ = Command::new("ip").args(["link", "del", &self.bridge_name()]).status();
        }
    }
}
