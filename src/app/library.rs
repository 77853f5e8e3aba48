//! The user's media library (`check --library DIR`, `streams --library DIR`): finding its media files by
//! extension, and keeping everything streamcap writes out of it. Looks only: a directory is listed and files are
//! stat'ed, never opened here; the run opens them read-only (O_RDONLY, O_DIRECT where the filesystem allows it).
//! And what `check` and `streams` ask of the library streamcap generates and keeps between runs (`kept_choice`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// What `check` and `streams` ask of the generated library kept between runs: keep it for the next run unless
/// `--remove-library`. Under mpirun every rank writes and removes a library of its own (the ranks of one
/// filesystem would otherwise read one library, or replace it under each other): no kept library is read or kept.
pub fn kept_choice(facts: &mut crate::plan::Facts, fresh: bool, remove: bool) -> crate::plan::LibraryChoice {
    if super::cluster::launched_by().is_some() {
        facts.kept_library = None;
        return crate::plan::LibraryChoice::default();
    }
    crate::plan::LibraryChoice { keep: true, fresh, remove }
}

/// Extensions of the video files media servers (Plex, Jellyfin, Emby) play, lower case.
pub const MEDIA_EXTENSIONS: [&str; 20] = [
    "mkv", "mp4", "m4v", "ts", "m2ts", "mts", "mov", "avi", "webm", "wmv", "mpg", "mpeg", "vob", "flv", "ogv", "3gp",
    "mxf", "divx", "iso", "m2v",
];

/// Directory levels the walk descends at most (a library is a few levels: shows, seasons, episodes).
const MAX_DEPTH: usize = 16;
/// Entries the walk looks at at most, so that pointing it at `/` ends.
const MAX_ENTRIES: usize = 1_000_000;

/// What the walk found.
#[derive(Debug, Default)]
pub struct Listing {
    /// Media files (by extension) with their sizes, sorted by path.
    pub media: Vec<(PathBuf, u64)>,
    /// Regular files seen that are not media (subtitles, artwork, metadata).
    pub other_files: u64,
}

/// Whether `path` names a video file by its extension.
pub fn is_media(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| MEDIA_EXTENSIONS.iter().any(|m| m.eq_ignore_ascii_case(e)))
}

/// Every media file under `dir`: visible entries only (a hidden directory such as `.streamcap` or `.@__thumb`
/// is skipped), symlinked files followed, symlinked directories not (a link back up would never end).
pub fn walk(dir: &Path) -> Result<Listing> {
    let mut listing = Listing::default();
    let mut pending = vec![(dir.to_path_buf(), 0usize)];
    let mut seen = 0usize;
    while let Some((current, depth)) = pending.pop() {
        let entries = std::fs::read_dir(&current).with_context(|| format!("cannot list {}", current.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot list {}", current.display()))?;
            seen += 1;
            if seen > MAX_ENTRIES {
                bail!(
                    "{} holds more than {MAX_ENTRIES} entries: give the directory of your media library itself",
                    dir.display()
                );
            }
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let path = entry.path();
            let kind = entry.file_type().with_context(|| format!("cannot look at {}", path.display()))?;
            if kind.is_dir() {
                if depth < MAX_DEPTH {
                    pending.push((path, depth + 1));
                }
                continue;
            }
            // A broken link or a file that vanished is passed over, as a media server would.
            let Ok(meta) = std::fs::metadata(&path) else { continue };
            if !meta.is_file() {
                continue;
            }
            if is_media(&path) || super::playlists::is_playlist(&path) {
                listing.media.push((path, meta.len()));
            } else {
                listing.other_files += 1;
            }
        }
    }
    listing.media.sort();
    Ok(listing)
}

/// The library directory as given, checked (an existing directory) and resolved, with its media files; exit 2
/// with what to do when it is missing, not a directory, or holds no media file.
pub fn open_library(dir: &Path) -> Result<(PathBuf, Vec<(PathBuf, u64)>)> {
    let meta = std::fs::metadata(dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow::anyhow!(
            "--library {} does not exist: give the directory of your media (the folder Plex or Jellyfin scans, \
             e.g. /srv/media/movies)",
            dir.display()
        ),
        _ => anyhow::Error::new(e).context(format!("cannot look at --library {}", dir.display())),
    })?;
    if !meta.is_dir() && super::playlists::is_playlist(dir) {
        return super::playlists::one_playlist(dir);
    }
    if !meta.is_dir() {
        bail!(
            "--library {} is a file, not a directory: give the directory that holds your media files (streamcap \
             reads every video file under it)",
            dir.display()
        );
    }
    let canonical = std::fs::canonicalize(dir).with_context(|| format!("cannot resolve {}", dir.display()))?;
    let listing = walk(&canonical)?;
    if listing.media.is_empty() {
        bail!(
            "--library {} holds no media files ({} other file(s); looked for {}): give the directory of your video \
             files (the folder Plex or Jellyfin scans), or leave --library out to let streamcap write a library of \
             its own",
            dir.display(),
            listing.other_files,
            MEDIA_EXTENSIONS.join(", ")
        );
    }
    Ok((canonical, listing.media))
}

/// Refuses a path streamcap would write (`what`: "the scratch directory", "--json", …) that lies inside the
/// library: nothing is ever created there.
pub fn refuse_inside(path: &Path, library: &Path, what: &str) -> Result<()> {
    if resolved(path).starts_with(library) {
        bail!(
            "{what} {} is inside your library {}: streamcap writes nothing there; give a place outside it",
            path.display(),
            library.display()
        );
    }
    Ok(())
}

/// `path` made absolute and resolved as far as it exists (a file to be created resolves through its parent).
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    if let Ok(real) = std::fs::canonicalize(&absolute) {
        return real;
    }
    match (absolute.parent(), absolute.file_name()) {
        (Some(parent), Some(name)) => resolved(parent).join(name),
        _ => absolute,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_finds_media_by_extension_below_visible_directories() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("Shows/Season 1")).unwrap();
        std::fs::create_dir_all(root.join(".streamcap")).unwrap();
        for (name, len) in
            [("film.MKV", 10), ("Shows/Season 1/e01.mp4", 20), ("Shows/Season 1/e01.srt", 1), (".streamcap/x.ts", 5)]
        {
            std::fs::write(root.join(name), vec![0u8; len]).unwrap();
        }
        std::os::unix::fs::symlink(root, root.join("loop")).unwrap();
        let listing = walk(root).unwrap();
        let names: Vec<String> =
            listing.media.iter().map(|(p, _)| p.strip_prefix(root).unwrap().display().to_string()).collect();
        assert_eq!(names, ["Shows/Season 1/e01.mp4", "film.MKV"]);
        assert_eq!(listing.media[0].1, 20);
        assert_eq!(listing.other_files, 1, "the subtitle file");
    }

    #[test]
    fn a_missing_library_a_file_and_a_library_without_media_are_refused_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let missing = open_library(&dir.path().join("nope")).unwrap_err().to_string();
        assert!(missing.contains("does not exist") && missing.contains("Plex"), "{missing}");
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let file = open_library(&dir.path().join("notes.txt")).unwrap_err().to_string();
        assert!(file.contains("is a file, not a directory"), "{file}");
        let empty = open_library(dir.path()).unwrap_err().to_string();
        assert!(empty.contains("holds no media files (1 other file(s)") && empty.contains("mkv"), "{empty}");
    }

    #[test]
    fn paths_inside_the_library_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let library = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(library.join("movies")).unwrap();
        assert!(refuse_inside(&library.join("movies/new.json"), &library, "--json").is_err());
        assert!(refuse_inside(&library, &library, "the scratch directory").is_err());
        assert!(refuse_inside(&library.join("movies/../../elsewhere.json"), &library, "--json").is_ok());
        assert!(refuse_inside(Path::new("/tmp"), &library.join("movies"), "the scratch directory").is_ok());
    }
}
