//! An in-process transport for tests: N ranks as threads of one process, each with its own mailbox, so the
//! cluster protocol is tested without MPI.

use std::sync::Arc;

use super::{Cluster, Key, Mailbox, Transport};

pub struct LocalTransport {
    rank: u32,
    mailboxes: Arc<Vec<Mailbox>>,
}

impl Transport for LocalTransport {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.mailboxes.len() as u32
    }

    fn send(&self, to: u32, key: Key, payload: Vec<u8>) {
        self.mailboxes[to as usize].deliver(self.rank, key, payload);
    }

    fn mailbox(&self) -> &Mailbox {
        &self.mailboxes[self.rank as usize]
    }
}

/// Runs `body` on `size` ranks at once (hosts "host0", "host1", …) and returns what each returned, in rank order.
pub fn ranks<T: Send>(size: u32, body: impl Fn(Cluster) -> T + Sync) -> Vec<T> {
    let mailboxes = Arc::new((0..size).map(|_| Mailbox::new()).collect::<Vec<_>>());
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..size)
            .map(|rank| {
                let transport = LocalTransport { rank, mailboxes: mailboxes.clone() };
                let body = &body;
                scope.spawn(move || body(Cluster::join(Box::new(transport), &format!("host{rank}"))))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a rank panicked")).collect()
    })
}
