//! Who runs next: the executor's slots shared between clients, without I/O.
//!
//! Requests wait per client, each client's in the order they came. When a slot is free the next
//! request is the head of the next client's queue in round-robin order, skipping clients that
//! already hold their share of the slots (`max_per_client`). One client with many long jobs so
//! takes at most its share, and another client's request waits at most for the next free slot,
//! not behind the whole of the first client's queue. With one client alone the order is simply
//! its own.

use std::collections::{BTreeMap, VecDeque};

/// A request waiting for a slot, and the client whose request it is.
pub(crate) trait Queued {
    fn client(&self) -> &str;
}

/// The waiting requests and the running count, per client.
pub(crate) struct FairQueue<T> {
    slots: usize,
    max_per_client: usize,
    waiting: BTreeMap<String, VecDeque<T>>,
    running: BTreeMap<String, usize>,
    /// The client served last: the round starts after it.
    last: Option<String>,
}

impl<T: Queued> FairQueue<T> {
    pub(crate) fn new(slots: usize, max_per_client: usize) -> FairQueue<T> {
        FairQueue {
            slots: slots.max(1),
            max_per_client: max_per_client.clamp(1, slots.max(1)),
            waiting: BTreeMap::new(),
            running: BTreeMap::new(),
            last: None,
        }
    }

    pub(crate) fn push(&mut self, item: T) {
        self.waiting
            .entry(item.client().to_owned())
            .or_default()
            .push_back(item);
    }

    /// Puts back a request taken with [`FairQueue::pop`] that could not start after all (its
    /// slot is given back with [`FairQueue::finished`]): it is the first of its client's again.
    pub(crate) fn push_first(&mut self, item: T) {
        self.waiting
            .entry(item.client().to_owned())
            .or_default()
            .push_front(item);
    }

    pub(crate) fn waiting(&self) -> usize {
        self.waiting.values().map(VecDeque::len).sum()
    }

    pub(crate) fn running(&self) -> usize {
        self.running.values().sum()
    }

    /// Every waiting request, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.waiting.values().flatten()
    }

    /// Removes the waiting requests `drop` says so of, returning them.
    pub(crate) fn take_where(&mut self, mut drop: impl FnMut(&T) -> bool) -> Vec<T> {
        let mut taken = Vec::new();
        for queue in self.waiting.values_mut() {
            let (gone, kept): (VecDeque<T>, VecDeque<T>) = queue.drain(..).partition(|item| drop(item));
            *queue = kept;
            taken.extend(gone);
        }
        self.waiting.retain(|_, q| !q.is_empty());
        taken
    }

    /// The clients in this round's order: those after the one served last, then the rest.
    fn round(&self) -> Vec<&String> {
        let (after, before): (Vec<&String>, Vec<&String>) = self
            .waiting
            .keys()
            .partition(|client| self.last.as_ref().is_some_and(|last| *client > last));
        after.into_iter().chain(before).collect()
    }

    fn has_room(&self, client: &str) -> bool {
        self.running.get(client).copied().unwrap_or(0) < self.max_per_client
    }

    /// The request that would run next, if a slot is free and some client has room.
    pub(crate) fn peek(&self) -> Option<&T> {
        if self.running() >= self.slots {
            return None;
        }
        let client = self.round().into_iter().find(|c| self.has_room(c))?;
        self.waiting.get(client)?.front()
    }

    /// Takes the request that runs next and counts it running.
    pub(crate) fn pop(&mut self) -> Option<T> {
        let client = self.peek()?.client().to_owned();
        let queue = self.waiting.get_mut(&client)?;
        let item = queue.pop_front()?;
        if queue.is_empty() {
            self.waiting.remove(&client);
        }
        *self.running.entry(client.clone()).or_default() += 1;
        self.last = Some(client);
        Some(item)
    }

    /// A request of `client` that ran (or was counted running) is over.
    pub(crate) fn finished(&mut self, client: &str) {
        if let Some(n) = self.running.get_mut(client) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.running.remove(client);
            }
        }
    }

    /// Where every waiting request stands, as a snapshot that borrows nothing.
    pub(crate) fn places(&self) -> Places {
        Places {
            round: self
                .round()
                .into_iter()
                .map(|client| (client.clone(), self.waiting.get(client).map_or(0, VecDeque::len)))
                .collect(),
        }
    }

    /// Every waiting request with its client and its place in that client's queue.
    pub(crate) fn for_each_waiting(&mut self, mut f: impl FnMut(&str, usize, &mut T)) {
        for (client, queue) in &mut self.waiting {
            for (index, item) in queue.iter_mut().enumerate() {
                f(client, index, item);
            }
        }
    }
}

/// The clients in round order with the length of each one's queue.
pub(crate) struct Places {
    round: Vec<(String, usize)>,
}

impl Places {
    /// How many requests start before the one at `index` in `client`'s queue, if slots free up
    /// one at a time and no other request arrives: each round gives every other client with
    /// requests one turn, those before `client` in this round one more.
    pub(crate) fn ahead(&self, client: &str, index: usize) -> usize {
        let mine = self.round.iter().position(|(c, _)| c == client);
        let others: usize = self
            .round
            .iter()
            .enumerate()
            .filter(|(_, (other, _))| other != client)
            .map(|(at, (_, len))| {
                let earlier = mine.is_some_and(|m| at < m);
                (*len).min(index + usize::from(earlier))
            })
            .sum();
        others + index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Eq)]
    struct Job(&'static str, u32);

    impl Queued for Job {
        fn client(&self) -> &str {
            self.0
        }
    }

    fn order(queue: &mut FairQueue<Job>) -> Vec<(&'static str, u32)> {
        let mut started = Vec::new();
        while let Some(Job(client, n)) = queue.pop() {
            started.push((client, n));
            queue.finished(client);
        }
        started
    }

    #[test]
    fn clients_take_turns_and_each_keeps_its_own_order() {
        let mut queue = FairQueue::new(2, 2);
        for n in 0..4 {
            queue.push(Job("mai", n));
        }
        queue.push(Job("bob", 0));
        queue.push(Job("bob", 1));
        assert_eq!(
            order(&mut queue),
            [("bob", 0), ("mai", 0), ("bob", 1), ("mai", 1), ("mai", 2), ("mai", 3)]
        );
    }

    #[test]
    fn a_client_holding_its_share_of_the_slots_leaves_the_rest_to_others() {
        let mut queue = FairQueue::new(2, 1);
        for n in 0..4 {
            queue.push(Job("mai", n));
        }
        assert_eq!(queue.pop(), Some(Job("mai", 0)));
        assert!(
            queue.pop().is_none(),
            "mai holds its one slot: the other waits for others"
        );
        queue.push(Job("bob", 0));
        assert_eq!(queue.places().ahead("bob", 0), 0);
        assert_eq!(queue.pop(), Some(Job("bob", 0)), "bob is served in the free slot");
        assert!(queue.pop().is_none(), "every slot is taken");
        queue.finished("mai");
        assert_eq!(queue.pop(), Some(Job("mai", 1)));
    }

    #[test]
    fn a_lone_client_may_use_every_slot() {
        let mut queue = FairQueue::new(3, 3);
        for n in 0..5 {
            queue.push(Job("mai", n));
        }
        assert!(queue.pop().is_some() && queue.pop().is_some() && queue.pop().is_some());
        assert!(queue.pop().is_none());
        assert_eq!((queue.running(), queue.waiting()), (3, 2));
        assert_eq!(queue.places().ahead("mai", 1), 1);
    }

    #[test]
    fn what_is_ahead_counts_the_other_clients_turns() {
        let mut queue = FairQueue::new(1, 1);
        for n in 0..5 {
            queue.push(Job("mai", n));
        }
        queue.push(Job("bob", 0));
        // bob comes first in the round ("bob" < "mai"): nothing is ahead of it.
        assert_eq!(queue.places().ahead("bob", 0), 0);
        // mai's third waits for its own two and bob's one.
        assert_eq!(queue.places().ahead("mai", 2), 3);
        assert_eq!(queue.pop(), Some(Job("bob", 0)));
        queue.finished("bob");
        // Served last, bob's next request comes after mai's turn.
        queue.push(Job("bob", 1));
        assert_eq!(queue.places().ahead("bob", 0), 1);
    }

    #[test]
    fn a_request_put_back_is_next_of_its_client() {
        let mut queue = FairQueue::new(1, 1);
        queue.push(Job("mai", 0));
        queue.push(Job("mai", 1));
        let first = queue.pop().unwrap();
        queue.finished("mai");
        queue.push_first(first);
        assert_eq!(queue.running(), 0);
        assert_eq!(queue.pop(), Some(Job("mai", 0)));
        let removed = queue.take_where(|j| j.1 == 1);
        assert_eq!(removed, [Job("mai", 1)]);
        assert_eq!(queue.waiting(), 0);
    }
}
