//! Rendering results for people and for other programs: the terminal summary, the interval CSV, fio's JSON and
//! what `inspect` found beneath a target. Reads only `results` types (and the `sysinfo` fact types a result
//! holds).

mod check;
mod csv;
mod fio_json;
mod fio_logs;
mod inspect;
mod streams;
mod terminal;
pub mod vdbench_fs;
mod vdbench_raw;
mod verify;

pub use check::write_check_summary;
pub use csv::CsvSink;
pub use fio_json::{fio_json, write_fio_json};
pub use fio_logs::{LogPrefixes, write_fio_logs};
pub use inspect::write_inspect;
pub use streams::write_streams_summary;
pub use terminal::write_summary;
pub use vdbench_raw::{vdbench_raw_average, vdbench_raw_header, vdbench_raw_line};
pub use verify::write_verify_summary;
