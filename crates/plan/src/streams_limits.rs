//! What a streams run may ask for, checked before any media is written or any viewer allocated: counts that
//! must be positive, media sizes that must fit in 64 bits, and the memory and threads the viewers and scheduler
//! threads need against what this process may take. Pure: the limits come in the facts (`plan::ResourceLimits`,
//! gathered by the app), so tests pass made-up ones. Called for every stream phase before anything of it is
//! planned (its media table is sized from the viewers it may run).

use std::time::Duration;

use super::ResourceLimits;
use super::resources::{Demand, check_memory};
use crate::spec::Assignment;
use crate::units::{Bytes, format_duration, format_latency};
use ::streams::{StreamsConfig, defaults};

/// Memory one viewer holds at least: player state, its schedule entries and statistics (10,000 viewers were
/// measured at 18 MB in all, docs/performance.md; rounded up to leave room).
pub const VIEWER_STATE_BYTES: u64 = 4096;
/// Threads kept free besides the scheduler threads (main thread helpers, signal handling, io_uring workers).
pub const THREAD_HEADROOM: u64 = 8;

/// The numbers of one streams run, as asked.
#[derive(Debug, Clone, Copy)]
pub struct StreamsRequest {
    /// `--count`, or `--limit` with `--max` (the most viewers a step can have).
    pub viewers: u32,
    /// Whether `viewers` came from `--limit` (for messages).
    pub search: bool,
    /// Scheduler threads.
    pub workers: usize,
    /// Reads in flight per scheduler thread.
    pub inflight: u32,
    /// Background writers (`--ingest RATE:N`; 0 without `--ingest`).
    pub ingest_writers: u32,
}

/// Refuses a request that is empty, would overflow, or needs more than the machine gives; the message says
/// which flag and what to do.
pub fn check_request(config: &StreamsConfig, request: &StreamsRequest, limits: &ResourceLimits) -> Result<(), String> {
    check_positive(config, request)?;
    check_player(config)?;
    ::streams::delivery::check_request_size(config)?;
    let media = media_bytes(config, request.viewers)?;
    if media > 1 << 62 {
        return Err(format!(
            "the test media would take {}: use --files one or library, or a shorter --media-length",
            Bytes(media)
        ));
    }
    let threads = (request.workers as u64).saturating_add(u64::from(request.ingest_writers));
    if let Some(available) = limits.threads
        && threads.saturating_add(THREAD_HEADROOM) > available
    {
        return Err(format!(
            "{threads} threads ({} scheduler threads and {} ingest writers) is more than this process may start \
             ({available}, under the pids cgroup limit, threads-max or ulimit -u, less {THREAD_HEADROOM} kept \
             free): use fewer --workers or ingest writers",
            request.workers, request.ingest_writers
        ));
    }
    let slot = config.mix.0.iter().enumerate().map(|(f, _)| config.chunk_bytes(f)).max().unwrap_or(0);
    let slot = slot.min(defaults::SLOT_BUFFER_MAX as u64);
    let buffers = (request.workers as u64).saturating_mul(u64::from(request.inflight)).saturating_mul(slot);
    let memory = u64::from(request.viewers).saturating_mul(VIEWER_STATE_BYTES).saturating_add(buffers);
    let who = format!("a step of {} viewers", request.viewers);
    let of = format!(
        "player state ({} each) and {} of read buffers ({} threads × {} in flight)",
        Bytes(VIEWER_STATE_BYTES),
        Bytes(buffers),
        request.workers,
        request.inflight
    );
    let flag = if request.search { "--limit" } else { "--count" };
    check_memory(limits, Demand { who: &who, memory: Bytes(memory), of: &of, threads })
        .map_err(|why| format!("{why}: use a smaller {flag}, or fewer --workers and a smaller --inflight"))?;
    Ok(())
}

/// The longest arrival window (`--ramp`) or bound on reaching steady state (`--steady-within`) taken.
const MAX_WINDOW: Duration = Duration::from_secs(86_400);

/// Player settings under which the answer would mean nothing, refused with the flag to change: a prebuffer the
/// buffer cannot hold (the player could never start), a buffer of no more than one chunk (it would stall before
/// every chunk, whatever the storage), an arrival window or steady-state bound of more than a day (the step
/// would wait that long). One place for these, whoever asks: `streams`, `check`, a job's `[phase.streams]`, and
/// `trial`, whose players' settings follow its `--runtime`.
pub fn check_player(config: &StreamsConfig) -> Result<(), String> {
    if config.prebuffer > config.buffer {
        return Err(format!(
            "the prebuffer ({}) is larger than the buffer ({}): the player could never start; give a smaller \
             --prebuffer or a larger --buffer",
            format_duration(config.prebuffer),
            format_duration(config.buffer)
        ));
    }
    let (chunk, format) = longest_chunk(config);
    if config.buffer <= chunk {
        let format = &config.mix.0[format].0;
        return Err(format!(
            "the buffer ({}) holds no more than one chunk of {} ({} of media): a player asks for a chunk only once \
             the buffer has room for all of it, so it would run dry before every chunk and stall whatever the \
             storage; give a --buffer longer than {} (twice that leaves a chunk's time to read the next) or a \
             {}",
            format_duration(config.buffer),
            format.name,
            format_latency(chunk),
            format_latency(chunk),
            if config.delivery.segment().is_some() { "shorter segment (--delivery hls:N)" } else { "smaller --chunk" }
        ));
    }
    // Viewers arrive over the window, then every one of them plays through the judged --duration, so any window
    // gives an answer; but a window (or a bound on filling a buffer) of days would hold the step for days.
    for (flag, value) in [("--ramp", config.ramp), ("--steady-within", Some(config.steady_within))] {
        if let Some(value) = value.filter(|&v| v > MAX_WINDOW) {
            return Err(format!(
                "{flag} {} is longer than a day: a step waits that long for its viewers to arrive or fill their \
                 buffers before it judges their playback; give a {flag} of minutes at most",
                format_duration(value)
            ));
        }
    }
    Ok(())
}

/// The most media one chunk of `config` covers, and the format whose chunk it is. A buffer must hold more: a
/// chunk is asked for when the buffer has room for it, so what the player has left to play while it is read is
/// the buffer less one chunk. With VBR a chunk of a GOP at the bottom of the swing covers the most media
/// (`chunk ÷ (1 − swing)`).
pub fn longest_chunk(config: &StreamsConfig) -> (Duration, usize) {
    let swing = config.vbr.map_or(0.0, |v| v.clamp(0.0, 0.9));
    (0..config.mix.0.len()).map(|f| (config.chunk_media(f).div_f64(1.0 - swing), f)).max().unwrap_or_default()
}

/// `0` where a positive number is needed is refused, never taken silently.
fn check_positive(config: &StreamsConfig, request: &StreamsRequest) -> Result<(), String> {
    let zero = |what: &str| Err(format!("{what} must be at least 1"));
    if request.viewers == 0 {
        return zero(if request.search { "--limit" } else { "--count" });
    }
    if request.workers == 0 {
        return zero("--workers");
    }
    if request.inflight == 0 {
        return zero("--inflight");
    }
    for (flag, value) in [("--duration", config.watch), ("--media-length", config.media_length)] {
        if value < Duration::from_millis(1) {
            return Err(format!("{flag} must be above zero: give a time such as 60s"));
        }
    }
    Ok(())
}

/// Bytes of test media a run with `viewers` writes at most (a file per viewer with `--files each`), with every
/// step checked: a bitrate times a media length of many years must not wrap around.
fn media_bytes(config: &StreamsConfig, viewers: u32) -> Result<u64, String> {
    let mut total: u64 = 0;
    for (format, _) in config.mix.0.iter().enumerate() {
        let raw = config.mix.0[format].0.bitrate.byte_rate().bytes_per_sec() * config.media_length.as_secs_f64();
        if !raw.is_finite() || raw >= (1u64 << 62) as f64 {
            return Err(format!(
                "--media-length {:?} at {} makes a file of more than 4 EiB: use a shorter --media-length",
                config.media_length, config.mix.0[format].0.bitrate
            ));
        }
        // A library's size is its own (`library-size`, shrunk to the free space): not bitrate × length.
        let files = match config.assignment {
            Assignment::One => 1,
            Assignment::Each => u64::from(viewers),
            Assignment::Library { .. } => 0,
        };
        total = total.saturating_add((raw as u64).saturating_mul(files));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::streams::ChunkSize;

    fn config() -> StreamsConfig {
        StreamsConfig {
            mix: "1080p:1".parse().unwrap(),
            chunk: ChunkSize::Bytes(1 << 20),
            delivery: Default::default(),
            buffer: defaults::BUFFER,
            prebuffer: defaults::PREBUFFER,
            rebuffer: None,
            steady_ahead: None,
            watch: Duration::from_secs(10),
            ramp: None,
            steady_within: defaults::STEADY_WITHIN,
            seek_every: None,
            assignment: Assignment::One,
            titles: None,
            media_length: defaults::MEDIA_LENGTH,
            seed: 1,
            vbr: None,
        }
    }

    fn request(viewers: u32) -> StreamsRequest {
        StreamsRequest { viewers, search: false, workers: 2, inflight: 256, ingest_writers: 1 }
    }

    const ROOMY: ResourceLimits = ResourceLimits {
        memory: Some(Bytes::gib(16)),
        memory_bound: crate::limits::MemoryBound::Available,
        malloc_arenas: 16,
        threads: Some(10_000),
        sockets: None,
    };

    #[test]
    fn four_billion_viewers_are_refused_with_the_memory_they_would_need() {
        // Guards issue 9: `streams --count 4294967295` aborted on a 34 GB allocation.
        let err = check_request(&config(), &request(u32::MAX), &ROOMY).unwrap_err();
        assert!(
            err.contains("a step of 4294967295 viewers needs 16.00 TiB of memory: at least 16.00 TiB for"),
            "{err}"
        );
        assert!(err.contains("--count"), "{err}");
        check_request(&config(), &request(1000), &ROOMY).unwrap();
    }

    #[test]
    fn zero_counts_and_times_are_refused() {
        // Guards issue 9: `--max --limit 0` panicked (index out of bounds); `--duration 0`, `--workers 0` and
        // `--inflight 0` were taken silently.
        let search = StreamsRequest { search: true, ..request(0) };
        assert!(check_request(&config(), &search, &ROOMY).unwrap_err().contains("--limit must be at least 1"));
        let no_workers = StreamsRequest { workers: 0, ..request(1) };
        assert!(check_request(&config(), &no_workers, &ROOMY).unwrap_err().contains("--workers"));
        let no_slots = StreamsRequest { inflight: 0, ..request(1) };
        assert!(check_request(&config(), &no_slots, &ROOMY).unwrap_err().contains("--inflight"));
        let instant = StreamsConfig { watch: Duration::ZERO, ..config() };
        assert!(check_request(&instant, &request(1), &ROOMY).unwrap_err().contains("--duration"));
    }

    #[test]
    fn players_that_could_not_give_an_answer_are_refused() {
        // Guards issue 25: `trial --runtime 1s` gave its players a 1 s buffer for 1.05 s chunks and reported
        // "sustains 0 × 1080p"; `streams --ramp 1000d` was taken.
        let short = StreamsConfig { buffer: Duration::from_secs(1), prebuffer: Duration::from_millis(500), ..config() };
        let err = check_request(&short, &request(2), &ROOMY).unwrap_err();
        assert!(err.contains("the buffer (1 s) holds no more than one chunk of 1080p (1.05 s of media)"), "{err}");
        assert!(err.contains("give a --buffer longer than 1.05 s"), "{err}");
        let enough = StreamsConfig { buffer: Duration::from_millis(1100), ..short.clone() };
        check_request(&enough, &request(2), &ROOMY).unwrap();
        let vbr = StreamsConfig { vbr: Some(0.5), ..enough.clone() };
        assert!(check_request(&vbr, &request(2), &ROOMY).unwrap_err().contains("longer than 2.10 s"));
        let ramp = StreamsConfig { ramp: Some(Duration::from_secs(86_400_000)), ..config() };
        let err = check_request(&ramp, &request(2), &ROOMY).unwrap_err();
        assert!(err.contains("--ramp 24000 h is longer than a day"), "{err}");
        let slow = StreamsConfig { steady_within: Duration::from_secs(86_400_000), ..config() };
        assert!(check_request(&slow, &request(2), &ROOMY).unwrap_err().contains("--steady-within 24000 h"));
        // Viewers arrive, then all of them play through the judged --duration: a window longer than it is fine.
        let ramp = StreamsConfig { ramp: Some(Duration::from_secs(30)), ..config() };
        check_request(&ramp, &request(2), &ROOMY).unwrap();
        let never = StreamsConfig { prebuffer: Duration::from_secs(20), ..config() };
        assert!(check_request(&never, &request(2), &ROOMY).unwrap_err().contains("could never start"));
    }

    #[test]
    fn threads_beyond_the_pids_limit_and_endless_media_are_refused() {
        let tight = ResourceLimits { threads: Some(20), ..Default::default() };
        let many = StreamsRequest { workers: 64, ..request(10) };
        assert!(check_request(&config(), &many, &tight).unwrap_err().contains("pids cgroup"));
        let forever = StreamsConfig {
            mix: "10Gbit:1".parse().unwrap(),
            media_length: Duration::from_secs(1_000_000_000_000),
            ..config()
        };
        assert!(check_request(&forever, &request(1), &ROOMY).unwrap_err().contains("--media-length"));
        let each =
            StreamsConfig { assignment: Assignment::Each, media_length: Duration::from_secs(100_000_000), ..config() };
        assert!(check_request(&each, &request(1_000_000), &ROOMY).unwrap_err().contains("test media"));
    }
}
