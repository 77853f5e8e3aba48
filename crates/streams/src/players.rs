//! Player profiles: how real players buffer, as ONE table (start and rebuffer thresholds, forward buffer in
//! media seconds and in bytes, request size), and how a profile turns into the clock-free [`PlayerConfig`] at
//! a given bitrate. The byte cap binds before the time cap at high bitrates (Media3's 131 MB at 80 Mbit/s is
//! 13 s of media, not 50 s). Each figure names its source; figures not read from the player's own source in
//! this session are marked as estimates (see docs/streams.md, "Player profiles").

use crate::model::PlayerConfig;
use std::time::Duration;

/// One player's buffering figures. Times in milliseconds of media, sizes in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// The name `--player` takes.
    pub name: &'static str,
    /// Media buffered before playback starts (and after a seek).
    pub start_ms: u64,
    /// Media buffered before playback resumes after a stall.
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
}

/// The profiles. The first is the default (`generic`, today's viewer).
pub const PROFILES: [Profile; 6] = [
    // generic: streamcap's own viewer before profiles existed (defaults in setup.rs): 2 s start, 10 s buffer.
    Profile {
        name: "generic",
        start_ms: 2_000,
        rebuffer_ms: 2_000,
        buffer_ms: 10_000,
        byte_cap: None,
        cut_at_bps: None,
        cut_buffer_ms: 0,
        request_bytes: 1 << 20,
    },
    // hls.js src/config.ts: maxBufferLength 30 (s), maxBufferSize 60 * 1000 * 1000 (bytes); it plays as soon
    // as the first fragment is appended (one 6 s segment, estimate); requests are whole segments.
    Profile {
        name: "hls.js",
        start_ms: 6_000,
        rebuffer_ms: 6_000,
        buffer_ms: 30_000,
        byte_cap: Some(60_000_000),
        cut_at_bps: None,
        cut_buffer_ms: 0,
        request_bytes: 1 << 20,
    },
    // Media3 DefaultLoadControl: DEFAULT_MIN/MAX_BUFFER_MS 50_000, DEFAULT_VIDEO_BUFFER_SIZE
    // 2000 * C.DEFAULT_BUFFER_SEGMENT_SIZE (64 KiB) = 131_072_000 bytes; DEFAULT_BUFFER_FOR_PLAYBACK_MS 1000 and
    // ..._AFTER_REBUFFER_MS 2000 since Media3 1.4 (2500 / 5000 in ExoPlayer 2.x and older Media3; from the
    // release notes as remembered, not re-read this session). Reads of 64 KiB (the allocator's segment size).
    Profile {
        name: "media3",
        start_ms: 1_000,
        rebuffer_ms: 2_000,
        buffer_ms: 50_000,
        byte_cap: Some(2_000 * 65_536),
        cut_at_bps: None,
        cut_buffer_ms: 0,
        request_bytes: 65_536,
    },
    // jellyfin-web htmlMediaHelper/htmlVideoPlayer: hls.js with maxBufferLength 30 s, cut to 6 s when the
    // stream's bitrate is >= 25 Mbit/s (maxBufferLength: 6, maxMaxBufferLength: 6); hls.js's 60 MB cap stays.
    Profile {
        name: "jellyfin-web",
        start_ms: 3_000,
        rebuffer_ms: 3_000,
        buffer_ms: 30_000,
        byte_cap: Some(60_000_000),
        cut_at_bps: Some(25_000_000),
        cut_buffer_ms: 6_000,
        request_bytes: 1 << 20,
    },
    // Plex (closed source): ESTIMATE. Public support pages speak of a few seconds to start and a buffer of
    // tens of seconds; 5 s start, 60 s buffer, 1 MiB ranges are our guess, not a measured figure.
    Profile {
        name: "plex",
        start_ms: 5_000,
        rebuffer_ms: 5_000,
        buffer_ms: 60_000,
        byte_cap: None,
        cut_at_bps: None,
        cut_buffer_ms: 0,
        request_bytes: 1 << 20,
    },
    // VLC: network-caching / file-caching default 1000 ms (src/libvlc-module.c) is its start and rebuffer
    // threshold; its forward read-ahead is small (ESTIMATE: 10 s); stream blocks of 128 KiB (estimate).
    Profile {
        name: "vlc",
        start_ms: 1_000,
        rebuffer_ms: 1_000,
        buffer_ms: 10_000,
        byte_cap: None,
        cut_at_bps: None,
        cut_buffer_ms: 0,
        request_bytes: 128 << 10,
    },
];

/// The profile named `name`, or `None` (the caller lists [`names`] in its error).
pub fn find(name: &str) -> Option<&'static Profile> {
    PROFILES.iter().find(|p| p.name.eq_ignore_ascii_case(name))
}

/// The names `--player` accepts, comma-separated.
pub fn names() -> String {
    PROFILES.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
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

    /// The player model's settings at `bitrate_bps` with requests of `chunk_bytes`. The model has one
    /// prebuffer for start and rebuffer; the start threshold is used (rebuffer is reported beside it).
    pub fn config(&self, bitrate_bps: u64, chunk_bytes: u64) -> PlayerConfig {
        let chunk_media = Duration::from_secs_f64(chunk_bytes as f64 * 8.0 / bitrate_bps.max(1) as f64);
        PlayerConfig {
            chunk_media,
            buffer: self.buffer_at(bitrate_bps),
            prebuffer: Duration::from_millis(self.start_ms),
            vbr: None,
        }
        .normalized()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Player;

    const MBIT: u64 = 1_000_000;

    #[test]
    fn every_profile_is_found_and_generic_is_first() {
        assert_eq!(PROFILES[0].name, "generic");
        for p in &PROFILES {
            assert_eq!(find(p.name), Some(p));
            assert!(p.start_ms <= p.buffer_ms && p.request_bytes > 0);
        }
        assert!(find("quicktime").is_none());
        assert!(names().contains("media3"));
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

    #[test]
    fn media3_starts_only_after_its_start_threshold() {
        let m = find("media3").unwrap();
        // 8 Mbit/s, 64 KiB requests: 65.5 ms of media per chunk, so the start needs 16 chunks (1 s).
        let cfg = m.config(8 * MBIT, 65_536);
        let mut player = Player::new(cfg, Duration::ZERO, 0);
        let mut now = Duration::ZERO;
        let mut arrived = 0;
        while player.startup().is_none() && arrived < 100 {
            let want = player.want(now).expect("a chunk is wanted while starting");
            player.issued(want);
            now += Duration::from_millis(1);
            player.arrived(now, 65_536);
            arrived += 1;
        }
        let needed = (cfg.prebuffer.as_secs_f64() / cfg.chunk_media.as_secs_f64()).ceil() as u32;
        assert_eq!(arrived, needed);
        assert_eq!(needed, 16);
    }
}
