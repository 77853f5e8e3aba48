//! The interval CSV (`--csv FILE`): one row per reporting interval of every phase, written as the run goes so a
//! long run loses nothing and can be watched with `tail -f`. Columns are fixed for a run: the I/O figures, then
//! busy % and MB/s of each device beneath the target.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

use crate::results::IntervalPoint;

pub struct CsvSink {
    path: PathBuf,
    /// Opened with the first row, so a run that fails before its first interval leaves no empty file.
    writer: Option<csv::Writer<BufWriter<File>>>,
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
    /// A sink for `path`; the file is created (or truncated) when the first row arrives. The caller checks
    /// beforehand that it can be written (`app::outputs`).
    pub fn new(path: &Path) -> CsvSink {
        CsvSink { path: path.to_path_buf(), writer: None }
    }

    pub fn write(&mut self, phase: usize, phase_name: &str, point: &IntervalPoint) -> io::Result<()> {
        let writer = match &mut self.writer {
            Some(writer) => writer,
            None => {
                let mut writer = csv::Writer::from_writer(BufWriter::new(File::create(&self.path)?));
                writer.write_record(header(point))?;
                self.writer.insert(writer)
            }
        };
        let us = |ns: f64| format!("{:.1}", ns / 1e3);
        let mut row = vec![
            (phase + 1).to_string(),
            phase_name.to_string(),
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
        writer.write_record(&row)?;
        // Flush each row: the file is for watching and for surviving an abrupt end.
        writer.flush()
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
