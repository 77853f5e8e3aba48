//! Before trial touches anything: every device passes the same checks `run` applies before writing to a block
//! device (a write job planned against the device's facts with `build_plan`: not mounted, not in a pool, array,
//! swap or loop device, no filesystem or partition signature, and --allow-device-writes given — never forced),
//! no device is named twice, the kernel grants an exclusive open of each (nothing mounted or holds it), and the
//! user has seen exactly what will be destroyed and agreed (a prompt on a terminal, `--yes` otherwise). Before
//! any of that, every device's lock is taken (`run::lock_device`) and held for the trial's whole life, so a
//! second trial or a write run on the same devices is refused before it checks, builds or wipes anything.
//! Nothing here writes.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Result, bail};

use super::super::facts::gather;
use crate::plan::{RunOptions, TargetFacts, build_plan};
use crate::results::TrialDevice;
use crate::run::{DeviceLock, lock_device};
use crate::spec::{JobSpec, PhaseSpec, RwMode, SpecOrigin};

/// A device that passed, with what the confirmation shows of it.
pub struct Checked {
    pub device: TrialDevice,
    /// "768 MiB, QEMU HARDDISK, rotational".
    pub description: String,
}

/// Takes the lock of every device (held until the returned guards are dropped, at the end of the trial), or
/// refuses naming each device another streamcap holds. Paths that are not there are left to `check_devices`.
pub fn lock_devices(devices: &[PathBuf]) -> Result<Vec<DeviceLock>> {
    let mut locks = Vec::new();
    let mut refusals = Vec::new();
    for path in devices.iter().filter(|p| p.exists()) {
        match lock_device(path, "trial") {
            Ok(lock) => locks.push(lock),
            Err(e) => refusals.push(e.to_string()),
        }
    }
    if !refusals.is_empty() {
        bail!("trial touches nothing unless every device may be destroyed:\n  {}", refusals.join("\n  "));
    }
    Ok(locks)
}

/// Whether the kernel grants an exclusive open of `path` (it refuses one while the device is mounted or held by
/// md, dm, a mount or another program that opened it exclusively); the reason in words when it does not.
fn exclusive_open_refused(path: &std::path::Path) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_EXCL).open(path) {
        Ok(_) => None,
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Some(format!(
            "{} is in use: the kernel refuses to open it exclusively (mounted, or held by another program); find \
             the user with `lsblk` or `fuser -vm {}`",
            path.display(),
            path.display()
        )),
        Err(e) => Some(format!("cannot open {}: {e}", path.display())),
    }
}

/// Checks every device and refuses (naming each device that fails, and why) unless all pass.
pub fn check_devices(devices: &[PathBuf], allow_device_writes: bool) -> Result<Vec<Checked>> {
    let probe = JobSpec {
        origin: SpecOrigin::Flags,
        target: None,
        interval: None,
        phases: vec![PhaseSpec { rw: Some(RwMode::Write), ..PhaseSpec::default() }],
        notices: Vec::new(),
    };
    // The flag is checked once, below, in trial's words; the plan checks everything else.
    let options = RunOptions { run_id: "trial".into(), allow_device_writes: true, ..Default::default() };
    let mut refusals = Vec::new();
    if !allow_device_writes {
        refusals.push(
            "trial writes to every device, which destroys its contents: if that is what you want, add \
             --allow-device-writes"
                .to_string(),
        );
    }
    let mut checked: Vec<Checked> = Vec::new();
    let mut seen = Vec::new();
    for path in devices {
        let gathered = match gather(path, true) {
            Ok(g) => g,
            Err(e) => {
                refusals.push(format!("{}: {e:#}", path.display()));
                continue;
            }
        };
        let TargetFacts::BlockDevice { size, .. } = &gathered.facts.target else {
            refusals
                .push(format!("{} is not a block device: trial builds its layouts on whole devices", path.display()));
            continue;
        };
        if seen.contains(&gathered.canonical) {
            refusals.push(format!("{} is named twice: give each device once", path.display()));
            continue;
        }
        seen.push(gathered.canonical.clone());
        if let Err(e) = build_plan(&probe, &gathered.facts, &options) {
            refusals.push(e.to_string());
            continue;
        }
        if let Some(why) = exclusive_open_refused(path) {
            refusals.push(why);
            continue;
        }
        checked.push(Checked {
            device: TrialDevice { path: path.display().to_string(), size_bytes: size.0 },
            description: describe(*size, gathered.devices.first()),
        });
    }
    if !refusals.is_empty() {
        bail!("trial touches nothing unless every device may be destroyed:\n  {}", refusals.join("\n  "));
    }
    Ok(checked)
}

/// "768 MiB, QEMU HARDDISK, rotational".
fn describe(size: crate::units::Bytes, device: Option<&crate::sysinfo::BlockDevice>) -> String {
    let mut description = vec![size.to_string()];
    if let Some(d) = device {
        description.extend(d.model.clone());
        description.push(if d.rotational { "rotational" } else { "solid state" }.into());
    }
    description.join(", ")
}

/// Says what will be destroyed; asks on a terminal unless `yes`, and refuses without `yes` otherwise.
pub fn confirm(checked: &[Checked], plan: &str, yes: bool) -> Result<()> {
    let mut text = String::from("streamcap trial will DESTROY everything on:\n");
    for c in checked {
        text.push_str(&format!("  {}  ({})\n", c.device.path, c.description));
    }
    text.push_str(plan);
    super::super::output::say(&text);
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        bail!("nothing was touched: stdin is not a terminal, so trial cannot ask; add --yes to confirm");
    }
    eprint!("Type yes to go on: ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    if answer.trim() != "yes" {
        bail!("nothing was touched (the answer was not 'yes')");
    }
    Ok(())
}
