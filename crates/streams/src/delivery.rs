//! The arithmetic of a delivery shape (`spec::Delivery`): what one request of a viewer fetches, how many
//! requests a viewer makes while it plays, and how large a request may be. Pure: no I/O, no clock.
//!
//! HLS/DASH segments: a segment of N seconds of media at a bitrate of R bit/s holds N × R ÷ 8 bytes, rounded up
//! to whole 4 KiB pages (a direct read's alignment; 2 s of 8 Mbit/s is 2,000,000 bytes, read as 2,002,944), and
//! is fetched with one request: one read of the file's byte range, or one `GET` read to its end.
//!
//! Requests while playing: a player asks for its next segment once its buffer has room for all of it (the
//! model in `model.rs`), so after `watched` of playback without a stall it holds between `buffer − segment`
//! (just before it asks) and `buffer` (just after a segment arrived) of media ahead of the playhead, and it has
//! fetched the media it played plus what it holds: between (watched + buffer − segment) ÷ segment and
//! (watched + buffer) ÷ segment segments, counting the prebuffer's. A segment still in flight when the watch
//! ends is not counted (the server saw it, and logged a short body when the client hung up).

use std::time::Duration;

use crate::setup::StreamsConfig;
use crate::spec::{ChunkSize, Delivery};
use crate::units::{Bitrate, Bytes};

/// The largest request a viewer may make: the io_uring engine reads a request longer than its slot's buffer
/// (`defaults::SLOT_BUFFER_MAX`, 256 KiB) as one vectored read of buffer-sized pieces, and a vectored read
/// takes at most 1024 of them (`IOV_MAX`): 256 MiB.
pub const MAX_REQUEST_BYTES: u64 = 1024 * crate::setup::defaults::SLOT_BUFFER_MAX as u64;

/// Bytes of one segment of `segment` of media at `bitrate` (rounded up to whole 4 KiB pages).
pub fn segment_bytes(segment: Duration, bitrate: Bitrate) -> u64 {
    ChunkSize::Media(segment).bytes_at(bitrate)
}

/// The fewest and the most requests a viewer with segments of `segment` media (as rounded: `chunk_media`) and a
/// forward buffer of `buffer` has made after `watched` of playback without a stall. See the module
/// documentation.
pub fn requests_after(watched: Duration, buffer: Duration, segment: Duration) -> (f64, f64) {
    let s = segment.as_secs_f64().max(1e-9);
    let held = watched.as_secs_f64() + buffer.max(segment).as_secs_f64();
    (((held - s) / s).max(1.0), held / s)
}

/// Requests per second of `viewers` players keeping up, each asking one segment (chunk) of `segment` media per
/// `segment` of playback.
pub fn steady_request_rate(viewers: u32, segment: Duration) -> f64 {
    f64::from(viewers) / segment.as_secs_f64().max(1e-9)
}

/// The delivery in words for a plan and a summary: "direct play, 1 MiB requests" or "HLS segments of 2 s
/// (1.91 MiB at 8 Mbit/s), one request each".
pub fn words(config: &StreamsConfig) -> String {
    let first = Bytes(config.chunk_bytes(0));
    match config.delivery {
        Delivery::Direct => format!("direct play, {first} requests"),
        Delivery::Segments(d) => format!(
            "HLS segments of {} s ({first} at {}), one request each",
            d.as_secs_f64(),
            config.mix.0[0].0.bitrate
        ),
    }
}

/// Refuses a request no engine can make in one read: the format and the fix in words.
pub fn check_request_size(config: &StreamsConfig) -> Result<(), String> {
    for (f, (format, _)) in config.mix.0.iter().enumerate() {
        let bytes = config.chunk_bytes(f);
        if bytes > MAX_REQUEST_BYTES {
            let what = match config.delivery {
                Delivery::Segments(d) => format!("a segment of {} s", d.as_secs_f64()),
                Delivery::Direct => format!("a chunk of {}", config.chunk),
            };
            return Err(format!(
                "{what} of {} is {}, more than one request may read ({}): give a shorter segment or chunk",
                format.name,
                Bytes(bytes),
                Bytes(MAX_REQUEST_BYTES)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Player;

    const MBIT: u64 = 1_000_000;

    #[test]
    fn a_segment_is_its_media_at_the_bitrate_in_whole_pages() {
        // 2 s × 8 Mbit/s ÷ 8 = 2,000,000 B → 489 pages.
        assert_eq!(segment_bytes(Duration::from_secs(2), Bitrate(8 * MBIT)), 2_002_944);
        // Jellyfin's 3.003 s at 25 Mbit/s: 9,384,375 B → 2292 pages.
        assert_eq!(segment_bytes(Duration::from_millis(3003), Bitrate(25 * MBIT)), 2292 * 4096);
        // Apple's 6 s of an 80 Mbit/s remux: 60 MB, one request.
        assert_eq!(segment_bytes(Duration::from_secs(6), Bitrate(80 * MBIT)), 60_002_304);
    }

    #[test]
    fn requests_follow_watched_media_over_the_segment() {
        // 20 s watched, a 10 s buffer, 2 s segments: 14 to 15 requests.
        let (low, high) = requests_after(Duration::from_secs(20), Duration::from_secs(10), Duration::from_secs(2));
        assert_eq!((low, high), (14.0, 15.0));
        assert_eq!(steady_request_rate(30, Duration::from_secs(6)), 5.0);
        assert!((steady_request_rate(1, Duration::from_millis(3003)) - 0.333).abs() < 1e-3);
    }

    /// The player model itself, driven with a manual clock at 10 ms per segment, makes as many requests as the
    /// arithmetic says.
    #[test]
    fn the_player_model_asks_as_many_segments_as_the_arithmetic_says() {
        let bitrate = Bitrate(8 * MBIT);
        let bytes = segment_bytes(Duration::from_secs(2), bitrate);
        let media = Duration::from_secs_f64(bytes as f64 * 8.0 / (8 * MBIT) as f64);
        let config = crate::model::PlayerConfig {
            chunk_media: media,
            buffer: Duration::from_secs(10),
            prebuffer: Duration::from_secs(2),
            rebuffer: Duration::from_secs(2),
            steady_ahead: None,
            vbr: None,
        };
        for watch_s in [7u64, 20, 33] {
            let watch = Duration::from_secs(watch_s);
            let mut player = Player::new(config, Duration::ZERO, 0);
            let mut now = Duration::ZERO;
            let fetch = Duration::from_millis(10);
            loop {
                let want = player.want(now).expect("a segment is wanted while the watch goes on");
                let arrive = now.max(want.due) + fetch;
                if let Some(end) = player.startup().map(|s| s + watch).filter(|&end| arrive > end) {
                    now = end;
                    break;
                }
                player.issued(want);
                now = arrive;
                player.arrived(now, bytes);
            }
            let stats = player.finish(now);
            assert_eq!(stats.stalls + stats.startup_stalls, 0);
            let (low, high) = requests_after(stats.watched, config.buffer, media);
            let made = stats.chunks as f64;
            assert!(made >= low - 0.01 && made <= high + 0.01, "{watch_s} s: {made} requests, {low}..{high}");
        }
    }
}
