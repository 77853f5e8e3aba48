//! check's cache section, derived from its phases like the rest of the summary: the page cache (its own phase,
//! the one `streamcap cache` runs), the sustained media (the sequential reads) and the access time (4 KiB reads at
//! depth 1) as `cache` labels and bounds them (`cache::summary::plateau`, one path), the implausibility flag, and
//! which plateau the stream phases were served from: the page cache when any step was cache-served (its devices
//! read more than 5 % less than its viewers received, each step judged on its own by `results::served`), a
//! cache beneath the OS when the devices' figures are implausible, else the media. Pure: reads phases, returns
//! the section.

use super::profile::{CHUNK, PAGE_CACHE_PHASE, RAW_PHASES};
use crate::app::cache::profile::{PAGE_CACHE_REGION, default_format};
use crate::app::cache::summary::{Beneath, flag_of, plateau};
use crate::results::{
    self, CacheSummary, CheckCache, FormatVerdict, PhaseResult, Plateau, PlateauKind, SERVED_TOLERANCE, StepServed,
    StreamsStep, judge_step,
};
use crate::units::Bytes;

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
    let flagged = cache_beneath(phases);
    let media_mbps = find(RAW_PHASES[1]).and_then(|p| p.read.as_ref()).map(|r| r.mbps);
    let beneath = Beneath { cache: flagged.is_some(), network, media_mbps };
    let plateaus: Vec<Plateau> = measured
        .iter()
        .filter_map(|&(kind, name)| plateau(kind, find(name)?, &bounds, (false, None), beneath))
        .collect();
    if plateaus.is_empty() {
        return None;
    }
    let steps: Vec<(&StreamsStep, StepServed)> =
        verdict.iter().flat_map(|v| &v.steps).map(|s| (s, step_served(s))).collect();
    let viewer_bytes: f64 = steps.iter().map(|(s, _)| viewer_bytes(s)).sum();
    let device_bytes: u64 = steps.iter().filter_map(|(_, j)| j.device_read_bytes).sum();
    let cached: Vec<&StreamsStep> = steps.iter().filter(|(_, j)| j.cache_served).map(|(s, _)| *s).collect();
    let served = served_from(viewer_bytes, device_bytes, &cached, beneath);
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

/// Bytes a step's viewers read: the reads' own count, or (results older than it) the media delivered.
fn viewer_bytes(step: &StreamsStep) -> f64 {
    if step.read_bytes > 0 { step.read_bytes as f64 } else { step.delivered_mbps * step.duration_s * 1e6 }
}

/// A step's judgment (`results::served`), made now for results older than it.
fn step_served(step: &StreamsStep) -> StepServed {
    if step.served_words.is_empty() {
        judge_step(viewer_bytes(step) as u64, results::Beneath::Devices(&step.devices))
    } else {
        StepServed {
            device_read_bytes: step.device_read_bytes,
            cache_served: step.cache_served,
            served_words: step.served_words.clone(),
        }
    }
}

/// Which plateau served the viewers, in a word and a sentence; `None` before any viewer read. `cached`: the
/// steps whose devices read less than their viewers received (each judged on its own, `results::served`).
fn served_from(
    viewer_bytes: f64,
    device_bytes: u64,
    cached: &[&StreamsStep],
    beneath: Beneath,
) -> Option<(PlateauKind, String)> {
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
    } else if !cached.is_empty() {
        let counts: Vec<String> = cached.iter().map(|s| s.count.to_string()).collect();
        (
            PlateauKind::PageCache,
            format!(
                "the page cache at {} step{} (at {} streams): the devices read more than {:.0} % less than the \
                 viewers received there, so those counts describe memory, not disks, and do not count ({bytes} \
                 over all steps)",
                cached.len(),
                if cached.len() == 1 { "" } else { "s" },
                counts.join(", "),
                SERVED_TOLERANCE * 100.0
            ),
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

/// Whether a cache beneath the OS answered the check's reads, in words: the first phase that read whose devices'
/// figures were beyond what they say they are (`flag_of`: the target's own devices, never a loop device's
/// backing disk, whose activity is the whole host's). The one rule behind the cache section's flag and the
/// verdict's (`verdict::Context::cache_beneath`), which had each their own (three named phases; any phase, any
/// device): a write phase's flag is a write cache, and says nothing of where reads came from.
pub fn cache_beneath(phases: &[PhaseResult]) -> Option<String> {
    phases.iter().filter(|p| p.read.as_ref().is_some_and(|r| r.ops > 0)).find_map(flag_of)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysinfo::topology::ROLE_LOOP_BACKING;

    fn fixture() -> crate::results::RunResult {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/check-v1.json");
        crate::results::read_result(&path).unwrap()
    }

    #[test]
    fn the_streams_are_served_by_ram_by_a_cache_beneath_or_by_the_media() {
        let local = Beneath::default();
        let mut step = fixture().check.unwrap().verdict[0].steps[0].clone();
        step.count = 32;
        assert!(served_from(0.0, 0, &[], local).is_none(), "no viewer read yet");
        let (kind, words) = served_from(1e9, 1_000_000, &[&step], local).unwrap();
        assert_eq!(kind, PlateauKind::PageCache);
        assert!(words.starts_with("the page cache at 1 step (at 32 streams)"), "{words}");
        let cache = Beneath { cache: true, ..local };
        assert_eq!(served_from(1e9, 990_000_000, &[], cache).unwrap().0, PlateauKind::DeviceCache);
        let (kind, words) = served_from(1e9, 1_000_000_000, &[], local).unwrap();
        assert_eq!(kind, PlateauKind::Media);
        assert!(words.contains("the devices read 953.67 MiB"), "{words}");
        // Over sshfs no local device reads anything: that is the network, not RAM.
        let (kind, words) = served_from(1e9, 0, &[], Beneath { network: true, ..local }).unwrap();
        assert_eq!(kind, PlateauKind::Media);
        assert!(words.starts_with("the file server, across the network"), "{words}");
    }

    #[test]
    fn the_section_reads_the_plateaus_of_a_real_check() {
        let result = fixture();
        let verdict = &result.check.as_ref().unwrap().verdict;
        let section = section(&result.phases, verdict, false).expect("the fixture has the raw phases");
        let kinds: Vec<PlateauKind> = section.plateaus.iter().map(|p| p.kind).collect();
        assert_eq!(kinds, [PlateauKind::Media, PlateauKind::AccessTime], "the fixture predates the page-cache phase");
        assert!(section.viewer_bytes > 0 && section.device_read_bytes > 0, "{section:?}");
        assert_eq!(section.served_from, Some(PlateauKind::Media), "{:?}", section.served_words);
    }

    /// A cache beneath answered the reads when a phase that read had a device of its own flagged: a flagged write
    /// phase (a write cache) or a loop device's backing disk (the whole host's activity) does not say so.
    #[test]
    fn a_cache_beneath_is_said_of_reads_on_the_targets_own_devices() {
        let phases = fixture().phases;
        assert_eq!(cache_beneath(&phases), None, "the fixture's devices are plausible");
        let flag = |name: &str, role: Option<&str>| {
            let mut phases = phases.clone();
            let phase = phases.iter_mut().find(|p| p.name == name).unwrap();
            phase.devices[0].implausible = Some(format!("{name} was too fast"));
            if let Some(role) = role {
                phase.devices[0].role = role.into();
            }
            cache_beneath(&phases)
        };
        assert_eq!(flag(RAW_PHASES[0], None), None, "a write phase");
        assert_eq!(flag(RAW_PHASES[3], Some(ROLE_LOOP_BACKING)), None, "the backing disk");
        assert_eq!(flag(RAW_PHASES[3], None).as_deref(), Some("rand-read 4k qd32 was too fast"));
    }

    /// The sums over all steps hid a step served from RAM among steps the devices served (issue 24: the old rule
    /// wanted half the bytes from the devices, over every step together); each step is judged on its own now.
    #[test]
    fn one_cache_served_step_among_many_is_named() {
        let result = fixture();
        let mut verdict = result.check.clone().unwrap().verdict;
        let steps = &mut verdict[0].steps;
        assert!(steps.len() >= 2, "the fixture has a search");
        let last = steps.len() - 1;
        let judged = results::judge_step(16 << 30, results::Beneath::Devices(&steps[last].devices));
        (steps[last].cache_served, steps[last].served_words) = (judged.cache_served, judged.served_words);
        steps[last].read_bytes = 16 << 30;
        assert!(steps[last].cache_served, "{:?}", steps[last].served_words);
        let count = steps[last].count;
        let section = section(&result.phases, &verdict, false).unwrap();
        assert_eq!(section.served_from, Some(PlateauKind::PageCache), "{:?}", section.served_words);
        let words = section.served_words.unwrap();
        assert!(words.contains(&format!("at {count} streams")), "{words}");
    }
}
