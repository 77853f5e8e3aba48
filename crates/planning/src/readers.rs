//! Who issues a pool's operations, and so which copies and members serve them: the number of threads and of
//! operations in flight, btrfs's pid read policy (`pid % copies` picks the copy), and the cap that `k`
//! operations in flight keep at most `k` whole-file drives busy. Pure arithmetic, used by `members`.

/// Who issues the operations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Issuers {
    /// Threads issuing them, with consecutive pids (btrfs picks a copy by pid); `None`: many.
    pub threads: Option<u32>,
    /// Operations outstanding at once; `None`: many. A file-per-disk pool keeps at most this many data drives
    /// busy, and a sequential reader of btrfs raid1 reads one chunk's copy at a time.
    pub outstanding: Option<u32>,
}

impl Issuers {
    /// Many threads, many operations in flight (a server with a thread per stream).
    pub const MANY: Issuers = Issuers { threads: None, outstanding: None };

    /// `n` threads with one operation each in flight (vdbench's threads, one sequential reader).
    pub fn threads(n: u32) -> Issuers {
        Issuers { threads: Some(n), outstanding: Some(n) }
    }
}

/// Keeps the `k` members with the largest shares (ties by index) and gives them the whole load.
pub(super) fn concentrate(members: &[usize], shares: &[f64], k: Option<u32>) -> Vec<(usize, f64)> {
    if members.is_empty() {
        // No live member (a one-drive pool with its drive failed): nobody serves.
        return Vec::new();
    }
    let mut order: Vec<usize> = members.to_vec();
    order.sort_by(|&a, &b| shares[b].total_cmp(&shares[a]).then(a.cmp(&b)));
    let keep = k.map_or(order.len(), |k| (k as usize).clamp(1, order.len().max(1)));
    let total: f64 = order[..keep].iter().map(|&m| shares[m]).sum::<f64>().max(1e-12);
    let all: f64 = order.iter().map(|&m| shares[m]).sum::<f64>();
    order[..keep].iter().map(|&m| (m, shares[m] / total * all)).collect()
}

/// The share of reads each copy index receives under btrfs's pid policy (`pid % copies`), largest first, when
/// `threads` reader threads with consecutive ids read; even shares when the readers are many. Open-loop readers
/// (viewers dealt evenly to the threads) load each copy by its share of the threads. Closed-loop readers (each
/// waits for its read before the next, `outstanding` set) speed up on a copy with spare room, so every copy
/// some thread uses serves an even share.
pub fn copy_shares(copies: usize, issuers: Issuers) -> Vec<f64> {
    match (issuers.threads, issuers.outstanding) {
        (None, _) => vec![1.0 / copies as f64; copies],
        (Some(t), Some(_)) => {
            let used = (t.max(1) as usize).min(copies);
            (0..copies).map(|c| if c < used { 1.0 / used as f64 } else { 0.0 }).collect()
        }
        (Some(t), None) => {
            let t = t.max(1) as usize;
            (0..copies).map(|c| (t / copies + usize::from(c < t % copies)) as f64 / t as f64).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_shares_follow_thread_parity() {
        let open = |t| Issuers { threads: Some(t), outstanding: None };
        assert_eq!(copy_shares(2, open(1)), vec![1.0, 0.0]);
        assert_eq!(copy_shares(2, open(3)), vec![2.0 / 3.0, 1.0 / 3.0]);
        assert_eq!(copy_shares(2, Issuers::threads(3)), vec![0.5, 0.5]);
        assert_eq!(copy_shares(2, Issuers::threads(1)), vec![1.0, 0.0]);
        assert_eq!(copy_shares(2, Issuers::MANY), vec![0.5, 0.5]);
    }

    #[test]
    fn concentration_keeps_the_largest_shares() {
        let shares = [0.2, 0.5, 0.3];
        assert_eq!(concentrate(&[0, 1, 2], &shares, Some(1)), vec![(1, 1.0)]);
        assert_eq!(concentrate(&[0, 1, 2], &shares, None).len(), 3);
        // A one-drive space with its drive failed: nobody left (this panicked: `plan --count 1 --layouts all`).
        assert_eq!(concentrate(&[], &shares, Some(1)), vec![]);
    }
}
