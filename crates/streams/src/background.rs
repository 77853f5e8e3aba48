//! The server's other work during playback: what each background load (`spec::Load`) does, as one table with
//! what it models and why its numbers are what they are, the shape arithmetic a plan sizes each load from, and
//! what a load did in a step (`BackgroundFigures`). Pure: the loads run as schedules on the one I/O core
//! (`run::streams::background`), beside the viewers of every step of a phase, from its start to its end.
//!
//! What breaks playback on a real server is rarely the streams alone: a full library scan made playback stutter
//! and dropped HDD copies from over 100 to under 10 MB/s; trickplay (preview) generation reads whole files for
//! hours; a remux or transcode writes segments at 1,000–3,500× real time (a 1.5 GB film wrote 1.64 GB in about
//! 3 s); a tuner records broadcast streams of about 20 Mbit/s each; a scrub or parity check reads every byte of
//! the pool (issue 27 gathers the sources).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::spec::Load;
use crate::units::Bitrate;

/// One load's shape, in words and numbers.
#[derive(Debug, Clone, Copy)]
pub struct LoadShape {
    pub load: Load,
    /// What it models.
    pub models: &'static str,
    /// What it does on the storage, and why these numbers.
    pub shape: &'static str,
}

/// The loads streamcap runs beside viewers (`--during`).
pub const LOADS: [LoadShape; 5] = [
    LoadShape {
        load: Load::LibraryScan,
        models: "a media server's library scanner (Plex, Jellyfin, Emby): every file stat'ed and probed",
        shape: "stat, open and read the first 1 MiB of every title of the library, 4 files at once, as fast as \
                the storage answers, then start over: a probe (ffprobe) reads from a title's start until it has \
                found every stream, which for Matroska and MP4 is within the first 64 KiB–1 MiB (the top of \
                that range: the scanner's reads scattered over the disk are what hurts), and Jellyfin probes as \
                many files at once as the server has cores (its library scan fan-out; 4 of a small server's)",
    },
    LoadShape {
        load: Load::Thumbnails,
        models: "preview and trickplay generation (Jellyfin trickplay, Plex video preview thumbnails)",
        shape: "whole titles read start to end in 1 MiB reads, 4 in flight (the reader's buffer and the kernel's \
                readahead run ahead of the decoder), one title at a time, as fast as the storage answers: the \
                generator decodes keyframes through the whole file, and on a server it is the storage, not the \
                decoder, that sets its pace",
    },
    LoadShape {
        load: Load::Transcode,
        models: "a transcoder serving one viewer (HLS): a title read, 1080p segments written",
        shape: "a title of the library read in 1 MiB reads (4 in flight) at 20× its bitrate (the phase's highest \
                format), and \
                6 s segments of 1080p (8 Mbit/s) written at 20× real time (20 MB/s, a 6 MB segment every \
                0.3 s) into a directory streamcap creates; the oldest segments beyond 10 are deleted, as a \
                transcoder that deletes played segments does; the directory goes when the step ends",
    },
    LoadShape {
        load: Load::Recording,
        models: "a DVR recording broadcast TV (a tuner's streams)",
        shape: "2 recordings of 20 Mbit/s each (an ATSC or DVB-T2 multiplex carries about 19–20 Mbit/s), written \
                in 1 MiB writes at their own pace, each into a file streamcap creates and removes when the step \
                ends",
    },
    LoadShape {
        load: Load::Scrub,
        models: "the pool's integrity check: btrfs scrub, or a parity check (Unraid, mdadm's check, a ZFS scrub)",
        shape: "on btrfs, the kernel's own scrub (`btrfs scrub start -B` on the target's filesystem, started when a \
                step starts and cancelled when it ends; its bytes from `btrfs scrub status -R`): every copy of \
                every extent read and its checksum verified, at the rate the kernel chooses; on any other \
                filesystem a parity check's shape on the one I/O core: the whole device under the target read \
                start to end in 1 MiB reads, 4 in flight, as fast as it answers, read only (never a write), each \
                step from another place of the device so that no cache holds what it reads",
    },
];

/// Bytes a library scan reads from the start of each file.
pub const SCAN_HEADER_BYTES: u32 = 1 << 20;
/// Bytes per read of thumbnails and of the transcoder's source, and per write of transcode and recording.
pub const LOAD_IO_BYTES: u32 = 1 << 20;
/// Files a library scan probes at once.
pub const SCAN_PROBES: u32 = 4;
/// Reads a sequential reader (thumbnails, the transcoder's source) keeps in flight.
pub const READ_AHEAD: u32 = 4;
/// How much faster than real time the transcoder runs.
pub const TRANSCODE_MULTIPLE: f64 = 20.0;
/// The transcoder's output format, bits per second (1080p H.264, `spec::FORMATS`).
pub const TRANSCODE_OUTPUT: Bitrate = Bitrate(8_000_000);
/// Seconds of media per transcoded segment.
pub const SEGMENT_MEDIA: Duration = Duration::from_secs(6);
/// Segments the transcoder keeps; older ones are deleted.
pub const SEGMENTS_KEPT: u32 = 10;
/// Recordings at once, and each one's bitrate.
pub const RECORDINGS: u32 = 2;
pub const RECORDING_BITRATE: Bitrate = Bitrate(20_000_000);

/// The shape of a load by its name.
pub fn shape_of(load: Load) -> &'static LoadShape {
    LOADS.iter().find(|s| s.load == load).expect("every load has a row in LOADS")
}

/// The transcoder's figures for a source of `source` bitrate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TranscodeShape {
    /// The source read, bytes per second: multiple × the source's byte rate.
    pub read_bytes_per_sec: f64,
    /// Segments written, bytes per second: multiple × the output's byte rate.
    pub write_bytes_per_sec: f64,
    /// Bytes of one segment: its media time × the output's byte rate.
    pub segment_bytes: u64,
    /// Time between the starts of two segments: its media time ÷ the multiple.
    #[serde(serialize_with = "crate::units::serialize_secs")]
    pub segment_every: Duration,
}

impl TranscodeShape {
    pub fn of(source: Bitrate) -> TranscodeShape {
        let out = TRANSCODE_OUTPUT.byte_rate().bytes_per_sec();
        TranscodeShape {
            read_bytes_per_sec: TRANSCODE_MULTIPLE * source.byte_rate().bytes_per_sec(),
            write_bytes_per_sec: TRANSCODE_MULTIPLE * out,
            segment_bytes: (out * SEGMENT_MEDIA.as_secs_f64()).round() as u64,
            segment_every: SEGMENT_MEDIA.div_f64(TRANSCODE_MULTIPLE),
        }
    }
}

/// Each recording's write rate, bytes per second.
pub fn recording_bytes_per_sec() -> f64 {
    RECORDING_BITRATE.byte_rate().bytes_per_sec()
}

/// The time between two paced 1 MiB transfers at `bytes_per_sec`.
pub fn gap_at(bytes_per_sec: f64) -> Duration {
    Duration::from_secs_f64(f64::from(LOAD_IO_BYTES) / bytes_per_sec.max(1.0))
}

/// What one background load did over a step (or a phase: figures add up).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BackgroundFigures {
    /// The load's name (`library-scan` …).
    pub load: String,
    /// Files it went through: files scanned, titles read (started), segments or recordings written.
    pub files: u64,
    /// Bytes it read.
    pub read_bytes: u64,
    /// Bytes it wrote.
    pub written_bytes: u64,
    /// Seconds it ran.
    pub seconds: f64,
    /// Operations that failed (stat, open, read, write, delete).
    pub errors: u64,
}

impl BackgroundFigures {
    /// Files per second.
    pub fn files_per_sec(&self) -> f64 {
        if self.seconds > 0.0 { self.files as f64 / self.seconds } else { 0.0 }
    }

    /// Megabytes (10⁶ bytes) per second, read and written together.
    pub fn mb_per_sec(&self) -> f64 {
        if self.seconds > 0.0 { (self.read_bytes + self.written_bytes) as f64 / 1e6 / self.seconds } else { 0.0 }
    }

    /// Adds another step's figures of the same load.
    pub fn add(&mut self, other: &BackgroundFigures) {
        self.files += other.files;
        self.read_bytes += other.read_bytes;
        self.written_bytes += other.written_bytes;
        self.seconds += other.seconds;
        self.errors += other.errors;
    }

    /// "library-scan 41.2 files/s, 43.2 MB/s".
    pub fn words(&self) -> String {
        let what = match self.load.as_str() {
            "transcode" => "segments/s",
            "recording" => "recordings",
            "thumbnails" => "titles/s",
            _ => "files/s",
        };
        if self.load == "scrub" {
            return format!("{} {:.1} MB/s read", self.load, self.mb_per_sec());
        }
        if self.load == "recording" {
            return format!("{} {} {what}, {:.1} MB/s", self.load, self.files, self.mb_per_sec());
        }
        format!("{} {:.1} {what}, {:.1} MB/s", self.load, self.files_per_sec(), self.mb_per_sec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_load_has_one_row() {
        for load in Load::ALL {
            assert_eq!(LOADS.iter().filter(|s| s.load == load).count(), 1, "{load}");
            assert!(!shape_of(load).shape.is_empty());
        }
        assert_eq!(LOADS.len(), Load::ALL.len());
        let scrub =
            BackgroundFigures { load: "scrub".into(), read_bytes: 300_000_000, seconds: 3.0, ..Default::default() };
        assert_eq!(scrub.words(), "scrub 100.0 MB/s read");
    }

    #[test]
    fn transcode_reads_and_writes_at_its_multiple_of_real_time() {
        // A 2160p HEVC source (25 Mbit/s) at 20×: 500 Mbit/s read = 62.5 MB/s; 1080p out (8 Mbit/s) at 20×:
        // 160 Mbit/s = 20 MB/s, a 6 MB segment (6 s × 1 MB/s) every 0.3 s.
        let t = TranscodeShape::of(Bitrate(25_000_000));
        assert!((t.read_bytes_per_sec - 62.5e6).abs() < 1.0, "{t:?}");
        assert!((t.write_bytes_per_sec - 20e6).abs() < 1.0);
        assert_eq!(t.segment_bytes, 6_000_000);
        assert_eq!(t.segment_every, Duration::from_millis(300));
        // A segment every 0.3 s of 6 MB is the write rate.
        assert!((t.segment_bytes as f64 / t.segment_every.as_secs_f64() - t.write_bytes_per_sec).abs() < 1.0);
    }

    #[test]
    fn recordings_and_paced_transfers() {
        // 20 Mbit/s = 2.5 MB/s per recording: a 1 MiB write every 0.419 s.
        assert!((recording_bytes_per_sec() - 2.5e6).abs() < 1.0);
        let gap = gap_at(recording_bytes_per_sec());
        assert!((gap.as_secs_f64() - 1_048_576.0 / 2.5e6).abs() < 1e-6, "{gap:?}");
        let mut a = BackgroundFigures {
            load: "library-scan".into(),
            files: 20,
            read_bytes: 20 << 20,
            seconds: 2.0,
            ..Default::default()
        };
        assert_eq!(a.files_per_sec(), 10.0);
        a.add(&a.clone());
        assert_eq!((a.files, a.seconds), (40, 4.0));
        assert!((a.mb_per_sec() - 10.48576).abs() < 1e-6);
        assert_eq!(a.words(), "library-scan 10.0 files/s, 10.5 MB/s");
    }
}
