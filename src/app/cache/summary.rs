//! The cache summary, derived from the phases every time the result is saved: each plateau's figures, the stream
//! bound it implies, one line on what it means for serving, and where the device cache ends. Pure: it reads
//! phases (by the names `profile` gave them) and writes `RunResult::cache`.

use super::profile::{ACCESS, MEDIA, PAGE_CACHE, UNDER_LOAD, step_name};
use crate::results::{CacheEnd, CacheStep, CacheSummary, PhaseResult, Plateau, PlateauKind, RunResult, RunStatus};
use crate::streams::capacity::streams_bound;
use crate::sysinfo::topology::ROLE_LOOP_BACKING;
use crate::units::{Bytes, format_mbps};

/// A step faster than this many times the media's MB/s is served by a cache.
const CACHED_FACTOR: f64 = 1.5;

/// What lies beneath the target, for the plateaus' words.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::app) struct Beneath {
    /// The media's own figures are beyond what its device can do: a cache beneath the OS serves them.
    pub cache: bool,
    /// The target is on a network filesystem (sshfs, NFS…): what the client's page cache does not serve crosses
    /// the link, so the "media" is the link or the server, and no local disk is read.
    pub network: bool,
    /// The media plateau's MB/s, once measured: what a faster plateau is judged against.
    pub media_mbps: Option<f64>,
}

/// Fills the plateaus and the cache's end from the phases run so far; `planned` is the number of phases.
pub fn summarize(result: &mut RunResult, planned: usize) {
    let network = result.target.filesystem.as_ref().is_some_and(|fs| fs.is_network());
    let RunResult { phases, cache, status, .. } = result;
    let Some(summary) = cache.as_mut() else { return };
    let find = |name: &str| phases.iter().find(|p| p.name == name);
    let media = find(MEDIA).and_then(|p| p.read.as_ref()).map(|r| r.mbps);
    summary.device_cache_steps = device_cache_steps(phases, media);
    // When the media's own figures are beyond a spinning disk, the cache beneath is larger than any region tried.
    let beneath = Beneath { cache: find(MEDIA).is_some_and(|p| flag_of(p).is_some()), network, media_mbps: media };
    summary.device_cache_end = cache_end(&summary.device_cache_steps, media, beneath);
    let kinds = [PlateauKind::PageCache, PlateauKind::DeviceCache, PlateauKind::Media, PlateauKind::AccessTime];
    let mut plateaus = Vec::new();
    for under_load in [false, true] {
        for kind in kinds {
            let name = match kind {
                PlateauKind::PageCache => PAGE_CACHE.to_string(),
                PlateauKind::Media => MEDIA.to_string(),
                PlateauKind::AccessTime => ACCESS.to_string(),
                PlateauKind::DeviceCache => match fastest_cached(summary) {
                    // Under load the smallest region is measured again.
                    Some(step) if !under_load => step_name(Bytes(step.region_bytes)),
                    _ => summary
                        .device_cache_steps
                        .first()
                        .map_or_else(String::new, |s| step_name(Bytes(s.region_bytes))),
                },
            };
            let name = if under_load { format!("{name}{UNDER_LOAD}") } else { name };
            if let Some(phase) = find(&name) {
                let alone = plateaus.iter().find(|p: &&Plateau| p.kind == kind && !p.under_load).map(|p| p.mbps);
                plateaus.extend(plateau(kind, phase, summary, (under_load, alone), beneath));
            }
        }
    }
    summary.plateaus = plateaus;
    summary.partial = *status != RunStatus::Completed || phases.len() < planned;
}

/// The device-cache step with the highest MB/s among those served by the cache.
fn fastest_cached(summary: &CacheSummary) -> Option<&CacheStep> {
    summary.device_cache_steps.iter().filter(|s| s.cached).max_by(|a, b| a.mbps.total_cmp(&b.mbps))
}

/// The device-cache steps measured alone, smallest first. A step counts as cached only when every smaller one
/// did too: a cache that holds 4 MiB holds 1 MiB, so a larger region that came out fast after a slow smaller one
/// is noise (a busy host, a media figure measured low), not a cache.
fn device_cache_steps(phases: &[PhaseResult], media: Option<f64>) -> Vec<CacheStep> {
    let mut still_cached = true;
    phases
        .iter()
        .filter_map(|p| {
            let size = p.name.strip_prefix("device cache ")?;
            (!size.ends_with(UNDER_LOAD.trim_start())).then_some(())?;
            let read = p.read.as_ref()?;
            Some(CacheStep {
                region_bytes: Bytes::parse(&size.replace(' ', "")).ok()?.0,
                mbps: read.mbps,
                latency_p50_ns: read.latency.at(50.0).unwrap_or(0),
                cached: false,
            })
        })
        .map(|mut step| {
            still_cached &= media.is_some_and(|m| step.mbps > CACHED_FACTOR * m);
            step.cached = still_cached;
            step
        })
        .collect()
}

/// Where repeated reads stop being faster than the media. `beneath`: the media's own figures are beyond what its
/// device can do, so a cache beneath the OS serves even the media plateau (no step down can show then).
fn cache_end(steps: &[CacheStep], media: Option<f64>, beneath: Beneath) -> Option<CacheEnd> {
    let (first, last) = (steps.first()?, steps.last()?);
    let media = media?;
    let size = |b: u64| Bytes(b).to_string();
    Some(match steps.iter().position(|s| !s.cached) {
        Some(0) => no_step_down(first, media, beneath),
        Some(i) => {
            let (inside, outside) = (&steps[i - 1], &steps[i]);
            CacheEnd {
                cached_up_to_bytes: Some(inside.region_bytes),
                uncached_from_bytes: Some(outside.region_bytes),
                words: format!(
                    "repeated reads of up to {} come back at {} MB/s from a cache beneath the OS; from {} on they \
                     come at the media's {} MB/s: that cache ends between {} and {}",
                    size(inside.region_bytes),
                    format_mbps(inside.mbps),
                    size(outside.region_bytes),
                    format_mbps(outside.mbps),
                    size(inside.region_bytes),
                    size(outside.region_bytes)
                ),
            }
        }
        None => CacheEnd {
            cached_up_to_bytes: Some(last.region_bytes),
            uncached_from_bytes: None,
            words: format!(
                "every region tried, up to {}, came back faster than the media's {} MB/s: a cache of at least {} \
                 sits beneath (a RAID controller, or a virtual disk backed by its host's RAM)",
                size(last.region_bytes),
                format_mbps(media),
                size(last.region_bytes)
            ),
        },
    })
}

/// The cache's end when even the smallest region came back no faster than the media.
fn no_step_down(first: &CacheStep, media: f64, beneath: Beneath) -> CacheEnd {
    let size = |b: u64| Bytes(b).to_string();
    if beneath.network {
        return CacheEnd {
            cached_up_to_bytes: None,
            uncached_from_bytes: Some(first.region_bytes),
            words: format!(
                "repeated direct reads of {} are no faster than the network's {} MB/s ({} MB/s): every one crosses \
                 the link, and no cache of the server's shows through it",
                size(first.region_bytes),
                format_mbps(media),
                format_mbps(first.mbps),
            ),
        };
    }
    if beneath.cache {
        return CacheEnd {
            cached_up_to_bytes: None,
            uncached_from_bytes: None,
            words: format!(
                "repeated direct reads of {} are no faster than the media ({} against {} MB/s), but the media's \
                 own figures come from a cache beneath the OS (see below): that cache holds the media's region too, \
                 so no step down shows here",
                size(first.region_bytes),
                format_mbps(first.mbps),
                format_mbps(media),
            ),
        };
    }
    CacheEnd {
        cached_up_to_bytes: None,
        uncached_from_bytes: Some(first.region_bytes),
        words: format!(
            "repeated direct reads of {} are no faster than the media ({} against {} MB/s): no drive or \
                 controller cache shows",
            size(first.region_bytes),
            format_mbps(first.mbps),
            format_mbps(media)
        ),
    }
}

/// The implausibility flag of a device that speaks for the target: not a loop device's backing disk, whose
/// activity is the whole host's (a test suite running beside a loop device made the backing virtio disk look
/// like a cache beneath a 20 MB/s throttled loop device).
pub(in crate::app) fn flag_of(phase: &PhaseResult) -> Option<String> {
    phase.devices.iter().filter(|d| d.role != ROLE_LOOP_BACKING).find_map(|d| d.implausible.clone())
}

/// The plateau a phase measured, or `None` when it read nothing (also `check`'s cache section).
pub(in crate::app) fn plateau(
    kind: PlateauKind,
    phase: &PhaseResult,
    summary: &CacheSummary,
    (under_load, alone): (bool, Option<f64>),
    beneath: Beneath,
) -> Option<Plateau> {
    let read = phase.read.as_ref().filter(|r| r.ops > 0)?;
    let stream_bytes_s = summary.bitrate_bps as f64 / 8.0;
    let chunks_per_s = stream_bytes_s / summary.chunk_bytes as f64;
    let streams_bound = match kind {
        PlateauKind::AccessTime if read.latency.mean_ns > 0.0 => 1.0 / (read.latency.mean_ns / 1e9 * chunks_per_s),
        PlateauKind::AccessTime => 0.0,
        _ => streams_bound(read.mbps, summary.bitrate_bps),
    };
    let change_pct = alone.filter(|a| under_load && *a > 0.0).map(|a| (read.mbps - a) / a * 100.0);
    let judged = !under_load && matches!(kind, PlateauKind::Media | PlateauKind::AccessTime);
    let mut p = Plateau {
        kind,
        under_load,
        phase: phase.name.clone(),
        block_bytes: read.bytes.checked_div(read.ops).unwrap_or(0),
        mbps: read.mbps,
        iops: read.iops,
        latency_mean_ns: read.latency.mean_ns,
        latency_p50_ns: read.latency.at(50.0).unwrap_or(0),
        latency_p99_ns: read.latency.at(99.0).unwrap_or(0),
        change_pct,
        streams_bound,
        meaning: String::new(),
        implausible: judged.then(|| flag_of(phase)).flatten(),
    };
    p.meaning = meaning(&p, summary, beneath);
    Some(p)
}

/// One line on what a plateau means for serving.
fn meaning(p: &Plateau, summary: &CacheSummary, beneath: Beneath) -> String {
    let stream = format!("{} Mbit/s", summary.bitrate_bps as f64 / 1e6);
    let streams = p.streams_bound.floor();
    if p.under_load {
        let change = p.change_pct.map_or(String::new(), |c| format!("{c:+.0} % beside the load: "));
        return match p.kind {
            PlateauKind::AccessTime => {
                // The bitrate said, as on every other line (issue 30: counts that assumed 25 Mbit/s silently).
                format!(
                    "{change}at most {streams:.0} streams of {stream} if every {} chunk costs a seek (a bound)",
                    Bytes(summary.chunk_bytes)
                )
            }
            _ => format!("{change}at most {streams:.0} streams of {stream} (a bound)"),
        };
    }
    if beneath.network {
        return network_meaning(p, summary, &stream, beneath.media_mbps);
    }
    match p.kind {
        PlateauKind::PageCache => {
            format!("files already in RAM: at most {streams:.0} streams of {stream} (a bound), no disk touched")
        }
        PlateauKind::DeviceCache => match summary.device_cache_end.as_ref().and_then(|e| e.cached_up_to_bytes) {
            Some(up_to) => format!("only data read again soon (up to {}), not a film library", Bytes(up_to)),
            None if beneath.cache => "no step down: a cache beneath serves every region, the media's too".to_string(),
            None => "no faster than the media: no cache beneath the OS shows".to_string(),
        },
        PlateauKind::Media => {
            format!("what the disks sustain in long runs: at most {streams:.0} streams of {stream} (a bound)")
        }
        PlateauKind::AccessTime => {
            format!(
                "at most {streams:.0} streams of {stream} if every {} chunk costs a seek (a bound)",
                Bytes(summary.chunk_bytes)
            )
        }
    }
}

/// What a plateau means when the target is on a network filesystem: reads come across the link from the server,
/// so the media plateau is the link's (or the server's) rate, and a page-cache plateau is RAM only when it beat it.
fn network_meaning(p: &Plateau, summary: &CacheSummary, stream: &str, link: Option<f64>) -> String {
    let streams = p.streams_bound.floor();
    match p.kind {
        PlateauKind::PageCache if link.is_some_and(|l| p.mbps > CACHED_FACTOR * l) => {
            format!(
                "files already in this client's RAM: at most {streams:.0} streams of {stream} (a bound), the network not \
                 crossed"
            )
        }
        PlateauKind::PageCache => {
            format!(
                "re-reads cross the network too (no client-side cache served them): at most {streams:.0} streams of {stream} \
                 (a bound)"
            )
        }
        PlateauKind::DeviceCache => match summary.device_cache_end.as_ref().and_then(|e| e.cached_up_to_bytes) {
            Some(up_to) => format!("only data read again soon (up to {}), from the server's cache", Bytes(up_to)),
            None => "no faster than the link: no cache of the server's shows through it".to_string(),
        },
        PlateauKind::Media => {
            format!(
                "what the network link (or the server) sustains in long runs: at most {streams:.0} streams of {stream} (a \
                 bound)"
            )
        }
        PlateauKind::AccessTime => format!(
            "at most {streams:.0} streams of {stream} if every {} chunk costs a round trip to the server (a bound)",
            Bytes(summary.chunk_bytes)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(mbps: &[f64], media: f64) -> Vec<CacheStep> {
        mbps.iter()
            .enumerate()
            .map(|(i, &m)| CacheStep {
                region_bytes: (1 << 20) << (2 * i),
                mbps: m,
                latency_p50_ns: 0,
                cached: m > CACHED_FACTOR * media,
            })
            .collect()
    }

    #[test]
    fn the_cache_ends_where_repeated_reads_fall_to_the_media() {
        let end = cache_end(&steps(&[2000.0, 1900.0, 180.0, 175.0], 170.0), Some(170.0), Beneath::default()).unwrap();
        assert_eq!((end.cached_up_to_bytes, end.uncached_from_bytes), (Some(4 << 20), Some(16 << 20)));
        assert!(end.words.contains("ends between 4 MiB and 16 MiB"), "{}", end.words);

        let none = cache_end(&steps(&[180.0, 175.0], 170.0), Some(170.0), Beneath::default()).unwrap();
        assert_eq!(none.cached_up_to_bytes, None);
        assert!(none.words.contains("no drive or controller cache shows"), "{}", none.words);

        // A virtual disk backed by its host's RAM: the media plateau itself is cached, so "no cache" would be wrong.
        let hidden =
            cache_end(&steps(&[540.0, 600.0], 560.0), Some(560.0), Beneath { cache: true, ..Beneath::default() })
                .unwrap();
        assert_eq!((hidden.cached_up_to_bytes, hidden.uncached_from_bytes), (None, None));
        assert!(hidden.words.contains("holds the media's region too"), "{}", hidden.words);

        let all = cache_end(&steps(&[2000.0, 1900.0, 1800.0], 170.0), Some(170.0), Beneath::default()).unwrap();
        assert_eq!((all.cached_up_to_bytes, all.uncached_from_bytes), (Some(16 << 20), None));
        assert!(all.words.contains("at least 16 MiB"), "{}", all.words);

        assert!(
            cache_end(&steps(&[2000.0], 170.0), None, Beneath::default()).is_none(),
            "no media figure: no judgement"
        );
    }

    /// Regression (issue 30): the access time under load said "131 streams if every chunk costs a seek", its
    /// bitrate unsaid, where every other line names it.
    #[test]
    fn every_stream_count_names_its_bitrate() {
        let text = include_str!("../../../tests/fixtures/cache-v1.json");
        let result = crate::results::parse_result(std::path::Path::new("cache-v1.json"), text).expect("a result");
        let summary = result.cache.expect("a cache result");
        for p in &summary.plateaus {
            let words = meaning(p, &summary, Beneath::default());
            if words.contains("streams") {
                assert!(words.contains("streams of 25 Mbit/s"), "{:?} under load {}: {words}", p.kind, p.under_load);
            }
        }
        let seek = summary.plateaus.iter().find(|p| p.under_load && p.kind == PlateauKind::AccessTime).expect("one");
        assert!(meaning(seek, &summary, Beneath::default()).contains("if every 1 MiB chunk costs a seek"));
    }
}
