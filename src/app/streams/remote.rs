//! `streamcap streams` against remote media: TARGET is an `http://` URL of a media file, or a local file that
//! lists such URLs (one per line; blank lines and `#` comments skipped). Each URL's size is probed (HEAD, or a
//! one-byte ranged GET) before planning, as a fact about the target; the viewers then fetch paced byte ranges
//! over keep-alive connections (`engine::HttpEngine`). Nothing is written anywhere, and there is no local device
//! to watch.

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::engine::{HttpError, HttpUrl, probe_size};

/// The URLs TARGET names, or `None` for a local directory. `https://` is refused with what to do instead.
pub fn remote_target(target: &Path) -> Result<Option<Vec<HttpUrl>>> {
    let text = target.to_string_lossy();
    let lower = text.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Ok(Some(vec![text.parse()?]));
    }
    if !target.is_file() {
        return Ok(None);
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
            Err(e @ HttpError::Https(_)) => bail!("{}:{}: {e}", target.display(), n + 1),
            Err(_) => bail!(
                "{} is a file, and line {} is not an http:// URL: give a directory of media, an http:// URL, or a \
                 file listing URLs one per line",
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

/// Probes every URL's size.
pub fn probe(urls: &[HttpUrl]) -> Result<Vec<(HttpUrl, u64)>> {
    urls.iter().map(|url| Ok((url.clone(), probe_size(url)?))).collect()
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
        assert!(e.contains("line 2 is not an http:// URL"), "{e}");
        std::fs::write(&list, "https://h/a\n").unwrap();
        assert!(remote_target(&list).unwrap_err().to_string().contains("TLS-terminating proxy"));
        assert!(remote_target(dir.path()).unwrap().is_none());
        let https = remote_target(Path::new("https://h/x")).unwrap_err().to_string();
        assert!(https.contains("not supported yet"), "{https}");
    }
}
