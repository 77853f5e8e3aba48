//! The library viewers watch (issue 24, "a library, not a file"), end to end on real files:
//! - the library streamcap writes is distinct title files, each as large as the plan says, really written
//!   (no hole or unwritten extent stands in for media), and the plan states its size, why, and the hot set;
//! - `check --library DIR` and `streams --library DIR` read a directory of the user's media files, name them in
//!   the result, and leave every file byte-identical with the same mtime and nothing created inside DIR (as root
//!   on a filesystem that has it, the library is also made immutable with `chattr +i` for the run, so that any
//!   open for writing or any file created there fails the run);
//! - the library a run writes is kept for the next run, which reads the same files as they are;
//!   `--fresh-library` replaces it, `--remove-library` leaves nothing;
//! - bad `--library` input is refused with exit code 2 and what to do.
//!
//! No assertion depends on the machine's speed: a few 8 Mbit/s viewers and the quick check.

mod common;

use std::collections::BTreeMap;
use std::hash::Hasher;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use common::{read_json, streamcap, walk};
use predicates::prelude::*;

/// The title files under `dir/.streamcap/` (a kept run's, or the kept library's), in order.
fn title_files(dir: &Path) -> Vec<PathBuf> {
    let mut titles: Vec<PathBuf> = walk(&dir.join(".streamcap"))
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("title-")))
        .collect();
    titles.sort();
    titles
}

/// Whether every 4 KiB block of `path` holds data: an unwritten extent or a hole reads as zeros, and random
/// content has no block of zeros.
fn written_throughout(path: &Path) -> bool {
    let bytes = std::fs::read(path).unwrap();
    bytes.chunks(4096).all(|block| block.iter().any(|&b| b != 0))
}

#[test]
fn a_generated_library_is_distinct_titles_really_written_as_the_plan_states() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    streamcap()
        .args(["streams", dir.path().to_str().unwrap(), "--bitrate", "8Mbit", "--count", "6", "--duration", "2s"])
        .args(["--ramp", "500ms", "--library-size", "512M", "--keep", "--quiet", "--json", json.to_str().unwrap()])
        .assert()
        .success();
    let r = read_json(&json);
    let library = &r["streams"]["library"];
    assert_eq!(library["source"], "generated", "{library}");
    let titles = library["titles"].as_u64().unwrap();
    let title_bytes = library["title_bytes"].as_u64().unwrap();
    // 512 MiB in titles of at least 64 MiB: eight of them.
    assert_eq!((titles, title_bytes), (8, 64 << 20), "{library}");
    assert!(library["why"].as_str().unwrap().contains("the size asked"), "{library}");
    // The plan maps each viewer of the step to a title: six viewers, six titles of their own.
    let plan_library = &r["config"]["phases"][0]["streams"]["library"];
    let mut mapping: Vec<u64> =
        plan_library["viewer_titles"].as_array().unwrap().iter().map(|t| t.as_u64().unwrap()).collect();
    assert_eq!(mapping.len(), 6, "{plan_library}");
    mapping.sort();
    mapping.dedup();
    assert_eq!(mapping.len(), 6, "each viewer its own title: {plan_library}");
    assert!(mapping.iter().all(|&t| t < titles));
    assert!(r["phases"][0]["read"]["bytes"].as_u64().unwrap() > 0);
    streamcap()
        .arg("report")
        .arg(&json)
        .assert()
        .success()
        .stdout(predicate::str::contains("library: 512 MiB in 8 title(s) of 64 MiB, written by streamcap"));

    let files = title_files(dir.path());
    assert_eq!(files.len() as u64, titles, "{files:?}");
    let total: u64 = files.iter().map(|f| std::fs::metadata(f).unwrap().len()).sum();
    assert!(total >= library["bytes"].as_u64().unwrap(), "{total}");
    let inodes: std::collections::HashSet<u64> = files.iter().map(|f| std::fs::metadata(f).unwrap().ino()).collect();
    assert_eq!(inodes.len(), files.len(), "distinct files, not links to one");
    let mut heads = std::collections::HashSet::new();
    for file in &files {
        assert_eq!(std::fs::metadata(file).unwrap().len(), title_bytes, "{}", file.display());
        assert!(written_throughout(file), "{} has a MiB of zeros: not written", file.display());
        let mut head = vec![0u8; 4096];
        std::fs::File::open(file).unwrap().read_exact(&mut head).unwrap();
        assert!(heads.insert(head), "{} starts as another title does", file.display());
    }
}

/// One `streams` run of two 8 Mbit/s viewers over a library of 256 MiB in `dir`, with `extra` flags; its result.
fn two_viewers(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let json = dir.with_extension("json");
    streamcap()
        .args(["streams", dir.to_str().unwrap(), "--bitrate", "8Mbit", "--count", "2", "--duration", "1s"])
        .args(["--ramp", "200ms", "--library-size", "256M", "--quiet", "--json", json.to_str().unwrap()])
        .args(extra)
        .assert()
        .success();
    read_json(&json)
}

/// (inode, size, mtime) of every title of the kept library.
fn kept_titles(dir: &Path) -> Vec<(u64, u64, i64)> {
    title_files(dir).iter().map(|f| std::fs::metadata(f).unwrap()).map(|m| (m.ino(), m.len(), m.mtime())).collect()
}

#[test]
fn a_kept_library_is_read_again_by_the_next_run_replaced_when_asked_and_removed_when_asked() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("target");
    std::fs::create_dir(&dir).unwrap();
    let first = two_viewers(&dir, &[]);
    let kept = &first["streams"]["library"]["kept"];
    assert_eq!((kept["reused"].as_bool(), kept["kept_after"].as_bool()), (Some(false), Some(true)), "{kept}");
    let library = dir.join(".streamcap/library");
    assert_eq!(kept["dir"].as_str(), Some(library.to_str().unwrap()));
    let titles = kept_titles(&dir);
    assert_eq!(titles.len(), 4, "256 MiB in titles of 64 MiB, all in {}: {:?}", library.display(), walk(&dir));
    // `inspect` says what holds that space, and how to remove it.
    let inspect = streamcap().arg("inspect").arg(&dir).assert().success();
    let said = String::from_utf8_lossy(&inspect.get_output().stdout).to_string();
    let line = format!("library    256 MiB in 4 titles kept in {} by an earlier run, written 20", library.display());
    assert!(said.contains(&line) && said.contains("--remove-library"), "{said}");

    // The next run reads the same files, as they are: nothing written, the same inodes.
    let second = two_viewers(&dir, &[]);
    let kept = &second["streams"]["library"]["kept"];
    assert_eq!((kept["reused"].as_bool(), kept["kept_after"].as_bool()), (Some(true), Some(true)), "{kept}");
    assert!(kept["written"].as_u64().is_some() && kept["words"].as_str().unwrap().contains("read as it is"));
    assert_eq!(kept_titles(&dir), titles, "read again, not written");
    assert!(second["phases"][0]["read"]["bytes"].as_u64().unwrap() > 0);

    // --fresh-library writes new titles in place of the kept ones.
    let fresh = two_viewers(&dir, &["--fresh-library"]);
    assert_eq!(fresh["streams"]["library"]["kept"]["reused"].as_bool(), Some(false));
    let replaced = kept_titles(&dir);
    assert_eq!(replaced.len(), 4);
    assert!(replaced.iter().zip(&titles).all(|(new, old)| new.0 != old.0), "new files: {replaced:?} {titles:?}");

    // --remove-library reads the kept library and leaves nothing.
    let removed = two_viewers(&dir, &["--remove-library"]);
    let kept = &removed["streams"]["library"]["kept"];
    assert_eq!((kept["reused"].as_bool(), kept["kept_after"].as_bool()), (Some(true), Some(false)), "{kept}");
    assert!(walk(&dir).is_empty(), "left behind: {:?}", walk(&dir));
}

#[test]
fn the_plan_states_the_library_its_size_and_the_hot_set() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().to_str().unwrap();
    streamcap()
        .args(["streams", target, "--bitrate", "8Mbit", "--max", "--files", "library:zipf=1", "--library-size", "2G"])
        .arg("--dry-run")
        .assert()
        .success()
        .stdout(
            // Titles are whole MiB, at least what a viewer reads in a step: 2 GiB in 19 titles of 107 MiB is
            // 1.99 GiB, still "the size asked" (a MiB per title at most is lost to rounding).
            predicate::str::is_match(r"media: a library, (1\.99|2\.00) GiB in")
                .unwrap()
                .and(predicate::str::is_match(r"why this size: (1\.99|2\.00) GiB, the size asked").unwrap())
                .and(predicate::str::contains("larger than a drive's cache (up to 1 GiB)"))
                .and(
                    predicate::str::is_match(
                        r"Zipf popularity 1: the (hottest title draws|\d+ hottest titles draw) \d+ %",
                    )
                    .unwrap(),
                )
                .and(predicate::str::contains("% of the viewers")),
        );
    // The test files per format of old, when a media length asks for them.
    streamcap()
        .args(["streams", target, "--bitrate", "8Mbit", "--count", "2", "--media-length", "10s", "--dry-run"])
        .assert()
        .success()
        .stdout(predicate::str::contains("files: one").and(predicate::str::contains("media: 1 file(s)")));
    streamcap().args(["check", target, "--quick", "--dry-run"]).assert().success().stdout(
        predicate::str::contains("media: a library, ")
            .and(predicate::str::contains("each viewer its own title"))
            .and(predicate::str::contains("why this size")),
    );
    assert!(common::entries(dir.path()).is_empty(), "a dry run created {:?}", common::entries(dir.path()));
}

/// What a library looks like, file by file: (is a directory, size, mtime in ns, content hash).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (bool, u64, i128, u64)> {
    walk(dir)
        .into_iter()
        .map(|path| {
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mtime = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
            let hash = if meta.is_file() {
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                hasher.write(&std::fs::read(&path).unwrap());
                hasher.finish()
            } else {
                0
            };
            (path.strip_prefix(dir).unwrap().to_path_buf(), (meta.is_dir(), meta.len(), mtime, hash))
        })
        .collect()
}

/// The media files of the test library, below `root`.
const MEDIA: [&str; 6] = [
    "Movies/A Film (2019)/A Film (2019).mkv",
    "Movies/Another (2021)/Another (2021).mp4",
    "Shows/Show/Season 01/Show S01E01.m4v",
    "Shows/Show/Season 01/Show S01E02.ts",
    "Home videos/holiday.MOV",
    "trailer.webm",
];

/// A library of real files with media extensions (random content: ffmpeg is not installed, and streamcap reads
/// bytes, not frames), beside the files a media server keeps next to them.
fn make_library(root: &Path) {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for (i, name) in MEDIA.iter().enumerate() {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let len = (24 << 20) + i * 1_234_567;
        let mut bytes = Vec::with_capacity(len);
        while bytes.len() < len {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            bytes.extend_from_slice(&state.to_le_bytes());
        }
        bytes.truncate(len);
        std::fs::write(&path, bytes).unwrap();
    }
    std::fs::write(root.join("Shows/Show/Season 01/Show S01E01.srt"), "1\n00:00:01,000 --> 00:00:02,000\nHi\n")
        .unwrap();
    std::fs::write(root.join("Movies/A Film (2019)/movie.nfo"), "<movie/>").unwrap();
}

/// Makes every file and directory of the library immutable for as long as it lives (root, on ext4 and the like):
/// an open for writing, a file created, a timestamp set — each then fails with EPERM.
struct Immutable(PathBuf);

impl Immutable {
    fn new(dir: &Path) -> Option<Immutable> {
        let ok = std::process::Command::new("chattr").arg("-R").arg("+i").arg(dir).status().is_ok_and(|s| s.success());
        if ok {
            Some(Immutable(dir.to_path_buf()))
        } else {
            eprintln!("note: chattr +i is not available here; the library's files are compared instead");
            let _ = std::process::Command::new("chattr").arg("-R").arg("-i").arg(dir).status();
            None
        }
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr").arg("-R").arg("-i").arg(&self.0).status();
    }
}

/// The paths the result names as the library's files, sorted.
fn named_files(library: &serde_json::Value) -> Vec<String> {
    let mut names: Vec<String> =
        library["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_string()).collect();
    names.sort();
    names
}

#[test]
fn check_and_streams_read_the_users_library_and_leave_it_untouched() {
    let root = tempfile::tempdir().unwrap();
    let library = root.path().join("media");
    make_library(&library);
    let scratch = tempfile::tempdir().unwrap();
    let before = snapshot(&library);
    let immutable = Immutable::new(&library);
    let mut expected: Vec<String> = MEDIA.iter().map(|s| s.to_string()).collect();
    expected.sort();

    let json = scratch.path().join("streams.json");
    streamcap()
        .current_dir(scratch.path())
        .args(["streams", "--library", library.to_str().unwrap(), "--bitrate", "8Mbit", "--count", "4"])
        .args(["--duration", "2s", "--quiet", "--json", json.to_str().unwrap()])
        .assert()
        .success();
    let r = read_json(&json);
    let lib = &r["streams"]["library"];
    assert_eq!(lib["source"], "user", "{lib}");
    assert_eq!(named_files(lib), expected, "the titles are the media files, and only they");
    assert_eq!(r["streams"]["steps"][0]["errors"], 0, "{}", r["streams"]["steps"][0]["first_error"]);
    assert!(r["phases"][0]["read"]["bytes"].as_u64().unwrap() > 0, "the viewers read the library");
    assert_eq!(r["streams"]["own_media"], false);

    let json = scratch.path().join("check.json");
    streamcap()
        .current_dir(scratch.path())
        .args(["check", scratch.path().to_str().unwrap(), "--library", library.to_str().unwrap(), "--quick"])
        .args(["--no-html", "--quiet", "--json", json.to_str().unwrap()])
        .assert()
        .success();
    let r = read_json(&json);
    assert_eq!(named_files(&r["check"]["library"]), expected);
    let total: u64 =
        r["check"]["library"]["files"].as_array().unwrap().iter().map(|f| f["bytes"].as_u64().unwrap()).sum();
    let streams: Vec<&serde_json::Value> =
        r["phases"].as_array().unwrap().iter().filter(|p| p["streams"].is_object()).collect();
    assert_eq!(streams.len(), 3, "a search per format");
    for phase in streams {
        assert!(phase["read"]["bytes"].as_u64().unwrap() > 0, "{} read nothing", phase["name"]);
        assert_eq!(named_files(&phase["streams"]["library"]), expected);
    }
    let estimate = r["phases"].as_array().unwrap().iter().find(|p| p["name"] == "estimate: random chunks").unwrap();
    assert_eq!(estimate["data_set_bytes"].as_u64().unwrap(), total, "the estimate reads the whole library");
    // The summary says whose media the verdict is about.
    streamcap().arg("report").arg(&json).assert().success().stdout(
        predicate::str::contains(format!("media library: your library {}: 6 media file(s)", library.display()))
            .and(predicate::str::contains("only read")),
    );

    drop(immutable);
    assert_eq!(snapshot(&library), before, "every file byte-identical, same mtime, nothing created");
    assert_eq!(common::entries(scratch.path()), ["check.json", "streams.json"], "the scratch space is cleaned up");
}

#[test]
fn bad_library_input_is_refused_with_what_to_do() {
    let root = tempfile::tempdir().unwrap();
    let missing = root.path().join("missing");
    let notes = root.path().join("notes");
    std::fs::create_dir(&notes).unwrap();
    std::fs::write(notes.join("readme.txt"), "no films here").unwrap();
    let file = notes.join("readme.txt");
    let tiny = root.path().join("tiny");
    std::fs::create_dir(&tiny).unwrap();
    std::fs::write(tiny.join("short.mkv"), vec![7u8; 100_000]).unwrap();
    let small = root.path().join("small");
    std::fs::create_dir(&small).unwrap();
    std::fs::write(small.join("film.mp4"), vec![7u8; 8 << 20]).unwrap();
    let scratch = tempfile::tempdir().unwrap();

    let refused = |args: &[&str], says: &[&str]| {
        let out = streamcap().current_dir(scratch.path()).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        for words in says {
            assert!(stderr.contains(words), "{args:?}: '{words}' not in {stderr}");
        }
    };
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let streams =
        |lib: &Path| vec!["streams".to_string(), "--library".into(), path(lib), "--bitrate".into(), "8Mbit".into()];
    let with = |mut v: Vec<String>, more: &[&str]| {
        v.extend(more.iter().map(|s| s.to_string()));
        v
    };
    let run = |v: Vec<String>, says: &[&str]| refused(&v.iter().map(String::as_str).collect::<Vec<_>>(), says);

    run(with(streams(&missing), &["--count", "1"]), &["does not exist", "Plex or Jellyfin"]);
    run(with(streams(&file), &["--count", "1"]), &["is a file, not a directory"]);
    run(with(streams(&notes), &["--count", "1"]), &["holds no media files (1 other file(s)", "mkv, mp4"]);
    run(with(streams(&tiny), &["--count", "1"]), &["holds two chunks (2 MiB) or more"]);
    run(
        with(streams(&small), &["--count", "40", "--duration", "60s"]),
        &["would read the same bytes again", "fewer viewers"],
    );
    run(
        with(streams(&small), &["--count", "1", "--json", &path(&small.join("r.json"))]),
        &["--json", "is inside your library"],
    );
    let check =
        |lib: &Path, dir: &Path| vec!["check".to_string(), path(dir), "--library".into(), path(lib), "--quick".into()];
    run(check(&missing, scratch.path()), &["does not exist"]);
    run(check(&notes, scratch.path()), &["holds no media files"]);
    run(check(&small, &small), &["the scratch directory", "is inside your library"]);
    for dir in [&notes, &tiny, &small] {
        assert!(!dir.join(".streamcap").exists(), "nothing created in {}", dir.display());
    }
    assert!(common::entries(scratch.path()).is_empty(), "{:?}", common::entries(scratch.path()));
}
