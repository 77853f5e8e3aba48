//! What one worker's search for the queue depth that meets a latency target found (fio's latency_target): plain
//! data the run fills in and the results carry. It does not search; `run::depth_search` does.

use serde::{Deserialize, Serialize};

/// The end of one worker's depth search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DepthFound {
    /// The queue depth the worker was running at when it ended (fio's latency_depth).
    pub depth: u32,
    /// The deepest queue it could use: its iodepth.
    pub max_depth: u32,
    /// Windows judged.
    pub windows: u32,
    /// Of those, the windows that met the target.
    pub windows_met: u32,
    /// Whether the last window judged met the target; `None` when the run ended before a window was judged.
    pub met: Option<bool>,
    /// The depth held through a last window and the worker stopped there, as fio ends a latency search.
    pub settled: bool,
    /// I/Os completed in the last window judged (fio's figures cover only that window once the search settles;
    /// streamcap's totals cover the whole run).
    pub window_ops: u64,
    /// Bytes they transferred.
    pub window_bytes: u64,
    /// The window's length, µs (shorter than latency_window when, at 100 %, a late I/O ended it).
    pub window_us: u64,
}
