//! The connections a streams run of remote media will hold, checked before it starts: every viewer keeps one
//! keep-alive connection open for its whole watch, so a step of N viewers needs N open files (plus what
//! streamcap holds itself) and, per server address, N ephemeral ports. Past either limit connections fail part
//! way through the step (EMFILE, EADDRNOTAVAIL), which would read as the server's failure; the run is refused
//! instead, naming the `ulimit -n` or the sysctl that lets it run. Pure: the limits come in the facts
//! (`SocketLimits`, gathered by the app after raising the soft open-file limit to the hard one).

use super::SocketLimits;

/// Open files kept free besides the viewers' connections: standard streams, epoll descriptors (one per
/// scheduler thread), the result and history files, the probes of the media.
pub const FD_HEADROOM: u64 = 64;

/// What a step at its largest asks for.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionAsk<'a> {
    /// The most viewers of a step (`--count`, or `--limit` with `--max`).
    pub viewers: u32,
    /// Whether `viewers` came from `--limit`.
    pub search: bool,
    /// The distinct server addresses (host and port) the URLs name; the viewers are spread over them.
    pub servers: &'a [String],
}

/// Refuses a step whose connections cannot all be open at once; the message names the limit and the command
/// that lifts it.
pub fn check_connections(ask: &ConnectionAsk<'_>, limits: &SocketLimits) -> Result<(), String> {
    let flag = if ask.search { "--limit" } else { "--count" };
    let viewers = u64::from(ask.viewers);
    let need = viewers + FD_HEADROOM;
    let left = limits.open_files.saturating_sub(limits.open_now);
    if viewers + FD_HEADROOM.min(limits.open_files / 2) > left {
        let raise = if need + limits.open_now > limits.open_files_hard {
            format!(
                " (the hard limit is {} too: raise it as root, e.g. `ulimit -Hn {0}` or nofile in \
                 /etc/security/limits.conf)",
                limits.open_files_hard
            )
        } else {
            String::new()
        };
        return Err(format!(
            "a step of {viewers} viewers holds {viewers} connections at once, one open file each, and streamcap \
             needs about {FD_HEADROOM} more, but this process may open {left} more files (ulimit -n {}, {} open \
             already): run `ulimit -n {}` in the shell first{raise}, or use a smaller {flag}",
            limits.open_files,
            limits.open_now,
            (need + limits.open_now).next_multiple_of(1024)
        ));
    }
    let Some((first, last)) = limits.ports else { return Ok(()) };
    let ports = u64::from(last - first) + 1;
    let per_server = viewers.div_ceil(ask.servers.len().max(1) as u64);
    if per_server > ports {
        let server = ask.servers.first().map_or("the server", String::as_str);
        return Err(format!(
            "a step of {viewers} viewers opens {per_server} connections to {server}, each from an ephemeral port \
             of its own, but net.ipv4.ip_local_port_range ({first}–{last}) holds only {ports}: widen it \
             (`sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\"`), or use a smaller {flag}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOMY: SocketLimits =
        SocketLimits { open_files: 20_000, open_files_hard: 20_000, open_now: 10, ports: Some((32768, 60999)) };

    fn ask(viewers: u32, servers: &[String]) -> ConnectionAsk<'_> {
        ConnectionAsk { viewers, search: false, servers }
    }

    #[test]
    fn viewers_past_the_open_file_limit_are_refused_naming_the_ulimit() {
        let one = ["127.0.0.1 port 80".to_string()];
        assert!(check_connections(&ask(10_000, &one), &ROOMY).is_ok());
        let tight = SocketLimits { open_files: 256, open_files_hard: 256, ..ROOMY };
        assert!(check_connections(&ask(150, &one), &tight).is_ok());
        let e = check_connections(&ask(1000, &one), &tight).unwrap_err();
        assert!(e.contains("run `ulimit -n 2048`") && e.contains("--count"), "{e}");
        assert!(e.contains("the hard limit is 256 too"), "{e}");
        let soft = SocketLimits { open_files: 1024, open_files_hard: 4096, ..ROOMY };
        let e = check_connections(&ConnectionAsk { search: true, ..ask(2000, &one) }, &soft).unwrap_err();
        assert!(e.contains("ulimit -n 3072") && !e.contains("hard limit") && e.contains("--limit"), "{e}");
    }

    #[test]
    fn viewers_past_the_ephemeral_ports_of_one_server_are_refused_naming_the_sysctl() {
        let narrow = SocketLimits { ports: Some((60000, 60999)), ..ROOMY };
        let one = ["127.0.0.1 port 80".to_string()];
        let e = check_connections(&ask(2000, &one), &narrow).unwrap_err();
        assert!(e.contains("ip_local_port_range (60000–60999) holds only 1000"), "{e}");
        // Two server addresses: each takes half the viewers.
        let two = ["127.0.0.1 port 80".to_string(), "127.0.0.2 port 80".to_string()];
        assert!(check_connections(&ask(2000, &two), &narrow).is_ok());
        assert!(check_connections(&ask(2000, &one), &SocketLimits { ports: None, ..narrow }).is_ok());
    }
}
