//! The interval CSV (`--csv FILE`): one row per reporting interval of every phase, written as the run goes so a
//! long run loses nothing and can be watched with `tail -f`. Columns are fixed for a run: the I/O figures, then
//! busy % and MB/s of each device beneath the target.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;

use crate::results::IntervalPoint;

pub struct CsvSink {
    writer: csv::Writer<BufWriter<File>>,
    header_written: bool,
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
    pub fn create(path: &Path) -> io::Result<CsvSink> {
        let file = File::create(path)?;
        Ok(CsvSink { writer: csv::Writer::from_writer(BufWriter::new(file)), header_written: false })
    }

    pub fn write(&mut self, phase: usize, phase_name: &str, point: &IntervalPoint) -> io::Result<()> {
        if !self.header_written {
            let mut header: Vec<String> = IO_COLUMNS.iter().map(|s| s.to_string()).collect();
            for d in &point.devices {
                header.extend([
                    format!("{}_busy_pct", d.name),
                    format!("{}_read_mbps", d.name),
                    format!("{}_write_mbps", d.name),
                ]);
            }
            self.writer.write_record(&header)?;
            self.header_written = true;
        }
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
        self.writer.write_record(&row)?;
        // Flush each row: the file is for watching and for surviving an abrupt end.
        self.writer.flush()
    }
}
