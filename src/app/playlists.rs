//! Titles that are HLS media playlists (`.m3u8`), found among the user's media (`--library`) or given as URLs:
//! each is read, parsed (`streams::playlist`: what cannot be played is refused there, in words) and resolved
//! into its segments with their sizes (`streams::SegmentedTitle`) before planning, as a fact about the media.
//! Every refusal names the playlist and says what to do (exit 2). Looks only: a segment file is stat'ed and
//! opened read-only to prove it readable, never written.

use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};

use crate::engine::{HttpUrl, fetch_text, probe_size};
use crate::streams::playlist::parse;
use crate::streams::{SegmentSource, SegmentedTitle};

/// Whether `path` names an HLS playlist by its extension.
pub fn is_playlist(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("m3u8"))
}

/// Whether a URL names an HLS playlist (its path, without the query, ends in `.m3u8`).
pub fn is_playlist_url(url: &HttpUrl) -> bool {
    is_playlist(Path::new(url.path.split(['?', '#']).next().unwrap_or_default()))
}

/// A local playlist, resolved: every segment a readable regular file (refused naming the first that is not).
pub fn local_playlist(path: &Path) -> Result<SegmentedTitle> {
    let text = crate::limits::read_text_file(path, crate::limits::MAX_INPUT_FILE_BYTES)
        .map_err(|e| anyhow!("cannot read the playlist {}: {e}", path.display()))?;
    let playlist = parse(&text).map_err(|e| anyhow!("the playlist {}: {e}", path.display()))?;
    let location = path.display().to_string();
    let mut size_of = |segment: &str| -> Result<u64, String> {
        let unreadable = |why: String| {
            format!(
                "the playlist {location}: its segment {segment} {why}: give a playlist whose segment files are all \
                 there and readable"
            )
        };
        let meta = std::fs::metadata(segment).map_err(|e| unreadable(format!("cannot be found ({e})")))?;
        if !meta.is_file() {
            return Err(unreadable("is not a regular file".into()));
        }
        std::fs::File::open(segment).map_err(|e| unreadable(format!("cannot be opened for reading ({e})")))?;
        Ok(meta.len())
    };
    SegmentedTitle::resolve(&location, &playlist, &mut size_of).map_err(|e| anyhow!(e))
}

/// A remote playlist, resolved: its text fetched, each segment's size probed (`HEAD`).
pub fn remote_playlist(url: &HttpUrl) -> Result<SegmentedTitle> {
    let text = fetch_text(url, crate::limits::MAX_INPUT_FILE_BYTES)?;
    let playlist = parse(&text).map_err(|e| anyhow!("the playlist {url}: {e}"))?;
    let mut size_of = |segment: &str| -> Result<u64, String> {
        let segment: HttpUrl = segment.parse().map_err(|e| format!("the playlist {url}: {e}"))?;
        probe_size(&segment).map_err(|e| format!("the playlist {url}: its segment cannot be fetched: {e}"))
    };
    SegmentedTitle::resolve(&url.text, &playlist, &mut size_of).map_err(|e| anyhow!(e))
}

/// Media files with their sizes, and the playlists among them resolved.
pub type WithPlaylists = (Vec<(PathBuf, u64)>, Vec<SegmentedTitle>);

/// The user's media with its playlists resolved: each playlist one title (its size the bytes of its segments),
/// and the files its segments name no titles of their own (a packager's `.ts` files beside their playlist).
pub fn with_playlists(media: Vec<(PathBuf, u64)>) -> Result<WithPlaylists> {
    let mut titles = Vec::new();
    for (path, _) in media.iter().filter(|(p, _)| is_playlist(p)) {
        titles.push(local_playlist(path)?);
    }
    let named: std::collections::HashSet<String> =
        titles.iter().flat_map(|t| t.sources.iter().map(|s| s.text())).collect();
    let listing = media
        .into_iter()
        .filter(|(p, _)| !named.contains(&p.display().to_string()))
        .map(|(p, size)| match titles.iter().find(|t| t.playlist == p.display().to_string()) {
            Some(title) => (p, title.bytes),
            None => (p, size),
        })
        .collect();
    Ok((listing, titles))
}

/// What the plan says of playlists whose segment files are on a filesystem that refuses direct I/O (tmpfs):
/// the viewers read them buffered (`run/streams/segments.rs` falls back at the first EINVAL), and a cache may
/// serve them.
pub fn buffered_notices(titles: &[SegmentedTitle]) -> Vec<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let refuses = |path: &Path| {
        let opened = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(path);
        opened.is_err_and(|e| e.raw_os_error() == Some(libc::EINVAL))
    };
    titles
        .iter()
        .filter(|t| matches!(t.sources.first(), Some(SegmentSource::File(first)) if refuses(first)))
        .map(|t| {
            format!(
                "the segment files of {} are on a filesystem that refuses direct I/O: they are read buffered, and \
                 the page cache may serve them",
                t.playlist
            )
        })
        .collect()
}

/// `--library FILE.m3u8`: the one playlist as a library of one title, in its directory.
pub fn one_playlist(file: &Path) -> Result<(PathBuf, Vec<(PathBuf, u64)>)> {
    if !is_playlist(file) {
        bail!(
            "--library {} is a file, not a directory: give the directory that holds your media files (streamcap \
             reads every video file under it), or an HLS playlist (.m3u8)",
            file.display()
        );
    }
    let canonical = std::fs::canonicalize(file).map_err(|e| anyhow!("cannot resolve {}: {e}", file.display()))?;
    let dir = canonical.parent().unwrap_or(Path::new("/")).to_path_buf();
    let size = std::fs::metadata(&canonical).map(|m| m.len()).unwrap_or(0);
    Ok((dir, vec![(canonical, size)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_s_playlists_are_titles_and_their_segments_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for n in 0..3 {
            std::fs::write(d.join(format!("s{n}.ts")), vec![7u8; 8192]).unwrap();
        }
        std::fs::write(d.join("film.mkv"), vec![1u8; 4096]).unwrap();
        let text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\ns0.ts\n#EXTINF:2,\ns1.ts\n#EXTINF:2,\ns2.ts\n\
            #EXT-X-ENDLIST\n";
        std::fs::write(d.join("index.m3u8"), text).unwrap();
        let listing: Vec<(PathBuf, u64)> = ["film.mkv", "index.m3u8", "s0.ts", "s1.ts", "s2.ts"]
            .iter()
            .map(|n| (d.join(n), std::fs::metadata(d.join(n)).unwrap().len()))
            .collect();
        let (titles, playlists) = with_playlists(listing).unwrap();
        assert_eq!(titles, [(d.join("film.mkv"), 4096), (d.join("index.m3u8"), 3 * 8192)]);
        assert_eq!(playlists[0].segment_count, 3);
        std::fs::remove_file(d.join("s1.ts")).unwrap();
        let e = local_playlist(&d.join("index.m3u8")).unwrap_err().to_string();
        assert!(e.contains("s1.ts cannot be found") && e.contains("index.m3u8"), "{e}");
    }
}
