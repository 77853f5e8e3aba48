//! Rendering results for people and for other programs: the terminal summary and the interval CSV. Reads only
//! `results` types.

mod csv;
mod streams;
mod terminal;

pub use csv::CsvSink;
pub use streams::write_streams_summary;
pub use terminal::write_summary;
