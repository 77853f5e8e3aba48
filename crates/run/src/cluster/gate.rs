//! The agreements between phases: whether every rank goes on to the next stage (none failed, none was
//! interrupted), and what a finished phase measured over all ranks, which later phases take their rates from
//! (vdbench curves, stream estimates). Both give every rank the same answer, so no rank goes on alone.

use serde::{Deserialize, Serialize};

use super::{Cluster, Key};
use crate::run::curves::Measured;
use crate::run::{Interrupt, RunError};

/// A rank's state before a stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Ready {
    Go,
    /// An earlier phase ended early (the run stops after it).
    Stop,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// Set-up failed; the words say how.
    Failed(String),
}

impl Ready {
    fn weight(&self) -> u8 {
        match self {
            Ready::Go => 0,
            Ready::Stop => 1,
            Ready::Interrupted => 2,
            Ready::Failed(_) => 3,
        }
    }
}

/// In a cluster, the agreement before a stage: `local` is this rank's preparation (`Ok(None)`: interrupted).
/// Every rank gets the same answer: go (`Ok(Some)`), stop (`Ok(None)`; after an interruption anywhere, this
/// rank's interrupt flag is set too), or fail (this rank's own error, or `RunError::Peer` naming the rank).
pub fn settle<T>(
    cluster: Option<&Cluster>,
    interrupt: &Interrupt,
    stage: u64,
    local: Result<Option<T>, RunError>,
) -> Result<Option<T>, RunError> {
    let Some(cluster) = cluster else { return local };
    let mine = match &local {
        Err(e) => Ready::Failed(e.to_string()),
        _ if interrupt.is_set() => Ready::Interrupted,
        Ok(None) => Ready::Stop,
        Ok(Some(_)) => Ready::Go,
    };
    match agree_ready(cluster, Key::new(Key::GATE, stage, 0), &mine) {
        Ready::Go => local,
        Ready::Stop => Ok(None),
        Ready::Interrupted => {
            interrupt.set();
            Ok(None)
        }
        Ready::Failed(why) => local.and(Err(RunError::Peer(why))),
    }
}

/// Every rank's state before stage `stage`, merged: the first failure (named by rank and host), else an
/// interruption, else a stop, else go.
pub fn agree_ready(cluster: &Cluster, key: Key, mine: &Ready) -> Ready {
    let bytes = serde_json::to_vec(mine).expect("plain data");
    let all = cluster.exchange(key, &bytes);
    let states: Vec<Ready> = (all.iter().enumerate())
        .map(|(rank, b)| match cluster.unreachable(rank as u32) {
            true => Ready::Failed(cluster.lost_reason()),
            false => serde_json::from_slice(b).unwrap_or_else(|e| Ready::Failed(format!("unreadable state ({e})"))),
        })
        .collect();
    let worst = states.iter().enumerate().max_by_key(|(rank, s)| (s.weight(), std::cmp::Reverse(*rank)));
    match worst {
        Some((rank, Ready::Failed(why))) => Ready::Failed(format!("{}: {why}", cluster.name(rank as u32))),
        Some((_, state)) => state.clone(),
        None => Ready::Go,
    }
}

/// What phase `phase` measured on every rank, combined the same way on every rank: rates add up (each rank's own
/// operations over its own measured time, as IOR sums its tasks), latency is the mean weighted by operations.
pub fn agree_measured(cluster: &Cluster, phase: usize, mine: Measured) -> Measured {
    let bytes = serde_json::to_vec(&mine).expect("plain data");
    let all = cluster.exchange(Key::new(Key::MEASURED, phase as u64, 0), &bytes);
    let each: Vec<Measured> = all.iter().map(|b| serde_json::from_slice(b).unwrap_or_default()).collect();
    let ops: f64 = each.iter().map(|m| m.ops_per_sec).sum();
    let weighted: f64 = each.iter().map(|m| m.mean_latency_ns * m.ops_per_sec).sum();
    Measured {
        ops_per_sec: ops,
        bytes_per_sec: each.iter().map(|m| m.bytes_per_sec).sum(),
        mean_latency_ns: if ops > 0.0 { weighted / ops } else { 0.0 },
        requested_per_sec: each.iter().map(|m| m.requested_per_sec).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::local::ranks;
    use super::*;

    #[test]
    fn the_worst_state_wins_and_a_failure_is_named() {
        let got = ranks(3, |cluster| {
            let mine = match cluster.rank() {
                0 => Ready::Go,
                1 => Ready::Interrupted,
                _ => Ready::Failed("no space".into()),
            };
            let key = |stage| Key::new(Key::GATE, stage, 0);
            (agree_ready(&cluster, key(0), &mine), agree_ready(&cluster, key(1), &Ready::Go))
        });
        for (first, second) in got {
            assert_eq!(first, Ready::Failed("rank 2 (host2): no space".into()));
            assert_eq!(second, Ready::Go);
        }
    }

    #[test]
    fn rates_add_up_and_latency_is_weighted_by_operations() {
        let got = ranks(2, |cluster| {
            let r = f64::from(cluster.rank());
            let mine = Measured {
                ops_per_sec: 100.0 + 200.0 * r,
                bytes_per_sec: 1e6,
                mean_latency_ns: 1000.0 + 3000.0 * r,
                requested_per_sec: 10.0,
            };
            agree_measured(&cluster, 4, mine)
        });
        for m in got {
            assert_eq!(m.ops_per_sec, 400.0);
            assert_eq!(m.bytes_per_sec, 2e6);
            assert_eq!(m.mean_latency_ns, (100.0 * 1000.0 + 300.0 * 4000.0) / 400.0);
            assert_eq!(m.requested_per_sec, 20.0);
        }
    }
}
