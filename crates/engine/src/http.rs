//! The HTTP source of the stream driver: an [`Engine`] whose "files" are viewers' keep-alive connections.
//!
//! A read request `{file: viewer, offset, len}` becomes `GET path` with `Range: bytes=offset-(offset+len-1)` on
//! that viewer's connection; its completion comes when the last body byte has been read. A connection built with
//! pieces (`HttpPieces`: a playlist's segments, each one `GET` made before the run) sends the piece a request's
//! offset names instead, whole (200) or of its byte range (206). The driver's loop is
//! the same as for files, so due times, lateness, own lag and stalls are measured by the same code.
//!
//! Event-driven: every socket is non-blocking and registered (level-triggered) with one epoll per scheduler
//! thread; `reap` waits on it with the scheduler's timeout. No thread per viewer, no allocation per chunk
//! (request and head buffers are per connection and reused; bodies are read into one scratch buffer and only
//! counted). Like every engine it reads no clock and keeps no latency figures.
//!
//! `https://` connections are rustls over the same non-blocking sockets (`tls.rs`): the handshake is done when
//! the connection is opened, and encrypted bytes rustls still holds keep the socket watched for writability.
//!
//! A connection the server closed while idle or before answering (keep-alive timeout, `Connection: close`,
//! request limit, or nginx closing idle connections when fewer than a sixteenth of its worker_connections are
//! free) is opened again (a blocking connect on the scheduler thread, shown as the chunk's lateness) and the
//! request sent again, at most [`RETRIES`] times per request: a GET of a range is idempotent, and a player
//! retries too. Any other failure fails that chunk with a message naming the URL ([`Engine::error_detail`]).
//!
//! The one tally it keeps: connections opened and opened again ([`connections`]), process-wide counters bumped
//! once per connect (never per chunk), which the app reads around a step as it reads the process's CPU time.

use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::buffer::spare_capacity;
use rustix::event::{Timespec, epoll};
use rustix::fd::OwnedFd;

use std::sync::Arc;

use super::http_wire::{HttpError, HttpPieces, HttpUrl, MAX_HEAD, head_end, parse_head, write_request};
use super::tls::Wire;
use super::{Caps, Completion, Engine, EngineError, EngineKind, FileTable, Request, Wait};

/// Body bytes are read in pieces of this size and dropped.
const SCRATCH: usize = 256 * 1024;
/// While the head is awaited, read at most this much at once, so a connection's head buffer stays small.
const HEAD_READ: usize = 1024;
/// Times one request is sent again on a fresh connection after the server closed the connection before
/// answering. Bounded, so a server that closes every connection fails the chunk rather than looping.
pub const RETRIES: u8 = 3;
/// The errno a failed HTTP exchange reports (the text comes from `error_detail`).
const EPROTO: i32 = 71;

static OPENED: AtomicU64 = AtomicU64::new(0);
static REOPENED: AtomicU64 = AtomicU64::new(0);

/// Connections this process set up so far: (opened when viewers started, opened again after the server closed
/// one). The difference of two readings is what happened between them.
pub fn connections() -> (u64, u64) {
    (OPENED.load(Ordering::Relaxed), REOPENED.load(Ordering::Relaxed))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Head,
    Body,
}

struct Conn {
    url: HttpUrl,
    host_header: String,
    stream: Option<Wire>,
    phase: Phase,
    slot: u32,
    offset: u64,
    expected: u32,
    request: Vec<u8>,
    sent: usize,
    /// Registered for writability too (a request did not fit the socket buffer).
    watching_out: bool,
    head: Vec<u8>,
    body_left: u64,
    /// Times the current request was sent again on a fresh connection.
    retried: u8,
    close_after: bool,
    /// A playlist's segments, when this connection fetches them (a request's offset names one), and the one
    /// in flight.
    pieces: Option<Arc<HttpPieces>>,
    piece: Option<usize>,
}

/// See the module documentation.
pub struct HttpEngine {
    epoll: OwnedFd,
    conns: Vec<Conn>,
    ready: Vec<Completion>,
    /// The message of each slot's last failure, taken by `error_detail`.
    failures: Vec<Option<String>>,
    scratch: Vec<u8>,
    events: Vec<epoll::Event>,
    in_flight: usize,
    slots: u32,
}

impl HttpEngine {
    /// One keep-alive connection per entry of `urls` (a viewer each), opened now so the run measures streaming,
    /// not connection set-up. `slots` is the most requests in flight at once.
    pub fn connect(urls: Vec<HttpUrl>, slots: u32) -> Result<HttpEngine, HttpError> {
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)
            .map_err(|e| HttpError::Io { url: "epoll".into(), cause: e.into() })?;
        let mut conns = Vec::with_capacity(urls.len());
        for (index, url) in urls.into_iter().enumerate() {
            let stream = open(&epoll, &url, index)?;
            OPENED.fetch_add(1, Ordering::Relaxed);
            conns.push(Conn {
                host_header: url.host_header(),
                url,
                stream: Some(stream),
                phase: Phase::Idle,
                slot: 0,
                offset: 0,
                expected: 0,
                request: Vec::with_capacity(256),
                sent: 0,
                watching_out: false,
                head: Vec::new(),
                body_left: 0,
                retried: 0,
                close_after: false,
                pieces: None,
                piece: None,
            });
        }
        Ok(HttpEngine {
            epoll,
            ready: Vec::with_capacity(slots as usize),
            failures: (0..slots).map(|_| None).collect(),
            scratch: vec![0; SCRATCH],
            events: Vec::with_capacity(conns.len().clamp(1, 1024)),
            conns,
            in_flight: 0,
            slots,
        })
    }

    /// Connection i fetches `pieces[i]`, where there is one, instead of byte ranges of its URL: a request's
    /// offset then names the piece, whose `GET` was made before the run (nothing is formatted per request).
    pub fn with_pieces(mut self, pieces: Vec<Option<Arc<HttpPieces>>>) -> HttpEngine {
        for (conn, pieces) in self.conns.iter_mut().zip(pieces) {
            conn.pieces = pieces;
        }
        self
    }

    /// Sends (the rest of) connection `c`'s request; watches for writability while the socket is full.
    fn send(&mut self, c: usize) -> Result<(), String> {
        let conn = &mut self.conns[c];
        let stream = conn.stream.as_mut().expect("a request in flight has a connection");
        while conn.sent < conn.request.len() {
            match stream.write(&conn.request[conn.sent..]) {
                Ok(n) => conn.sent += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        stream.push().or_else(|e| if e.kind() == ErrorKind::WouldBlock { Ok(()) } else { Err(e.to_string()) })?;
        let want_out = conn.sent < conn.request.len() || stream.wants_write();
        if want_out != conn.watching_out {
            let flags = if want_out { epoll::EventFlags::IN | epoll::EventFlags::OUT } else { epoll::EventFlags::IN };
            epoll::modify(&self.epoll, &*stream, epoll::EventData::new_u64(c as u64), flags)
                .map_err(|e| e.to_string())?;
            conn.watching_out = want_out;
        }
        Ok(())
    }

    /// Starts connection `c`'s current request (again, after a reconnect when `fresh`).
    fn start(&mut self, c: usize, fresh: bool) -> Result<(), String> {
        let conn = &mut self.conns[c];
        if fresh || conn.stream.is_none() || conn.close_after {
            if let Some(old) = conn.stream.take() {
                let _ = epoll::delete(&self.epoll, &old);
            }
            conn.stream = Some(open(&self.epoll, &conn.url, c).map_err(|e| e.to_string())?);
            REOPENED.fetch_add(1, Ordering::Relaxed);
            conn.watching_out = false;
            conn.close_after = false;
        }
        match (&conn.pieces, conn.piece) {
            (Some(pieces), Some(p)) => {
                conn.request.clear();
                conn.request.extend_from_slice(&pieces.0[p].request);
            }
            _ => {
                let last = conn.offset + u64::from(conn.expected) - 1;
                write_request(&mut conn.request, &conn.url, &conn.host_header, Some((conn.offset, last)));
            }
        }
        conn.sent = 0;
        conn.head.clear();
        conn.phase = Phase::Head;
        self.send(c)
    }

    /// Makes progress on connection `c` after epoll said it is ready.
    fn progress(&mut self, c: usize) {
        if self.conns[c].phase == Phase::Idle {
            // An idle keep-alive connection became readable: the server closed it (or sent junk). Drop it; the
            // next request opens a new one.
            let conn = &mut self.conns[c];
            if let Some(old) = conn.stream.take() {
                let _ = epoll::delete(&self.epoll, &old);
            }
            return;
        }
        if let Err(e) = self.send(c) {
            return self.closed_or_failed(c, Some(e));
        }
        loop {
            let conn = &mut self.conns[c];
            let limit = if conn.phase == Phase::Head { HEAD_READ } else { SCRATCH };
            let stream = conn.stream.as_mut().expect("a request in flight has a connection");
            match stream.read(&mut self.scratch[..limit]) {
                Ok(0) => return self.closed_or_failed(c, None),
                Ok(n) => {
                    if let Err(e) = self.take(c, n) {
                        return self.fail(c, e);
                    }
                    if self.conns[c].phase == Phase::Idle {
                        return;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return self.closed_or_failed(c, Some(e.to_string())),
            }
        }
    }

    /// Accounts `n` bytes just read into the scratch buffer.
    fn take(&mut self, c: usize, n: usize) -> Result<(), String> {
        let conn = &mut self.conns[c];
        let mut body = n as u64;
        if conn.phase == Phase::Head {
            conn.head.extend_from_slice(&self.scratch[..n]);
            let Some(end) = head_end(&conn.head) else {
                if conn.head.len() > MAX_HEAD {
                    return Err(format!("the response head is larger than {MAX_HEAD} bytes"));
                }
                return Ok(());
            };
            let head = parse_head(&conn.head[..end])?;
            let range = conn.asked_range();
            match (head.status, range) {
                (206, Some(_)) | (200, None) => {}
                (200, Some(_)) => {
                    return Err("the server ignored the Range header (200 OK with the whole file)".into());
                }
                (s, _) => return Err(format!("the server answered HTTP {s} {}", head.reason)),
            }
            if let Some((first, last)) = range
                && head.content_range.is_some_and(|(f, l, _)| (f, l) != (first, last))
            {
                return Err(format!("asked for bytes {first}-{last}, got {:?}", head.content_range));
            }
            conn.body_left = head.content_length.ok_or("a response without Content-Length")?;
            if conn.body_left != u64::from(conn.expected) {
                return Err(format!("asked for {} bytes, the response holds {}", conn.expected, conn.body_left));
            }
            conn.close_after = head.close;
            body = (conn.head.len() - end) as u64;
            conn.head.clear();
            conn.phase = Phase::Body;
        }
        if body > conn.body_left {
            return Err("the server sent more bytes than the response holds".into());
        }
        conn.body_left -= body;
        if conn.body_left == 0 {
            conn.phase = Phase::Idle;
            conn.retried = 0;
            let (slot, expected) = (conn.slot, conn.expected);
            if conn.close_after
                && let Some(old) = conn.stream.take()
            {
                let _ = epoll::delete(&self.epoll, &old);
            }
            self.finish(slot, Ok(expected));
        }
        Ok(())
    }

    /// The connection ended (EOF, or `error`). A connection that the server closed before any byte of the answer
    /// is opened again, up to `RETRIES` times for one request; anything else fails the chunk.
    fn closed_or_failed(&mut self, c: usize, error: Option<String>) {
        let conn = &self.conns[c];
        let stale = conn.phase == Phase::Head && conn.head.is_empty() && conn.retried < RETRIES;
        if stale {
            self.conns[c].retried += 1;
            if let Err(e) = self.start(c, true) {
                self.fail(c, e);
            }
            return;
        }
        let what = error.unwrap_or_else(|| match conn.phase {
            Phase::Body => format!("the server closed the connection with {} body bytes missing", conn.body_left),
            _ => "the server closed the connection before answering".into(),
        });
        self.fail(c, what);
    }

    fn fail(&mut self, c: usize, what: String) {
        let conn = &mut self.conns[c];
        if let Some(old) = conn.stream.take() {
            let _ = epoll::delete(&self.epoll, &old);
        }
        conn.phase = Phase::Idle;
        let slot = conn.slot;
        let asked = conn.asked_range().map(|(first, last)| format!(" (bytes {first}-{last})")).unwrap_or_default();
        let url = match (&conn.pieces, conn.piece) {
            (Some(pieces), Some(p)) => pieces.0[p].url.as_str(),
            _ => conn.url.text.as_str(),
        };
        self.failures[slot as usize] = Some(format!("GET {url}{asked}: {what}"));
        self.finish(slot, Err(EPROTO));
    }

    fn finish(&mut self, slot: u32, result: Result<u32, i32>) {
        self.in_flight -= 1;
        self.ready.push(Completion { slot, result });
    }
}

impl Conn {
    /// The byte range the request in flight asks for (first and last, inclusive): its own, or its piece's;
    /// `None` for a piece that is a whole resource.
    fn asked_range(&self) -> Option<(u64, u64)> {
        match (&self.pieces, self.piece) {
            (Some(pieces), Some(p)) => pieces.0[p].range,
            _ => Some((self.offset, self.offset + u64::from(self.expected).max(1) - 1)),
        }
    }
}

/// Connects to `url`, makes the socket non-blocking and registers it with `epoll` under `index`.
fn open(epoll: &OwnedFd, url: &HttpUrl, index: usize) -> Result<Wire, HttpError> {
    let io = |cause: std::io::Error| HttpError::Io { url: url.text.clone(), cause };
    let stream = url.connect()?;
    stream.tcp().set_nonblocking(true).map_err(io)?;
    epoll::add(epoll, &stream, epoll::EventData::new_u64(index as u64), epoll::EventFlags::IN)
        .map_err(|e| io(e.into()))?;
    Ok(stream)
}

impl Engine for HttpEngine {
    fn caps(&self) -> Caps {
        Caps { kind: EngineKind::Http, queue_depth: self.slots, registered_buffers: false, registered_files: false }
    }

    fn submit(&mut self, requests: &[Request]) -> Result<usize, EngineError> {
        for r in requests {
            let c = r.file as usize;
            let conn = &mut self.conns[c];
            debug_assert_eq!(conn.phase, Phase::Idle, "one request per connection");
            (conn.slot, conn.offset, conn.expected, conn.retried) = (r.slot, r.offset, r.len.max(1), 0);
            conn.piece = conn.pieces.as_ref().map(|_| r.offset as usize);
            self.in_flight += 1;
            if let Err(e) = self.start(c, false) {
                self.fail(c, e);
            }
        }
        Ok(requests.len())
    }

    fn reap(&mut self, min: usize, wait: Wait, out: &mut Vec<Completion>) -> Result<usize, EngineError> {
        loop {
            if self.ready.len() >= min.max(1) || self.in_flight == 0 {
                break;
            }
            let timeout = match wait {
                Wait::Forever => None,
                Wait::AtMost(d) => Some(Timespec::try_from(d).unwrap_or(Timespec { tv_sec: 1, tv_nsec: 0 })),
            };
            self.events.clear();
            match epoll::wait(&self.epoll, spare_capacity(&mut self.events), timeout.as_ref()) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(EngineError::Poll(e.into())),
            }
            for i in 0..self.events.len() {
                let c = self.events[i].data.u64() as usize;
                self.progress(c);
            }
            if matches!(wait, Wait::AtMost(_)) {
                break;
            }
        }
        let n = self.ready.len();
        out.append(&mut self.ready);
        Ok(n)
    }

    fn buffer_mut(&mut self, _slot: u32) -> &mut [u8] {
        // Bodies are counted, not kept: every slot shares the scratch buffer.
        &mut self.scratch
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn error_detail(&mut self, slot: u32) -> Option<String> {
        self.failures.get_mut(slot as usize).and_then(Option::take)
    }

    fn file_table(&mut self) -> &mut dyn FileTable {
        self
    }
}

/// The "files" of this engine are connections, made when it is built.
impl FileTable for HttpEngine {
    fn put(&mut self, index: u32, _file: Option<std::fs::File>) -> Result<Option<std::fs::File>, EngineError> {
        let cause = std::io::Error::new(ErrorKind::Unsupported, "the http source reads URLs, not local files");
        Err(EngineError::FileTable { index, cause })
    }
}
