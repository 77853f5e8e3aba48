//! Player profiles: how real players buffer, as ONE table (start and rebuffer thresholds, forward buffer in
//! media seconds and in bytes, request size), and the names `--player` accepts, read from it by the command
//! line, `check` and the stream planner alike. Pure data: how a profile becomes the player model's settings is
//! `streams::players`. The byte cap binds before the time cap at high bitrates (Media3's 131 MB at 80 Mbit/s
//! is 13 s of media, not 50 s).
//!
//! Each figure names the file it was read from, with the commit read (2026-11-28); figures no source states
//! are marked ESTIMATE (docs/streams.md, "Player profiles").

use std::time::Duration;

/// One player's buffering figures. Times in milliseconds of media, sizes in bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    /// The name `--player` takes.
    pub name: &'static str,
    /// Media buffered before playback starts (and after a seek).
    pub start_ms: u64,
    /// Media buffered before playback resumes after a stall (the buffer ran dry).
    pub rebuffer_ms: u64,
    /// Forward buffer the player keeps at most, in media time.
    pub buffer_ms: u64,
    /// Forward buffer cap in bytes (`None`: no byte cap).
    pub byte_cap: Option<u64>,
    /// Bitrate (bit/s) at or above which `cut_buffer_ms` replaces `buffer_ms` (jellyfin-web).
    pub cut_at_bps: Option<u64>,
    /// The forward buffer above `cut_at_bps`.
    pub cut_buffer_ms: u64,
    /// Bytes per request for direct (progressive) delivery.
    pub request_bytes: u64,
    /// The audience's popularity: Zipf exponent over the library's titles when the library does not say
    /// (`None`: each viewer its own title, streamcap's viewer before profiles).
    pub zipf: Option<f64>,
    /// The audience's skips and resumes: mean seconds between a viewer's seeks (exponentially distributed) when
    /// `--seek-every` does not say (`None`: no seeks).
    pub seek_every_s: Option<u64>,
}

/// A real player's audience, the same for every real profile (no source states it per player): most viewers
/// on a few hot titles and a long tail cold, Zipf-like, with an exponent below 1. ESTIMATE: Breslau, Cao, Fan,
/// Phillips and Shenker, "Web Caching and Zipf-like Distributions: Evidence and Implications" (INFOCOM 1999)
/// measured 0.64–0.83 over six proxy traces; no trace of a home media server's titles is published, so the top
/// of that range, 0.8: of a library of 61 titles the hottest 6 draw 41 % of the viewers.
pub const AUDIENCE_ZIPF: f64 = 0.8;

/// A real player's audience skips and resumes: a seek every 10 minutes of playback on average. ESTIMATE: no
/// player or server publishes a seek rate; a viewer who skips an intro, a recap and the credits of an episode
/// seeks about three times in half an hour. After a seek the player refills its start threshold (Media3's
/// `bufferForPlaybackMs`, "to start or resume following a user action such as a seek").
pub const AUDIENCE_SEEK_EVERY_S: u64 = 600;

/// The start-up limit of the verdict's quality target for a player that starts on 2 s of media or less (the
/// generic viewer's, and Media3's 1 s).
pub const MIN_STARTUP_TARGET: Duration = Duration::from_secs(2);

/// The profiles. The first is the default (`generic`, streamcap's viewer before profiles).
pub const PROFILES: [Profile; 6] = [
    // generic: streamcap's own viewer (streams::defaults): 2 s to start and after a stall, a 10 s buffer,
    // 1 MiB reads.
    Profile {
        name: "generic",
        start_ms: 2_000,
        rebuffer_ms: 2_000,
        buffer_ms: 10_000,
        byte_cap: None,
        cut_at_bps: None,
        cut_buffer_ms: 0,
        request_bytes: 1 << 20,
        zipf: None,
        seek_every_s: None,
    },
    // hls.js src/config.ts (github:video-dev/hls.js afe5b8bf, v1.7.1+25; the same in 1.6.16, which
    // jellyfin-web 12.0.0 pins): maxBufferLength: 30 (s), maxBufferSize: 60 * 1000 * 1000 (bytes). hls.js has
    // no start threshold of its own: the video element plays once the first fragment is appended, so the start
    // and rebuffer threshold is one segment, 6 s (Apple's guidance; ESTIMATE). Requests are whole segments.
    Profile {
        name: "hls.js",
        start_ms: 6_000,
        rebuffer_ms: 6_000,
        buffer_ms: 30_000,
        byte_cap: Some(60_000_000),
        cut_at_bps: None,
        cut_buffer_ms: 0,
        request_bytes: 1 << 20,
        zipf: Some(AUDIENCE_ZIPF),
        seek_every_s: Some(AUDIENCE_SEEK_EVERY_S),
    },
    // Media3 libraries/exoplayer/.../DefaultLoadControl.java (github:androidx/media 2bc20785, 1.11.0), for
    // streamed (non-file://) media: DEFAULT_MIN_BUFFER_MS = DEFAULT_MAX_BUFFER_MS = 50_000,
    // DEFAULT_BUFFER_FOR_PLAYBACK_MS = 1000 ("to start or resume following a user action such as a seek"),
    // DEFAULT_BUFFER_FOR_PLAYBACK_AFTER_REBUFFER_MS = 2000, DEFAULT_VIDEO_BUFFER_SIZE = 2000 *
    // C.DEFAULT_BUFFER_SEGMENT_SIZE (64 * 1024) = 131_072_000 bytes, DEFAULT_PRIORITIZE_TIME_OVER_SIZE_THRESHOLDS
    // = false (the byte cap binds). 1000 / 2000 since Media3 1.6.0 (commit 76e4abe4, "Reduce default values for
    // DefaultLoadControl buffer for playback"; 2500 / 5000 before). Requests: ESTIMATE, the allocator's 64 KiB.
    Profile {
        name: "media3",
        start_ms: 1_000,
        rebuffer_ms: 2_000,
        buffer_ms: 50_000,
        byte_cap: Some(2_000 * 65_536),
        cut_at_bps: None,
        cut_buffer_ms: 0,
        request_bytes: 65_536,
        zipf: Some(AUDIENCE_ZIPF),
        seek_every_s: Some(AUDIENCE_SEEK_EVERY_S),
    },
    // jellyfin-web src/plugins/htmlVideoPlayer/plugin.js, setSrcWithHlsJs (github:jellyfin/jellyfin-web
    // f330b7bc, 12.0.0): hls.js with maxBufferLength = maxMaxBufferLength = 30, set to 6 when the browser is
    // Chrome, Edge or Firefox and the client's maximum streaming bitrate is >= 25000000 (we read it as the
    // stream's bitrate); hls.js's 60 MB maxBufferSize stays. Start: one 3 s segment (Jellyfin's HLS segment
    // length; ESTIMATE, as for hls.js).
    Profile {
        name: "jellyfin-web",
        start_ms: 3_000,
        rebuffer_ms: 3_000,
        buffer_ms: 30_000,
        byte_cap: Some(60_000_000),
        cut_at_bps: Some(25_000_000),
        cut_buffer_ms: 6_000,
        request_bytes: 1 << 20,
        zipf: Some(AUDIENCE_ZIPF),
        seek_every_s: Some(AUDIENCE_SEEK_EVERY_S),
    },
    // Plex (closed source): ESTIMATE throughout. Its public support pages speak of a few seconds to start and
    // a buffer of tens of seconds, with no figure; 5 s to start, a 60 s buffer and 1 MiB ranges are our guess.
    Profile {
        name: "plex",
        start_ms: 5_000,
        rebuffer_ms: 5_000,
        buffer_ms: 60_000,
        byte_cap: None,
        cut_at_bps: None,
        cut_buffer_ms: 0,
        request_bytes: 1 << 20,
        zipf: Some(AUDIENCE_ZIPF),
        seek_every_s: Some(AUDIENCE_SEEK_EVERY_S),
    },
    // VLC src/libvlc-module.c (github:videolan/vlc 008e8cef, 4.0 development; 3.0.x the same):
    // add_integer("network-caching", CLOCK_FREQ / 1000) = 1000 ms, the media VLC holds before it plays an http:// source, and again after an
    // underrun (file-caching is DEFAULT_PTS_DELAY = 300 ms for local files). Forward read-ahead 10 s and
    // 128 KiB stream blocks: ESTIMATE.
    Profile {
        name: "vlc",
        start_ms: 1_000,
        rebuffer_ms: 1_000,
        buffer_ms: 10_000,
        byte_cap: None,
        cut_at_bps: None,
        cut_buffer_ms: 0,
        request_bytes: 128 << 10,
        zipf: Some(AUDIENCE_ZIPF),
        seek_every_s: Some(AUDIENCE_SEEK_EVERY_S),
    },
];

/// The names `--player` accepts, in table order: the one list the command line, `check` and the planner read.
pub const NAMES: [&str; PROFILES.len()] = {
    let mut names = [""; PROFILES.len()];
    let mut i = 0;
    while i < PROFILES.len() {
        names[i] = PROFILES[i].name;
        i += 1;
    }
    names
};

/// The default profile (`generic`).
pub const DEFAULT: &Profile = &PROFILES[0];

/// The profile named `name`, or `None` (the caller lists [`names`] in its error).
pub fn find(name: &str) -> Option<&'static Profile> {
    PROFILES.iter().find(|p| p.name.eq_ignore_ascii_case(name))
}

/// The names `--player` accepts, comma-separated.
pub fn names() -> String {
    NAMES.join(", ")
}

impl Profile {
    /// The forward buffer's time cap at `bitrate_bps` (cut at high bitrates for jellyfin-web).
    pub fn time_cap_at(&self, bitrate_bps: u64) -> Duration {
        match self.cut_at_bps {
            Some(cut) if bitrate_bps >= cut => Duration::from_millis(self.cut_buffer_ms),
            _ => Duration::from_millis(self.buffer_ms),
        }
    }

    /// The forward buffer at `bitrate_bps`: the time cap, or the byte cap if it holds less media.
    pub fn buffer_at(&self, bitrate_bps: u64) -> Duration {
        let time = self.time_cap_at(bitrate_bps);
        match self.byte_cap {
            Some(cap) if bitrate_bps > 0 => time.min(Duration::from_secs_f64(cap as f64 * 8.0 / bitrate_bps as f64)),
            _ => time,
        }
    }

    /// True when the byte cap, not the time cap, bounds the buffer at `bitrate_bps`.
    pub fn byte_cap_binds(&self, bitrate_bps: u64) -> bool {
        self.buffer_at(bitrate_bps) < self.time_cap_at(bitrate_bps)
    }

    pub fn start(&self) -> Duration {
        Duration::from_millis(self.start_ms)
    }

    /// The start-up the verdict accepts from this player: its start threshold fetched at one stream's rate,
    /// never less than `MIN_STARTUP_TARGET` (one viewer in ten may take up to twice it: `streams::judge`). Near
    /// capacity a viewer fetches its start with about one stream's rate to spare, so hls.js's 6 s of media take
    /// about 6 s to arrive: a 2 s limit would judge start-up bandwidth at three times real time, not playback.
    pub fn startup_target(&self) -> Duration {
        self.start().max(MIN_STARTUP_TARGET)
    }

    pub fn rebuffer(&self) -> Duration {
        Duration::from_millis(self.rebuffer_ms)
    }

    /// The profile in words, as reports state it: "generic (10 s buffer, 2 s to start)"; the byte cap and a
    /// rebuffer threshold other than the start's are said when the profile has them.
    pub fn describe(&self) -> String {
        let secs = |ms: u64| units_secs(ms);
        let mut buffer = format!("{} s buffer", secs(self.buffer_ms));
        if let Some(cut) = self.cut_at_bps {
            buffer += &format!(" ({} s from {} Mbit/s)", secs(self.cut_buffer_ms), cut / 1_000_000);
        }
        if let Some(cap) = self.byte_cap {
            buffer += &format!(" of at most {} MB", cap / 1_000_000);
        }
        let mut start = format!("{} s to start", secs(self.start_ms));
        if self.rebuffer_ms != self.start_ms {
            start += &format!(", {} s after a stall", secs(self.rebuffer_ms));
        }
        format!("{} ({buffer}, {start})", self.name)
    }

    /// The profile's audience in words, as a plan states it: "popularity: Zipf s=0.8, seeks every 10 min on
    /// average"; `None` for the generic viewer (each viewer its own title, no seeks).
    pub fn audience(&self) -> Option<String> {
        let zipf = self.zipf.map(|s| format!("popularity: Zipf s={s}"));
        let seeks = self.seek_every().map(|d| format!("seeks every {} on average", crate::units::format_duration(d)));
        match (zipf, seeks) {
            (None, None) => None,
            (a, b) => Some(a.into_iter().chain(b).collect::<Vec<_>>().join(", ")),
        }
    }

    /// The mean time between a viewer's seeks, when the profile's audience seeks.
    pub fn seek_every(&self) -> Option<Duration> {
        self.seek_every_s.map(Duration::from_secs)
    }
}

/// Milliseconds as seconds without a needless fraction: 2000 → "2", 1500 → "1.5".
fn units_secs(ms: u64) -> String {
    if ms.is_multiple_of(1000) { (ms / 1000).to_string() } else { format!("{}", ms as f64 / 1000.0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MBIT: u64 = 1_000_000;

    #[test]
    fn every_profile_is_found_by_its_one_name_and_generic_is_the_default() {
        assert_eq!(DEFAULT.name, "generic");
        assert_eq!(NAMES.len(), PROFILES.len());
        for (p, name) in PROFILES.iter().zip(NAMES) {
            assert_eq!(p.name, name);
            assert_eq!(find(name), Some(p));
            assert!(p.start_ms <= p.buffer_ms && p.rebuffer_ms <= p.buffer_ms && p.request_bytes > 0);
        }
        assert!(find("quicktime").is_none());
        assert_eq!(names(), "generic, hls.js, media3, jellyfin-web, plex, vlc");
    }

    #[test]
    fn media3_byte_cap_binds_at_80_mbit_not_at_8() {
        let m = find("media3").unwrap();
        assert!(m.byte_cap_binds(80 * MBIT));
        // 131_072_000 B × 8 / 80 Mbit/s = 13.1 s < 50 s.
        let b = m.buffer_at(80 * MBIT).as_secs_f64();
        assert!((b - 13.1072).abs() < 1e-3, "{b}");
        assert!(!m.byte_cap_binds(8 * MBIT));
        assert_eq!(m.buffer_at(8 * MBIT), Duration::from_secs(50));
        assert_eq!((m.start(), m.rebuffer()), (Duration::from_secs(1), Duration::from_secs(2)));
    }

    #[test]
    fn jellyfin_web_cuts_to_6_s_at_25_mbit() {
        let j = find("jellyfin-web").unwrap();
        assert_eq!(j.buffer_at(15 * MBIT), Duration::from_secs(30));
        // Below the cut, hls.js's 60 MB cap binds first: 60 MB at 20 Mbit/s is 24 s.
        assert_eq!(j.buffer_at(20 * MBIT), Duration::from_secs(24));
        assert_eq!(j.buffer_at(25 * MBIT), Duration::from_secs(6));
        assert_eq!(j.buffer_at(80 * MBIT), Duration::from_secs(6));
    }

    /// Real players' audiences pick titles by popularity and seek; the generic viewer's do neither (its runs stay
    /// as they were before profiles).
    #[test]
    fn real_players_audiences_have_a_popularity_and_seeks_and_the_generic_has_neither() {
        assert_eq!((DEFAULT.zipf, DEFAULT.seek_every(), DEFAULT.audience()), (None, None, None));
        for p in PROFILES.iter().skip(1) {
            assert_eq!(p.zipf, Some(0.8), "{}", p.name);
            assert_eq!(p.seek_every(), Some(Duration::from_secs(600)), "{}", p.name);
            assert_eq!(p.audience().as_deref(), Some("popularity: Zipf s=0.8, seeks every 10 min on average"));
        }
    }

    #[test]
    fn a_profile_is_described_with_its_buffer_and_thresholds() {
        assert_eq!(DEFAULT.describe(), "generic (10 s buffer, 2 s to start)");
        assert_eq!(
            find("media3").unwrap().describe(),
            "media3 (50 s buffer of at most 131 MB, 1 s to start, 2 s after a stall)"
        );
        assert_eq!(
            find("jellyfin-web").unwrap().describe(),
            "jellyfin-web (30 s buffer (6 s from 25 Mbit/s) of at most 60 MB, 3 s to start)"
        );
    }
}
