//! HTTP/1.1 on the wire, as much as a paced range client needs: `http://` and `https://` URLs, the request line of a ranged
//! `GET` (or a `HEAD`), the response head (status line, `Content-Length`, `Content-Range`, `Connection`), and a
//! blocking probe of a media URL's size before the run. It owns no socket loop (that is `http.rs`) and never
//! reads the body of a response it probes.
//!
//! Hand-written on purpose: the driver needs non-blocking sockets polled with its scheduler and byte-exact
//! control of what it counts; a client library would hide both.

use std::fmt;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};

use crate::tls::Wire;
use std::time::Duration;

/// How long connecting and probing may take before the URL is reported unreachable.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A response head larger than this is refused (nginx sends about 250 bytes).
pub const MAX_HEAD: usize = 16 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{0} is not an http:// or https:// URL (http://HOST[:PORT]/PATH)")]
    BadUrl(String),
    #[error("cannot connect to {url}: {cause}")]
    Connect { url: String, cause: std::io::Error },
    #[error("{url}: {cause}")]
    Io { url: String, cause: std::io::Error },
    #[error("{url}: the server answered HTTP {status} {reason}")]
    Status { url: String, status: u16, reason: String },
    #[error("{url}: {what}")]
    Protocol { url: String, what: String },
}

/// A parsed `http://` or `https://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// As the user gave it (for messages and the result).
    pub text: String,
    /// Host as written (the `Host` header), without brackets for IPv6 literals.
    pub host: String,
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
    /// `https://`: TLS over the connection.
    pub tls: bool,
}

impl fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for HttpUrl {
    type Err = HttpError;
    fn from_str(s: &str) -> Result<HttpUrl, HttpError> {
        let text = s.trim();
        let bad = || HttpError::BadUrl(text.into());
        let tls = text.len() >= 8 && text[..8].eq_ignore_ascii_case("https://");
        if !tls && (text.len() < 7 || !text[..7].eq_ignore_ascii_case("http://")) {
            return Err(bad());
        }
        let default_port = if tls { 443 } else { 80 };
        let rest = &text[if tls { 8 } else { 7 }..];
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        let path = path.split('#').next().unwrap_or("/").to_string();
        if authority.contains('@') || path.contains(char::is_whitespace) {
            return Err(bad());
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6.split_once(']').ok_or_else(bad)?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| bad())?,
                None if after.is_empty() => default_port,
                None => return Err(bad()),
            };
            (host.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), p.parse().map_err(|_| bad())?),
                None => (authority.to_string(), default_port),
            }
        };
        if host.is_empty() || port == 0 {
            return Err(bad());
        }
        Ok(HttpUrl { text: text.into(), host, port, path, tls })
    }
}

impl HttpUrl {
    /// The `Host` header's value.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        if self.port == if self.tls { 443 } else { 80 } { host } else { format!("{host}:{}", self.port) }
    }

    /// Resolves and connects (blocking, with a timeout), with Nagle off, and for `https://` completes the TLS
    /// handshake. The stream is still blocking.
    pub fn connect(&self) -> Result<Wire, HttpError> {
        let tcp = self.connect_tcp()?;
        if !self.tls {
            return Ok(Wire::Plain(tcp));
        }
        let io = |cause| HttpError::Io { url: self.text.clone(), cause };
        tcp.set_read_timeout(Some(CONNECT_TIMEOUT)).map_err(io)?;
        let wire = Wire::tls(tcp, &self.host).map_err(|what| HttpError::Protocol { url: self.text.clone(), what })?;
        wire.tcp().set_read_timeout(None).map_err(io)?;
        Ok(wire)
    }

    /// Resolves and connects (blocking, with a timeout), with Nagle off: requests are small and must leave at
    /// once.
    fn connect_tcp(&self) -> Result<TcpStream, HttpError> {
        let connect_error = |cause| HttpError::Connect { url: self.text.clone(), cause };
        let addrs: Vec<SocketAddr> =
            (self.host.as_str(), self.port).to_socket_addrs().map_err(connect_error)?.collect();
        let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, "the host name resolves to no address");
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
                Ok(stream) => {
                    let _ = stream.set_nodelay(true);
                    return Ok(stream);
                }
                Err(e) => last = e,
            }
        }
        Err(connect_error(last))
    }
}

/// Writes a request for `url` into `out` (cleared first; no allocation once `out` has grown): a `GET` of
/// `range` (first and last byte, inclusive) or, without a range, a `HEAD`.
pub fn write_request(out: &mut Vec<u8>, url: &HttpUrl, host_header: &str, range: Option<(u64, u64)>) {
    write_method(out, if range.is_some() { "GET" } else { "HEAD" }, url, host_header, range);
}

/// A piece a connection fetches by its number (a playlist's segment): its `GET`, made once before the run, and
/// the bytes its body holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpPiece {
    /// The URL's text, for messages.
    pub url: String,
    /// The whole request, sent as it is.
    pub request: Vec<u8>,
    /// The range asked (first and last byte, inclusive): answered 206; `None`: the whole resource, 200.
    pub range: Option<(u64, u64)>,
    /// Bytes of the body.
    pub len: u64,
}

impl HttpPiece {
    /// A `GET` of `url`, of `len` bytes from `range`'s offset when given, else of the whole resource.
    pub fn new(url: &HttpUrl, range: Option<(u64, u64)>, len: u64) -> HttpPiece {
        let range = range.map(|(offset, len)| (offset, offset + len.max(1) - 1));
        let mut request = Vec::new();
        write_method(&mut request, "GET", url, &url.host_header(), range);
        HttpPiece { url: url.text.clone(), request, range, len }
    }
}

/// The pieces of one connection, by number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpPieces(pub Vec<HttpPiece>);

fn write_method(out: &mut Vec<u8>, method: &str, url: &HttpUrl, host_header: &str, range: Option<(u64, u64)>) {
    out.clear();
    // Writing to a Vec cannot fail.
    let _ = write!(out, "{method} {} HTTP/1.1\r\nHost: {host_header}\r\n", url.path);
    if let Some((first, last)) = range {
        let _ = write!(out, "Range: bytes={first}-{last}\r\n");
    }
    let _ = write!(out, "User-Agent: streamcap/{}\r\nAccept: */*\r\n\r\n", env!("CARGO_PKG_VERSION"));
}

/// What a response head says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    pub reason: String,
    pub content_length: Option<u64>,
    /// `Content-Range: bytes FIRST-LAST/TOTAL` (TOTAL is `None` for `*`).
    pub content_range: Option<(u64, u64, Option<u64>)>,
    /// The server will close the connection after this response.
    pub close: bool,
}

/// The length of the head in `buf` (up to and including the blank line), once it is all there.
pub fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Parses a complete response head (as found by `head_end`). The error says what is wrong, in words.
pub fn parse_head(head: &[u8]) -> Result<Head, String> {
    let text = std::str::from_utf8(head).map_err(|_| "the response head is not text".to_string())?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(format!("not an HTTP/1.x response: '{}'", status_line.escape_debug()));
    }
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line '{}'", status_line.escape_debug()))?;
    let reason = parts.next().unwrap_or("").to_string();
    let mut parsed = Head { status, reason, content_length: None, content_range: None, close: version == "HTTP/1.0" };
    for line in lines.filter(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("bad header line '{}'", line.escape_debug()));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            parsed.content_length = Some(value.parse().map_err(|_| format!("bad Content-Length '{value}'"))?);
        } else if name.eq_ignore_ascii_case("content-range") {
            parsed.content_range = Some(parse_content_range(value)?);
        } else if name.eq_ignore_ascii_case("connection") {
            parsed.close = value.split(',').any(|t| t.trim().eq_ignore_ascii_case("close"));
        } else if name.eq_ignore_ascii_case("transfer-encoding") && !value.eq_ignore_ascii_case("identity") {
            return Err(format!("Transfer-Encoding {value} is not supported for media ranges"));
        }
    }
    Ok(parsed)
}

fn parse_content_range(value: &str) -> Result<(u64, u64, Option<u64>), String> {
    let bad = || format!("bad Content-Range '{value}'");
    let spec = value.strip_prefix("bytes ").ok_or_else(bad)?;
    let (range, total) = spec.split_once('/').ok_or_else(bad)?;
    let total = if total == "*" { None } else { Some(total.parse().map_err(|_| bad())?) };
    if range == "*" {
        // An unsatisfied range (416): only the total is known.
        return Ok((0, 0, total));
    }
    let (first, last) = range.split_once('-').ok_or_else(bad)?;
    let (first, last): (u64, u64) = (first.parse().map_err(|_| bad())?, last.parse().map_err(|_| bad())?);
    if last < first {
        return Err(bad());
    }
    Ok((first, last, total))
}

/// The size of the media at `url`: a `HEAD`'s `Content-Length`, or else the total of a `Range: bytes=0-0`
/// `GET`'s `Content-Range`. A status other than 2xx is an error naming the URL and the status.
pub fn probe_size(url: &HttpUrl) -> Result<u64, HttpError> {
    let head = exchange(url, None)?;
    if let (200, Some(length)) = (head.status, head.content_length) {
        return Ok(length);
    }
    let head = exchange(url, Some((0, 0)))?;
    match head.content_range {
        Some((_, _, Some(total))) => Ok(total),
        _ => Err(HttpError::Protocol {
            url: url.text.clone(),
            what: "the server gave no size (no Content-Length on HEAD, no Content-Range on a ranged GET): it \
                   must serve byte ranges"
                .into(),
        }),
    }
}

/// The body of a `GET` of `url` as text (a playlist), at most `most` bytes; a status other than 200 is an error
/// naming the URL and the status.
pub fn fetch_text(url: &HttpUrl, most: u64) -> Result<String, HttpError> {
    let protocol = |what: String| HttpError::Protocol { url: url.text.clone(), what };
    let io = |cause| HttpError::Io { url: url.text.clone(), cause };
    let (head, mut body, mut stream) = open_exchange(url, "GET", None)?;
    if head.status != 200 {
        return Err(HttpError::Status { url: url.text.clone(), status: head.status, reason: head.reason });
    }
    let length = head.content_length.ok_or_else(|| protocol("a playlist without Content-Length".into()))?;
    if length > most {
        return Err(protocol(format!("{length} bytes, more than a playlist streamcap reads ({most})")));
    }
    let mut chunk = [0u8; 4096];
    while (body.len() as u64) < length {
        let n = stream.read(&mut chunk).map_err(io)?;
        if n == 0 {
            return Err(protocol("the server closed the connection before the whole playlist came".into()));
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length as usize);
    String::from_utf8(body).map_err(|_| protocol("the playlist is not UTF-8 text".into()))
}

/// One request on a fresh connection; returns the head and drops the connection (and any body).
fn exchange(url: &HttpUrl, range: Option<(u64, u64)>) -> Result<Head, HttpError> {
    let method = if range.is_some() { "GET" } else { "HEAD" };
    let (head, _, _) = open_exchange(url, method, range)?;
    if !(200..300).contains(&head.status) {
        return Err(HttpError::Status { url: url.text.clone(), status: head.status, reason: head.reason });
    }
    Ok(head)
}

/// One request on a fresh connection: the head, the body bytes read with it, and the connection.
fn open_exchange(url: &HttpUrl, method: &str, range: Option<(u64, u64)>) -> Result<(Head, Vec<u8>, Wire), HttpError> {
    let io = |cause| HttpError::Io { url: url.text.clone(), cause };
    let mut stream = url.connect()?;
    stream.tcp().set_read_timeout(Some(CONNECT_TIMEOUT)).map_err(io)?;
    stream.tcp().set_write_timeout(Some(CONNECT_TIMEOUT)).map_err(io)?;
    let mut request = Vec::new();
    write_method(&mut request, method, url, &url.host_header(), range);
    stream.write_all(&request).map_err(io)?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let end = loop {
        if let Some(end) = head_end(&buf) {
            break end;
        }
        if buf.len() > MAX_HEAD {
            return Err(HttpError::Protocol { url: url.text.clone(), what: "the response head is too large".into() });
        }
        let n = stream.read(&mut chunk).map_err(io)?;
        if n == 0 {
            return Err(HttpError::Protocol {
                url: url.text.clone(),
                what: "the server closed the connection before answering".into(),
            });
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = parse_head(&buf[..end]).map_err(|what| HttpError::Protocol { url: url.text.clone(), what })?;
    Ok((head, buf.split_off(end), stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_ports_paths_and_ipv6_literals() {
        let u: HttpUrl = "http://127.0.0.1:8080/media/a.mkv?x=1".parse().unwrap();
        assert_eq!((u.host.as_str(), u.port, u.path.as_str()), ("127.0.0.1", 8080, "/media/a.mkv?x=1"));
        assert_eq!(u.host_header(), "127.0.0.1:8080");
        let u: HttpUrl = "HTTP://example.org".parse().unwrap();
        assert_eq!((u.port, u.path.as_str(), u.host_header().as_str()), (80, "/", "example.org"));
        let u: HttpUrl = "http://[::1]:81/m".parse().unwrap();
        assert_eq!((u.host.as_str(), u.host_header().as_str()), ("::1", "[::1]:81"));
        let u: HttpUrl = "https://x/y".parse().unwrap();
        assert_eq!((u.tls, u.port, u.host_header().as_str()), (true, 443, "x"));
        let u: HttpUrl = "https://x:8443/y".parse().unwrap();
        assert_eq!((u.port, u.host_header().as_str()), (8443, "x:8443"));
        assert!("ftp://x/y".parse::<HttpUrl>().is_err());
        assert!("http://:80/".parse::<HttpUrl>().is_err());
        assert!("http://h:port/".parse::<HttpUrl>().is_err());
    }

    #[test]
    fn a_ranged_request_names_the_inclusive_byte_range() {
        let u: HttpUrl = "http://h:81/a b".replace(' ', "%20").parse().unwrap();
        let mut out = Vec::new();
        write_request(&mut out, &u, &u.host_header(), Some((4096, 8191)));
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("GET /a%20b HTTP/1.1\r\nHost: h:81\r\nRange: bytes=4096-8191\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\n"));
    }

    #[test]
    fn a_piece_is_a_whole_get_or_the_range_of_its_bytes() {
        let u: HttpUrl = "http://h:81/film/s-001.ts".parse().unwrap();
        let whole = HttpPiece::new(&u, None, 1_003_520);
        let text = String::from_utf8(whole.request.clone()).unwrap();
        assert!(text.starts_with("GET /film/s-001.ts HTTP/1.1\r\nHost: h:81\r\nUser-Agent"), "{text}");
        assert_eq!((whole.range, whole.len), (None, 1_003_520));
        let ranged = HttpPiece::new(&u, Some((1000, 2000)), 2000);
        assert_eq!(ranged.range, Some((1000, 2999)));
        assert!(String::from_utf8(ranged.request).unwrap().contains("Range: bytes=1000-2999\r\n"));
    }

    #[test]
    fn a_partial_content_head_gives_length_range_and_keep_alive() {
        let raw = b"HTTP/1.1 206 Partial Content\r\nServer: nginx\r\nContent-Length: 4096\r\n\
                    Content-Range: bytes 4096-8191/1048576\r\nConnection: keep-alive\r\n\r\nBODY";
        let end = head_end(raw).unwrap();
        assert_eq!(&raw[end..], b"BODY");
        let head = parse_head(&raw[..end]).unwrap();
        assert_eq!(head.status, 206);
        assert_eq!(head.content_length, Some(4096));
        assert_eq!(head.content_range, Some((4096, 8191, Some(1_048_576))));
        assert!(!head.close);
    }

    #[test]
    fn bad_heads_are_refused_in_words() {
        assert!(parse_head(b"SSH-2.0-OpenSSH\r\n\r\n").unwrap_err().contains("not an HTTP/1.x"));
        let chunked = parse_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap_err();
        assert!(chunked.contains("chunked"), "{chunked}");
        assert!(parse_head(b"HTTP/1.1 206 OK\r\nContent-Range: bytes 9-3/10\r\n\r\n").is_err());
        let head = parse_head(b"HTTP/1.0 404 Not Found\r\n\r\n").unwrap();
        assert_eq!((head.status, head.reason.as_str(), head.close), (404, "Not Found", true));
        assert_eq!(head_end(b"HTTP/1.1 200 OK\r\n"), None);
    }
}
