//! The media a `streams` run reads: streamcap's own test media written into its work directory (removed
//! afterwards), the user's files with `--use-existing` (never written), or remote URLs; and how a viewer's key
//! picks a file. Also where the run happens (`Site`), as the result records it.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, bail};

use crate::plan::{FilePlan, TargetKind, TargetPlan};
use crate::results::TargetInfo;
use crate::run::{WorkDir, direct_io_supported, fill, run_id};
use crate::streams::{MediaFile, MediaKey, StreamsConfig};
use crate::sysinfo::HostFacts;
use crate::units::Bytes;
/// Media ready to be read: the files and how a viewer's key maps to one.
pub struct Media {
    pub files: Vec<MediaFile>,
    keys: Vec<MediaKey>,
    /// The user's files are read in turn, whatever the key.
    existing: bool,
    pub direct: bool,
    pub own: bool,
    _work: Option<WorkDir>,
}

impl Media {
    pub(super) fn index_of(&self, key: MediaKey) -> u32 {
        if self.existing {
            let n = self.files.len() as u32;
            return (key.number.wrapping_add(key.format as u32 * 7919)) % n;
        }
        self.keys.binary_search(&key).map(|i| i as u32).unwrap_or(0)
    }

    /// Removes streamcap's own test media now (also done on drop).
    pub fn remove(&mut self) -> Result<()> {
        if let Some(work) = self._work.as_mut() {
            work.remove().context("cannot remove the test media")?;
        }
        Ok(())
    }
}

/// Where the run happens, as the result records it.
pub(super) struct Site {
    pub(super) host: HostFacts,
    pub(super) target: TargetInfo,
    /// Why the target's data lives in RAM, if it does.
    pub(super) memory_backed: Option<String>,
}

impl Site {
    pub(super) fn local(gathered: &super::facts::Gathered) -> Site {
        Site {
            host: gathered.host.clone(),
            target: gathered.target_info("directory"),
            memory_backed: gathered.facts.memory_backed.clone(),
        }
    }
}

impl Media {
    /// The work directory holding streamcap's own test media, if it wrote any.
    pub fn work_dir(&self) -> Option<&Path> {
        self._work.as_ref().map(|w| w.path())
    }

    /// Remote media: the probed URLs, assigned to viewers as the user's own files are.
    pub fn remote(files: Vec<MediaFile>, keys: Vec<MediaKey>) -> Media {
        Media { files, keys, existing: true, direct: false, own: false, _work: None }
    }
}

/// Writes the test media a run needs into TARGET/.streamcap/<run id>/ (removed when `Media` is dropped), or
/// lists the user's files in `existing` (never written).
pub fn prepare_media(
    target: &Path,
    config: &StreamsConfig,
    keys: Vec<MediaKey>,
    existing: Option<&Path>,
    buffered: bool,
    keep: bool,
    interrupted: &AtomicBool,
) -> Result<Media> {
    if let Some(dir) = existing {
        let min = (0..config.mix.0.len()).map(|f| config.chunk_bytes(f)).max().unwrap_or(4096);
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
            let entry = entry?;
            let meta = entry.metadata()?;
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            if meta.is_file() && !hidden && meta.len() >= min {
                files.push(MediaFile { path: entry.path(), size: meta.len() / 4096 * 4096, url: None });
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        if files.is_empty() {
            bail!("{} holds no file of at least one chunk ({min} bytes) to read", dir.display());
        }
        let direct = !buffered && direct_io_supported(&files[0].path).unwrap_or(false);
        return Ok(Media { files, keys, existing: true, direct, own: false, _work: None });
    }
    let fs = crate::sysinfo::filesystem_of(target).ok();
    let total: u64 = keys.iter().map(|k| config.media_bytes(k.format)).sum();
    if let Some(fs) = &fs
        && fs.total.0 > 0
        && total + (64 << 20) > fs.free.0
    {
        bail!(
            "the test media needs {} but {} has {} free: shorten --media-length, use --files one or a smaller \
             library, or read existing files with --use-existing DIR",
            Bytes(total),
            target.display(),
            fs.free
        );
    }
    let work_dir = target.join(".streamcap").join(run_id());
    let plans: Vec<FilePlan> = keys
        .iter()
        .map(|k| FilePlan {
            path: work_dir.join(format!("media-{}-{}.{}", k.format, k.number, "bin")),
            size: Bytes(config.media_bytes(k.format)),
            created: true,
        })
        .collect();
    let target_plan = TargetPlan {
        kind: TargetKind::Directory,
        path: target.to_path_buf(),
        work_dir: Some(work_dir),
        files: plans.clone(),
        writes_allowed: true,
        memory_backed: None,
    };
    let work = WorkDir::create(&target_plan, keep)?;
    let direct = !buffered && direct_io_supported(&plans[0].path).unwrap_or(false);
    let refs: Vec<&FilePlan> = plans.iter().collect();
    fill(&refs, direct, interrupted, &mut |_, _| {})?;
    let files = plans.iter().map(|p| MediaFile { path: p.path.clone(), size: p.size.0, url: None }).collect();
    Ok(Media { files, keys, existing: false, direct, own: true, _work: Some(work) })
}
