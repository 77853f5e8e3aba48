//! The interval CSV (`--csv FILE`): one row per reporting interval of every phase, written as the run goes so a
//! long run loses nothing and can be watched with `tail -f`. Columns are fixed for a run: the I/O figures, then
//! busy % and MB/s of each device beneath the target. The file follows the output-file rule (`crate::outfile`):
//! created with its header and first row as a temporary renamed into place, never through a symlink, then
//! appended to through its descriptor; `-` is standard output (where phase names are escaped for the terminal).

use std::io;
use std::path::{Path, PathBuf};

use crate::outfile::{Stream, create_stream, is_stdout};
use crate::results::IntervalPoint;

pub struct CsvSink {
    path: PathBuf,
    /// Created with the first row, so a run that fails before its first interval leaves no empty file.
    writer: Option<csv::Writer<Stream>>,
}

const IO_COLUMNS: [&str; 16] = [
    "phase",
    "phase_name",
    "start_s",
    "length_s",
    "read_iops",
    "read_mbps",
    "read_lat_mean_us",
    "read_lat_p99_us",
    "read_lat_max_us",
    "write_iops",
    "write_mbps",
    "write_lat_mean_us",
    "write_lat_p99_us",
    "write_lat_max_us",
    "errors",
    "cpu_pct",
];

impl CsvSink {
    /// A sink for `path`; the file is created (or replaced) when the first row arrives. The caller checks
    /// beforehand that it can be written (`app::outputs`); the path is judged again then.
    pub fn new(path: &Path) -> CsvSink {
        CsvSink { path: path.to_path_buf(), writer: None }
    }

    pub fn write(&mut self, phase: usize, phase_name: &str, point: &IntervalPoint) -> io::Result<()> {
        let us = |ns: f64| format!("{:.1}", ns / 1e3);
        let name = if is_stdout(&self.path) { crate::escape::for_terminal(phase_name) } else { phase_name.into() };
        let mut row = vec![
            (phase + 1).to_string(),
            name.to_string(),
            format!("{:.3}", point.start_s),
            format!("{:.3}", point.length_s),
        ];
        let mut errors = 0;
        for class in [&point.read, &point.write] {
            match class {
                Some(c) => {
                    errors += c.errors;
                    row.extend([
                        format!("{:.1}", c.iops),
                        format!("{:.2}", c.mbps),
                        us(c.lat_mean_ns),
                        us(c.lat_p99_ns as f64),
                        us(c.lat_max_ns as f64),
                    ]);
                }
                None => row.extend(["0", "0", "", "", ""].map(String::from)),
            }
        }
        row.push(errors.to_string());
        row.push(format!("{:.1}", point.cpu_pct));
        for d in &point.devices {
            row.extend([format!("{:.1}", d.busy_pct), format!("{:.2}", d.read_mbps), format!("{:.2}", d.write_mbps)]);
        }
        match &mut self.writer {
            Some(writer) => {
                writer.write_record(&row)?;
                // Flush each row: the file is for watching and for surviving an abrupt end.
                writer.flush()
            }
            None => {
                let mut first = csv::Writer::from_writer(Vec::new());
                first.write_record(header(point))?;
                first.write_record(&row)?;
                let bytes = first.into_inner().map_err(|e| io::Error::other(e.to_string()))?;
                let stream = create_stream(&self.path, &bytes).map_err(io::Error::other)?;
                self.writer = Some(csv::Writer::from_writer(stream));
                Ok(())
            }
        }
    }
}

/// The fixed I/O columns, then three per device beneath the target.
fn header(point: &IntervalPoint) -> Vec<String> {
    let mut header: Vec<String> = IO_COLUMNS.iter().map(|s| s.to_string()).collect();
    for d in &point.devices {
        header.extend([
            format!("{}_busy_pct", d.name),
            format!("{}_read_mbps", d.name),
            format!("{}_write_mbps", d.name),
        ]);
    }
    header
}
