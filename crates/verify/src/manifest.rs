//! What a kept run leaves so that `--verify-only` can check its data later: a small manifest (`verify.json`:
//! algorithm, block size, seed, files) and the generation of every block (`verify.map`: one byte per block, the
//! files' blocks one after another), both in the run's work directory.
//!
//! Only the conversion lives here; the run layer writes and reads the two files. A manifest names its data files
//! by their names inside the work directory, never by a path, so a kept run can be moved and still be checked.
//! The files of file-set trees (which live beside the work directory, or under another anchor) are named by the
//! tree's root and their path inside it; the block map holds the data files' blocks, then the trees'.

use std::path::{Path, PathBuf};

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
    /// The block map is a journal the run kept while it wrote (vdbench journal=): blocks may be marked in flight,
    /// and hold either of two generations (`map/journal.rs`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub journaled: bool,
    /// File-set trees whose files were verified, after `files` in the block map.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trees: Vec<ManifestTree>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestTree {
    /// The tree's root directory (`ANCHOR/.streamcap/fileset-NAME`).
    pub root: String,
    /// Its files, each named by its path inside the root (`vdb.1_1.dir/vdb_f0001.file`).
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
    #[error("the verification manifest names '{0}', which is not a plain file name (or a path inside a tree)")]
    Name(String),
    #[error("the block map holds {found} bytes; the manifest's files have {expected} blocks")]
    MapSize { expected: u64, found: u64 },
}

impl Manifest {
    /// The manifest of `verifier`'s run, and its block map. `trees`: the root of each verified file-set tree and
    /// the number of its first file in the verifier (in order; the files before the first tree are data files).
    pub fn of(verifier: &Verifier, trees: &[(&Path, u32)]) -> (Manifest, Vec<u8>) {
        let all: Vec<(&str, u64)> = verifier.files().collect();
        let first_tree = trees.first().map_or(all.len(), |t| t.1 as usize);
        let files = all[..first_tree]
            .iter()
            .map(|&(path, size)| ManifestFile {
                name: Path::new(path).file_name().map_or_else(|| path.into(), |n| n.to_string_lossy().into()),
                size,
            })
            .collect();
        let trees = trees
            .iter()
            .enumerate()
            .map(|(i, &(root, first))| {
                let end = trees.get(i + 1).map_or(all.len(), |t| t.1 as usize);
                let inside = |path: &str| {
                    Path::new(path).strip_prefix(root).map_or_else(|_| path.into(), |p| p.to_string_lossy().into())
                };
                ManifestTree {
                    root: root.display().to_string(),
                    files: all[first as usize..end]
                        .iter()
                        .map(|&(path, size)| ManifestFile { name: inside(path), size })
                        .collect(),
                }
            })
            .collect();
        let map = (0..all.len() as u32).flat_map(|f| verifier.generations(f)).collect();
        let manifest = Manifest {
            format: FORMAT,
            algorithm: verifier.algorithm(),
            block_size: verifier.block_size(),
            seed: verifier.seed(),
            files,
            journaled: false,
            trees,
        };
        (manifest, map)
    }

    /// Every file, data files first, then each tree's: (its path, given the kept run's directory `dir`; its size).
    pub fn paths(&self, dir: &Path) -> Vec<(PathBuf, u64)> {
        let data = self.files.iter().map(|f| (dir.join(&f.name), f.size));
        let trees = self.trees.iter().flat_map(|t| t.files.iter().map(|f| (Path::new(&t.root).join(&f.name), f.size)));
        data.chain(trees).collect()
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
        let tree_files = manifest.trees.iter().flat_map(|t| &t.files);
        if let Some(bad) = tree_files.clone().find(|f| !f.name.split('/').all(is_plain_name)) {
            return Err(ManifestError::Name(bad.name.clone()));
        }
        if let Some(bad) = manifest.trees.iter().find(|t| !Path::new(&t.root).is_absolute()) {
            return Err(ManifestError::Name(bad.root.clone()));
        }
        if manifest.block_size == 0 {
            return Err(ManifestError::Syntax("block_size is 0".into()));
        }
        Ok(manifest)
    }

    /// Blocks in the map: every file's, data files first, then the trees'.
    pub fn blocks(&self) -> u64 {
        let block = u64::from(self.block_size);
        self.all_files().map(|f| f.size.div_ceil(block)).sum()
    }

    fn all_files(&self) -> impl Iterator<Item = &ManifestFile> {
        self.files.iter().chain(self.trees.iter().flat_map(|t| &t.files))
    }

    /// A verifier for this manifest's files at `paths` (same order as [`paths`](Self::paths)), with the
    /// generations of `map`. `keep`: how many bad blocks to keep with their details.
    pub fn verifier(&self, paths: Vec<String>, map: &[u8], keep: usize) -> Result<Verifier, ManifestError> {
        let block = u64::from(self.block_size);
        let expected = self.blocks();
        if map.len() as u64 != expected {
            return Err(ManifestError::MapSize { expected, found: map.len() as u64 });
        }
        let files = paths.into_iter().zip(self.all_files()).map(|(p, f)| (p, f.size)).collect();
        let mut verifier = Verifier::new(self.algorithm, self.block_size, self.seed, files, keep);
        let mut at = 0;
        for (i, file) in self.all_files().enumerate() {
            let n = file.size.div_ceil(block) as usize;
            if self.journaled {
                verifier.recover_keys(i as u32, &map[at..at + n]);
            } else {
                verifier.set_generations(i as u32, &map[at..at + n]);
            }
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
        let (manifest, map) = Manifest::of(&v, &[]);
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

    /// The files of a file-set tree are named inside their tree's root, after the data files, in map order.
    #[test]
    fn tree_files_are_named_inside_their_root_and_follow_the_data_files() {
        let files = vec![
            ("/t/.streamcap/run-1/data.0".into(), 4096),
            ("/a/.streamcap/fileset-f/d1/f1".into(), 8192),
            ("/a/.streamcap/fileset-f/d1/f2".into(), 4096),
        ];
        let v = Verifier::new(Algorithm::Crc32c, 4096, 3, files, 5);
        let mut buf = vec![0u8; 4096];
        assert!(v.begin_write(2, 0, &mut buf));
        v.end_write(2, 0, 4096, true);
        let root = Path::new("/a/.streamcap/fileset-f");
        let (manifest, map) = Manifest::of(&v, &[(root, 1)]);
        assert_eq!(manifest.files, vec![ManifestFile { name: "data.0".into(), size: 4096 }]);
        assert_eq!(manifest.trees[0].files[1], ManifestFile { name: "d1/f2".into(), size: 4096 });
        assert_eq!(map, vec![0, 0, 0, 1]);
        let back = Manifest::from_json(&manifest.to_json()).unwrap();
        let paths = back.paths(Path::new("/moved/run-1"));
        assert_eq!(paths[0].0, Path::new("/moved/run-1/data.0"));
        assert_eq!(paths[2], (PathBuf::from("/a/.streamcap/fileset-f/d1/f2"), 4096));
        let names = paths.iter().map(|(p, _)| p.display().to_string()).collect();
        assert_eq!(back.verifier(names, &map, 5).unwrap().generations(2), vec![1]);
        let mut bad = manifest.clone();
        bad.trees[0].files[0].name = "d1/../../x".into();
        assert!(matches!(Manifest::from_json(&bad.to_json()), Err(ManifestError::Name(_))));
        bad.trees[0].files[0].name = "d1/f1".into();
        bad.trees[0].root = "relative".into();
        assert!(matches!(Manifest::from_json(&bad.to_json()), Err(ManifestError::Name(_))));
    }

    #[test]
    fn names_with_a_directory_part_are_refused() {
        let mut manifest = Manifest {
            format: 1,
            algorithm: Algorithm::Crc32c,
            block_size: 4096,
            seed: 1,
            files: vec![],
            journaled: false,
            trees: vec![],
        };
        manifest.files.push(ManifestFile { name: "../etc/passwd".into(), size: 1 });
        assert!(matches!(Manifest::from_json(&manifest.to_json()), Err(ManifestError::Name(_))));
        manifest.files[0].name = "data.0".into();
        manifest.format = 9;
        assert!(matches!(Manifest::from_json(&manifest.to_json()), Err(ManifestError::Format(9))));
    }
}
