//! Rendering results for people and for other programs: the terminal summary, the interval CSV and fio's JSON. Reads only
//! `results` types.

mod check;
mod csv;
mod fio_json;
mod fio_logs;
mod planning;
mod streams;
mod terminal;
pub mod vdbench_fs;
mod vdbench_raw;

pub use check::write_check_summary;
pub use csv::CsvSink;
pub use fio_json::{fio_json, write_fio_json};
pub use fio_logs::{LogPrefixes, write_fio_logs};
pub use planning::{PlanningStyle, write_planning};
pub use streams::write_streams_summary;
pub use terminal::write_summary;
pub use vdbench_raw::{vdbench_raw_average, vdbench_raw_header, vdbench_raw_line};
