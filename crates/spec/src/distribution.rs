//! Where random I/O lands, as the user wrote it (fio's `random_distribution` words): `uniform`, `zipf:1.2`,
//! `pareto:0.9`, `normal:5`, vdbench's `hotband` and `poisson:3` (its `seekpct=(poisson,3)`), and fio's zones, `zoned:60/10:30/20:10/` (percent of accesses / percent of the data
//! set, consecutive from its start) and `zoned_abs:60/20g:40/100g` (sizes in bytes). The same words serve flags,
//! TOML and the fio reader.
//!
//! Zones are completed here, once, the way fio completes them: access shares left empty split what the others
//! leave of 100, sizes left empty split what the others leave of the data set; the shares must then add up to
//! 100 and the sizes to at most 100 %. This file parses and prints; `plan` turns it into the workload's type.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::values::{ValueError, serde_via_str, value_error};
use crate::units::Bytes;

/// Random-offset distribution as the user wrote it.
#[derive(Debug, Clone, PartialEq)]
pub enum DistributionSpec {
    Uniform,
    Zipf(f64),
    Pareto(f64),
    /// Standard deviation as a percentage of the data set.
    Normal(f64),
    /// Consecutive zones from the start of each file, with their share of the accesses (fio zoned/zoned_abs).
    Zoned(Vec<ZoneSpec>),
    /// vdbench's hot band (`hotband=`): I/O crowded at the start of the data set on vdbench's curve.
    Hotband,
    /// vdbench's Poisson seek (`seekpct=(poisson,midpoint)`): exponential from the start of the data set with a
    /// mean of 1/midpoint of it, folded back into it.
    Poisson(f64),
}

/// One zone: its share of the accesses and its extent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZoneSpec {
    /// Percent of the accesses.
    pub access_percent: f64,
    pub size: ZoneExtent,
}

/// The extent of a zone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ZoneExtent {
    /// Percent of the file (fio zoned).
    Percent(f64),
    /// Bytes (fio zoned_abs).
    Bytes(Bytes),
}

const EXPECTED: &str = "uniform, zipf:θ (θ > 0, e.g. zipf:1.2), pareto:h (0 < h < 1), normal:σ (σ in % of the \
                        data set), zoned:A/S:… (A % of accesses to S % of the data, e.g. zoned:60/10:40/90) or \
                        zoned_abs:A/SIZE:… (e.g. zoned_abs:60/20g:40/100g), hotband (vdbench's hot band) or \
                        poisson:m (vdbench's Poisson seek, m > 0; poisson alone is poisson:3)";

impl DistributionSpec {
    /// Completes zones written as (access share, extent), either possibly missing, the way fio does; `what`
    /// prefixes the messages.
    pub fn zones(raw: &[(Option<f64>, Option<ZoneExtent>)]) -> Result<DistributionSpec, String> {
        if raw.is_empty() {
            return Err("give at least one zone, such as 60/10".into());
        }
        let shares: Vec<Option<f64>> = raw.iter().map(|z| z.0).collect();
        let access = complete(&shares, "access")?;
        if (access.iter().sum::<f64>() - 100.0).abs() > 1e-6 {
            return Err(format!("the access shares add up to {}, not 100", access.iter().sum::<f64>()));
        }
        let absolute = raw.iter().any(|z| matches!(z.1, Some(ZoneExtent::Bytes(_))));
        let sizes = if absolute {
            raw.iter()
                .map(|z| match z.1 {
                    Some(ZoneExtent::Bytes(b)) => Ok(ZoneExtent::Bytes(b)),
                    _ => Err("zoned_abs needs a size for every zone, such as 60/20g".to_string()),
                })
                .collect::<Result<Vec<_>, _>>()?
        } else {
            let percents: Vec<Option<f64>> =
                raw.iter().map(|z| z.1.map(|e| if let ZoneExtent::Percent(p) = e { p } else { 0.0 })).collect();
            complete(&percents, "size")?.into_iter().map(ZoneExtent::Percent).collect()
        };
        Ok(DistributionSpec::Zoned(
            access.into_iter().zip(sizes).map(|(access_percent, size)| ZoneSpec { access_percent, size }).collect(),
        ))
    }
}

/// Fills in missing percentages with equal shares of what the given ones leave of 100; the given ones must not
/// pass 100.
fn complete(values: &[Option<f64>], what: &str) -> Result<Vec<f64>, String> {
    if values.iter().flatten().any(|v| !(v.is_finite() && *v >= 0.0)) {
        return Err(format!("every {what} percentage must be a number from 0 to 100"));
    }
    let given: f64 = values.iter().flatten().sum();
    if given > 100.0 + 1e-6 {
        return Err(format!("the {what} percentages add up to {given}, more than 100"));
    }
    let missing = values.iter().filter(|v| v.is_none()).count();
    let share = if missing > 0 { (100.0 - given) / missing as f64 } else { 0.0 };
    Ok(values.iter().map(|v| v.unwrap_or(share)).collect())
}

/// `A/S` entries of a zoned value in streamcap's units (percentages, or sizes for zoned_abs).
fn parse_zones(text: &str, absolute: bool) -> Result<DistributionSpec, String> {
    let mut raw = Vec::new();
    for part in text.split(':').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, s) = part.split_once('/').ok_or_else(|| format!("'{part}' is not access/size"))?;
        let number =
            |t: &str| t.trim().trim_end_matches('%').parse::<f64>().map_err(|_| format!("'{t}' is not a number"));
        let access = if a.trim().is_empty() { None } else { Some(number(a)?) };
        let size = match s.trim() {
            "" => None,
            t if absolute => Some(ZoneExtent::Bytes(Bytes::parse(t).map_err(|e| e.to_string())?)),
            t => Some(ZoneExtent::Percent(number(t)?)),
        };
        raw.push((access, size));
    }
    DistributionSpec::zones(&raw)
}

impl FromStr for DistributionSpec {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim().to_ascii_lowercase();
        let (name, arg) = text.split_once(':').map_or((text.as_str(), None), |(n, a)| (n, Some(a)));
        if let ("zoned" | "zoned_abs", Some(zones)) = (name, arg) {
            return parse_zones(zones, name == "zoned_abs").map_err(|why| value_error(s, "zoned distribution", why));
        }
        let number = |a: Option<&str>| -> Result<f64, ValueError> {
            a.and_then(|a| a.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite())
                .ok_or_else(|| value_error(s, "distribution", EXPECTED))
        };
        let spec = match name {
            "uniform" | "random" if arg.is_none() => DistributionSpec::Uniform,
            "zipf" => DistributionSpec::Zipf(number(arg)?),
            "pareto" => DistributionSpec::Pareto(number(arg)?),
            "normal" | "gauss" => DistributionSpec::Normal(number(arg)?),
            "hotband" if arg.is_none() => DistributionSpec::Hotband,
            "poisson" => DistributionSpec::Poisson(if arg.is_none() { 3.0 } else { number(arg)? }),
            _ => return Err(value_error(s, "distribution", EXPECTED)),
        };
        let ok = match spec {
            DistributionSpec::Uniform | DistributionSpec::Zoned(_) | DistributionSpec::Hotband => true,
            DistributionSpec::Zipf(theta) => theta > 0.0,
            DistributionSpec::Pareto(h) => h > 0.0 && h < 1.0,
            DistributionSpec::Normal(sigma) => sigma > 0.0 && sigma <= 100.0,
            DistributionSpec::Poisson(midpoint) => midpoint > 0.0,
        };
        if !ok {
            return Err(value_error(s, "distribution", EXPECTED));
        }
        Ok(spec)
    }
}

impl fmt::Display for DistributionSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DistributionSpec::Uniform => f.write_str("uniform"),
            DistributionSpec::Zipf(v) => write!(f, "zipf:{v}"),
            DistributionSpec::Pareto(v) => write!(f, "pareto:{v}"),
            DistributionSpec::Normal(v) => write!(f, "normal:{v}"),
            DistributionSpec::Hotband => f.write_str("hotband"),
            DistributionSpec::Poisson(v) => write!(f, "poisson:{v}"),
            DistributionSpec::Zoned(zones) => {
                let absolute = zones.iter().any(|z| matches!(z.size, ZoneExtent::Bytes(_)));
                let parts: Vec<String> = zones
                    .iter()
                    .map(|z| match z.size {
                        ZoneExtent::Percent(p) => format!("{}/{p}", z.access_percent),
                        ZoneExtent::Bytes(b) => format!("{}/{}", z.access_percent, b.0),
                    })
                    .collect();
                write!(f, "{}:{}", if absolute { "zoned_abs" } else { "zoned" }, parts.join(":"))
            }
        }
    }
}
serde_via_str!(DistributionSpec);

#[cfg(test)]
mod tests {
    use super::*;

    fn zones(spec: &DistributionSpec) -> Vec<(f64, ZoneExtent)> {
        let DistributionSpec::Zoned(z) = spec else { panic!("{spec:?}") };
        z.iter().map(|z| (z.access_percent, z.size)).collect()
    }

    #[test]
    fn distributions() {
        assert_eq!("zipf:1.2".parse::<DistributionSpec>().unwrap(), DistributionSpec::Zipf(1.2));
        assert_eq!("uniform".parse::<DistributionSpec>().unwrap(), DistributionSpec::Uniform);
        assert_eq!("hotband".parse::<DistributionSpec>().unwrap().to_string(), "hotband");
        assert_eq!("pareto:0.9".parse::<DistributionSpec>().unwrap(), DistributionSpec::Pareto(0.9));
        assert!("pareto:1.5".parse::<DistributionSpec>().is_err());
        assert!("zipf".parse::<DistributionSpec>().is_err());
        assert!("zipf:0".parse::<DistributionSpec>().is_err());
        assert_eq!("poisson".parse::<DistributionSpec>().unwrap(), DistributionSpec::Poisson(3.0), "vdbench's default");
        assert_eq!("poisson:5".parse::<DistributionSpec>().unwrap().to_string(), "poisson:5");
        assert!("poisson:0".parse::<DistributionSpec>().is_err());
    }

    #[test]
    fn zones_are_completed_as_fio_completes_them() {
        // fio's rand-zones example: the last zone's size is what the others leave.
        let z = "zoned:50/5:30/15:20/".parse::<DistributionSpec>().unwrap();
        use ZoneExtent::Percent as P;
        assert_eq!(zones(&z), [(50.0, P(5.0)), (30.0, P(15.0)), (20.0, P(80.0))]);
        // A missing share takes what the others leave of 100.
        let z = "zoned:60/10:/90".parse::<DistributionSpec>().unwrap();
        assert_eq!(zones(&z), [(60.0, P(10.0)), (40.0, P(90.0))]);
        let abs = "zoned_abs:60/20g:40/100g".parse::<DistributionSpec>().unwrap();
        assert_eq!(zones(&abs)[0], (60.0, ZoneExtent::Bytes(Bytes::gib(20))));
        assert_eq!(abs.to_string().parse::<DistributionSpec>().unwrap(), abs, "prints back to itself");
        assert_eq!(z.to_string(), "zoned:60/10:40/90");
    }

    #[test]
    fn bad_zones_say_why() {
        for (bad, why) in [
            ("zoned:60/10:30/20", "add up to 90"),
            ("zoned:60/70:40/40", "more than 100"),
            ("zoned:60", "access/size"),
            ("zoned_abs:60/20g:40/", "needs a size"),
            ("zoned:x/10:100/", "not a number"),
        ] {
            let err = bad.parse::<DistributionSpec>().unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
