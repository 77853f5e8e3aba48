//! Planning the background loads of a stream phase (`--during`): each named load (`spec::Load`) sized from its
//! shape in `streams::background` — the transcoder's source rate from the phase's highest format, the writers'
//! rates and segment sizes — and placed: reads go to the phase's own media (the library its viewers watch),
//! writes into a directory of streamcap's work directory. Refused where they cannot run: URLs (nothing local to
//! read), and writes without a work directory.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::facts::ScrubTarget;
use crate::spec::{Load, StreamsSpec};
use crate::units::serialize_secs;
use ::streams::StreamsConfig;
use ::streams::background::{
    LOAD_IO_BYTES, READ_AHEAD, RECORDINGS, SCAN_HEADER_BYTES, SCAN_PROBES, SEGMENTS_KEPT, TranscodeShape,
    recording_bytes_per_sec,
};

/// One background load of a stream phase, ready to run beside every step's viewers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BackgroundPlan {
    pub load: Load,
    /// What it reads: bytes per read (a scan reads this from each file's start; the others read files through).
    pub read_bytes: u32,
    /// Paced reads (the transcoder's source), bytes per second; `None`: as fast as the storage answers, one at a
    /// time.
    pub read_bytes_per_sec: Option<f64>,
    /// Readers at once, each its own worker going through the media from its own place (a scan's probes; 0 for
    /// a load that only writes).
    pub readers: u32,
    /// Reads each reader keeps in flight (read-ahead of a sequential reader; 1 for a scan's probe).
    pub depth: u32,
    /// Writers (recordings; 1 for a transcoder; 0 for a load that only reads).
    pub writers: u32,
    /// Each writer's pace, bytes per second (0 without writers).
    pub write_bytes_per_sec: f64,
    /// A transcoder's segments: bytes each (a recording's file grows instead: `None`).
    pub segment_bytes: Option<u64>,
    /// The time between segments (zero without segments); `segment_every_s` in JSON.
    #[serde(rename = "segment_every_s", serialize_with = "serialize_secs")]
    pub segment_every: Duration,
    /// Segments kept; older ones are deleted (0: every file is kept until the step ends).
    pub keep: u32,
    /// Where its files go: the work directory (`during-LOAD-STEP-N.bin`, each removed when its step ends);
    /// `None` for a load that only reads.
    pub dir: Option<PathBuf>,
    /// A scrub's target: btrfs's own scrub (no reader of streamcap's: `readers` 0), or the device a reader goes
    /// through start to end instead of the media.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scrub: Option<ScrubTarget>,
}

/// The background loads of a phase, in the order asked. `work_dir`: streamcap's work directory on a local
/// target; `remote`: the media are URLs; `scrub`: what a scrub reads under the target (`Facts::scrub`).
pub(super) fn plan_background(
    streams: &StreamsSpec,
    config: &StreamsConfig,
    work_dir: Option<&PathBuf>,
    remote: bool,
    scrub: Option<&ScrubTarget>,
) -> Result<Vec<BackgroundPlan>, String> {
    let Some(during) = &streams.during else { return Ok(Vec::new()) };
    if remote {
        return Err("background loads (--during) read and write the server's own storage: run streamcap on the \
                    server, against its media directory, not an http target"
            .into());
    }
    let top = config.mix.0.iter().map(|(f, _)| f.bitrate).max_by_key(|b| b.0).unwrap_or(crate::units::Bitrate(0));
    during.0.iter().map(|&load| background(load, top, work_dir, scrub)).collect()
}

fn background(
    load: Load,
    top: crate::units::Bitrate,
    work_dir: Option<&PathBuf>,
    scrub: Option<&ScrubTarget>,
) -> Result<BackgroundPlan, String> {
    let reads_only = BackgroundPlan {
        load,
        read_bytes: LOAD_IO_BYTES,
        read_bytes_per_sec: None,
        readers: 1,
        depth: READ_AHEAD,
        writers: 0,
        write_bytes_per_sec: 0.0,
        segment_bytes: None,
        segment_every: Duration::ZERO,
        keep: 0,
        dir: None,
        scrub: None,
    };
    let dir = || {
        work_dir.cloned().ok_or_else(|| {
            format!(
                "background load {load} writes into streamcap's work directory, and this run has none (with \
                 --library streams writes nothing): give library-scan or thumbnails, which only read"
            )
        })
    };
    Ok(match load {
        Load::LibraryScan => {
            BackgroundPlan { read_bytes: SCAN_HEADER_BYTES, readers: SCAN_PROBES, depth: 1, ..reads_only }
        }
        Load::Thumbnails => reads_only,
        Load::Transcode => {
            let t = TranscodeShape::of(top);
            BackgroundPlan {
                read_bytes_per_sec: Some(t.read_bytes_per_sec),
                writers: 1,
                write_bytes_per_sec: t.write_bytes_per_sec,
                segment_bytes: Some(t.segment_bytes),
                segment_every: t.segment_every,
                keep: SEGMENTS_KEPT,
                dir: Some(dir()?),
                ..reads_only
            }
        }
        Load::Recording => BackgroundPlan {
            read_bytes: 0,
            readers: 0,
            depth: 0,
            writers: RECORDINGS,
            write_bytes_per_sec: recording_bytes_per_sec(),
            dir: Some(dir()?),
            ..reads_only
        },
        Load::Scrub => scrub_plan(scrub, reads_only)?,
    })
}

/// A scrub: btrfs's own (the kernel reads: no reader of streamcap's), or a reader through the device.
fn scrub_plan(scrub: Option<&ScrubTarget>, reads_only: BackgroundPlan) -> Result<BackgroundPlan, String> {
    match scrub {
        Some(ScrubTarget::Btrfs { .. }) => {
            Ok(BackgroundPlan { read_bytes: 0, readers: 0, depth: 0, scrub: scrub.cloned(), ..reads_only })
        }
        Some(ScrubTarget::Device { .. }) => Ok(BackgroundPlan { scrub: scrub.cloned(), ..reads_only }),
        None => Err("background load scrub reads the pool or the device under the target, and none was found (the \
                     target is not a directory on btrfs or on a block device streamcap can name): leave scrub out, \
                     or run on the server's own filesystem"
            .into()),
    }
}

impl BackgroundPlan {
    /// One line for the plan's display.
    pub fn words(&self) -> String {
        let mut parts = Vec::new();
        match &self.scrub {
            Some(ScrubTarget::Btrfs { path }) => parts.push(format!(
                "btrfs scrub start -B on {} (every copy read and checked, at the kernel's pace), cancelled when \
                 each step ends",
                path.display()
            )),
            Some(ScrubTarget::Device { path, size }) => parts.push(format!(
                "a parity check's read of {} ({}) start to end, {} reads in flight, read only",
                path.display(),
                crate::units::Bytes(*size),
                self.depth
            )),
            None => {}
        }
        match (self.load, self.read_bytes_per_sec) {
            (Load::Scrub, _) => {}
            (Load::LibraryScan, _) => parts.push(format!(
                "stat and read the first {} KiB of every title, {} at once, over and over",
                self.read_bytes >> 10,
                self.readers
            )),
            (_, Some(rate)) => {
                parts.push(format!("a title read at {:.1} MB/s ({} reads in flight)", rate / 1e6, self.depth))
            }
            (_, None) if self.read_bytes > 0 => parts.push(format!(
                "whole titles read one at a time, {} reads in flight, as fast as the storage answers",
                self.depth
            )),
            _ => {}
        }
        if self.writers > 0 {
            let each = match self.segment_bytes {
                Some(b) => format!(
                    "{:.1} MB segments every {:.2} s, {} kept",
                    b as f64 / 1e6,
                    self.segment_every.as_secs_f64(),
                    self.keep
                ),
                None => "one growing file each".into(),
            };
            parts.push(format!(
                "{} writer(s) at {:.1} MB/s each ({each})",
                self.writers,
                self.write_bytes_per_sec / 1e6
            ));
        }
        format!("{}: {}", self.load, parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::During;

    fn spec(during: &str) -> StreamsSpec {
        StreamsSpec {
            format: Some("2160p".parse().unwrap()),
            max: Some(true),
            during: Some(during.parse::<During>().unwrap()),
            ..StreamsSpec::default()
        }
    }

    #[test]
    fn loads_are_sized_from_their_shapes_and_the_phase_format() {
        let s = spec("library-scan,transcode,recording,thumbnails");
        let config = crate::streams_config(&s, None);
        let work = PathBuf::from("/t/.streamcap/run");
        let plans = plan_background(&s, &config, Some(&work), false, None).unwrap();
        let names: Vec<Load> = plans.iter().map(|p| p.load).collect();
        assert_eq!(names, vec![Load::LibraryScan, Load::Transcode, Load::Recording, Load::Thumbnails]);
        assert_eq!((plans[0].read_bytes, plans[0].read_bytes_per_sec, plans[0].dir.as_ref()), (1 << 20, None, None));
        assert_eq!((plans[0].readers, plans[0].depth, plans[3].readers, plans[3].depth), (4, 1, 1, 4));
        // Transcode of the 2160p (25 Mbit/s) source at 20×: 62.5 MB/s read, 20 MB/s of 6 MB segments written.
        let t = &plans[1];
        assert!((t.read_bytes_per_sec.unwrap() - 62.5e6).abs() < 1.0);
        assert!((t.write_bytes_per_sec - 20e6).abs() < 1.0);
        assert_eq!((t.segment_bytes, t.keep, t.writers), (Some(6_000_000), 10, 1));
        assert_eq!(t.dir.as_deref(), Some(work.as_path()));
        let r = &plans[2];
        assert_eq!((r.writers, r.read_bytes, r.segment_bytes, r.readers), (2, 0, None, 0));
        assert!((r.write_bytes_per_sec - 2.5e6).abs() < 1.0);
        assert!(t.words().contains("62.5 MB/s") && r.words().contains("2 writer(s) at 2.5 MB/s"), "{}", r.words());
    }

    #[test]
    fn loads_are_refused_where_they_cannot_run() {
        let s = spec("library-scan");
        let config = crate::streams_config(&s, None);
        assert!(plan_background(&s, &config, None, true, None).unwrap_err().contains("http target"));
        // A scan reads only: no work directory needed.
        assert_eq!(plan_background(&s, &config, None, false, None).unwrap().len(), 1);
        let w = spec("transcode");
        assert!(plan_background(&w, &config, None, false, None).unwrap_err().contains("work directory"));
        // A scrub needs btrfs or a device beneath the target.
        let scrub = spec("scrub");
        assert!(plan_background(&scrub, &config, None, false, None).unwrap_err().contains("leave scrub out"));
    }

    #[test]
    fn a_scrub_is_btrfs_s_own_or_a_read_only_pass_over_the_device() {
        let s = spec("scrub");
        let config = crate::streams_config(&s, None);
        let btrfs = ScrubTarget::Btrfs { path: PathBuf::from("/srv") };
        let plan = &plan_background(&s, &config, None, false, Some(&btrfs)).unwrap()[0];
        // The kernel reads: no reader of streamcap's, nothing written.
        assert_eq!((plan.readers, plan.writers, plan.dir.as_ref()), (0, 0, None));
        assert!(plan.words().contains("btrfs scrub start -B on /srv"), "{}", plan.words());
        let device = ScrubTarget::Device { path: PathBuf::from("/dev/sdb"), size: 4 << 40 };
        let plan = &plan_background(&s, &config, None, false, Some(&device)).unwrap()[0];
        assert_eq!((plan.readers, plan.depth, plan.read_bytes, plan.writers), (1, 4, 1 << 20, 0));
        assert!(
            plan.words().contains("read of /dev/sdb (4 TiB) start to end, 4 reads in flight, read only"),
            "{}",
            plan.words()
        );
    }
}
