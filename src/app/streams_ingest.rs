//! Background writers beside the viewers (`--ingest RATE[:N]`): N threads, each writing one new file in the
//! run's work directory sequentially in 1 MiB writes, paced at RATE ÷ N, for as long as the viewers watch —
//! a recorder or an ingest job running while people stream. Write latency is measured from each write's due
//! time (a writer that falls behind does not slide its schedule). Writes go through the sync engine (the only
//! code that issues data I/O), with direct I/O when the media is read that way; every file is removed after
//! its step.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::engine::{AnyEngine, Completion, Engine, EngineKind, EngineSetup, OpKind, Request, Wait};
use crate::metrics::{DEFAULT_PERCENTILES, Histogram};
use crate::results::IngestFigures;
use crate::units::ByteRate;

/// Bytes per ingest write (the planner models ingest with the same requests).
pub const WRITE: u32 = 1 << 20;

/// What `--ingest` asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IngestSpec {
    /// All writers together.
    pub rate: ByteRate,
    pub writers: u32,
}

impl std::str::FromStr for IngestSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<IngestSpec, String> {
        let (rate, writers) = match s.rsplit_once(':') {
            Some((r, n)) => (r, n.parse::<u32>().map_err(|_| format!("'{n}' is not a number of writers"))?),
            None => (s, 1),
        };
        let rate = ByteRate::parse(rate).map_err(|e| e.to_string())?;
        if rate.bytes_per_sec() <= 0.0 || writers == 0 || writers > 64 {
            return Err(format!("--ingest {s}: give a rate above 0 and 1 to 64 writers, e.g. 50MB/s:2"));
        }
        Ok(IngestSpec { rate, writers })
    }
}

/// Runs the writers in `dir` for `watch` (or until `stop`), then removes their files.
pub fn run_writers(
    spec: IngestSpec,
    dir: &Path,
    step: u32,
    watch: Duration,
    direct: bool,
    stop: &AtomicBool,
) -> IngestFigures {
    let per_writer = spec.rate.bytes_per_sec() / f64::from(spec.writers);
    let started = Instant::now();
    let ends: Vec<Result<(u64, Histogram), String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..spec.writers)
            .map(|w| {
                let path = dir.join(format!("ingest-{step}-{w}.bin"));
                scope.spawn(move || {
                    let result = writer(&path, per_writer, watch, direct, stop);
                    let _ = std::fs::remove_file(&path);
                    result
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("an ingest writer panicked".into()))).collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let mut latency = Histogram::new();
    let (mut bytes, mut first_error) = (0u64, None);
    for end in ends {
        match end {
            Ok((b, h)) => {
                bytes += b;
                latency.merge(&h);
            }
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    IngestFigures {
        writers: spec.writers,
        target_mbps: spec.rate.bytes_per_sec() / 1e6,
        achieved_mbps: if elapsed > 0.0 { bytes as f64 / elapsed / 1e6 } else { 0.0 },
        bytes,
        write_latency: latency.summary(&DEFAULT_PERCENTILES),
        first_error,
    }
}

fn writer(
    path: &Path,
    rate: f64,
    watch: Duration,
    direct: bool,
    stop: &AtomicBool,
) -> Result<(u64, Histogram), String> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    if direct {
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_DIRECT);
    }
    let file = options.open(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let setup = EngineSetup {
        kind: EngineKind::Sync,
        queue_depth: 1,
        buffer_size: WRITE as usize,
        max_transfer: WRITE as usize,
        pin_buffers: true,
        files: vec![file],
        null_latency: Duration::ZERO,
        null_faults: Vec::new(),
    };
    let AnyEngine::Sync(mut engine) = AnyEngine::build(setup).map_err(|e| e.to_string())? else {
        unreachable!("a sync engine was asked for")
    };
    engine.buffer_mut(0).fill(0x5A);
    let gap = Duration::from_secs_f64(f64::from(WRITE) / rate);
    let (start, mut latency, mut done) = (Instant::now(), Histogram::new(), Vec::<Completion>::with_capacity(1));
    let mut k: u64 = 0;
    loop {
        let due = gap.mul_f64(k as f64);
        if due >= watch || stop.load(Ordering::Relaxed) {
            break;
        }
        let now = start.elapsed();
        if due > now {
            std::thread::sleep((due - now).min(Duration::from_millis(100)));
            continue;
        }
        let request = Request { slot: 0, kind: OpKind::Write, file: 0, offset: k * u64::from(WRITE), len: WRITE };
        engine.submit(&[request]).map_err(|e| e.to_string())?;
        done.clear();
        engine.reap(1, Wait::Forever, &mut done).map_err(|e| e.to_string())?;
        match done.first().map(|c| c.result) {
            Some(Ok(n)) if n == WRITE => latency.record(start.elapsed().saturating_sub(due).as_nanos() as u64),
            Some(Ok(n)) => return Err(format!("short write to {}: {n} of {WRITE} bytes", path.display())),
            Some(Err(errno)) => {
                let e = std::io::Error::from_raw_os_error(errno);
                return Err(format!("write to {} at {} failed: {e}", path.display(), request.offset));
            }
            None => return Err("the sync engine returned no completion".into()),
        }
        k += 1;
    }
    Ok((k * u64::from(WRITE), latency))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ingest_specs_parse_rate_and_writers() {
        let s: IngestSpec = "50MB/s:2".parse().unwrap();
        assert_eq!((s.rate.bytes_per_sec(), s.writers), (50e6, 2));
        assert_eq!("10MB/s".parse::<IngestSpec>().unwrap().writers, 1);
        assert!("50MB/s:0".parse::<IngestSpec>().is_err());
        assert!("fast".parse::<IngestSpec>().is_err());
    }
}
