//! A title played from an HLS media playlist: the playlist (`playlist.rs`) resolved, before the run, into what
//! each of its requests fetches — which segment file or URL, from which byte, how many bytes, how much media.
//! The viewers ask for segment k of the title as they ask for chunk k of a file (`viewers.rs`), and the I/O core
//! never learns that a playlist was behind it. Pure: the caller read the playlist, resolved its URIs and found
//! each segment's size.
//!
//! The player model's media per request is the title's mean segment (`#EXTINF`; a packager cuts every segment
//! but the last alike, so this is its segment length within a fraction of one segment over the title); the
//! format's bitrate still sets the rate the viewers are judged at, so a segment must hold at least the bytes
//! that bitrate needs for its media ([`SegmentedTitle::check_rate`]).

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::engine::HttpUrl;
use crate::playlist::{Playlist, resolve};
use crate::units::{Bitrate, Bytes};

/// Where a segment's bytes are: a local file, or a URL on the playlist's own server.
#[derive(Debug, Clone, PartialEq)]
pub enum SegmentSource {
    File(PathBuf),
    Url(HttpUrl),
}

impl SegmentSource {
    /// The path or URL, for messages.
    pub fn text(&self) -> String {
        match self {
            SegmentSource::File(p) => p.display().to_string(),
            SegmentSource::Url(u) => u.text.clone(),
        }
    }
}

/// One request of a segmented title.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TitleSegment {
    /// Index into the title's `sources`.
    pub source: u32,
    /// First byte of the segment in its source (0 unless the playlist gives `#EXT-X-BYTERANGE`).
    pub offset: u64,
    /// Bytes of the segment (the whole file's, or the byte range's).
    pub len: u64,
    /// `#EXT-X-BYTERANGE` gave the range: over http the `GET` carries a `Range`.
    pub ranged: bool,
    /// Media it holds (`#EXTINF`).
    pub media: Duration,
}

/// A title that is a playlist of segments, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SegmentedTitle {
    /// The playlist's path or URL.
    pub playlist: String,
    /// Segments in playing order.
    #[serde(skip)]
    pub segments: Vec<TitleSegment>,
    /// Each distinct segment file or URL (byte ranges of one file share one).
    #[serde(skip)]
    pub sources: Vec<SegmentSource>,
    /// Segments of the title.
    pub segment_count: u32,
    /// The mean segment's media, seconds: the player model's media per request.
    pub segment_s: f64,
    /// Bytes of all segments.
    pub bytes: u64,
}

impl SegmentedTitle {
    /// The title of `playlist`, read from `location` (its path or URL): each segment's URI resolved against it,
    /// and its bytes from `size_of` (the byte range's length, or the size the caller found for the file or URL;
    /// an error names the segment). URLs must stay on the playlist's server: each viewer holds one connection.
    pub fn resolve(
        location: &str,
        playlist: &Playlist,
        size_of: &mut dyn FnMut(&str) -> Result<u64, String>,
    ) -> Result<SegmentedTitle, String> {
        let base: Option<HttpUrl> = location.parse().ok();
        let mut sources: Vec<SegmentSource> = Vec::new();
        let mut segments = Vec::with_capacity(playlist.segments.len());
        for segment in &playlist.segments {
            let text = resolve(location, &segment.uri);
            let source = match &base {
                Some(base) => {
                    let url: HttpUrl = text.parse().map_err(|e| format!("{location}: segment {}: {e}", segment.uri))?;
                    if (&url.host, url.port, url.tls) != (&base.host, base.port, base.tls) {
                        return Err(format!(
                            "{location}: segment {} is on another server than the playlist: give a playlist whose \
                             segments its own server serves",
                            segment.uri
                        ));
                    }
                    SegmentSource::Url(url)
                }
                None => SegmentSource::File(PathBuf::from(&text)),
            };
            let index = match sources.iter().position(|s| *s == source) {
                Some(i) => i,
                None => {
                    sources.push(source);
                    sources.len() - 1
                }
            };
            let (offset, len) = match segment.range {
                Some(range) => range,
                None => (0, size_of(&text)?),
            };
            if len == 0 {
                return Err(format!(
                    "{location}: segment {text} is empty: give a playlist of segments that hold media"
                ));
            }
            let ranged = segment.range.is_some();
            segments.push(TitleSegment { source: index as u32, offset, len, ranged, media: segment.media });
        }
        let bytes = segments.iter().map(|s| s.len).sum();
        let mean = playlist.mean_segment();
        Ok(SegmentedTitle {
            playlist: location.to_string(),
            segment_count: segments.len() as u32,
            segment_s: mean.as_secs_f64(),
            segments,
            sources,
            bytes,
        })
    }

    /// The player model's media per request.
    pub fn mean_segment(&self) -> Duration {
        Duration::from_secs_f64(self.segment_s)
    }

    /// The longest segment, bytes.
    pub fn largest(&self) -> u64 {
        self.segments.iter().map(|s| s.len).max().unwrap_or(0)
    }

    /// Refuses a title whose segments hold fewer bytes than `bitrate` needs for their media: played, it would
    /// ask the storage for less than the format streams.
    pub fn check_rate(&self, bitrate: Bitrate) -> Result<(), String> {
        let per_sec = bitrate.byte_rate().bytes_per_sec();
        let short = self.segments.iter().find(|s| (s.len as f64) < (per_sec * s.media.as_secs_f64()).floor());
        match short {
            Some(s) => Err(format!(
                "{}: segment {} holds {} for {} s of media, less than {bitrate} needs ({}): the playlist's segments \
                 are shorter in bytes than the bitrate; give a lower --bitrate or a playlist of that bitrate",
                self.playlist,
                self.sources[s.source as usize].text(),
                Bytes(s.len),
                s.media.as_secs_f64(),
                Bytes((per_sec * s.media.as_secs_f64()).ceil() as u64)
            )),
            None => Ok(()),
        }
    }

    /// The delivery in words: "segment files from a playlist, 30 segments of ~2 s".
    pub fn words(&self) -> String {
        words_of([self]).unwrap_or_default()
    }
}

/// The delivery of titles that are playlists, in words: "segment files from a playlist, 30 segments of ~2 s", or
/// "… from 3 playlists, 90 segments of ~2 s" (the mean over all); `None` when there is none.
pub fn words_of<'a>(titles: impl IntoIterator<Item = &'a SegmentedTitle>) -> Option<String> {
    let (mut playlists, mut segments, mut media, mut ranged) = (0u32, 0u64, 0.0, true);
    for title in titles {
        playlists += 1;
        segments += u64::from(title.segment_count);
        media += title.segment_s * f64::from(title.segment_count);
        ranged &= title.segments.iter().all(|s| s.ranged);
    }
    if playlists == 0 {
        return None;
    }
    let kind = if ranged { "byte ranges" } else { "segment files" };
    let from = if playlists == 1 { "a playlist".to_string() } else { format!("{playlists} playlists") };
    let mean = round_secs(media / segments.max(1) as f64);
    Some(format!("{kind} from {from}, {segments} segments of ~{mean} s"))
}

/// Seconds in words: at most three decimals, trailing zeros dropped.
fn round_secs(s: f64) -> String {
    let text = format!("{s:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playlist::parse;

    const VOD: &str = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\ns0.ts\n#EXTINF:2,\ns1.ts\n#EXTINF:2,\n\
        sub/s2.ts\n#EXT-X-ENDLIST\n";

    #[test]
    fn a_local_playlist_resolves_to_its_segment_files_and_their_sizes() {
        let playlist = parse(VOD).unwrap();
        let mut asked = Vec::new();
        let title = SegmentedTitle::resolve("/m/film/index.m3u8", &playlist, &mut |p| {
            asked.push(p.to_string());
            Ok(1_003_520)
        })
        .unwrap();
        assert_eq!(asked, ["/m/film/s0.ts", "/m/film/s1.ts", "/m/film/sub/s2.ts"]);
        assert_eq!(title.sources.len(), 3);
        assert_eq!((title.segment_count, title.segment_s, title.bytes), (3, 2.0, 3 * 1_003_520));
        assert_eq!(title.words(), "segment files from a playlist, 3 segments of ~2 s");
        assert!(title.check_rate(Bitrate(4_000_000)).is_ok());
        let e = title.check_rate(Bitrate(8_000_000)).unwrap_err();
        assert!(e.contains("/m/film/s0.ts holds") && e.contains("shorter in bytes than the bitrate"), "{e}");
    }

    #[test]
    fn byte_ranges_share_their_file_and_urls_stay_on_the_playlists_server() {
        let text = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\n#EXT-X-BYTERANGE:1000@0\nall.ts\n\
            #EXTINF:6,\n#EXT-X-BYTERANGE:2000\nall.ts\n#EXT-X-ENDLIST";
        let title =
            SegmentedTitle::resolve("http://h:81/f/i.m3u8", &parse(text).unwrap(), &mut |_| Err("no probe".into()))
                .unwrap();
        assert_eq!(title.sources, [SegmentSource::Url("http://h:81/f/all.ts".parse().unwrap())]);
        assert_eq!((title.segments[1].offset, title.segments[1].len, title.segments[1].ranged), (1000, 2000, true));
        assert!(title.words().starts_with("byte ranges from a playlist"));
        let away = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\nhttp://cdn/a.ts\n#EXT-X-ENDLIST";
        let e = SegmentedTitle::resolve("http://h/i.m3u8", &parse(away).unwrap(), &mut |_| Ok(1)).unwrap_err();
        assert!(e.contains("on another server"), "{e}");
        let e = SegmentedTitle::resolve("/x/i.m3u8", &parse(VOD).unwrap(), &mut |p| Err(format!("{p} is missing")))
            .unwrap_err();
        assert!(e.contains("/x/s0.ts is missing"), "{e}");
    }
}
