//! Tests of the reader for vdbench's rd `maxdataread=` and `maxdatawritten=`.

use std::path::Path;

use super::*;
use crate::spec::IoAmount;
use crate::units::Bytes;

fn parse(text: &str) -> Result<JobSpec, SpecError> {
    parse_vdbench_job(Path::new("job.vdb"), text, &ReadOptions::default())
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

const SD_WD: &str = "sd=sd1,lun=/dev/nodisk,size=8m\nwd=wd1,sd=sd1,rdpct=50\n";

#[test]
fn maxdataread_and_maxdatawritten_bound_the_rd_in_bytes_or_multiples_of_the_sds() {
    let text = format!("{SD_WD}rd=rd1,wd=wd1,iorate=max,maxdataread=1m,maxdatawritten=2\n");
    let phase = &parse(&text).unwrap().phases[0];
    assert_eq!(phase.io_read, Some(IoAmount::Bytes(Bytes::mib(1))));
    assert_eq!(phase.io_written, Some(IoAmount::Passes(2.0)));
    assert_eq!((phase.io_size, phase.io_passes), (None, None));
    // 100 and above are bytes, as vdbench reads maxdata=.
    let text = format!("{SD_WD}rd=rd1,wd=wd1,iorate=max,maxdatawritten=100\n");
    assert_eq!(parse(&text).unwrap().phases[0].io_written, Some(IoAmount::Bytes(Bytes(100))));
    // Every phase of the rd has it: each for-loop value and curve point.
    let text = format!("{SD_WD}rd=rd1,wd=wd1,iorate=curve,curve=(50),maxdataread=1m,forxfersize=(4k,8k)\n");
    let phases = parse(&text).unwrap().phases;
    assert_eq!(phases.len(), 4);
    assert!(phases.iter().all(|p| p.io_read == Some(IoAmount::Bytes(Bytes::mib(1)))));
}

#[test]
fn maxdataread_below_or_at_zero_or_not_a_size_is_refused_with_the_line() {
    let text = format!("{SD_WD}rd=rd1,wd=wd1,iorate=max,maxdataread=0\n");
    let err = error(&text);
    assert!(err.contains("line 3") && err.contains("maxdataread must be above 0"), "{err}");
    let text = format!("{SD_WD}rd=rd1,wd=wd1,iorate=max,maxdatawritten=lots\n");
    let err = error(&text);
    assert!(err.contains("line 3") && err.contains("maxdatawritten"), "{err}");
}

#[test]
fn maxdataread_on_a_file_system_rd_is_refused() {
    let text = "fsd=fsd1,anchor=/tmp/x,depth=1,width=1,files=2,size=64k\nfwd=fwd1,fsd=fsd1,operation=read\n\
                rd=rd1,fwd=fwd1,fwdrate=max,format=yes,maxdataread=1m\n";
    let err = error(text);
    assert!(err.contains("maxdataread"), "{err}");
}
