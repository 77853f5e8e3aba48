//! The shape of a file-set tree (vdbench fsd: depth, width, files per directory) and the names in it.
//!
//! Directories are numbered in level order: level 1 holds `width` directories, level 2 `width²`, … down to
//! `depth`. Directory `i` of level `l` (0-based) has the path whose components are the base-`width` digits of `i`,
//! most significant first, each shown 1-based: with width 4, directory 6 of level 2 is
//! `vdb.1_2.dir/vdb.2_3.dir`, as vdbench names them. Files are `vdb_f0001.file` … within a directory, and are
//! numbered globally in the order of the directories that hold them. Every name is computed from an index on
//! demand, so a tree of any size costs a few integers.

use std::fmt::Write;

/// Which directories hold files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// Only the deepest directories (vdbench's default); the root when depth is 0.
    Bottom,
    /// Every directory below the root (the root too when depth is 0).
    All,
}

/// A tree's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct TreeShape {
    pub depth: u32,
    pub width: u32,
    /// Files in each directory that holds files.
    pub files_per_dir: u64,
    pub placement: Placement,
}

/// Why a shape cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the tree is too large: {0}")]
pub struct ShapeError(pub String);

impl TreeShape {
    /// Checks that every count fits the index arithmetic (at most 2^48 files and directories).
    pub fn new(depth: u32, width: u32, files_per_dir: u64, placement: Placement) -> Result<TreeShape, ShapeError> {
        const LIMIT: u128 = 1 << 48;
        let shape = TreeShape { depth, width, files_per_dir, placement };
        let mut dirs: u128 = 0;
        let mut level: u128 = 1;
        // Every level is a path component of at least 12 bytes: deeper than this passes PATH_MAX (4096) anyway,
        // and the loop below must not run 4 billion times for a depth of u32::MAX with a width of 1.
        if depth > 256 {
            return Err(ShapeError(format!("depth {depth} is deeper than the 256 levels a path can hold")));
        }
        for _ in 0..depth {
            level *= u128::from(width);
            dirs += level;
            if dirs > LIMIT {
                return Err(ShapeError(format!("width {width} and depth {depth} make more than 2^48 directories")));
            }
        }
        let holders = if depth == 0 {
            1
        } else if placement == Placement::Bottom {
            level
        } else {
            dirs
        };
        if holders * u128::from(files_per_dir) > LIMIT {
            return Err(ShapeError(format!("{holders} directories of {files_per_dir} files exceed 2^48 files")));
        }
        Ok(shape)
    }

    /// Directories at `level` (1-based); level 0 is the root, which is not counted as a tree directory.
    pub fn dirs_at(&self, level: u32) -> u64 {
        u64::from(self.width).pow(level)
    }

    /// Directories below the root.
    pub fn dirs(&self) -> u64 {
        (1..=self.depth).map(|l| self.dirs_at(l)).sum()
    }

    /// Directories that hold files.
    pub fn file_dirs(&self) -> u64 {
        match (self.depth, self.placement) {
            (0, _) => 1,
            (d, Placement::Bottom) => self.dirs_at(d),
            (_, Placement::All) => self.dirs(),
        }
    }

    /// Files in the whole tree (before any total-size cap).
    pub fn files(&self) -> u64 {
        self.file_dirs() * self.files_per_dir
    }

    /// (level, index within level) of directory `dir` in level order (0-based over all directories).
    pub fn dir_level(&self, dir: u64) -> (u32, u64) {
        let mut rest = dir;
        for level in 1..=self.depth {
            let here = self.dirs_at(level);
            if rest < here {
                return (level, rest);
            }
            rest -= here;
        }
        (self.depth, rest)
    }

    /// Level-order number of the directory at (`level`, `index`).
    pub fn dir_number(&self, level: u32, index: u64) -> u64 {
        (1..level).map(|l| self.dirs_at(l)).sum::<u64>() + index
    }

    /// The parent of directory `dir`, or `None` when its parent is the root.
    pub fn parent(&self, dir: u64) -> Option<u64> {
        let (level, index) = self.dir_level(dir);
        (level > 1).then(|| self.dir_number(level - 1, index / u64::from(self.width)))
    }

    /// Appends the relative path of directory (`level`, `index`) to `out` (nothing for level 0).
    pub fn push_dir(&self, level: u32, index: u64, out: &mut String) {
        let width = u64::from(self.width.max(1));
        for l in 1..=level {
            let digit = index / width.pow(level - l) % width;
            if !out.is_empty() && !out.ends_with('/') {
                out.push('/');
            }
            write!(out, "vdb.{l}_{}.dir", digit + 1).expect("writing to a String cannot fail");
        }
    }

    /// (level, index within level) of the directory holding file-holding directory number `holder`.
    fn holder_dir(&self, holder: u64) -> (u32, u64) {
        match (self.depth, self.placement) {
            (0, _) => (0, 0),
            (d, Placement::Bottom) => (d, holder),
            (_, Placement::All) => self.dir_level(holder),
        }
    }

    /// Appends the relative path of file `file` (0-based over the tree) to `out`.
    pub fn push_file(&self, file: u64, out: &mut String) {
        let per = self.files_per_dir.max(1);
        let (level, index) = self.holder_dir(file / per);
        self.push_dir(level, index, out);
        if !out.is_empty() && !out.ends_with('/') {
            out.push('/');
        }
        write!(out, "vdb_f{:04}.file", file % per + 1).expect("writing to a String cannot fail");
    }

    /// Level-order number of the directory holding `file`, or `None` for the root.
    pub fn dir_of_file(&self, file: u64) -> Option<u64> {
        let (level, index) = self.holder_dir(file / self.files_per_dir.max(1));
        (level > 0).then(|| self.dir_number(level, index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(shape: &TreeShape, file: u64) -> String {
        let mut s = String::new();
        shape.push_file(file, &mut s);
        s
    }

    #[test]
    fn counts_follow_depth_width_and_placement() {
        let bottom = TreeShape::new(2, 3, 5, Placement::Bottom).unwrap();
        assert_eq!((bottom.dirs(), bottom.file_dirs(), bottom.files()), (12, 9, 45));
        let all = TreeShape::new(2, 3, 5, Placement::All).unwrap();
        assert_eq!((all.dirs(), all.file_dirs(), all.files()), (12, 12, 60));
        let flat = TreeShape::new(0, 0, 7, Placement::Bottom).unwrap();
        assert_eq!((flat.dirs(), flat.files()), (0, 7));
        assert!(TreeShape::new(8, 1000, 1, Placement::Bottom).is_err());
    }

    #[test]
    fn names_are_vdbench_style_and_distinct() {
        let shape = TreeShape::new(2, 4, 3, Placement::Bottom).unwrap();
        assert_eq!(name(&shape, 0), "vdb.1_1.dir/vdb.2_1.dir/vdb_f0001.file");
        // File 20 is the third file of leaf 6 = digits (1, 2) → vdb.1_2 / vdb.2_3.
        assert_eq!(name(&shape, 20), "vdb.1_2.dir/vdb.2_3.dir/vdb_f0003.file");
        let names: std::collections::HashSet<String> = (0..shape.files()).map(|f| name(&shape, f)).collect();
        assert_eq!(names.len() as u64, shape.files());
        let flat = TreeShape::new(0, 0, 2, Placement::Bottom).unwrap();
        assert_eq!(name(&flat, 1), "vdb_f0002.file");
    }

    #[test]
    fn parents_and_file_directories_agree_with_the_names() {
        let shape = TreeShape::new(3, 2, 1, Placement::All).unwrap();
        for dir in 0..shape.dirs() {
            let (level, index) = shape.dir_level(dir);
            assert_eq!(shape.dir_number(level, index), dir);
            let mut path = String::new();
            shape.push_dir(level, index, &mut path);
            if let Some(parent) = shape.parent(dir) {
                let (pl, pi) = shape.dir_level(parent);
                let mut ppath = String::new();
                shape.push_dir(pl, pi, &mut ppath);
                assert!(path.starts_with(&format!("{ppath}/")), "{path} under {ppath}");
            }
        }
        for file in 0..shape.files() {
            let dir = shape.dir_of_file(file).unwrap();
            let (level, index) = shape.dir_level(dir);
            let mut path = String::new();
            shape.push_dir(level, index, &mut path);
            assert!(name(&shape, file).starts_with(&format!("{path}/vdb_f")));
        }
    }
}
