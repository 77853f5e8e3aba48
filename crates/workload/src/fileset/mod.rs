//! File-set workloads, the pure part: the shape of a directory tree and the names in it, per-file sizes, which
//! file a thread takes next, and the shared record of which files and directories exist. No I/O, no clocks: the
//! run layer turns these answers into system calls.
//!
//! Nothing here holds a path per file. A tree of a million files is three integers and a root; a name is computed
//! from its index when it is needed, into a buffer the caller reuses.

mod claims;
mod select;
mod sizes;
mod state;
mod tree;

pub use claims::{FileClaims, MAX_SHARED_TREE_FILES};
pub use select::{FileSelector, Selection};
pub use sizes::FileSizes;
pub use state::BitSet;
pub use tree::{Placement, TreeShape};
