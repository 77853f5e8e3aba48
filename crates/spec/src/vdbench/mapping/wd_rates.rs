//! A wd's own rate and priority (`iorate=`, `priority=`), checked across the wds of an rd as vdbench 5.04.06
//! checks them (`WD_entry.readParms`, `checkParameters`, `checkPriorities`). A wd with `iorate=` runs at that
//! fixed rate on each of its sds and hosts (`WG_entry.initialize` gives every generator the wd's rate), takes no
//! share of the rd's operations, and the others share what it leaves of the rd's `iorate=`
//! (`WG_entry.wg_set_interarrival`). `priority=` only orders vdbench's own queue of due I/O; streamcap runs each
//! fixed-rate wd on a worker of its own, so its due I/O never waits behind the others' (what priority 1 buys in
//! vdbench), and orders nothing among the others (they draw from one mix).
//!
//! Must not: decide phases or parts (`raw.rs` does, with what this returns).

use super::{Mapper, fail, one_number};
use crate::spec::vdbench::VdbError;
use crate::spec::vdbench::model::Record;
use crate::spec::vdbench::values::Units;

/// What the rates and priorities of an rd's wds ask, in the order of the rd's wds.
pub(super) struct WdRates {
    /// Each wd's own operations per second (`iorate=`).
    pub own: Vec<Option<f64>>,
    /// Whether any wd said a rate or a priority: vdbench then runs its waiter (a controlled max).
    pub said: bool,
}

impl Mapper<'_> {
    /// The wds' own rates, refusing what vdbench refuses: `iorate=` with `skew=`, `iorate=` without `priority=`,
    /// a priority of 0, and — once any wd says a rate or a priority — a wd without one, two wds of one priority,
    /// and a wd with a rate whose priority is not above every wd's without one.
    pub(super) fn wd_rates(&mut self, rd: &Record, wds: &[&Record]) -> Result<WdRates, VdbError> {
        let mut own = Vec::with_capacity(wds.len());
        let mut priorities = Vec::with_capacity(wds.len());
        for &wd in wds {
            let rate = one_number(wd, "iorate", Units::Size, "operations per second, such as 100")?;
            if let Some(v) = rate {
                let p = wd.get("iorate").expect("just read");
                if !(v.is_finite() && v > 0.0) {
                    return Err(fail(wd, p, "a wd's iorate= is operations per second above 0, such as 100".into()));
                }
                if wd.get("skew").is_some() {
                    return Err(fail(
                        wd,
                        p,
                        "iorate= and skew= are mutually exclusive (as in vdbench): give one".into(),
                    ));
                }
                if wd.get("priority").is_none() {
                    let why = "a wd with iorate= also needs priority= (as in vdbench), e.g. priority=1";
                    return Err(fail(wd, p, why.into()));
                }
            }
            own.push(rate);
            priorities.push(priority(wd)?);
        }
        let said = own.iter().any(Option::is_some) || priorities.iter().any(Option::is_some);
        if said {
            check_order(rd, wds, &own, &priorities)?;
            if priorities.iter().any(Option::is_some) {
                self.notice(
                    "vdbench priority= orders its queue of due I/O; streamcap runs each wd with iorate= on a worker \
                     of its own (its I/O never waits behind the others') and orders nothing among the others"
                        .into(),
                );
            }
        }
        Ok(WdRates { own, said })
    }
}

/// `priority=n`: a whole number from 1 (highest).
fn priority(wd: &Record) -> Result<Option<u32>, VdbError> {
    let Some(v) = one_number(wd, "priority", Units::Size, "a whole number from 1 (highest)")? else { return Ok(None) };
    if v.fract() != 0.0 || !(1.0..=f64::from(u32::MAX)).contains(&v) {
        let p = wd.get("priority").expect("just read");
        return Err(fail(wd, p, format!("'{v}': priority= is a whole number from 1 (highest), not 0 (as in vdbench)")));
    }
    Ok(Some(v as u32))
}

/// vdbench's `checkPriorities` over the rd's wds.
fn check_order(rd: &Record, wds: &[&Record], own: &[Option<f64>], priorities: &[Option<u32>]) -> Result<(), VdbError> {
    let p = rd.get("wd").or_else(|| rd.get("sd")).expect("the rd names its wds or its sds");
    let listed = || {
        wds.iter().zip(priorities).map(|(w, p)| format!("{}={}", w.name, p.map_or("none".into(), |p| p.to_string())))
    };
    let mut distinct: Vec<u32> = priorities.iter().flatten().copied().collect();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() != wds.len() {
        return Err(fail(
            rd,
            p,
            format!(
                "when a wd says priority= or iorate=, every wd of the rd needs a priority of its own (as in \
                 vdbench); the priorities are {}",
                listed().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    let lowest_shared =
        wds.iter().zip(own).zip(priorities).filter(|((_, r), _)| r.is_none()).filter_map(|(_, p)| *p).min();
    let fixed = wds.iter().zip(own).zip(priorities).filter(|((_, r), _)| r.is_some());
    if let Some(((wd, _), prio)) = fixed.clone().find(|(_, p)| lowest_shared.is_some_and(|l| p.is_some_and(|p| p >= l)))
    {
        return Err(fail(
            rd,
            p,
            format!(
                "{} has iorate= and priority={}, but a wd without iorate= has a higher priority (a lower number): \
                 wds with iorate= must come first, as vdbench requires",
                wd.name,
                prio.expect("checked above")
            ),
        ));
    }
    Ok(())
}
