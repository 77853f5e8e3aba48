//! Rendering results for people and for other programs: the terminal summary and the interval CSV. Reads only
//! `results` types.

mod csv;
mod terminal;
pub mod vdbench_fs;

pub use csv::CsvSink;
pub use terminal::write_summary;
