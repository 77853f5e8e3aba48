//! "Which disk did the work", for the streams and check summaries: one row per device beneath the target (every
//! pool member, the filesystem's device, a loop device's backing store) with the run's reads, writes, MB/s,
//! busy % and share of the bytes its layer moved, the target's own devices first. A disk beneath the target (a
//! loop device's backing disk) is the host's: what it moved for others is left out of its row and said beneath
//! the table as other activity (`member_notes`). Streams show it per step; check sums it over its measured
//! phases. Reads only `results` types; the run summary's per-phase device table (`terminal`) stays as it is.

use comfy_table::{CellAlignment, Table};

use super::terminal::STYLE;
use crate::results::{DeviceResult, OtherActivity, PhaseResult, other_activity_words};
use crate::units::format_mbps;

/// One device's activity over some measured time.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Member {
    pub name: String,
    pub role: String,
    pub reads: u64,
    pub writes: u64,
    /// Bytes read and written.
    pub bytes: u64,
    /// Measured seconds the figures cover.
    pub seconds: f64,
    /// Seconds with a request in flight (busy % × seconds).
    pub busy_s: f64,
    /// What the device moved that the run did not cause (left out of `bytes`).
    pub others: OtherActivity,
}

impl Member {
    fn of(device: &DeviceResult, seconds: f64) -> Member {
        let a = &device.activity;
        Member {
            name: a.name.clone(),
            role: device.role.clone(),
            reads: a.reads,
            writes: a.writes,
            bytes: device.own_read_bytes() + device.own_write_bytes(),
            seconds,
            busy_s: a.busy_pct / 100.0 * seconds,
            others: device.others.unwrap_or_default(),
        }
    }

    fn add(&mut self, other: &Member) {
        self.reads += other.reads;
        self.writes += other.writes;
        self.bytes += other.bytes;
        self.seconds += other.seconds;
        self.busy_s += other.busy_s;
        self.others.read_bytes += other.others.read_bytes;
        self.others.write_bytes += other.others.write_bytes;
    }

    fn mbps(&self) -> f64 {
        if self.seconds > 0.0 { self.bytes as f64 / self.seconds / 1e6 } else { 0.0 }
    }

    fn busy_pct(&self) -> f64 {
        if self.seconds > 0.0 { self.busy_s / self.seconds * 100.0 } else { 0.0 }
    }
}

/// The devices of one measured span (a stream step, a phase) lasting `seconds`.
pub(super) fn members(devices: &[DeviceResult], seconds: f64) -> Vec<Member> {
    devices.iter().map(|d| Member::of(d, seconds)).collect()
}

/// Every device over all `phases` that moved or measured something, summed by device and role, in the order
/// first seen: MB/s and busy % over the phases' measured time together.
pub(super) fn summed(phases: &[PhaseResult]) -> Vec<Member> {
    let mut all: Vec<Member> = Vec::new();
    for phase in phases.iter().filter(|p| p.duration_s > 0.0) {
        for member in members(&phase.devices, phase.duration_s) {
            match all.iter_mut().find(|m| m.name == member.name && m.role == member.role) {
                Some(known) => known.add(&member),
                None => all.push(member),
            }
        }
    }
    all
}

/// The lines under the table: each device's activity that was not the run's, summed over `groups`.
pub(super) fn member_notes(groups: &[(String, Vec<Member>)]) -> Vec<String> {
    let mut others: Vec<(String, String, OtherActivity)> = Vec::new();
    for m in groups.iter().flat_map(|(_, list)| list) {
        match others.iter_mut().find(|(name, role, _)| *name == m.name && *role == m.role) {
            Some((_, _, o)) => {
                o.read_bytes += m.others.read_bytes;
                o.write_bytes += m.others.write_bytes;
            }
            None => others.push((m.name.clone(), m.role.clone(), m.others)),
        }
    }
    other_activity_words(&others)
}

/// A member's share of the bytes moved by the members listed with the same role (one pool's members, the disks
/// of one layer), 0–1; `None` when that layer moved nothing.
pub(super) fn share(member: &Member, all: &[Member]) -> Option<f64> {
    let total: u64 = all.iter().filter(|m| m.role == member.role).map(|m| m.bytes).sum();
    (total > 0).then(|| member.bytes as f64 / total as f64)
}

/// The table: `groups` are (label of the first column, the members of that span); `label` names that column
/// ("streams"), or is empty for one span without a first column. `None` when no device is listed at all.
pub(super) fn member_table(label: &str, groups: &[(String, Vec<Member>)]) -> Option<Table> {
    if groups.iter().all(|(_, m)| m.is_empty()) {
        return None;
    }
    let first = usize::from(!label.is_empty());
    let mut table = Table::new();
    table.load_style(STYLE);
    let header = [label, "device", "role", "reads", "writes", "MB/s", "busy", "share"];
    table.set_header(header[1 - first..].to_vec());
    for (group, list) in groups {
        for (i, m) in list.iter().enumerate() {
            let row = [
                if i == 0 { group.clone() } else { String::new() },
                m.name.clone(),
                m.role.clone(),
                m.reads.to_string(),
                m.writes.to_string(),
                format_mbps(m.mbps()),
                format!("{:.0}%", m.busy_pct()),
                share(m, list).map_or("—".into(), |s| format!("{:.0}%", s * 100.0)),
            ];
            table.add_row(row[1 - first..].to_vec());
        }
    }
    for column in 2 + first..=6 + first {
        if let Some(c) = table.column_mut(column) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    Some(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str, role: &str, bytes: u64, seconds: f64, busy_s: f64) -> Member {
        let others = OtherActivity::default();
        Member { name: name.into(), role: role.into(), reads: bytes / 4096, writes: 0, bytes, seconds, busy_s, others }
    }

    #[test]
    fn shares_are_taken_within_a_role_and_sums_weigh_busy_by_time() {
        let list = vec![
            member("loop0", "btrfs pool member", 3_000_000, 1.0, 0.5),
            member("loop1", "btrfs pool member", 1_000_000, 1.0, 0.1),
            member("vda", "loop backing store", 9_000_000, 1.0, 1.0),
        ];
        assert_eq!(share(&list[0], &list), Some(0.75));
        assert_eq!(share(&list[2], &list), Some(1.0));
        let mut a = member("loop0", "m", 2_000_000, 1.0, 1.0);
        a.add(&member("loop0", "m", 0, 3.0, 0.0));
        assert_eq!(a.mbps(), 0.5);
        assert_eq!(a.busy_pct(), 25.0);
        let idle = vec![member("loop0", "m", 0, 1.0, 0.0)];
        assert_eq!(share(&idle[0], &idle), None, "a layer that moved nothing has no shares");
    }

    #[test]
    fn the_table_lists_every_member_under_its_group() {
        let groups = vec![
            ("1".to_string(), vec![member("loop0", "btrfs pool member", 4096 * 10, 1.0, 0.2)]),
            ("8".to_string(), vec![member("loop0", "m", 4096, 1.0, 0.0), member("loop1", "m", 4096, 1.0, 0.0)]),
        ];
        let text = member_table("streams", &groups).unwrap().to_string();
        assert!(text.contains("share"), "{text}");
        assert_eq!(text.matches("50%").count(), 2, "{text}");
        assert!(text.contains("100%"), "{text}");
        assert!(member_table("streams", &[("1".into(), Vec::new())]).is_none());
        let one = member_table("", &groups[1..]).unwrap().to_string();
        assert!(one.trim_start().starts_with("device"), "no first column: {one}");
    }
}
