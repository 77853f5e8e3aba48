//! What a streams run may ask for, checked before any media is written or any viewer allocated: counts that
//! must be positive, media sizes that must fit in 64 bits, and the memory and threads the viewers and scheduler
//! threads need against what this process may take. Pure: the limits come in the facts (`plan::ResourceLimits`,
//! gathered by the app), so tests pass made-up ones. Called for every stream phase before anything of it is
//! planned (its media table is sized from the viewers it may run).

use std::time::Duration;

use super::ResourceLimits;
use crate::spec::Assignment;
use crate::streams::{StreamsConfig, defaults};
use crate::units::Bytes;

/// Memory one viewer holds at least: player state, its schedule entries and statistics (10,000 viewers were
/// measured at 18 MB in all, docs/performance.md; rounded up to leave room).
pub const VIEWER_STATE_BYTES: u64 = 4096;
/// Threads kept free besides the scheduler threads (main thread helpers, signal handling, io_uring workers).
pub const THREAD_HEADROOM: u64 = 8;
/// Memory kept for the process itself (the result, the media table).
pub const PROCESS_RESERVE: Bytes = Bytes::mib(64);

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
    let media = media_bytes(config, request.viewers)?;
    if media > 1 << 62 {
        return Err(format!(
            "the test media would take {}: use --files one or library:N, or a shorter --media-length",
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
    if let Some(available) = limits.memory
        && memory.saturating_add(PROCESS_RESERVE.0) > available.0
    {
        let flag = if request.search { "--limit" } else { "--count" };
        return Err(format!(
            "{} viewers need at least {} of memory ({} each, plus {} of read buffers for {} threads × {} in \
             flight), but only {available} is available here: use a smaller {flag}, or fewer --workers and a \
             smaller --inflight",
            request.viewers,
            Bytes(memory),
            Bytes(VIEWER_STATE_BYTES),
            Bytes(buffers),
            request.workers,
            request.inflight
        ));
    }
    Ok(())
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
        let files = match config.assignment {
            Assignment::One => 1,
            Assignment::Each => u64::from(viewers),
            Assignment::Library { files, .. } => u64::from(files),
        };
        total = total.saturating_add((raw as u64).saturating_mul(files));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streams::ChunkSize;

    fn config() -> StreamsConfig {
        StreamsConfig {
            mix: "1080p:1".parse().unwrap(),
            chunk: ChunkSize::Bytes(1 << 20),
            buffer: defaults::BUFFER,
            prebuffer: defaults::PREBUFFER,
            watch: Duration::from_secs(10),
            ramp: None,
            steady_within: defaults::STEADY_WITHIN,
            seek_every: None,
            assignment: Assignment::One,
            media_length: defaults::MEDIA_LENGTH,
            seed: 1,
            vbr: None,
        }
    }

    fn request(viewers: u32) -> StreamsRequest {
        StreamsRequest { viewers, search: false, workers: 2, inflight: 256, ingest_writers: 1 }
    }

    const ROOMY: ResourceLimits = ResourceLimits { memory: Some(Bytes::gib(16)), threads: Some(10_000) };

    #[test]
    fn four_billion_viewers_are_refused_with_the_memory_they_would_need() {
        // Guards issue 9: `streams --count 4294967295` aborted on a 34 GB allocation.
        let err = check_request(&config(), &request(u32::MAX), &ROOMY).unwrap_err();
        assert!(err.contains("4294967295 viewers need at least 16.00 TiB"), "{err}");
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
    fn threads_beyond_the_pids_limit_and_endless_media_are_refused() {
        let tight = ResourceLimits { memory: None, threads: Some(20) };
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
