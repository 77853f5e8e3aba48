//! `streams --delivery hls:N`: one request per segment of N seconds of media. Against the test's own nginx on
//! loopback (tests/common/nginx.rs) serving titles the test makes, nginx's access log shows one `GET` per
//! segment, each of the segment's bytes (the last of a viewer may be short: the step ended while it was in
//! flight), as many per viewer as the segment arithmetic says (`streams::delivery::requests_after`) within one,
//! and as many as streamcap reported; with byte-range segments of one local file, the requests streamcap
//! reports match the arithmetic too. Bad shapes are refused with exit code 2. Nothing here depends on speed:
//! a few 4 Mbit/s viewers, and bounds that hold however late a segment arrives (short of a stall, asserted).

mod common;

use std::time::Duration;

use common::nginx::Nginx;
use common::{read_json, streamcap};
use streamcap::streams::delivery::{requests_after, segment_bytes};
use streamcap::units::Bitrate;

const BITRATE: u64 = 4_000_000;

/// 2 s of 4 Mbit/s in whole pages: 1,000,000 B → 1,003,520 B.
fn segment() -> u64 {
    segment_bytes(Duration::from_secs(2), Bitrate(BITRATE))
}

/// The result of `count` viewers of 4 Mbit/s for 4 s, each on its own URL of `list` (a URL list's text), with
/// `more` flags.
fn stream_urls(list: &str, count: u32, more: &[&str]) -> serde_json::Value {
    let out = tempfile::tempdir().unwrap();
    let urls = out.path().join("urls.txt");
    std::fs::write(&urls, list).unwrap();
    let json = out.path().join("r.json");
    streamcap()
        .args(["streams", urls.to_str().unwrap(), "--bitrate", "4Mbit", "--count", &count.to_string()])
        .args(["--files", "each", "--duration", "4s", "--quiet", "--no-history", "--json", json.to_str().unwrap()])
        .args(more)
        .assert()
        .success();
    read_json(&json)
}

/// The bounds of the arithmetic for one viewer of a step, widened by one request either way.
fn bounds(stream: &serde_json::Value, buffer_s: f64) -> (f64, f64) {
    let media = Duration::from_secs_f64(segment() as f64 * 8.0 / BITRATE as f64);
    let watched = Duration::from_secs_f64(stream["watched_s"].as_f64().unwrap());
    let (low, high) = requests_after(watched, Duration::from_secs_f64(buffer_s), media);
    (low - 1.0, high + 1.0)
}

#[test]
fn hls_segments_from_nginx_are_one_get_each_as_many_as_the_arithmetic_says() {
    let Some(nginx) = Nginx::start("hls_segments_from_nginx_are_one_get_each") else { return };
    let titles = ["a.ts", "b.ts", "c.ts"];
    let mut list = String::from("# a title per viewer\n");
    for name in titles {
        nginx.media(name, 12 * segment() as usize);
        list.push_str(&nginx.url(name));
        list.push('\n');
    }
    let result = stream_urls(&list, 3, &["--delivery", "hls:2"]);
    let streams = &result["streams"];
    assert_eq!(streams["delivery"], "hls:2");
    assert_eq!(streams["chunk_bytes"], segment());
    let step = &streams["steps"][0];
    assert_eq!((step["streams_stalled"].as_u64(), step["errors"].as_u64()), (Some(0), Some(0)), "{step}");
    let per_stream = step["per_stream"].as_array().unwrap();
    let reported: u64 = per_stream.iter().map(|s| s["requests"].as_u64().unwrap()).sum();
    assert_eq!(step["requests"].as_u64(), Some(reported), "{step}");
    assert!(step["requests_per_s"].as_f64().unwrap() > 0.0, "{step}");

    let log = nginx.settled_access_log();
    for (viewer, name) in titles.iter().enumerate() {
        // Combined log format: "GET /a.ts HTTP/1.1" 206 BYTES …
        let sent: Vec<u64> = log
            .lines()
            .filter(|l| l.contains(&format!("\"GET /{name} HTTP/1.1\"")))
            .map(|l| {
                assert!(l.contains("HTTP/1.1\" 206 "), "every segment is a ranged GET answered 206: {l}");
                let after = l.split("HTTP/1.1\" 206 ").nth(1).unwrap();
                after.split_whitespace().next().unwrap().parse().unwrap()
            })
            .collect();
        let whole = sent.iter().filter(|&&b| b == segment()).count();
        assert!(whole + 1 >= sent.len(), "{name}: every GET but the last carries one segment: {sent:?}");
        let stream = &per_stream[viewer];
        let (low, high) = bounds(stream, streams["buffer_s"].as_f64().unwrap());
        let gets = sent.len() as f64;
        assert!((low..=high + 1.0).contains(&gets), "{name}: nginx served {gets} GETs, the arithmetic {low}..{high}");
        let counted = stream["requests"].as_u64().unwrap();
        eprintln!(
            "{name}: nginx {} GETs ({whole} whole), streamcap {counted}, arithmetic ±1: {low:.2}..{high:.2}",
            sent.len()
        );
        // nginx also logged the segment in flight when the step ended, if there was one.
        assert!(
            counted as usize + 1 >= sent.len() && counted as usize <= sent.len(),
            "{name}: streamcap counted {counted} requests, nginx served {} ({whole} whole segments)",
            sent.len()
        );
        assert!((low..=high).contains(&(counted as f64)), "{name}: {counted} requests, the arithmetic {low}..{high}");
    }
}

#[test]
fn hls_segments_of_a_local_file_are_one_read_each() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    streamcap()
        .args(["streams", dir.path().to_str().unwrap(), "--bitrate", "4Mbit", "--count", "2", "--files", "one"])
        .args(["--media-length", "60s", "--delivery", "hls:2", "--duration", "4s", "--quiet"])
        .args(["--json", json.to_str().unwrap()])
        .assert()
        .success();
    let streams = &read_json(&json)["streams"];
    assert_eq!(streams["chunk_bytes"], segment());
    let step = &streams["steps"][0];
    assert_eq!(step["streams_stalled"], 0, "{step}");
    let requests = step["requests"].as_u64().unwrap();
    // Every read fetched one whole segment: the bytes read are the requests' segments.
    assert_eq!(step["read_bytes"].as_u64(), Some(requests * segment()), "{step}");
    let buffer = streams["buffer_s"].as_f64().unwrap();
    for stream in step["per_stream"].as_array().unwrap() {
        let (low, high) = bounds(stream, buffer);
        let made = stream["requests"].as_f64().unwrap();
        assert!((low..=high).contains(&made), "{made} requests, the arithmetic {low}..{high}: {stream}");
        assert_eq!(stream["bytes"].as_u64(), Some(stream["requests"].as_u64().unwrap() * segment()));
    }
}

#[test]
fn bad_delivery_shapes_are_refused_with_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().to_str().unwrap();
    for (shape, says) in [
        ("hls:0", "out of range"),
        ("hls:abc", "'abc' is not a segment length"),
        ("smooth", "give direct, or hls[:SECONDS]"),
    ] {
        let out = streamcap()
            .args(["streams", target, "--bitrate", "8Mbit", "--count", "1", "--delivery", shape, "--dry-run"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{shape}: {stderr}");
        assert!(stderr.contains(says), "{shape}: {stderr}");
    }
    let out = streamcap()
        .args(["streams", target, "--bitrate", "8Mbit", "--count", "1", "--delivery", "hls", "--chunk", "1M"])
        .arg("--dry-run")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("leave --chunk out"), "{stderr}");
    // A segment no single read can hold: 60 s of ProRes 2160p is 6.6 GB.
    let out = streamcap()
        .args(["streams", target, "--bitrate", "prores-2160p", "--count", "1", "--delivery", "hls:60"])
        .args(["--buffer", "200s", "--dry-run"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("more than one request may read"), "{stderr}");
    // The plan says what one request fetches.
    // A segment as long as the buffer could never be asked for in time: the fix named is the segment's.
    let out = streamcap()
        .args(["streams", target, "--bitrate", "8Mbit", "--count", "1", "--delivery", "hls:10", "--dry-run"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("or a shorter segment (--delivery hls:N)"), "{stderr}");
    let out = streamcap()
        .args(["streams", target, "--bitrate", "8Mbit", "--count", "1", "--delivery", "hls:3.003", "--dry-run"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("delivery: HLS segments of 3.003 s"), "{stdout}");
}

#[test]
fn a_job_file_takes_the_delivery_key() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("j.toml");
    let write = |delivery: &str| {
        let text = format!(
            "[[phase]]\nname = \"hls\"\n[phase.streams]\nbitrate = \"8Mbit\"\ncount = 2\ndelivery = \"{delivery}\"\n"
        );
        std::fs::write(&job, text).unwrap();
    };
    write("hls:3");
    let target = dir.path().to_str().unwrap();
    let out = streamcap().args(["run", target, "--job", job.to_str().unwrap(), "--dry-run"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("delivery: HLS segments of 3 s (2.86 MiB at 8 Mbit/s)"), "{stdout}");
    write("hls:x");
    let out = streamcap().args(["run", target, "--job", job.to_str().unwrap(), "--dry-run"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("line 6") && stderr.contains("'x' is not a segment length"), "{stderr}");
}

/// The text of a finished media playlist of `count` segments of 2 s named `{prefix}-NNN.ts`.
fn playlist_text(prefix: &str, count: usize) -> String {
    let mut text = String::from("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:VOD\n");
    for n in 0..count {
        text.push_str(&format!("#EXTINF:2.000,\n{prefix}-{n:03}.ts\n"));
    }
    text + "#EXT-X-ENDLIST\n"
}

/// A segmented title in `dir`: `count` segment files of the bytes 2 s of 4 Mbit/s need, and its playlist.
fn segmented_title(dir: &std::path::Path, prefix: &str, count: usize) -> std::path::PathBuf {
    for n in 0..count {
        let data: Vec<u8> = (0..segment() as usize).map(|i| ((i * 7 + n) % 251) as u8).collect();
        std::fs::write(dir.join(format!("{prefix}-{n:03}.ts")), data).unwrap();
    }
    let playlist = dir.join(format!("{prefix}.m3u8"));
    std::fs::write(&playlist, playlist_text(prefix, count)).unwrap();
    playlist
}

/// The arithmetic's bounds for a viewer of 2 s segments (the playlist's `#EXTINF`), widened by one either way.
fn playlist_bounds(stream: &serde_json::Value, buffer_s: f64) -> (f64, f64) {
    let watched = Duration::from_secs_f64(stream["watched_s"].as_f64().unwrap());
    let (low, high) = requests_after(watched, Duration::from_secs_f64(buffer_s), Duration::from_secs(2));
    (low - 1.0, high + 1.0)
}

/// The result of two viewers of 4 Mbit/s for 4 s of `library` (a directory or a playlist), from `work`.
fn play_library(work: &std::path::Path, library: &std::path::Path) -> serde_json::Value {
    let json = work.parent().unwrap().join("r.json");
    streamcap()
        .args(["streams", work.to_str().unwrap(), "--library", library.to_str().unwrap(), "--bitrate", "4Mbit"])
        .args(["--count", "2", "--duration", "4s", "--quiet", "--no-history", "--json", json.to_str().unwrap()])
        .assert()
        .success();
    read_json(&json)
}

/// Every viewer of the first step made as many requests as the arithmetic of 2 s segments says, each `bytes`.
fn each_viewer_as_the_arithmetic_says(streams: &serde_json::Value, bytes: u64) {
    for stream in streams["steps"][0]["per_stream"].as_array().unwrap() {
        let (low, high) = playlist_bounds(stream, streams["buffer_s"].as_f64().unwrap());
        let made = stream["requests"].as_f64().unwrap();
        assert!((low..=high).contains(&made), "{made} requests, the arithmetic {low}..{high}: {stream}");
        assert_eq!(stream["bytes"].as_u64(), Some(stream["requests"].as_u64().unwrap() * bytes));
    }
}

/// Every file of `dir` with its size, modification time and contents.
fn snapshot(dir: &std::path::Path) -> Vec<(String, u64, std::time::SystemTime, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let meta = std::fs::metadata(&path).unwrap();
            (path.display().to_string(), meta.len(), meta.modified().unwrap(), std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// A title that is a local playlist (`--library` holding a `.m3u8`): each request one open and read of a
/// segment file, as many per viewer as the arithmetic of 2 s segments says, each the segment's whole bytes;
/// the segment files are left as they were (size, time, contents).
#[test]
fn a_local_playlist_plays_its_segment_files_one_read_each_and_leaves_them_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let (library, work) = (dir.path().join("lib"), dir.path().join("work"));
    std::fs::create_dir_all(&library).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    segmented_title(&library, "film", 24);
    let before = snapshot(&library);
    let result = play_library(&work, &library);
    let streams = &result["streams"];
    assert_eq!(streams["delivery"], "playlist: segment files from a playlist, 24 segments of ~2 s");
    assert_eq!(streams["chunk_bytes"], segment(), "the largest segment stands for the chunk");
    let step = &streams["steps"][0];
    assert_eq!((step["streams_stalled"].as_u64(), step["errors"].as_u64()), (Some(0), Some(0)), "{step}");
    let requests = step["requests"].as_u64().unwrap();
    assert!(step["requests_per_s"].as_f64().unwrap() > 0.0, "{step}");
    // Every read one whole segment: the step's reads are its requests, and at most one per viewer more (a
    // segment still in flight when the watch ended is read, but not a request the viewer counted).
    let read = step["read_bytes"].as_u64().unwrap();
    assert_eq!(read % segment(), 0, "{step}");
    assert!((requests..=requests + 2).contains(&(read / segment())), "{read} bytes, {requests} requests: {step}");
    each_viewer_as_the_arithmetic_says(streams, segment());
    assert!(snapshot(&library) == before, "the segment files and the playlist are untouched");
}

/// What a playlist cannot be is refused before any work (exit 2), naming the playlist or the segment, saying
/// what to do.
#[test]
fn playlists_that_cannot_be_played_are_refused_with_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let lib = dir.path().join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    let playlist = segmented_title(&lib, "film", 4);
    let good = playlist_text("film", 4);
    let refuse = |text: &str, bitrate: &str, says: &[&str]| {
        std::fs::write(&playlist, text).unwrap();
        let out = streamcap()
            .args(["streams", work.to_str().unwrap(), "--library", playlist.to_str().unwrap()])
            .args(["--bitrate", bitrate, "--count", "1", "--dry-run"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {stderr}");
        for word in says {
            assert!(stderr.contains(word), "{text}: '{word}' not in {stderr}");
        }
    };
    let master = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=4000000\nhi/index.m3u8\n";
    refuse(master, "4Mbit", &["film.m3u8", "a master playlist", "give one of its variants"]);
    refuse(&good.replace("#EXT-X-ENDLIST\n", ""), "4Mbit", &["film.m3u8", "live or event playlist"]);
    let key = good.replace("#EXT-X-VERSION:3\n", "#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n");
    refuse(&key, "4Mbit", &["film.m3u8", "encrypted segments", "clear segments"]);
    let map = good.replace("#EXT-X-VERSION:3\n", "#EXT-X-MAP:URI=\"init.mp4\"\n");
    refuse(&map, "4Mbit", &["film.m3u8", "#EXT-X-MAP", "plain MPEG-TS"]);
    refuse(&good, "8Mbit", &["film-000.ts holds", "shorter in bytes than the bitrate", "lower --bitrate"]);
    std::fs::remove_file(lib.join("film-002.ts")).unwrap();
    refuse(&good, "4Mbit", &["film.m3u8", "film-002.ts cannot be found", "readable"]);
    // A local playlist as TARGET: the way to give it is said.
    let out = streamcap()
        .args(["streams", playlist.to_str().unwrap(), "--bitrate", "4Mbit", "--count", "1", "--dry-run"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is a local playlist: give it as --library"), "{stderr}");
}

/// Byte ranges of one file (`#EXT-X-BYTERANGE`, at offsets no page boundary): each request one open and one
/// direct read of the pages that hold the range; each viewer receives the ranges' bytes.
#[test]
fn a_local_playlist_of_byte_ranges_reads_each_range_once() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let range = 1_000_123u64;
    let data: Vec<u8> = (0..range as usize * 20 + 77).map(|i| (i % 241) as u8).collect();
    let library = dir.path().join("lib");
    std::fs::create_dir_all(&library).unwrap();
    std::fs::write(library.join("all.ts"), data).unwrap();
    let mut text = String::from("#EXTM3U\n#EXT-X-TARGETDURATION:2\n");
    for n in 0..20 {
        text.push_str(&format!("#EXTINF:2,\n#EXT-X-BYTERANGE:{range}@{}\nall.ts\n", n * range));
    }
    let playlist = library.join("br.m3u8");
    std::fs::write(&playlist, text + "#EXT-X-ENDLIST\n").unwrap();
    let result = play_library(&work, &playlist);
    let streams = &result["streams"];
    assert_eq!(streams["delivery"], "playlist: byte ranges from a playlist, 20 segments of ~2 s");
    let step = &streams["steps"][0];
    assert_eq!((step["streams_stalled"].as_u64(), step["errors"].as_u64()), (Some(0), Some(0)), "{step}");
    each_viewer_as_the_arithmetic_says(streams, range);
}

/// A playlist served by the test's own nginx (`TARGET` a list of `.m3u8` URLs): nginx's access log shows one
/// `GET` of each segment file per request, answered whole (200, the file's size; only the one in flight when
/// the step ended may be short), segment after segment in the playlist's order, as many per viewer as the
/// arithmetic of its 2 s segments says and as streamcap reported.
#[test]
fn a_playlist_served_by_nginx_is_one_get_per_segment_file_in_order() {
    let Some(nginx) = Nginx::start("a_playlist_served_by_nginx_is_one_get_per_segment_file_in_order") else {
        return;
    };
    let titles = ["a", "b"];
    let mut list = String::new();
    for prefix in titles {
        for n in 0..12 {
            nginx.media(&format!("{prefix}-{n:03}.ts"), segment() as usize);
        }
        nginx.file(&format!("{prefix}.m3u8"), playlist_text(prefix, 12).as_bytes());
        list.push_str(&nginx.url(&format!("{prefix}.m3u8")));
        list.push('\n');
    }
    let result = stream_urls(&list, 2, &[]);
    let streams = &result["streams"];
    assert_eq!(streams["delivery"], "playlist: segment files from 2 playlists, 24 segments of ~2 s");
    let step = &streams["steps"][0];
    assert_eq!((step["streams_stalled"].as_u64(), step["errors"].as_u64()), (Some(0), Some(0)), "{step}");
    let per_stream = step["per_stream"].as_array().unwrap();
    let log = nginx.settled_access_log();
    for (viewer, prefix) in titles.iter().enumerate() {
        // Combined log format: "GET /a-003.ts HTTP/1.1" 200 BYTES …
        let gets: Vec<(u64, u64)> = log
            .lines()
            .filter(|l| l.contains(&format!("\"GET /{prefix}-")))
            .map(|l| {
                assert!(l.contains(".ts HTTP/1.1\" 200 "), "every segment is a whole GET answered 200: {l}");
                let number = l.split(&format!("/{prefix}-")).nth(1).unwrap()[..3].parse().unwrap();
                let bytes = l.split("HTTP/1.1\" 200 ").nth(1).unwrap().split_whitespace().next().unwrap();
                (number, bytes.parse().unwrap())
            })
            .collect();
        let whole = gets.iter().filter(|(_, b)| *b == segment()).count();
        assert!(whole + 1 >= gets.len(), "{prefix}: every GET but the last is a whole segment file: {gets:?}");
        for pair in gets.windows(2) {
            assert_eq!(pair[1].0, (pair[0].0 + 1) % 12, "{prefix}: segments in the playlist's order: {gets:?}");
        }
        let stream = &per_stream[viewer];
        let (low, high) = playlist_bounds(stream, streams["buffer_s"].as_f64().unwrap());
        let counted = stream["requests"].as_u64().unwrap();
        eprintln!(
            "{prefix}: nginx {} GETs ({whole} whole), streamcap {counted}, arithmetic ±1 {low:.2}..{high:.2}",
            gets.len()
        );
        assert!((low..=high + 1.0).contains(&(gets.len() as f64)), "{prefix}: {} GETs, {low}..{high}", gets.len());
        assert!(counted as usize + 1 >= gets.len() && counted as usize <= gets.len(), "{prefix}: {counted} counted");
        assert!((low..=high).contains(&(counted as f64)), "{prefix}: {counted} requests, {low}..{high}");
    }
}
