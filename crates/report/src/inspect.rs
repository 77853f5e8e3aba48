//! The terminal rendering of `streamcap inspect`: what is beneath a target, without any I/O — filesystem, pool
//! profile and what it means for a failed disk, members, raw and usable capacity, read policy, free space,
//! effective RAM, whether the data lives in RAM, the cgroup throttles that limit the devices, and every device's
//! facts (the device-facts rows, built once here, are the HTML page's too). Also the short pool and RAM phrases
//! the run summary uses. Reads only the `RunResult`, so a saved
//! inspect JSON renders the same again.

use std::io::{self, Write};

use super::rows::{Rows, num, text};
use super::terminal::STYLE;
use crate::results::{BtrfsSpace, HostFacts, PoolFacts, PoolKind, Profile, RunResult, TargetInfo, throttle_words};
use crate::units::Bytes;

pub(super) fn write_inspect(out: &mut dyn Write, result: &RunResult) -> io::Result<()> {
    let target = &result.target;
    writeln!(out, "streamcap {} · inspect · {}", result.tool.version, target.path)?;
    writeln!(out)?;
    let kind = target.kind.replace('_', " ");
    match &target.filesystem {
        Some(fs) => {
            let at = fs.mount_point.display();
            writeln!(out, "target     {kind} on {} ({}), mounted at {at}", fs.fs_type, fs.source)?;
            let free = if fs.total.0 > 0 { format!("{} of {}", fs.free, fs.total) } else { "unknown".into() };
            if fs.is_network() {
                // The client cannot see the server's disks: the figure is the server's answer for its export
                // (issue 30: under sshfs it read as this machine's own free space).
                writeln!(
                    out,
                    "free       {free} as the server reports it for its export (not checked here: quotas, and \
                     a filesystem mounted below the export on the server, are not in it)"
                )?;
            } else {
                writeln!(out, "free       {free} (what a program that is not root can still write)")?;
            }
            if fs.is_network() {
                writeln!(
                    out,
                    "network    yes: every read and write crosses the network, so the link caps every figure"
                )?;
            }
        }
        None => writeln!(out, "target     {kind}")?,
    }
    write_kept_library(out, target)?;
    match &target.pool {
        Some(pool) => write_pool(out, pool)?,
        None => writeln!(out, "pool       none: no block device is beneath this target")?,
    }
    writeln!(out, "memory     {}", ram_words(&result.host))?;
    if let (Some(limit), Some(file)) = (result.host.memory_limit, &result.host.memory_limit_file) {
        writeln!(
            out,
            "           the limit of {limit} is set in {file}: the page cache of this process stays within it"
        )?;
    }
    writeln!(out, "in RAM     {}", in_ram_words(result))?;
    write_limits(out, result)?;
    if !target.devices.is_empty() {
        writeln!(out)?;
        writeln!(out, "devices beneath, top first:")?;
        writeln!(out, "{}", device_fact_rows(target).only(&TERMINAL_DEVICE_COLUMNS).terminal(STYLE))?;
    }
    Ok(())
}

/// A library of titles an earlier check kept under the target: what holds that space, and how to remove it.
fn write_kept_library(out: &mut dyn Write, target: &TargetInfo) -> io::Result<()> {
    let Some(kept) = &target.kept_library else { return Ok(()) };
    let written = kept.written.map(|w| format!(", written {}", crate::units::utc_minutes(w))).unwrap_or_default();
    writeln!(
        out,
        "library    {} in {} titles kept in {} by an earlier run{written}: the next check or streams run \
         reads it again (`check --remove-library` removes it after a check; or remove the directory)",
        Bytes(kept.bytes),
        kept.titles,
        kept.dir
    )?;
    Ok(())
}

/// Where the target's data lives, as far as the facts tell. "On the devices below" only when there are some:
/// `inspect /proc` said so while naming none.
fn in_ram_words(result: &RunResult) -> String {
    let target = &result.target;
    let filesystem = target.filesystem.as_ref();
    match (&target.memory_backed, filesystem) {
        (Some(why), _) => format!("yes: {why}; figures measured here may describe memory"),
        _ if !target.devices.is_empty() => "no: the data lives on the devices below".into(),
        (None, Some(fs)) if fs.is_network() => "no: the data lives on the server, across the network".into(),
        (None, Some(fs)) if fs.is_kernel_view() => format!(
            "no data at all: {} is the kernel's view of its own state, not storage; choose a directory on a disk \
             or a pool",
            fs.fs_type
        ),
        (None, Some(fs)) => format!(
            "unknown: no block device is beneath this target ({}), so streamcap cannot tell where its data lives",
            fs.fs_type
        ),
        (None, None) => "unknown: no block device is beneath this target".into(),
    }
}

/// The cgroup throttles on the devices beneath, one line per device; "none" where devices are beneath and none
/// is throttled.
fn write_limits(out: &mut dyn Write, result: &RunResult) -> io::Result<()> {
    let target = &result.target;
    if target.devices.is_empty() {
        return Ok(());
    }
    let lines = throttle_words(&target.throttles);
    if lines.is_empty() {
        return writeln!(out, "limits     none: no cgroup throttle limits this process on these devices");
    }
    for (i, line) in lines.iter().enumerate() {
        writeln!(out, "{} {line}", if i == 0 { "limits    " } else { "          " })?;
    }
    writeln!(out, "           figures that reach a limit describe the throttle, not the device")
}

fn write_pool(out: &mut dyn Write, pool: &PoolFacts) -> io::Result<()> {
    writeln!(out, "pool       {}", pool_words(pool))?;
    if let Some(profile) = pool.profile {
        writeln!(out, "           {}", profile_meaning(profile))?;
    }
    if pool.missing_members > 0 {
        writeln!(out, "           {} member(s) missing or failed: the pool runs degraded", pool.missing_members)?;
    }
    let usable = pool.usable.map_or("unknown".into(), |u| u.to_string());
    let statvfs = pool.statvfs_total.map_or(String::new(), |s| format!(" · statvfs {s}"));
    writeln!(out, "capacity   {} raw · {usable} usable{statvfs}", pool.raw)?;
    if let Some(note) = &pool.capacity_note {
        writeln!(out, "           {note}")?;
    }
    for (label, space) in [("data", &pool.data), ("metadata", &pool.metadata)] {
        if let Some(space) = space {
            writeln!(out, "{label:<10} {}", space_words(space))?;
        }
    }
    if let Some(policy) = &pool.read_policy {
        match pool.profile {
            Some(p) if p.btrfs_copies() == 1 => {
                writeln!(out, "reads      policy {policy}: it picks among mirrored copies only, and {p} data has none")?
            }
            _ => writeln!(out, "reads      policy {policy}: {}", read_policy_meaning(policy))?,
        }
    }
    if let Some(md) = &pool.md {
        let chunk = md.chunk.map_or(String::new(), |c| format!(" · chunk {c}"));
        writeln!(
            out,
            "md         {} {} · {} of {} members{chunk} · {}",
            md.name,
            md.level,
            md.members.len(),
            md.raid_disks,
            md.state
        )?;
    }
    Ok(())
}

/// One line naming a pool: "btrfs raid5 (metadata raid1) over 3 members: loop0, loop1, loop2".
pub(super) fn pool_words(pool: &PoolFacts) -> String {
    let profile = pool.profile.map_or("(level unknown)".to_string(), |p| p.to_string());
    let metadata = match pool.metadata_profile {
        Some(m) if Some(m) != pool.profile => format!(" (metadata {m})"),
        _ => String::new(),
    };
    let names: Vec<&str> = pool.members.iter().map(|m| m.name.as_str()).collect();
    let plural = if names.len() == 1 { "" } else { "s" };
    let what = match pool.kind {
        PoolKind::Btrfs => format!("btrfs {profile}{metadata}"),
        PoolKind::Md => format!("md {profile}"),
        PoolKind::Device => return format!("one device, no pooling: {} ({})", pool.id, pool.raw),
    };
    let usable = pool.usable.map_or(String::new(), |u| format!(" · {} raw, {u} usable", pool.raw));
    format!("{what} over {} member{plural}: {}{usable}", names.len(), names.join(", "))
}

/// "23.5 GiB RAM", or "23.5 GiB RAM, 128 MiB effective (memory cgroup limit)" when a cgroup limits it.
pub(super) fn ram_words(host: &HostFacts) -> String {
    match host.memory_limit {
        Some(limit) if limit < host.ram => {
            format!("{} RAM, {} effective (memory cgroup limit)", host.ram, host.usable_ram())
        }
        _ => format!("{} RAM", host.ram),
    }
}

fn space_words(space: &BtrfsSpace) -> String {
    let others: Vec<String> = space.profiles.iter().skip(1).map(|s| format!("{} {}", s.profile, s.allocated)).collect();
    let mixed = if others.is_empty() {
        String::new()
    } else {
        format!(" · also {} (a conversion or balance left chunks of another profile)", others.join(", "))
    };
    format!("{}: {} allocated, {} used{mixed}", space.profile, space.allocated, space.used)
}

/// What a profile means for a failed member, in a home user's words.
fn profile_meaning(profile: Profile) -> &'static str {
    match profile {
        Profile::Single => "one copy of everything: a failed device loses what it holds",
        Profile::Dup => "two copies on the same device: survives bad sectors, not a failed device",
        Profile::Linear => "members end to end, no redundancy: a failed member loses what it holds",
        Profile::Raid0 => "striped, no redundancy: one failed member loses the whole pool",
        Profile::Raid1 => "two copies on different members: survives one failed member",
        Profile::Raid1c3 => "three copies on different members: survives two failed members",
        Profile::Raid1c4 => "four copies on different members: survives three failed members",
        Profile::Raid10 => "striped mirrors: survives one failed member (more if they hold different copies)",
        Profile::Raid4 => "one member holds parity: survives one failed member",
        Profile::Raid5 => "one member's worth of parity: survives one failed member",
        Profile::Raid6 => "two members' worth of parity: survives two failed members",
    }
}

fn read_policy_meaning(policy: &str) -> &'static str {
    match policy {
        "pid" => "each reading thread sticks to one mirror (thread id modulo the copies); one reader uses one disk",
        "round-robin" => "reads rotate over the mirrors",
        "devid" => "reads prefer one chosen member",
        _ => "see the kernel's btrfs documentation",
    }
}

/// Every device beneath the target, top first, with its facts: the one device-facts table of the inspect view
/// and of the HTML page's facts.
pub(super) fn device_fact_rows(target: &TargetInfo) -> Rows {
    let mut rows = Rows::new(&[
        text("device"),
        text("kind"),
        text("role"),
        text("model"),
        num("size"),
        text("rotational"),
        text("scheduler"),
        text("logical / physical block"),
    ]);
    for d in &target.devices {
        let kind = serde_json::to_value(d.kind).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        rows.push(vec![
            d.name.clone(),
            kind,
            d.role.clone(),
            d.model.clone().unwrap_or_else(|| "unknown".into()),
            d.size.to_string(),
            if d.rotational { "yes".into() } else { "no".into() },
            d.scheduler.clone().unwrap_or_else(|| "unknown".into()),
            format!("{} / {} B", d.logical_block_size, d.physical_block_size),
        ]);
    }
    rows
}

/// The terminal's columns of the device facts: the block sizes only matter to the HTML page's reader.
const TERMINAL_DEVICE_COLUMNS: [&str; 7] = ["device", "kind", "model", "size", "rotational", "scheduler", "role"];

#[cfg(test)]
mod tests {
    use super::*;

    fn inspected() -> RunResult {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/inspect-raid5.json");
        crate::results::read_result(std::path::Path::new(path)).unwrap()
    }

    /// Regression (issue 30): under sshfs `inspect` gave the server's free space as if it were measured here.
    #[test]
    fn free_space_over_a_network_filesystem_is_the_servers_answer() {
        let mut result = inspected();
        let said = |result: &RunResult| {
            let mut out = Vec::new();
            write_inspect(&mut out, result).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert!(said(&result).contains("(what a program that is not root can still write)"));
        if let Some(fs) = result.target.filesystem.as_mut() {
            fs.fs_type = "fuse.sshfs".into();
        }
        let text = said(&result);
        assert!(text.contains("as the server reports it for its export"), "{text}");
        assert!(!text.contains("what a program that is not root"), "{text}");
    }

    #[test]
    fn a_target_without_devices_is_not_said_to_live_on_them() {
        // Guards issue 25: `inspect /proc` said "the data lives on the devices below" and listed none.
        let mut result = inspected();
        result.target.memory_backed = None;
        assert_eq!(in_ram_words(&result), "no: the data lives on the devices below");
        result.target.devices.clear();
        result.target.pool = None;
        let fs = result.target.filesystem.as_mut().unwrap();
        fs.fs_type = "proc".into();
        let text = in_ram_words(&result);
        assert!(text.starts_with("no data at all: proc is the kernel's view of its own state"), "{text}");
        result.target.filesystem.as_mut().unwrap().fs_type = "fuse.mystery".into();
        assert!(in_ram_words(&result).starts_with("unknown: no block device is beneath this target (fuse.mystery)"));
        result.target.filesystem.as_mut().unwrap().fs_type = "nfs4".into();
        assert_eq!(in_ram_words(&result), "no: the data lives on the server, across the network");
    }

    #[test]
    fn the_terminal_shows_columns_the_device_facts_have() {
        let rows = device_fact_rows(&inspected().target);
        assert_eq!(rows.only(&TERMINAL_DEVICE_COLUMNS).header(), TERMINAL_DEVICE_COLUMNS);
        assert_eq!(rows.rows[0][3], "unknown", "a missing model is 'unknown' in every format");
    }
}
