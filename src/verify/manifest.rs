//! What a kept run leaves so that `--verify-only` can check its data later: a small manifest (`verify.json`:
//! algorithm, block size, seed, files) and the generation of every block (`verify.map`: one byte per block, the
//! files' blocks one after another), both in the run's work directory.
//!
//! Only the conversion lives here; the run layer writes and reads the two files. A manifest names its files by
//! their names inside the work directory, never by a path, so a kept run can be moved and still be checked.

use serde::{Deserialize, Serialize};

use super::{Algorithm, Verifier};

pub const MANIFEST_FILE: &str = "verify.json";
pub const MAP_FILE: &str = "verify.map";
const FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Version of this layout.
    pub format: u32,
    pub algorithm: Algorithm,
    /// Bytes per verified block.
    pub block_size: u32,
    pub seed: u64,
    pub files: Vec<ManifestFile>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    /// File name inside the work directory (`data.0`).
    pub name: String,
    /// Bytes.
    pub size: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("the verification manifest cannot be read: {0}")]
    Syntax(String),
    #[error("the verification manifest has format {0}; this streamcap reads format {FORMAT}")]
    Format(u32),
    #[error("the verification manifest names '{0}', which is not a plain file name")]
    Name(String),
    #[error("the block map holds {found} bytes; the manifest's files have {expected} blocks")]
    MapSize { expected: u64, found: u64 },
}

impl Manifest {
    /// The manifest of `verifier`'s run, and its block map.
    pub fn of(verifier: &Verifier) -> (Manifest, Vec<u8>) {
        let files: Vec<ManifestFile> = verifier
            .files()
            .map(|(path, size)| ManifestFile {
                name: std::path::Path::new(path)
                    .file_name()
                    .map_or_else(|| path.into(), |n| n.to_string_lossy().into()),
                size,
            })
            .collect();
        let map = (0..files.len() as u32).flat_map(|f| verifier.generations(f)).collect();
        let manifest = Manifest {
            format: FORMAT,
            algorithm: verifier.algorithm(),
            block_size: verifier.block_size(),
            seed: verifier.seed(),
            files,
        };
        (manifest, map)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a manifest always serialises")
    }

    pub fn from_json(text: &str) -> Result<Manifest, ManifestError> {
        let manifest: Manifest = serde_json::from_str(text).map_err(|e| ManifestError::Syntax(e.to_string()))?;
        if manifest.format != FORMAT {
            return Err(ManifestError::Format(manifest.format));
        }
        if let Some(bad) = manifest.files.iter().find(|f| !is_plain_name(&f.name)) {
            return Err(ManifestError::Name(bad.name.clone()));
        }
        if manifest.block_size == 0 {
            return Err(ManifestError::Syntax("block_size is 0".into()));
        }
        Ok(manifest)
    }

    /// A verifier for this manifest's files at `paths` (same order), with the generations of `map`. `keep`: how
    /// many bad blocks to keep with their details.
    pub fn verifier(&self, paths: Vec<String>, map: &[u8], keep: usize) -> Result<Verifier, ManifestError> {
        let block = u64::from(self.block_size);
        let expected: u64 = self.files.iter().map(|f| f.size.div_ceil(block)).sum();
        if map.len() as u64 != expected {
            return Err(ManifestError::MapSize { expected, found: map.len() as u64 });
        }
        let files = paths.into_iter().zip(&self.files).map(|(p, f)| (p, f.size)).collect();
        let verifier = Verifier::new(self.algorithm, self.block_size, self.seed, files, keep);
        let mut at = 0;
        for (i, file) in self.files.iter().enumerate() {
            let n = file.size.div_ceil(block) as usize;
            verifier.set_generations(i as u32, &map[at..at + n]);
            at += n;
        }
        Ok(verifier)
    }
}

/// A name without a directory part: `data.0`, never `../x` or `a/b`.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('\0')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_and_its_map_give_back_the_same_generations() {
        let v = Verifier::new(
            Algorithm::Sha256,
            4096,
            99,
            vec![("/t/w/data.0".into(), 12288), ("/t/w/data.1".into(), 5000)],
            5,
        );
        let mut buf = vec![0u8; 8192];
        assert!(v.begin_write(0, 4096, &mut buf));
        v.end_write(0, 4096, 8192, true);
        let (manifest, map) = Manifest::of(&v);
        assert_eq!(manifest.files[1], ManifestFile { name: "data.1".into(), size: 5000 });
        assert_eq!(map, vec![0, 1, 1, 0, 0]);
        let back = Manifest::from_json(&manifest.to_json()).unwrap();
        assert_eq!(back, manifest);
        let again = back.verifier(vec!["a".into(), "b".into()], &map, 5).unwrap();
        assert_eq!(again.generations(0), vec![0, 1, 1]);
        assert_eq!((again.seed(), again.block_size(), again.algorithm()), (99, 4096, Algorithm::Sha256));
        assert!(matches!(
            back.verifier(vec!["a".into(), "b".into()], &map[1..], 5),
            Err(ManifestError::MapSize { .. })
        ));
    }

    #[test]
    fn names_with_a_directory_part_are_refused() {
        let mut manifest =
            Manifest { format: 1, algorithm: Algorithm::Crc32c, block_size: 4096, seed: 1, files: vec![] };
        manifest.files.push(ManifestFile { name: "../etc/passwd".into(), size: 1 });
        assert!(matches!(Manifest::from_json(&manifest.to_json()), Err(ManifestError::Name(_))));
        manifest.files[0].name = "data.0".into();
        manifest.format = 9;
        assert!(matches!(Manifest::from_json(&manifest.to_json()), Err(ManifestError::Format(9))));
    }
}
