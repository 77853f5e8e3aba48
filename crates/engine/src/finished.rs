//! The completion queue of engines that finish each request inside `submit` (sync, null): completions wait here,
//! one place per slot at most, until `reap` hands them over. Allocated once; no allocation per request.

use super::{Completion, Request};

pub(super) struct Finished {
    ready: Vec<Completion>,
    capacity: usize,
}

impl Finished {
    pub fn new(capacity: usize) -> Finished {
        Finished { ready: Vec::with_capacity(capacity), capacity }
    }

    /// Performs as many of `requests` as there is room for, in order; returns how many.
    pub fn complete_each(
        &mut self,
        requests: &[Request],
        mut perform: impl FnMut(&Request) -> Result<u32, i32>,
    ) -> usize {
        let accepted = requests.len().min(self.capacity - self.ready.len());
        for request in &requests[..accepted] {
            let result = perform(request);
            self.ready.push(Completion { slot: request.slot, result });
        }
        accepted
    }

    /// Moves every waiting completion to `out`; returns how many.
    pub fn hand_over(&mut self, out: &mut Vec<Completion>) -> usize {
        let n = self.ready.len();
        out.append(&mut self.ready);
        n
    }

    pub fn len(&self) -> usize {
        self.ready.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ready.is_empty()
    }
}
