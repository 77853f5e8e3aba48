//! A share of a whole as a percentage with up to two decimals ([`Share`]): the weights of a transfer-size split.
//! fio's `bssplit` weights are whole percentages; vdbench's `xfersize=(4k,4.5,8k,41.05,…)` weights have
//! fractions, so a share is kept in hundredths of a percent, exactly for both.

use std::fmt;

use super::UnitError;

/// A share in hundredths of a percent: `Share(6000)` is 60 %, `Share(450)` is 4.5 %, [`Share::WHOLE`] is 100 %.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Share(pub u32);

impl Share {
    /// 100 %.
    pub const WHOLE: Share = Share(10_000);

    /// A whole percentage.
    pub const fn percent(p: u32) -> Share {
        Share(p * 100)
    }

    /// A percentage with a fraction (4.5), rounded to hundredths; None unless 0 to 100.
    pub fn from_percent(p: f64) -> Option<Share> {
        (p.is_finite() && (0.0..=100.0).contains(&p)).then(|| Share((p * 100.0).round() as u32))
    }

    /// "60", "4.5", "41.05": the percentage as a number, without a sign.
    pub fn parse(text: &str) -> Result<Share, UnitError> {
        let expected = "a percentage from 0 to 100, with at most two decimals (60, 4.5)";
        text.trim().parse::<f64>().ok().and_then(Share::from_percent).ok_or_else(|| UnitError::new(text, expected))
    }
}

impl fmt::Display for Share {
    /// The percentage as a number without trailing zeros: 60, 4.5, 41.05.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, hundredths) = (self.0 / 100, self.0 % 100);
        match hundredths {
            0 => write!(f, "{whole}"),
            h if h % 10 == 0 => write!(f, "{whole}.{}", h / 10),
            h => write!(f, "{whole}.{h:02}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_of_a_percent_read_and_print_back() {
        for (text, hundredths) in [("60", 6000), ("4.5", 450), ("41.05", 4105), ("0.18", 18), ("100", 10_000)] {
            let share = Share::parse(text).unwrap();
            assert_eq!(share, Share(hundredths), "{text}");
            assert_eq!(share.to_string(), text);
        }
        assert_eq!(Share::percent(25), Share(2500));
    }

    #[test]
    fn a_share_outside_0_to_100_is_refused() {
        for text in ["-1", "100.5", "x", "", "nan"] {
            assert!(Share::parse(text).is_err(), "{text}");
        }
    }
}
