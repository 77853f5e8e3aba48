//! check's cache section, derived from its phases like the rest of the summary: the page cache (its own phase,
//! the one `streamcap cache` runs), the sustained media (the sequential reads) and the access time (4 KiB reads at
//! depth 1) as `cache` labels and bounds them (`cache::summary::plateau`, one path), the implausibility flag, and
//! which plateau the stream phases were served from, judged by the bytes the target's devices read against the
//! bytes the viewers read. Pure: reads phases, returns the section.

use super::profile::{CHUNK, PAGE_CACHE_PHASE, RAW_PHASES};
use crate::app::cache::profile::{PAGE_CACHE_REGION, default_format};
use crate::app::cache::summary::{Beneath, flag_of, plateau};
use crate::results::{
    CacheSummary, CheckCache, DeviceResult, FormatVerdict, PhaseResult, Plateau, PlateauKind, StreamsStep,
};
use crate::sysinfo::topology::ROLE_LOOP_BACKING;
use crate::units::Bytes;

/// The devices served the viewers when they read at least this share of the viewers' bytes; below it, RAM did.
const FROM_DEVICE: f64 = 0.5;

/// The section from the phases run so far and the steps of the verdict's capacity searches; `None` before any of
/// its phases ran.
pub fn section(phases: &[PhaseResult], verdict: &[FormatVerdict], network: bool) -> Option<CheckCache> {
    let find = |name: &str| phases.iter().find(|p| p.name == name);
    let format = default_format();
    let bounds = CacheSummary {
        region_bytes: 0,
        page_cache_region_bytes: PAGE_CACHE_REGION.0,
        load: None,
        bitrate_bps: format.bitrate.bits_per_sec(),
        chunk_bytes: CHUNK,
        plateaus: Vec::new(),
        device_cache_steps: Vec::new(),
        device_cache_end: None,
        partial: false,
    };
    let measured = [
        (PlateauKind::PageCache, PAGE_CACHE_PHASE),
        (PlateauKind::Media, RAW_PHASES[1]),
        (PlateauKind::AccessTime, RAW_PHASES[2]),
    ];
    let flagged = measured.iter().filter_map(|(_, name)| find(name)).find_map(flag_of);
    let media_mbps = find(RAW_PHASES[1]).and_then(|p| p.read.as_ref()).map(|r| r.mbps);
    let beneath = Beneath { cache: flagged.is_some(), network, media_mbps };
    let plateaus: Vec<Plateau> = measured
        .iter()
        .filter_map(|&(kind, name)| plateau(kind, find(name)?, &bounds, (false, None), beneath))
        .collect();
    if plateaus.is_empty() {
        return None;
    }
    let steps: Vec<&StreamsStep> = verdict.iter().flat_map(|v| &v.steps).collect();
    let viewer_bytes: f64 = steps.iter().map(|s| s.delivered_mbps * s.duration_s * 1e6).sum();
    let device_bytes: u64 = steps.iter().map(|s| device_reads(&s.devices)).sum();
    let served = served_from(viewer_bytes, device_bytes, beneath);
    Some(CheckCache {
        plateaus,
        bitrate_bps: format.bitrate.bits_per_sec(),
        chunk_bytes: CHUNK,
        implausible: flagged,
        served_from: served.as_ref().map(|(kind, _)| *kind),
        served_words: served.map(|(_, words)| words),
        viewer_bytes: viewer_bytes as u64,
        device_read_bytes: device_bytes,
    })
}

/// Bytes read by the layer beneath the target that read the most (the filesystem's device, or a pool's
/// members together); a loop device's backing disk is left out, since its activity is the whole host's.
fn device_reads(devices: &[DeviceResult]) -> u64 {
    let mut by_role: Vec<(&str, u64)> = Vec::new();
    for d in devices.iter().filter(|d| d.role != ROLE_LOOP_BACKING) {
        match by_role.iter_mut().find(|(role, _)| *role == d.role) {
            Some((_, bytes)) => *bytes += d.activity.read_bytes.0,
            None => by_role.push((&d.role, d.activity.read_bytes.0)),
        }
    }
    by_role.iter().map(|(_, bytes)| *bytes).max().unwrap_or(0)
}

/// Which plateau served the viewers, in a word and a sentence; `None` before any viewer read.
fn served_from(viewer_bytes: f64, device_bytes: u64, beneath: Beneath) -> Option<(PlateauKind, String)> {
    if viewer_bytes <= 0.0 {
        return None;
    }
    let bytes =
        format!("the devices read {} while the viewers read {}", Bytes(device_bytes), Bytes(viewer_bytes as u64));
    Some(if beneath.network {
        // No local device holds a network filesystem's files: their bytes came across the link.
        (
            PlateauKind::Media,
            format!(
                "the file server, across the network: the viewers read {} with direct reads that every one crossed \
                 the link, so the counts describe the link and the server, not a local disk",
                Bytes(viewer_bytes as u64)
            ),
        )
    } else if (device_bytes as f64) < FROM_DEVICE * viewer_bytes {
        (
            PlateauKind::PageCache,
            format!("the page cache: {bytes}, so the media stayed in RAM and the counts describe memory, not disks"),
        )
    } else if beneath.cache {
        (
            PlateauKind::DeviceCache,
            format!(
                "a cache beneath the OS: {bytes}, but the device's figures are beyond what it says it is (see \
                 'cache beneath' below), so its host or a controller served them, not the media"
            ),
        )
    } else {
        (PlateauKind::Media, format!("the device's media: {bytes} (direct reads, past the page cache)"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_streams_are_served_by_ram_by_a_cache_beneath_or_by_the_media() {
        let local = Beneath::default();
        assert!(served_from(0.0, 0, local).is_none(), "no viewer read yet");
        let (kind, words) = served_from(1e9, 1_000_000, local).unwrap();
        assert_eq!(kind, PlateauKind::PageCache);
        assert!(words.contains("stayed in RAM"), "{words}");
        let cache = Beneath { cache: true, ..local };
        assert_eq!(served_from(1e9, 990_000_000, cache).unwrap().0, PlateauKind::DeviceCache);
        let (kind, words) = served_from(1e9, 1_000_000_000, local).unwrap();
        assert_eq!(kind, PlateauKind::Media);
        assert!(words.contains("the devices read 953.67 MiB"), "{words}");
        // Over sshfs no local device reads anything: that is the network, not RAM.
        let (kind, words) = served_from(1e9, 0, Beneath { network: true, ..local }).unwrap();
        assert_eq!(kind, PlateauKind::Media);
        assert!(words.starts_with("the file server, across the network"), "{words}");
    }

    #[test]
    fn the_section_reads_the_plateaus_of_a_real_check() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/check-v1.json");
        let result = crate::results::read_result(&path).unwrap();
        let verdict = &result.check.as_ref().unwrap().verdict;
        let section = section(&result.phases, verdict, false).expect("the fixture has the raw phases");
        let kinds: Vec<PlateauKind> = section.plateaus.iter().map(|p| p.kind).collect();
        assert_eq!(kinds, [PlateauKind::Media, PlateauKind::AccessTime], "the fixture predates the page-cache phase");
        assert!(section.viewer_bytes > 0 && section.device_read_bytes > 0, "{section:?}");
        assert_eq!(section.served_from, Some(PlateauKind::Media), "{:?}", section.served_words);
    }
}
