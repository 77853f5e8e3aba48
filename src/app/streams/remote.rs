//! `streamcap streams` against remote media: TARGET is an `http://` or `https://` URL of a media file, or a local file that
//! lists such URLs (one per line; blank lines and `#` comments skipped). Each URL's size is probed (HEAD, or a
//! one-byte ranged GET) before planning, as a fact about the target; the viewers then fetch paced byte ranges
//! over keep-alive connections (`engine::HttpEngine`). Nothing is written anywhere.
//!
//! A web server's disks are not ours to see, unless it runs on this host and the user names its document root
//! (`--served-from DIR`). That is the one honest way to map a URL to a local file: reading a server's
//! configuration (nginx's `root`, `alias`, `location` matching, `try_files`, includes, other servers) would be
//! a guess about what it serves. The mapping is checked: every URL's path, percent-decoded and without its query,
//! must name a regular file beneath DIR of exactly the size the server reported. The devices beneath DIR are
//! then watched like a local target's.

use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::app::facts::{Gathered, gather};
use crate::app::playlists::{is_playlist_url, remote_playlist};
use crate::engine::{HttpUrl, probe_size};
use crate::streams::SegmentedTitle;

/// The URLs TARGET names, or `None` for a local directory.
pub fn remote_target(target: &Path) -> Result<Option<Vec<HttpUrl>>> {
    let text = target.to_string_lossy();
    let lower = text.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Ok(Some(vec![text.parse()?]));
    }
    if !target.is_file() {
        return Ok(None);
    }
    if crate::app::playlists::is_playlist(target) {
        bail!(
            "{} is a local playlist: give it as --library {} with a directory as TARGET (nothing is written \
             into the library), or its http:// URL as TARGET",
            target.display(),
            target.display()
        );
    }
    let list = crate::limits::read_text_file(target, crate::limits::MAX_INPUT_FILE_BYTES)
        .with_context(|| format!("cannot read {}", target.display()))?;
    let mut urls = Vec::new();
    for (n, line) in list.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.parse::<HttpUrl>() {
            Ok(url) => urls.push(url),
            Err(_) => bail!(
                "{} is a file, and line {} is not an http:// or https:// URL: give a directory of media, a URL, \
                 or a file listing URLs one per line",
                target.display(),
                n + 1
            ),
        }
    }
    if urls.is_empty() {
        bail!("{} lists no URL: give one http:// URL per line", target.display());
    }
    Ok(Some(urls))
}

/// The facts of a local web server's document root `dir`, after checking that every URL names a file of its
/// probed size beneath it (of a playlist, every segment URL that is a whole file).
pub fn served_from(dir: &Path, (media, playlists): (&[(HttpUrl, u64)], &[SegmentedTitle])) -> Result<Gathered> {
    if !dir.is_dir() {
        bail!("--served-from {}: not a directory; give the web server's document root", dir.display());
    }
    let segments = playlists.iter().flat_map(|t| {
        t.segments.iter().filter(|s| !s.ranged).filter_map(|s| match &t.sources[s.source as usize] {
            crate::streams::SegmentSource::Url(url) => Some((url.clone(), s.len)),
            crate::streams::SegmentSource::File(_) => None,
        })
    });
    let files: Vec<(HttpUrl, u64)> =
        media.iter().filter(|(url, _)| !is_playlist_url(url)).cloned().chain(segments).collect();
    for (url, size) in &files {
        let path = dir.join(url_file(url)?);
        let found = std::fs::metadata(&path).ok().filter(|m| m.is_file()).map(|m| m.len());
        if found != Some(*size) {
            bail!(
                "--served-from {}: {url} should be {} ({size} bytes, as the server said), but {}: give the \
                 document root the server serves these URLs from",
                dir.display(),
                path.display(),
                found.map_or("there is no such file".to_string(), |n| format!("it has {n} bytes"))
            );
        }
    }
    gather(dir, false)
}

/// The path beneath the document root that a URL names: its path without the query, percent-decoded, every
/// component a plain name (no `..`).
fn url_file(url: &HttpUrl) -> Result<PathBuf> {
    let raw = url.path.split(['?', '#']).next().unwrap_or_default();
    let mut bytes = Vec::with_capacity(raw.len());
    let mut rest = raw.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        let hex = tail.get(..2).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, hex) {
            (b'%', Some(decoded)) => {
                bytes.push(decoded);
                rest = &tail[2..];
            }
            _ => {
                bytes.push(b);
                rest = tail;
            }
        }
    }
    let path = PathBuf::from(std::ffi::OsString::from_vec(bytes));
    let mut beneath = PathBuf::new();
    for part in path.components() {
        match part {
            Component::Normal(name) => beneath.push(name),
            Component::RootDir | Component::CurDir => {}
            _ => bail!("{url}: its path leaves the document root ('..'), so it names no file beneath --served-from"),
        }
    }
    if beneath.as_os_str().is_empty() {
        bail!("{url} names no file (a directory index): --served-from needs URLs of media files");
    }
    Ok(beneath)
}

/// Each URL with its size, and the playlists among them resolved.
pub type Probed = (Vec<(HttpUrl, u64)>, Vec<SegmentedTitle>);

/// Probes every URL's size; a playlist's (`.m3u8`) is the bytes of its segments, and it comes resolved too.
pub fn probe(urls: &[HttpUrl]) -> Result<Probed> {
    let (mut media, mut playlists) = (Vec::new(), Vec::new());
    for url in urls {
        if is_playlist_url(url) {
            let title = remote_playlist(url)?;
            media.push((url.clone(), title.bytes));
            playlists.push(title);
        } else {
            media.push((url.clone(), probe_size(url)?));
        }
    }
    Ok((media, playlists))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_list_is_read_and_bad_lines_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("urls.txt");
        std::fs::write(&list, "# library\nhttp://127.0.0.1:8080/a.mkv\n\nhttp://127.0.0.1:8080/b.mkv\n").unwrap();
        let urls = remote_target(&list).unwrap().unwrap();
        assert_eq!(urls.len(), 2);
        std::fs::write(&list, "http://h/a\n/srv/b.mkv\n").unwrap();
        let e = remote_target(&list).unwrap_err().to_string();
        assert!(e.contains("line 2 is not an http:// or https:// URL"), "{e}");
        std::fs::write(&list, "https://h/a\n").unwrap();
        assert!(remote_target(&list).unwrap().unwrap()[0].tls);
        assert!(remote_target(dir.path()).unwrap().is_none());
        assert!(remote_target(Path::new("https://h/x")).unwrap().unwrap()[0].tls);
    }

    #[test]
    fn a_url_names_a_file_beneath_the_document_root_only_as_a_plain_path() {
        let url = |text: &str| text.parse::<HttpUrl>().unwrap();
        assert_eq!(
            url_file(&url("http://127.0.0.1:8080/media/a%20film.mkv?t=3")).unwrap(),
            Path::new("media/a film.mkv")
        );
        assert_eq!(url_file(&url("http://h/100%.mkv")).unwrap(), Path::new("100%.mkv"), "a lone % stays");
        assert!(url_file(&url("http://h/../etc/passwd")).is_err());
        assert!(url_file(&url("http://h/a/%2e%2e/%2e%2e/b")).is_err(), "decoded '..' too");
        assert!(url_file(&url("http://h/")).is_err());
    }

    #[test]
    fn the_document_root_must_hold_each_url_s_file_at_its_size() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("m")).unwrap();
        std::fs::write(dir.path().join("m/a.mkv"), vec![0u8; 4096]).unwrap();
        let url: HttpUrl = "http://127.0.0.1:8080/m/a.mkv".parse().unwrap();
        let gathered = served_from(dir.path(), (&[(url.clone(), 4096)], &[])).unwrap();
        assert_eq!(gathered.canonical, std::fs::canonicalize(dir.path()).unwrap());
        let e = served_from(dir.path(), (&[(url.clone(), 8192)], &[])).err().unwrap().to_string();
        assert!(e.contains("it has 4096 bytes"), "{e}");
        let missing: HttpUrl = "http://127.0.0.1:8080/m/b.mkv".parse().unwrap();
        let e = served_from(dir.path(), (&[(missing, 4096)], &[])).err().unwrap().to_string();
        assert!(e.contains("there is no such file"), "{e}");
        // A playlist's segment files are checked in its place.
        let text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\na.mkv\n#EXTINF:2,\nb.mkv\n#EXT-X-ENDLIST\n";
        let playlist = crate::streams::playlist::parse(text).unwrap();
        let location = "http://127.0.0.1:8080/m/i.m3u8";
        let title = SegmentedTitle::resolve(location, &playlist, &mut |_| Ok(4096)).unwrap();
        let media = [(location.parse::<HttpUrl>().unwrap(), 8192)];
        let e = served_from(dir.path(), (&media, &[title])).err().unwrap().to_string();
        assert!(e.contains("m/b.mkv") && e.contains("there is no such file"), "{e}");
    }
}
