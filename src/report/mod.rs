//! Rendering results for people and for other programs: the terminal summary and the interval CSV. Reads only
//! `results` types.

mod csv;
mod terminal;
mod vdbench_raw;

pub use csv::CsvSink;
pub use terminal::write_summary;
pub use vdbench_raw::{vdbench_raw_average, vdbench_raw_header, vdbench_raw_line};
