//! vdbench's host definitions (`hd=`) and the `host=` keyword of sds, wds and fwds. Every hd that names this
//! machine (`system=` localhost, 127.0.0.1, ::1 or this host's name; an hd without `system=` is the machine of
//! its own name) runs here, as its own set of threads: vdbench runs each workload on every host it names, so a
//! workload on two local hds runs twice, side by side. An hd on another machine would need streamcap's
//! many-clients ranks, which do not exist yet, and is refused with that reason. Pure: no I/O besides reading
//! this machine's host name.

use super::words::wildcard;
use super::{fail, unsupported, words};
use crate::spec::ReadOptions;
use crate::spec::vdbench::VdbError;
use crate::spec::vdbench::lexer::unprotect;
use crate::spec::vdbench::model::{Kind, Model, Record};

/// The hosts of a run: the names of its hd records (all on this machine), or none when the file has no hd.
#[derive(Debug, Clone, Default)]
pub(in crate::spec::vdbench) struct Hosts {
    names: Vec<String>,
    /// What the hds say that has no effect here (`vdbench=`, `user=`, `shell=`, `jvms=`).
    pub notices: Vec<String>,
}

/// Checks every hd of the file; `Hosts` lists them in file order.
pub(super) fn resolve(model: &Model, _options: &ReadOptions) -> Result<Hosts, VdbError> {
    let this = this_host();
    let (mut names, mut notices) = (Vec::new(), Vec::new());
    for hd in model.of(Kind::Hd) {
        unsupported(hd, "clients", "several clients per host (clients=)")?;
        unsupported(hd, "mount", "mounting (mount=)")?;
        let (system, p) = match hd.get("system") {
            Some(p) => (unprotect(&p.value), Some(p)),
            None => (hd.name.clone(), None),
        };
        if !is_local(&system, this.as_deref()) {
            let message = format!(
                "{} runs on {system}, another machine: streamcap runs on this host only until its many-clients \
                 ranks exist; point system= at localhost to run the host's workloads here",
                hd.label()
            );
            return Err(match p {
                Some(p) => fail(hd, p, message),
                None => VdbError::at(&hd.at, message),
            });
        }
        names.push(hd.name.clone());
        for keyword in ["vdbench", "user", "shell", "jvms"] {
            if hd.get(keyword).is_some() {
                notices.push(format!("vdbench {}: {keyword}= has no effect in streamcap", hd.label()));
            }
        }
    }
    Ok(Hosts { names, notices })
}

impl Hosts {
    /// The hosts a record runs on (its `host=`, or every host): at least one name, `localhost` without hds.
    pub fn of(&self, rec: &Record) -> Result<Vec<String>, VdbError> {
        let all = || if self.names.is_empty() { vec!["localhost".to_string()] } else { self.names.clone() };
        let Some((wanted, p)) = words(rec, "host")? else { return Ok(all()) };
        let mut out = Vec::new();
        for name in &wanted {
            let hits: Vec<String> = if name == "*" {
                all()
            } else if self.names.is_empty() && is_local(name, None) {
                vec!["localhost".to_string()]
            } else {
                self.names.iter().filter(|h| wildcard(name, h)).cloned().collect()
            };
            if hits.is_empty() {
                return Err(fail(rec, p, format!("there is no hd={name}: add an hd record for it, or remove host=")));
            }
            out.extend(hits.into_iter().filter(|h| !out.contains(h)).collect::<Vec<_>>());
        }
        Ok(out)
    }

    /// Whether the run has more than one host (then parts are named after their host).
    pub fn several(&self) -> bool {
        self.names.len() > 1
    }
}

fn is_local(system: &str, this: Option<&str>) -> bool {
    let s = system.to_ascii_lowercase();
    let short = |n: &str| n.split('.').next().unwrap_or_default().to_string();
    matches!(s.as_str(), "localhost" | "127.0.0.1" | "::1" | "localhost.localdomain")
        || this.is_some_and(|t| short(&s) == short(&t.to_ascii_lowercase()))
}

fn this_host() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_names_are_local_and_others_are_not() {
        assert!(is_local("localhost", None));
        assert!(is_local("127.0.0.1", Some("box")));
        assert!(is_local("BOX.example.com", Some("box")));
        assert!(!is_local("other", Some("box")));
    }
}
