//! Player profiles in the player model: the table itself (names, thresholds, buffers, request sizes, and where
//! each figure comes from) is `spec::players`, the one list `--player` reads; here a profile becomes the
//! clock-free [`PlayerConfig`] at a given bitrate.

pub use crate::spec::players::{DEFAULT, NAMES, PROFILES, Profile, find, names};

use crate::model::{PlayerConfig, STEADY_AHEAD};
use std::time::Duration;

/// The player model's settings for `profile` at `bitrate_bps` with requests of `chunk_bytes`: its start and
/// rebuffer thresholds, its forward buffer at that bitrate (the byte cap may bind first) and its steady level.
pub fn config(profile: &Profile, bitrate_bps: u64, chunk_bytes: u64) -> PlayerConfig {
    let chunk_media = Duration::from_secs_f64(chunk_bytes as f64 * 8.0 / bitrate_bps.max(1) as f64);
    PlayerConfig {
        chunk_media,
        buffer: profile.buffer_at(bitrate_bps),
        prebuffer: profile.start(),
        rebuffer: profile.rebuffer(),
        steady_ahead: steady_ahead(profile),
        vbr: None,
    }
    .normalized()
}

/// How far past its start threshold a profile's player counts as steady: `STEADY_AHEAD` for a real player's
/// long buffer; `None` for the generic viewer, steady when its buffer is full as before profiles.
pub fn steady_ahead(profile: &Profile) -> Option<Duration> {
    (profile.name != DEFAULT.name).then_some(STEADY_AHEAD)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Player;

    const MBIT: u64 = 1_000_000;

    #[test]
    fn media3_starts_only_after_its_start_threshold() {
        let m = find("media3").unwrap();
        // 8 Mbit/s, 64 KiB requests: 65.5 ms of media per chunk, so the start needs 16 chunks (1 s).
        let cfg = config(m, 8 * MBIT, 65_536);
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

    #[test]
    fn each_profile_gives_the_model_its_thresholds_and_its_steady_level() {
        let generic = config(DEFAULT, 8 * MBIT, 1 << 20);
        assert_eq!(generic.steady_level(), generic.buffer, "generic is steady when its 10 s buffer is full");
        // Media3 at 2160p remux (80 Mbit/s): a 13.1 s buffer, steady 2 s of media past its 1 s start.
        let media3 = config(find("media3").unwrap(), 80 * MBIT, 65_536);
        assert_eq!((media3.prebuffer, media3.rebuffer), (Duration::from_secs(1), Duration::from_secs(2)));
        assert_eq!(media3.steady_level(), Duration::from_secs(1) + STEADY_AHEAD);
        assert!(media3.buffer > media3.steady_level());
    }
}
