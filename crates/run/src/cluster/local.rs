//! An in-process transport for tests: N ranks as threads of one process, each with its own mailbox, so the
//! cluster protocol is tested without MPI. A rank can be cut off (`Cut`), as a host behind a broken link: what
//! it sends and what is sent to it is lost, and it lives on.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use super::{Cluster, Key, Mailbox, Patience, Transport};

pub struct LocalTransport {
    rank: u32,
    mailboxes: Arc<Vec<Mailbox>>,
    cut: Arc<Cut>,
}

/// Which rank is cut off from the others, if any.
pub struct Cut(AtomicU32);

impl Cut {
    /// Cuts `rank` off from now on.
    pub fn cut(&self, rank: u32) {
        self.0.store(rank, Ordering::Relaxed);
    }

    fn is_cut(&self, rank: u32) -> bool {
        self.0.load(Ordering::Relaxed) == rank
    }
}

impl Transport for LocalTransport {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.mailboxes.len() as u32
    }

    fn send(&self, to: u32, key: Key, payload: Vec<u8>) {
        if to == self.rank || !(self.cut.is_cut(to) || self.cut.is_cut(self.rank)) {
            self.mailboxes[to as usize].deliver(self.rank, key, payload);
        }
    }

    fn mailbox(&self) -> &Mailbox {
        &self.mailboxes[self.rank as usize]
    }
}

/// Runs `body` on `size` ranks at once (hosts "host0", "host1", …) and returns what each returned, in rank order.
pub fn ranks<T: Send>(size: u32, body: impl Fn(Cluster) -> T + Sync) -> Vec<T> {
    ranks_with(size, Patience::DEFAULT, |cluster, _| body(cluster))
}

/// [`ranks`] with the watch's patience given, and a way to cut a rank off.
pub fn ranks_with<T: Send>(size: u32, patience: Patience, body: impl Fn(Cluster, &Cut) -> T + Sync) -> Vec<T> {
    let mailboxes = Arc::new((0..size).map(|_| Mailbox::new()).collect::<Vec<_>>());
    let cut = Arc::new(Cut(AtomicU32::new(u32::MAX)));
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..size)
            .map(|rank| {
                let transport = LocalTransport { rank, mailboxes: mailboxes.clone(), cut: cut.clone() };
                let (body, cut) = (&body, &cut);
                scope
                    .spawn(move || body(Cluster::join_with(Box::new(transport), &format!("host{rank}"), patience), cut))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a rank panicked")).collect()
    })
}
