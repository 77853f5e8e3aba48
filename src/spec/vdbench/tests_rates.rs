//! Tests of the vdbench keywords that shape where and how fast a raw wd's I/O goes, in the reader: the Poisson
//! seek (`seekpct=poisson`, `seekpct=(poisson,midpoint)`).

use std::path::Path;

use super::*;
use crate::spec::DistributionSpec;

fn parse(text: &str) -> Result<JobSpec, SpecError> {
    parse_vdbench_job(Path::new("job.vdb"), text, &ReadOptions::default())
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

/// The phase of one wd with `wd` appended to its record (and `sd` to its sd's).
fn one_wd(sd: &str, wd: &str) -> Result<JobSpec, SpecError> {
    parse(&format!("sd=sd1,lun=/dev/nodisk,size=64m{sd}\nwd=wd1,sd=sd1,rdpct=0{wd}\nrd=rd1,wd=wd1,iorate=max\n"))
}

#[test]
fn seekpct_poisson_is_random_with_vdbench_s_midpoint() {
    let distribution = |wd: &str| one_wd("", wd).unwrap().phases[0].distribution.clone();
    assert_eq!(distribution(",seekpct=poisson"), Some(DistributionSpec::Poisson(3.0)), "vdbench's default midpoint");
    assert_eq!(distribution(",seekpct=(poisson,5)"), Some(DistributionSpec::Poisson(5.0)));
    assert_eq!(distribution(",seekpct=(p,0.5)"), Some(DistributionSpec::Poisson(0.5)), "a prefix, as vdbench reads it");
    // As WD_entry.parseSeekpct: poisson makes the seeks all random, a number before it is overridden.
    let phase = one_wd("", ",seekpct=(50,poisson)").unwrap().phases.remove(0);
    assert_eq!((phase.percentage_random, phase.distribution), (None, Some(DistributionSpec::Poisson(3.0))));
    assert_eq!(phase.rw, Some(crate::spec::RwMode::RandWrite));
    // ... and a later sequential word makes them sequential again, with nothing to skew.
    let phase = one_wd("", ",seekpct=(poisson,4,sequential)").unwrap().phases.remove(0);
    assert_eq!((phase.rw, phase.distribution), (Some(crate::spec::RwMode::Write), None));
    assert_eq!(distribution(",seekpct=random"), None);
}

#[test]
fn poisson_gives_way_where_vdbench_s_does_and_says_so() {
    for (sd, wd, why) in [
        ("", ",seekpct=poisson,hotband=(10,20)", "with hotband= or stride="),
        ("", ",seekpct=poisson,stride=(8k,16k)", "with hotband= or stride="),
        (",align=8k", ",seekpct=poisson", "with the sd's align="),
    ] {
        let job = one_wd(sd, wd).unwrap();
        assert_ne!(job.phases[0].distribution, Some(DistributionSpec::Poisson(3.0)), "{wd}");
        let notice = format!("seekpct=poisson has no effect {why}");
        assert!(job.notices.iter().any(|n| n.contains(&notice)), "{wd}: {:?}", job.notices);
    }
}

#[test]
fn a_poisson_midpoint_of_zero_or_less_is_refused_with_the_reason() {
    for bad in ["(poisson,0)", "(poisson,0.0)"] {
        let err =
            error(&format!("sd=sd1,lun=/dev/nodisk,size=64m\nwd=wd1,sd=sd1,seekpct={bad}\nrd=rd1,wd=wd1,iorate=max\n"));
        assert!(err.contains("line 2") && err.contains("seekpct") && err.contains("above 0"), "{bad}: {err}");
    }
}
