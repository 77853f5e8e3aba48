//! The human-readable form of a stream phase in a plan (`--dry-run`): who watches what, how the viewers arrive
//! and how long a step lasts and why, from which media, on which engine, and how the capacity search goes.

use std::fmt;

use super::streams::{MediaSource, StreamCount, StreamsPlan};
use super::{DirectMode, TargetPlan};
use crate::units::{Bytes, format_duration};
use ::streams::LibrarySource;

/// A stream phase's lines of the plan, after its heading.
pub(super) fn write_streams(f: &mut fmt::Formatter<'_>, s: &StreamsPlan, target: &TargetPlan) -> fmt::Result {
    let c = &s.config;
    let who = match s.count {
        StreamCount::Fixed(n) => format!("{n} viewers"),
        StreamCount::Search(_) => "the largest count of viewers that meets the target".to_string(),
    };
    writeln!(f, "  {who} of {}", c.mix.label())?;
    write_step_length(f, s)?;
    let playlists = ::streams::segmented::words_of(s.playlists());
    writeln!(
        f,
        "  {}, buffer {}, prebuffer {}, files: {}",
        match playlists {
            Some(_) => "requests of the playlists' segments".to_string(),
            None => format!("chunk {}", Bytes(c.chunk_bytes(0))),
        },
        format_duration(c.buffer),
        format_duration(c.prebuffer),
        c.assignment,
    )?;
    if let Some(words) = audience_words(c) {
        writeln!(f, "  audience: {words}")?;
    }
    write_delivery(f, s, playlists)?;
    writeln!(
        f,
        "  quality target: at most {} stalled stream(s), start-up within {} (one in ten within {}), every buffer full \
         within {} of arriving",
        s.target.max_stalled,
        format_duration(s.target.max_startup),
        format_duration(::streams::judge::give_up_start(s.target.max_startup)),
        format_duration(c.steady_within)
    )?;
    write_media(f, s, target)?;
    let direct = match s.direct {
        DirectMode::Off => "buffered reads",
        DirectMode::Required => "direct I/O",
        DirectMode::Preferred => "direct I/O (buffered if the filesystem refuses it)",
    };
    writeln!(f, "  engine {}, {direct}: {}", s.engine.name(), s.threads.why)?;
    write_search(f, s)?;
    if let Some(ingest) = &s.ingest {
        writeln!(
            f,
            "  ingest: {:.1} MB/s over {} writer(s), new files in {} (removed after each step)",
            ingest.bytes_per_sec / 1e6,
            ingest.writers,
            ingest.dir.display()
        )?;
    }
    for load in &s.during {
        writeln!(f, "  during: {}", load.words())?;
    }
    if let Some(expect) = s.expect {
        writeln!(f, "  expected: {expect} (exit code 1 below it)")?;
    }
    Ok(())
}

/// How a step goes and how long it lasts: the arrivals, the buffer fill, the judged playback.
fn write_step_length(f: &mut fmt::Formatter<'_>, s: &StreamsPlan) -> fmt::Result {
    let c = &s.config;
    let (length, arrive) = match s.count {
        StreamCount::Fixed(n) => (c.step_length(n), format!("arrive over {}", format_duration(c.arrival_for(n)))),
        StreamCount::Search(search) => (
            c.step_length(search.limit),
            format!("arrive over up to {} (about one a second)", format_duration(c.arrival_for(search.limit))),
        ),
    };
    writeln!(
        f,
        "  each step: viewers {arrive}, Poisson; each fills its buffer (steady state, at most {} after it \
         arrives); then {} of playback is judged from the instant the last buffer was full",
        format_duration(length.steady_within),
        format_duration(length.judged)
    )?;
    let ends = match s.count {
        StreamCount::Fixed(_) => "",
        StreamCount::Search(_) => "; a failing step ends at its first failure",
    };
    writeln!(
        f,
        "  a step lasts about {} (arrival {} + buffer fill {} + judged {}), at most {}{ends}",
        format_duration(length.typical()),
        format_duration(length.arrival),
        format_duration(length.fill),
        format_duration(length.judged),
        format_duration(length.longest())
    )
}

/// How the capacity search goes: where it starts, how it narrows, where it stops. Nothing for a fixed count.
fn write_search(f: &mut fmt::Formatter<'_>, s: &StreamsPlan) -> fmt::Result {
    let StreamCount::Search(search) = s.count else { return Ok(()) };
    let start = match s.estimate {
        Some(e) => format!(
            "{:.0} % of the estimate from phases {} and {} (after an earlier search on them: the share it found)",
            search.start_factor * 100.0,
            e.random_phase + 1,
            e.sequential_phase + 1
        ),
        None => format!("{} viewers", search.start),
    };
    let limit = search.limit_factor.map_or_else(String::new, |x| format!(" and {x}× the estimate"));
    writeln!(
        f,
        "  search: starts at {start}, doubles until a count fails, then bisects to {:.0} %; at most {} viewers{limit}",
        search.precision * 100.0,
        search.limit
    )?;
    let times = match search.confirmations {
        0 => return writeln!(f, "  not confirmed: the edge is run once"),
        1 => "once more".to_string(),
        n => format!("{n} more times"),
    };
    writeln!(
        f,
        "  confirmed: the edge is run {times} (the count that passed, then the one that failed; a count that \
         disagrees searches again around it); the answer is the median of the runs with their range"
    )?;
    Ok(())
}

/// The delivery line, where requests are segments: the playlists' own, or `--delivery hls:N`'s.
fn write_delivery(f: &mut fmt::Formatter<'_>, s: &StreamsPlan, playlists: Option<String>) -> fmt::Result {
    match playlists {
        Some(words) => {
            writeln!(f, "  delivery: {words}, one request per segment (the playlists' own, whatever --delivery says)")
        }
        None if s.config.delivery.segment().is_some() => {
            writeln!(f, "  delivery: {}", ::streams::delivery::words(&s.config))
        }
        None => Ok(()),
    }
}

fn write_media(f: &mut fmt::Formatter<'_>, s: &StreamsPlan, target: &TargetPlan) -> fmt::Result {
    let (mut files, mut bytes) = (0, 0);
    for m in &s.media {
        files += 1;
        bytes += match m {
            MediaSource::File(i) => target.files[*i as usize].size.0,
            MediaSource::Url { size, .. } => *size,
            MediaSource::Segments(title) => title.bytes,
        };
    }
    let whose = match (&s.media[0], s.own_media) {
        (MediaSource::Url { .. }, _) => "remote, fetched in byte ranges",
        (MediaSource::Segments(title), _) if title.playlist.starts_with("http") => "remote segments, one GET each",
        (_, true) => "written by streamcap before the phase, removed after the run",
        (_, false) => "the user's own, only read (opened read-only)",
    };
    let Some(library) = &s.library else {
        return writeln!(f, "  media: {files} file(s), {} ({whose})", Bytes(bytes));
    };
    let how = match (library.source, &library.kept) {
        (LibrarySource::Generated, None) => {
            "written once before the first stream phase, read by every format and step, removed after the run"
        }
        (LibrarySource::Generated, Some(kept)) if kept.reused => "read by every format and step",
        (LibrarySource::Generated, Some(_)) => {
            "written once before the first stream phase, read by every format and step"
        }
        (LibrarySource::User, _) => "opened read-only, each file read at the bitrate under test",
    };
    writeln!(f, "  media: a library, {} ({how})", library.headline())?;
    if let Some(kept) = &library.kept {
        writeln!(f, "    kept: {}", kept.words)?;
    }
    writeln!(f, "    why this size: {}", library.why)?;
    if !library.files.is_empty() {
        let names: Vec<&str> = library.files.iter().take(5).map(|file| file.path.as_str()).collect();
        let more = if library.titles > 5 { format!(" and {} more", library.titles - 5) } else { String::new() };
        writeln!(f, "    files: {}{more}", names.join(", "))?;
    }
    writeln!(f, "    viewers: {}", library.popularity)?;
    if !library.viewer_titles.is_empty() {
        let shown: Vec<String> = library.viewer_titles.iter().take(16).map(u32::to_string).collect();
        let more = if library.viewer_titles.len() > 16 { ", …" } else { "" };
        writeln!(f, "    first step, title by viewer: {}{more}", shown.join(", "))?;
    }
    Ok(())
}

/// How the viewers behave as an audience, when they do more than each watch its own title through: "popularity:
/// Zipf s=0.8, seeks every 10 min on average" (a real player's profile gives both unless told otherwise).
pub(super) fn audience_words(c: &::streams::StreamsConfig) -> Option<String> {
    let zipf = match c.assignment {
        crate::spec::Assignment::Library { zipf: Some(s), .. } => Some(format!("popularity: Zipf s={s}")),
        _ => None,
    };
    let seeks = c.seek_every.map(|d| format!("seeks every {} on average", format_duration(d)));
    let words: Vec<String> = zipf.into_iter().chain(seeks).collect();
    (!words.is_empty()).then(|| words.join(", "))
}
