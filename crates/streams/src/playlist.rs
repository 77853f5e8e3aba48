//! An HLS media playlist (RFC 8216, `.m3u8`) read as a title of segment files: which segment URIs (relative
//! to the playlist, or absolute `http://`), each one's media from its `#EXTINF`, and the byte range of
//! `#EXT-X-BYTERANGE` where there is one. Pure: the caller reads the text and resolves each URI to a local file
//! or a URL; nothing here touches a file, a socket or a clock.
//!
//! What a benchmark of stored media can play, and nothing else, is accepted: a **media** playlist with
//! `#EXT-X-ENDLIST` (video on demand: every segment is known). Refused, each with what to do: a master playlist
//! (`#EXT-X-STREAM-INF`: give one of its variants' media playlists), a live or event playlist without
//! `#EXT-X-ENDLIST` (its segments change while it plays), a segment longer than `#EXT-X-TARGETDURATION` rounded
//! (RFC 8216 §4.3.3.1), encrypted segments (`#EXT-X-KEY` with a method other than NONE) and tags that change how
//! a segment is fetched or what it holds (`#EXT-X-MAP`, `#EXT-X-DISCONTINUITY` is fine, `#EXT-X-PART` is not).
//! Tags that only describe the media (`#EXT-X-VERSION`, `#EXT-X-PLAYLIST-TYPE`, `#EXT-X-MEDIA-SEQUENCE`,
//! `#EXT-X-PROGRAM-DATE-TIME`, `#EXT-X-INDEPENDENT-SEGMENTS`, …) are skipped.

use std::time::Duration;

/// One segment of a playlist.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// The segment's URI as the playlist writes it (relative to the playlist, or absolute).
    pub uri: String,
    /// Media the segment holds (`#EXTINF`).
    pub media: Duration,
    /// `#EXT-X-BYTERANGE`: bytes from this offset of the URI's resource; `None`: the whole resource.
    pub range: Option<(u64, u64)>,
}

/// A media playlist of video on demand.
#[derive(Debug, Clone, PartialEq)]
pub struct Playlist {
    /// `#EXT-X-TARGETDURATION`: no segment is longer (rounded to whole seconds).
    pub target: Duration,
    /// The segments in playing order (at least one).
    pub segments: Vec<Segment>,
}

impl Playlist {
    /// Media of the whole title.
    pub fn media(&self) -> Duration {
        self.segments.iter().map(|s| s.media).sum()
    }

    /// The mean segment: the player model's media per request (a packager cuts every segment but the last to
    /// the same length, so this is its segment length within a fraction of one segment over the title).
    pub fn mean_segment(&self) -> Duration {
        self.media() / self.segments.len().max(1) as u32
    }
}

/// Why a playlist cannot be played: what is wrong, at which line, and what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct PlaylistError(pub String);

impl std::fmt::Display for PlaylistError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PlaylistError {}

fn refuse(line: usize, what: &str) -> PlaylistError {
    PlaylistError(format!("line {line}: {what}"))
}

/// Tags that change how a segment is fetched or what a player does with it: refused.
const UNSUPPORTED: [(&str, &str); 5] = [
    ("#EXT-X-MAP", "a media initialization section (fMP4's init segment) is not played"),
    ("#EXT-X-PART", "low-latency partial segments are not played"),
    ("#EXT-X-PRELOAD-HINT", "low-latency preload hints are not played"),
    ("#EXT-X-SKIP", "a delta playlist is not played"),
    ("#EXT-X-GAP", "a gap segment has no media to read"),
];

/// Reads a media playlist's text. See the module documentation for what is refused.
pub fn parse(text: &str) -> Result<Playlist, PlaylistError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty());
    match lines.next() {
        Some((_, "#EXTM3U")) => {}
        _ => return Err(PlaylistError("not an HLS playlist: the first line is not #EXTM3U".into())),
    }
    let mut reading = Reading::default();
    for (n, line) in lines {
        reading.line(n, line)?;
    }
    reading.finish()
}

/// A playlist read so far: what the tags seen say, and the `#EXTINF` and `#EXT-X-BYTERANGE` waiting for their
/// segment's URI.
#[derive(Default)]
struct Reading {
    target: Option<Duration>,
    ended: bool,
    segments: Vec<Segment>,
    media: Option<Duration>,
    range: Option<(u64, Option<u64>)>,
    /// The URI of the last byte range and the offset just past it (where a range without `@OFFSET` starts).
    next_offset: Option<(String, u64)>,
}

impl Reading {
    /// Line `n` (trimmed, not empty).
    fn line(&mut self, n: usize, line: &str) -> Result<(), PlaylistError> {
        if let Some(value) = line.strip_prefix("#EXTINF:") {
            let secs = value.split(',').next().unwrap_or("").trim();
            let secs: f64 = secs.parse().map_err(|_| refuse(n, &format!("'{secs}' is not a segment duration")))?;
            if !(secs > 0.0 && secs <= 3600.0) {
                return Err(refuse(n, &format!("a segment of {secs} s: segments last more than 0 s, at most an hour")));
            }
            self.media = Some(Duration::from_secs_f64(secs));
        } else if let Some(value) = line.strip_prefix("#EXT-X-TARGETDURATION:") {
            let secs: u64 =
                value.trim().parse().map_err(|_| refuse(n, "#EXT-X-TARGETDURATION is not whole seconds"))?;
            self.target = Some(Duration::from_secs(secs));
        } else if let Some(value) = line.strip_prefix("#EXT-X-BYTERANGE:") {
            let range = byte_range(value).ok_or_else(|| refuse(n, "#EXT-X-BYTERANGE is not LENGTH[@OFFSET]"))?;
            self.range = Some(range);
        } else if line == "#EXT-X-ENDLIST" {
            self.ended = true;
        } else if line.starts_with("#EXT-X-STREAM-INF") || line.starts_with("#EXT-X-I-FRAME-STREAM-INF") {
            return Err(refuse(n, "a master playlist (#EXT-X-STREAM-INF): give one of its variants' media playlists"));
        } else if let Some(value) = line.strip_prefix("#EXT-X-KEY:") {
            if !value.contains("METHOD=NONE") {
                return Err(refuse(n, "encrypted segments (#EXT-X-KEY): give a playlist of clear segments"));
            }
        } else if let Some((tag, why)) = UNSUPPORTED.iter().find(|(t, _)| line.starts_with(t)) {
            return Err(refuse(n, &format!("{tag}: {why}; give a playlist of plain MPEG-TS or MP4 segments")));
        } else if !line.starts_with('#') {
            self.segment(n, line)?;
        }
        // Anything else is a comment, or a tag that only describes the media.
        Ok(())
    }

    /// The URI of a segment, at line `n`: it takes the `#EXTINF` and any `#EXT-X-BYTERANGE` before it.
    fn segment(&mut self, n: usize, uri: &str) -> Result<(), PlaylistError> {
        let media = self.media.take().ok_or_else(|| refuse(n, &format!("segment {uri} has no #EXTINF before it")))?;
        let range = match self.range.take() {
            Some((len, offset)) => {
                let follows = self.next_offset.as_ref().filter(|(u, _)| u == uri).map(|(_, o)| *o);
                let start = offset
                    .or(follows)
                    .ok_or_else(|| refuse(n, "#EXT-X-BYTERANGE without @OFFSET must follow a range of the same URI"))?;
                self.next_offset = Some((uri.to_string(), start + len));
                Some((start, len))
            }
            None => None,
        };
        self.segments.push(Segment { uri: uri.to_string(), media, range });
        Ok(())
    }

    /// The playlist, once every line was read: a finished media playlist of at least one segment.
    fn finish(self) -> Result<Playlist, PlaylistError> {
        let target =
            self.target.ok_or_else(|| PlaylistError("no #EXT-X-TARGETDURATION: not a media playlist".into()))?;
        if !self.ended {
            return Err(PlaylistError(
                "no #EXT-X-ENDLIST: a live or event playlist, whose segments change while it plays; give a \
                 finished (VOD) playlist"
                    .into(),
            ));
        }
        if self.segments.is_empty() {
            return Err(PlaylistError("the playlist lists no segment".into()));
        }
        // RFC 8216 §4.3.3.1: each EXTINF, rounded to the nearest integer, is at most the target duration.
        if let Some(long) = self.segments.iter().find(|s| s.media.as_secs_f64().round() > target.as_secs_f64()) {
            return Err(PlaylistError(format!(
                "segment {} holds {} s, longer than #EXT-X-TARGETDURATION ({} s): the playlist is malformed",
                long.uri,
                long.media.as_secs_f64(),
                target.as_secs()
            )));
        }
        Ok(Playlist { target, segments: self.segments })
    }
}

/// `LENGTH[@OFFSET]`.
fn byte_range(value: &str) -> Option<(u64, Option<u64>)> {
    let mut parts = value.trim().splitn(2, '@');
    let len: u64 = parts.next()?.parse().ok().filter(|&l| l > 0)?;
    match parts.next() {
        Some(offset) => Some((len, Some(offset.parse().ok()?))),
        None => Some((len, None)),
    }
}

/// Resolves a segment URI against the playlist's own location (a directory path or URL ending in `/`, as the
/// caller gives it): an absolute `http://` URI stands; a path starting with `/` is taken from the location's
/// origin (`http://host:port`) when the location is a URL; anything else is joined to the location.
pub fn resolve(base: &str, uri: &str) -> String {
    if uri.starts_with("http://") || uri.starts_with("https://") {
        return uri.to_string();
    }
    if let Some(rest) = uri.strip_prefix('/')
        && let Some(after) = base.strip_prefix("http://")
    {
        let host = after.split('/').next().unwrap_or(after);
        return format!("http://{host}/{rest}");
    }
    if uri.starts_with('/') {
        return uri.to_string();
    }
    let dir = match base.rfind('/') {
        Some(i) => &base[..=i],
        None => "",
    };
    format!("{dir}{uri}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const VOD: &str = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:3\n#EXT-X-PLAYLIST-TYPE:VOD\n\
        #EXTINF:3.003,\nseg00001.ts\n#EXTINF:3.003,\nseg00002.ts\n#EXTINF:1.5,\nseg00003.ts\n#EXT-X-ENDLIST\n";

    #[test]
    fn a_vod_playlist_is_its_segments_with_their_media() {
        let p = parse(VOD).unwrap();
        assert_eq!(p.target, Duration::from_secs(3));
        let uris: Vec<&str> = p.segments.iter().map(|s| s.uri.as_str()).collect();
        assert_eq!(uris, ["seg00001.ts", "seg00002.ts", "seg00003.ts"]);
        assert_eq!(p.segments[0].media, Duration::from_millis(3003));
        assert_eq!(p.media(), Duration::from_millis(7506));
        assert_eq!(p.mean_segment(), Duration::from_millis(2502));
        assert!(p.segments.iter().all(|s| s.range.is_none()));
    }

    #[test]
    fn byte_ranges_follow_each_other_without_an_offset() {
        let text = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\n#EXT-X-BYTERANGE:1000@0\nall.ts\n\
            #EXTINF:6,\n#EXT-X-BYTERANGE:2000\nall.ts\n#EXTINF:4,\n#EXT-X-BYTERANGE:500@10000\nall.ts\n#EXT-X-ENDLIST";
        let p = parse(text).unwrap();
        let ranges: Vec<_> = p.segments.iter().map(|s| s.range).collect();
        assert_eq!(ranges, [Some((0, 1000)), Some((1000, 2000)), Some((10000, 500))]);
    }

    #[test]
    fn what_cannot_be_played_is_refused_saying_what_to_do() {
        let master = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=8000000\nhi/index.m3u8\n";
        let live = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\na.ts\n";
        let cases = [
            ("seg.ts\n", "first line is not #EXTM3U"),
            (master, "line 2: a master playlist (#EXT-X-STREAM-INF): give one of its variants"),
            (live, "no #EXT-X-ENDLIST: a live or event playlist"),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:6\na.ts\n#EXT-X-ENDLIST", "line 3: segment a.ts has no #EXTINF"),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:x,\na.ts\n#EXT-X-ENDLIST", "'x' is not a segment duration"),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:6,\na.ts\n#EXT-X-ENDLIST", "longer than #EXT-X-TARGETDURATION"),
            ("#EXTM3U\n#EXTINF:6,\na.ts\n#EXT-X-ENDLIST", "no #EXT-X-TARGETDURATION"),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-ENDLIST", "lists no segment"),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-MAP:URI=\"i.mp4\"\n", "line 3: #EXT-X-MAP: a media init"),
            ("#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n", "encrypted segments"),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\n#EXT-X-BYTERANGE:100\na.ts\n", "must follow a range"),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\n#EXT-X-BYTERANGE:x@1\na.ts\n", "not LENGTH[@OFFSET]"),
        ];
        for (text, says) in cases {
            let err = parse(text).expect_err(text).0;
            assert!(err.contains(says), "{text:?}: {err}");
        }
        assert!(
            parse("#EXTM3U\n#EXT-X-KEY:METHOD=NONE\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\na.ts\n#EXT-X-ENDLIST").is_ok()
        );
    }

    #[test]
    fn uris_resolve_against_the_playlist() {
        assert_eq!(resolve("/media/film/index.m3u8", "seg1.ts"), "/media/film/seg1.ts");
        assert_eq!(resolve("/media/film/index.m3u8", "/elsewhere/s.ts"), "/elsewhere/s.ts");
        assert_eq!(resolve("http://h:8080/film/index.m3u8", "s/1.ts"), "http://h:8080/film/s/1.ts");
        assert_eq!(resolve("http://h:8080/film/index.m3u8", "/x/1.ts"), "http://h:8080/x/1.ts");
        assert_eq!(resolve("http://h/film/index.m3u8", "http://cdn/1.ts"), "http://cdn/1.ts");
    }
}
