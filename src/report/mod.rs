//! Rendering results for people and for other programs: the terminal summary and the interval CSV. Reads only
//! `results` types.

mod csv;
mod terminal;

pub use csv::CsvSink;
pub use terminal::write_summary;
