//! streamcap: a storage benchmark and capacity planner for media and content servers.
//!
//! The crate is layered so that data flows one way (see docs/architecture.md): `units` at the bottom;
//! `engine`, `workload`, `metrics`, `sysinfo` and `verify` above it, never importing each other; `spec` and `plan`;
//! `run`; `results`; `report`; and `app`/`cli` on top. Unsafe code is denied everywhere except the io_uring
//! engine (pushing entries, registering buffers) and `getrusage` in `sysinfo`, where each block carries a
//! `// SAFETY:` line.

#![deny(unsafe_code)]

pub mod app;
pub mod cli;
pub use streamcap_engine as engine;
pub use streamcap_escape as escape;
pub use streamcap_history as history;
pub use streamcap_limits as limits;
pub use streamcap_metrics as metrics;
#[cfg(feature = "mpi")]
pub use streamcap_mpi as mpi;
pub use streamcap_outfile as outfile;
pub use streamcap_plan as plan;
pub use streamcap_planning as planning;
pub use streamcap_report as report;
pub use streamcap_results as results;
pub use streamcap_run as run;
pub use streamcap_spec as spec;
pub use streamcap_streams as streams;
pub use streamcap_sysinfo as sysinfo;
pub use streamcap_units as units;
pub use streamcap_verify as verify;
pub use streamcap_workload as workload;
