//! The library stream viewers watch, planned: the generated library of titles (how large — the size asked,
//! shrunk to the free space —, how many titles of what size, and why, against the caches streamcap can know of)
//! or the user's own media (`library = DIR`: which files, refused with what to do when there are none or they
//! are too small or too few for the viewers). Pure: the free space, the RAM and the user's files come in the
//! facts. Every stream phase of a job that reads a generated library reads the same titles, so one library
//! serves every format of a check and every step of a search.

use std::path::{Path, PathBuf};

use super::DirectMode;
use super::defaults::FREE_SPACE_RESERVE;
use super::facts::Facts;
use super::kept_library::{LibraryKeeping, LibraryUse};
use crate::spec::{Assignment, JobSpec, StreamsSpec};
use crate::units::{Bytes, MIB};
use ::streams::{KeptInfo, LibraryFile, LibraryInfo, LibrarySource, StreamsConfig, Titles, defaults};

/// The name of title `n` of a generated library in the work directory.
pub fn title_name(n: u32) -> String {
    format!("title-{n:04}.bin")
}

/// Whether a file is a title of a generated library, named as `title_name` names them (`title-NNNN.bin`): what
/// the kept library's clean-up may remove, and nothing else.
pub fn is_title(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str());
    let number = name.and_then(|n| n.strip_prefix("title-")?.strip_suffix(".bin"));
    number.is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The generated library of a job, sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generated {
    pub titles: u32,
    /// Bytes of each title (whole MiB).
    pub title_bytes: u64,
    /// The size asked (`library-size`, or the default), bytes.
    pub asked: u64,
    /// The least a title must hold for this job's viewers (`title_floor`), bytes: a kept library of shorter
    /// titles will not do.
    pub floor: u64,
    /// The titles a phase asks for by count (`--files library:N`).
    pub fixed: Option<u32>,
}

impl Generated {
    pub fn bytes(&self) -> u64 {
        u64::from(self.titles) * self.title_bytes
    }
}

/// Whether a stream phase reads a library streamcap writes (not the user's media, not test files per format).
pub(super) fn reads_generated(spec: &StreamsSpec, config: &StreamsConfig) -> bool {
    spec.library.is_none() && config.is_library()
}

/// The least a title holds: what one viewer reads in a step (one that passes near the capacity: the arrival
/// window, the buffer fill and the judged playback; and a full buffer at the highest bitrate), and never less
/// than two chunks or `TITLE_MIN_BYTES`; whole MiB.
fn title_floor(config: &StreamsConfig, viewers: u32) -> u64 {
    let span = config.step_length(viewers).typical() + config.buffer;
    let mut floor = defaults::TITLE_MIN_BYTES;
    for (format, (f, _)) in config.mix.0.iter().enumerate() {
        let read = f.bitrate.byte_rate().bytes_per_sec() * span.as_secs_f64();
        floor = floor.max(read.min(1e18) as u64).max(2 * config.chunk_bytes(format));
    }
    floor.div_ceil(MIB) * MIB
}

/// The library of titles the job's stream phases share, sized for `free` bytes of free space of which `other`
/// go to the other data files: the largest size a phase asks (the default: `LIBRARY_BYTES`), at most half of
/// what the other data leave free, in titles no smaller than what one viewer reads in a step. `None` when no
/// phase reads a generated library. Refused, saying what to do, when not even one title fits.
pub(super) fn generated(
    job: &JobSpec,
    free: Option<Bytes>,
    other: Bytes,
    most_viewers: impl Fn(&StreamsSpec) -> u32,
) -> Result<Option<Generated>, String> {
    let mut asked: Option<u64> = None;
    let (mut floor, mut chunk, mut titles) = (0, 0, None);
    for phase in &job.phases {
        let Some(spec) = phase.streams() else { continue };
        let config = super::streams::streams_config(spec, phase.seed);
        if !reads_generated(spec, &config) {
            continue;
        }
        asked = Some(asked.unwrap_or(0).max(spec.library_size.map_or(defaults::LIBRARY_BYTES, |b| b.0)));
        floor = floor.max(title_floor(&config, most_viewers(spec)));
        chunk = (0..config.mix.0.len()).map(|f| config.chunk_bytes(f)).fold(chunk, u64::max);
        if let Assignment::Library { titles: Some(n), .. } = config.assignment {
            titles = titles.or(Some(n));
        }
    }
    let Some(asked) = asked else { return Ok(None) };
    let share = free.map(|f| f.0.saturating_sub(FREE_SPACE_RESERVE.0).saturating_sub(other.0) / 2);
    let size = share.map_or(asked, |s| asked.min(s));
    let fixed = titles;
    let titles = titles.unwrap_or_else(|| (size / floor).clamp(1, u64::from(defaults::MAX_TITLES)) as u32);
    let title_bytes = size / u64::from(titles) / MIB * MIB;
    let shrunk_below = size < asked && size < floor;
    if title_bytes < 2 * chunk.max(1) || shrunk_below {
        let need = Bytes(2 * floor.max(2 * chunk) + other.0 + FREE_SPACE_RESERVE.0);
        return Err(match free {
            Some(free) if size < asked => format!(
                "not enough free space for a library of titles: {free} free, {other} of it for the other data \
                 files, and the library may take at most half of the rest ({}), less than one title of what a \
                 viewer reads in a step ({}); free space to about {need}, give a smaller --library-size, or read \
                 your own media with --library DIR",
                Bytes(size),
                Bytes(floor)
            ),
            _ => format!(
                "a library of {} in {titles} titles gives each title less than two chunks ({}): give a larger \
                 --library-size or fewer titles",
                Bytes(asked),
                Bytes(2 * chunk)
            ),
        });
    }
    Ok(Some(Generated { titles, title_bytes, asked, floor, fixed }))
}

/// Why a library has its size, against the caches streamcap can know of: a drive's and a RAID controller's
/// (which it cannot see: their common largest sizes), and the page cache (the RAM), which matters only where
/// reads are buffered or the target lives in memory.
pub(super) fn caches_said(bytes: u64, facts: &Facts, direct: DirectMode) -> String {
    let size = Bytes(bytes);
    let mut beyond = Vec::new();
    let mut within = Vec::new();
    for (what, cache) in
        [("a drive's cache", defaults::DRIVE_CACHE), ("a RAID controller's", defaults::CONTROLLER_CACHE)]
    {
        let text = format!("{what} (up to {})", Bytes(cache));
        if bytes > cache { beyond.push(text) } else { within.push(text) }
    }
    let mut said = String::new();
    if !beyond.is_empty() {
        said.push_str(&format!("larger than {}", beyond.join(" and ")));
    }
    if !within.is_empty() {
        let sep = if said.is_empty() { "" } else { "; " };
        said.push_str(&format!("{sep}{} could hold all {size} of it", within.join(" or ")));
    }
    said.push_str(", caches streamcap cannot see; ");
    let ram = facts.ram;
    said.push_str(&match (&facts.memory_backed, direct) {
        (Some(why), _) => format!("but {why}: reads come from memory whatever the library's size"),
        (None, DirectMode::Off) if ram.0 >= bytes => {
            format!("reads are buffered and the page cache ({ram} of RAM) can hold all of it: they may come from RAM")
        }
        (None, DirectMode::Off) => format!("reads are buffered, and the library is larger than the RAM ({ram})"),
        (None, _) => format!(
            "direct I/O bypasses the page cache ({ram} of RAM; where the filesystem refuses direct I/O the run \
             says so)"
        ),
    });
    said
}

/// What the plan and the result say about a generated library.
pub(super) fn generated_info(
    library: &Generated,
    titles: Titles,
    free: Option<Bytes>,
    facts: &Facts,
    direct: DirectMode,
    keeping: Option<&LibraryKeeping>,
) -> LibraryInfo {
    let size = Bytes(library.bytes());
    // Titles are whole MiB: up to a MiB per title is lost to rounding, not to the free space.
    let sized = if keeping.is_some_and(LibraryKeeping::reused) {
        format!("{size}, the library an earlier run kept (at least three quarters of what this run would write); ")
    } else if library.bytes() + u64::from(library.titles) * MIB < library.asked {
        format!(
            "{size}, shrunk from the {} asked: the library takes at most half of the free space ({}) beside the \
             other data; ",
            Bytes(library.asked),
            free.unwrap_or_default()
        )
    } else {
        format!(
            "{size}, the size asked (--library-size; by default the check profile's, {} for streams); ",
            Bytes(defaults::LIBRARY_BYTES)
        )
    };
    LibraryInfo {
        source: LibrarySource::Generated,
        dir: None,
        titles: library.titles,
        bytes: library.bytes(),
        title_bytes: Some(library.title_bytes),
        zipf: titles.zipf,
        hot_set: titles.hot_set(),
        popularity: titles.popularity(),
        why: format!("{sized}{}", caches_said(library.bytes(), facts, direct)),
        files: Vec::new(),
        viewer_titles: Vec::new(),
        kept: keeping.map(|k| KeptInfo {
            dir: k.dir.display().to_string(),
            reused: k.reused(),
            written: match k.how {
                LibraryUse::Reuse { written } => written,
                LibraryUse::Write { .. } => None,
            },
            kept_after: k.keep,
            words: k.words(),
        }),
    }
}

/// Media files with their sizes in use, bytes.
type MediaFiles = Vec<(PathBuf, u64)>;

/// The user's media files a phase reads, chosen from the library's listing.
pub(super) struct UserLibrary {
    /// The files, with the size in use (whole 4 KiB blocks).
    pub files: Vec<(PathBuf, u64)>,
    pub info: LibraryInfo,
    /// Said in the plan's notices: files skipped, and how far the viewers can go before they re-read media.
    pub notices: Vec<String>,
}

/// The user's media under `dir` that the viewers read: every media file holding at least two chunks of the
/// largest format (at most `MAX_TITLES`, spread evenly over the listing). Refused, saying what to do, when none
/// does, or when a fixed count of viewers would read more than the library holds (and so read some of it
/// again, from a cache).
pub(super) fn user_library(
    dir: &Path,
    listing: &[(PathBuf, u64)],
    config: &StreamsConfig,
    fixed: Option<u32>,
    facts: &Facts,
    direct: DirectMode,
) -> Result<UserLibrary, String> {
    let chunk = (0..config.mix.0.len()).map(|f| config.chunk_bytes(f)).max().unwrap_or(4096);
    let (files, mut notices) = usable(dir, listing, 2 * chunk)?;
    let total: u64 = files.iter().map(|(_, s)| s).sum();
    notices.extend(enough_for(dir, total, config, fixed)?);
    let titles = Titles { count: files.len() as u32, zipf: zipf_of(config) };
    let listed = files.iter().take(::streams::library::FILES_LISTED);
    let info = LibraryInfo {
        source: LibrarySource::User,
        dir: Some(dir.display().to_string()),
        titles: titles.count,
        bytes: total,
        title_bytes: None,
        zipf: titles.zipf,
        hot_set: titles.hot_set(),
        popularity: titles.popularity(),
        why: format!(
            "your own media, {} in {} file(s), only read; {}",
            Bytes(total),
            titles.count,
            caches_said(total, facts, direct)
        ),
        files: listed
            .map(|(p, s)| LibraryFile { path: p.strip_prefix(dir).unwrap_or(p).display().to_string(), bytes: *s })
            .collect(),
        viewer_titles: Vec::new(),
        kept: None,
    };
    Ok(UserLibrary { files, info, notices })
}

/// The files of `listing` of at least `least` bytes (in whole 4 KiB blocks; at most `MAX_TITLES`, spread evenly),
/// with notices of what was left out; refused when none is large enough.
fn usable(dir: &Path, listing: &[(PathBuf, u64)], least: u64) -> Result<(MediaFiles, Vec<String>), String> {
    let usable: Vec<&(PathBuf, u64)> = listing.iter().filter(|(_, size)| *size >= least).collect();
    if usable.is_empty() {
        return Err(format!(
            "none of the {} media file(s) under {} holds two chunks ({}) or more: give the directory of your media \
             library (the one Plex or Jellyfin scans), or a smaller --chunk",
            listing.len(),
            dir.display(),
            Bytes(least)
        ));
    }
    let mut notices = Vec::new();
    if usable.len() < listing.len() {
        notices.push(format!(
            "{} of the {} media files under {} are smaller than two chunks ({}) and are not read",
            listing.len() - usable.len(),
            listing.len(),
            dir.display(),
            Bytes(least)
        ));
    }
    let most = defaults::MAX_TITLES as usize;
    let picked: Vec<&(PathBuf, u64)> = match usable.len() > most {
        true => {
            notices.push(format!(
                "{most} of the {} media files under {} are read, spread evenly over them",
                usable.len(),
                dir.display()
            ));
            (0..most).map(|i| usable[i * usable.len() / most]).collect()
        }
        false => usable,
    };
    Ok((picked.into_iter().map(|(p, s)| (p.clone(), s / 4096 * 4096)).collect(), notices))
}

/// Whether `total` bytes of media are enough for the viewers: refused for a fixed count that would read more in a
/// step than the library holds (the rest would be read again, from a cache); for a search, a notice of the count
/// beyond which that happens.
fn enough_for(dir: &Path, total: u64, config: &StreamsConfig, fixed: Option<u32>) -> Result<Option<String>, String> {
    let rate = config.mix.0.iter().map(|(f, _)| f.bitrate.byte_rate().bytes_per_sec()).fold(0.0, f64::max);
    let per_viewer = (rate * config.step_length(fixed.unwrap_or(1)).typical().as_secs_f64()).max(1.0);
    let viewers = (total as f64 / per_viewer) as u64;
    match fixed {
        Some(count) if u64::from(count) > viewers => Err(format!(
            "{count} viewers read about {} in a step, more than the {} of media under {}: they would read the same \
             bytes again, which a cache serves; give a directory with more media, fewer viewers (--count) or a \
             shorter --duration",
            Bytes((per_viewer * f64::from(count)) as u64),
            Bytes(total),
            dir.display()
        )),
        Some(_) => Ok(None),
        None => Ok(Some(format!(
            "the library under {} holds {}: a step of more than about {viewers} viewers reads more than that, and \
             re-reads media a cache may serve",
            dir.display(),
            Bytes(total)
        ))),
    }
}

/// The Zipf exponent a library assignment asks for (`None`: each viewer its own title).
pub(super) fn zipf_of(config: &StreamsConfig) -> Option<f64> {
    match config.assignment {
        Assignment::Library { zipf, .. } => zipf,
        _ => None,
    }
}

/// The title each viewer of the first step watches, for a fixed count (the plan shows the mapping).
pub(super) fn first_step_titles(config: &StreamsConfig, count: u32) -> Vec<u32> {
    config.viewers(count, 0, &mut |key| key.number()).iter().map(|v| v.file).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{PhaseSpec, SpecKind, SpecOrigin};
    use crate::units::GIB;

    fn job(files: &str, size: Option<Bytes>) -> JobSpec {
        let streams = StreamsSpec {
            format: Some("2160p-remux".parse().unwrap()),
            max: Some(true),
            duration: Some(std::time::Duration::from_secs(3)),
            ramp: Some(std::time::Duration::from_secs(1)),
            files: Some(files.parse().unwrap()),
            library_size: size,
            ..StreamsSpec::default()
        };
        JobSpec {
            origin: SpecOrigin::Flags,
            target: None,
            interval: None,
            phases: vec![PhaseSpec { kind: Some(SpecKind::Streams(Box::new(streams))), ..PhaseSpec::default() }],
            notices: Vec::new(),
        }
    }

    #[test]
    fn the_library_is_the_size_asked_in_titles_a_viewer_cannot_read_through() {
        let lib = generated(&job("library", Some(Bytes::gib(8))), Some(Bytes::gib(100)), Bytes::gib(1), |_| 100)
            .unwrap()
            .unwrap();
        // 80 Mbit/s for a step of 1 s of arrivals, 8 s of buffer fill and 3 s judged, and 10 s of buffer: 220 MB,
        // 210 MiB.
        assert_eq!(lib.titles, 39, "{lib:?}");
        assert_eq!(lib.title_bytes, 210 * MIB);
        assert!(lib.bytes() <= Bytes::gib(8).0 && lib.bytes() > Bytes::gib(7).0);
        let counted = generated(&job("library:16", Some(Bytes::gib(8))), None, Bytes::ZERO, |_| 100).unwrap().unwrap();
        assert_eq!((counted.titles, counted.title_bytes), (16, 512 * MIB));
        assert_eq!(generated(&job("one", None), None, Bytes::ZERO, |_| 1).unwrap(), None);
    }

    #[test]
    fn the_library_shrinks_to_half_the_free_space_and_refuses_what_does_not_fit() {
        let free = Some(Bytes(Bytes::gib(3).0 + FREE_SPACE_RESERVE.0));
        let lib = generated(&job("library", None), free, Bytes::gib(1), |_| 100).unwrap().unwrap();
        assert_eq!(lib.asked, defaults::LIBRARY_BYTES);
        assert!(lib.bytes() <= Bytes::gib(1).0 && lib.bytes() > Bytes::mib(900).0, "{lib:?}");
        let none = generated(&job("library", None), Some(Bytes::mib(100)), Bytes::ZERO, |_| 100).unwrap_err();
        assert!(none.contains("not enough free space for a library") && none.contains("--library DIR"), "{none}");
    }

    #[test]
    fn the_users_library_skips_small_files_and_refuses_a_count_it_cannot_feed() {
        let spec = StreamsSpec { format: Some("1080p".parse().unwrap()), count: Some(4), ..StreamsSpec::default() };
        let config = super::super::streams::streams_config(&spec, None);
        let dir = Path::new("/srv/media");
        let listing =
            vec![(dir.join("a.mkv"), 3 * GIB + 100), (dir.join("b/short.mp4"), 1 << 20), (dir.join("c.ts"), GIB)];
        let facts = Facts::directory(None);
        let user = user_library(dir, &listing, &config, Some(4), &facts, DirectMode::Preferred).unwrap();
        assert_eq!(user.files, vec![(dir.join("a.mkv"), 3 * GIB), (dir.join("c.ts"), GIB)], "whole 4 KiB blocks");
        assert_eq!(user.info.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["a.mkv", "c.ts"]);
        assert_eq!((user.info.titles, user.info.bytes), (2, 4 * GIB));
        assert!(user.notices[0].contains("1 of the 3 media files"), "{:?}", user.notices);
        // 8 Mbit/s for a step of 8 s of buffer fill and a minute judged (one viewer arrives at once): 68 MB per
        // viewer; 4 GiB feed 63 of them.
        let many = user_library(dir, &listing, &config, Some(100), &facts, DirectMode::Preferred);
        assert!(many.err().unwrap().contains("would read the same bytes again"));
        let search = user_library(dir, &listing, &config, None, &facts, DirectMode::Preferred).unwrap();
        assert!(search.notices.iter().any(|n| n.contains("more than about 63 viewers")), "{:?}", search.notices);
    }

    #[test]
    fn caches_are_named_with_what_the_library_exceeds() {
        let facts = Facts::directory(None);
        let big = caches_said(Bytes::gib(8).0, &facts, DirectMode::Preferred);
        assert!(big.starts_with("larger than a drive's cache (up to 1 GiB) and a RAID controller's"), "{big}");
        assert!(big.contains("direct I/O bypasses the page cache (16 GiB"), "{big}");
        let small = caches_said(Bytes::gib(2).0, &facts, DirectMode::Off);
        assert!(small.contains("a RAID controller's (up to 4 GiB) could hold all 2 GiB"), "{small}");
        assert!(small.contains("may come from RAM"), "{small}");
    }
}
