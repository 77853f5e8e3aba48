//! Times as fio's JSON writes them: seconds since the epoch from a result's RFC 3339 time, and the `time` field in
//! ctime's form ("Sun Nov 22 05:00:00 2026"). streamcap's times are UTC, so the text is UTC too (fio writes local
//! time).

/// Seconds since the epoch of an RFC 3339 UTC time such as "2026-11-22T05:00:00Z".
pub(super) fn unix_seconds(text: &str) -> Option<u64> {
    let (date, time) = text.trim_end_matches('Z').split_once('T')?;
    let mut d = date.split('-').map(|x| x.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let mut t = time.split(':').map(|x| x.split('.').next().unwrap_or("").parse::<i64>());
    let (hh, mm, ss) = (t.next()?.ok()?, t.next()?.ok()?, t.next()?.ok()?);
    // A result file is user input: out-of-range fields are not a time (and would overflow the arithmetic below).
    let fields_in_range = (0..=9999).contains(&y)
        && (1..=12).contains(&m)
        && (1..=31).contains(&day)
        && (0..=23).contains(&hh)
        && (0..=59).contains(&mm)
        && (0..=60).contains(&ss);
    if !fields_in_range {
        return None;
    }
    // Days from civil (Howard Hinnant), the inverse of `civil` below.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + hh * 3600 + mm * 60 + ss).ok()
}

/// Year, month (1–12) and day of a count of days since 1970-01-01 (Howard Hinnant's civil_from_days).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// ctime's text for `seconds` since the epoch, without the newline.
pub(super) fn ctime(seconds: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let days = (seconds / 86_400) as i64;
    let rest = seconds % 86_400;
    let (year, month, day) = civil(days);
    format!(
        "{} {} {day:2} {:02}:{:02}:{:02} {year}",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_convert_back_to_unix_seconds() {
        assert_eq!(unix_seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(unix_seconds("2000-02-29T00:00:00Z"), Some(951_782_400));
        assert_eq!(unix_seconds("2026-11-22T14:03:07Z"), Some(1_795_356_187));
        assert_eq!(unix_seconds("yesterday"), None);
        // Found by fuzzing the result reader (scripts/fuzz result_file): a year this large overflowed.
        assert_eq!(unix_seconds("00000000000000002049638230412172387-11-22T05:00:03Z"), None);
        assert_eq!(unix_seconds("2026-13-22T05:00:03Z"), None);
        assert_eq!(unix_seconds("2026-11-22T05:61:03Z"), None);
    }

    #[test]
    fn ctime_as_fio_writes_it() {
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime(951_782_400), "Tue Feb 29 00:00:00 2000");
        assert_eq!(ctime(1_795_356_187), "Sun Nov 22 14:03:07 2026");
    }
}
