//! Phases with parts (`[[phase.part]]`; vdbench's several wds, sds and hosts in one rd): each part is one raw
//! workload with the phase's keys under its own. Only the spec side: what a part is and what is wrong with a
//! set of parts; planning them is `plan::mix`.

use std::borrow::Cow;

use super::PhaseSpec;

impl PhaseSpec {
    /// The raw workloads of the phase: each part with the phase's keys under its own, or the phase itself.
    pub fn units(&self) -> Vec<Cow<'_, PhaseSpec>> {
        match &self.parts {
            Some(parts) => {
                let base = PhaseSpec { parts: None, ..self.clone() };
                parts.iter().map(|part| Cow::Owned(base.overlay(part))).collect()
            }
            None => vec![Cow::Borrowed(self)],
        }
    }

    /// The parts' checks: each part is a phase of its own (no parts, file sets or streams inside), its skew a
    /// percentage, and the skews said add up to at most 100 (to 100 exactly when every part says one); a part
    /// with a rate of its own (`rate-iops`) says no skew.
    pub(super) fn check_parts(&self, parts: &[PhaseSpec]) -> Result<(), String> {
        if parts.is_empty() {
            return Err("part is empty: give at least one [[phase.part]], or leave part out".into());
        }
        if self.kind.is_some() {
            return Err("parts are raw workloads: a file-set or streams phase cannot have parts".into());
        }
        let mut said = 0.0;
        // The phase without its parts, once: overlaying each part on `self` cloned every part for every part,
        // which made a rd of 64 parts (32 hds × 2 wds) take seconds to check.
        let base = PhaseSpec { parts: None, skew: None, queue: None, rank: None, ..self.clone() };
        for (i, part) in parts.iter().enumerate() {
            let context = |e: String| format!("part {}: {e}", i + 1);
            if part.parts.is_some() || part.kind.is_some() {
                return Err(context("a part is one raw workload: no parts, fileset or streams inside".into()));
            }
            if let Some(skew) = part.skew
                && !(0.0..=100.0).contains(&skew)
            {
                return Err(context(format!("skew {skew} is not a percentage from 0 to 100")));
            }
            if part.rate_iops.is_some() && part.skew.is_some() {
                return Err(context(
                    "a part with a rate-iops of its own takes no share: give skew or rate-iops".into(),
                ));
            }
            if part.rate.is_some() {
                return Err(context("a part's own rate is rate-iops (operations per second), not rate".into()));
            }
            said += part.skew.unwrap_or(0.0);
            let unit = PhaseSpec { parts: None, skew: None, queue: None, rank: None, ..base.overlay(part) };
            unit.check().map_err(context)?;
        }
        let all_said =
            parts.iter().all(|p| p.skew.is_some() || p.rate_iops.is_some()) && parts.iter().any(|p| p.skew.is_some());
        if said > 100.0001 || (all_said && (said - 100.0).abs() > 0.0001) {
            return Err(format!(
                "the parts' skews add up to {said}; they must add up to 100 (parts without a skew share what is left)"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_s_own_rate_is_rate_iops_and_takes_no_skew() {
        let part = |skew, rate_iops| PhaseSpec { skew, rate_iops, ..PhaseSpec::default() };
        let phase = |parts| PhaseSpec { parts: Some(parts), ..PhaseSpec::default() };
        // A part at its own rate beside parts whose skews add up to 100: the rate takes no share.
        assert_eq!(phase(vec![part(None, Some(100)), part(Some(100.0), None)]).check(), Ok(()));
        assert_eq!(phase(vec![part(None, Some(100)), part(None, Some(50))]).check(), Ok(()), "all at their own rate");
        let err = phase(vec![part(Some(50.0), Some(100)), part(None, None)]).check().unwrap_err();
        assert!(err.contains("part 1") && err.contains("give skew or rate-iops"), "{err}");
        let bytes = PhaseSpec { rate: Some(crate::units::ByteRate(1e6)), ..part(None, None) };
        let err = phase(vec![bytes, part(None, None)]).check().unwrap_err();
        assert!(err.contains("rate-iops (operations per second), not rate"), "{err}");
    }
}
