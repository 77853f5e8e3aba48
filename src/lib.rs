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
pub mod engine;
pub mod escape;
pub mod history;
pub mod limits;
pub mod metrics;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod outfile;
pub mod plan;
pub mod planning;
pub mod report;
pub mod results;
pub mod run;
pub mod spec;
pub mod streams;
pub mod sysinfo;
pub mod units;
pub mod verify;
pub mod workload;
