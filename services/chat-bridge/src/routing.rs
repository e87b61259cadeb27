//! Which request a typed id names. A human types an id, or the start of one, that they read in
//! the room; a request id is partly the requester's choice, so a requester could choose one that
//! looks like another's (Mai submitting `mai.01a217f1` while a benign `mai.01a217f1-…` waits).
//! So a typed id counts only when exactly one request of the last 24 hours starts with it (by its
//! whole id or by its part after the client's name: an id equal to the typed text is one more
//! match, not a winner), and when that request was posted in the very room or channel the human
//! typed in. Anything else gets a reply listing the candidates, and reaches no request.

use crate::state::Tracked;
use airlock_protocol::RequestId;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// How far back a typed id is compared with requests.
pub const WINDOW_MS: i64 = 24 * 3_600_000;
/// Shortest typed id accepted, counted in its part after the client's name.
pub const MIN_TYPED: usize = 8;
/// Candidates listed in a reply.
pub const MAX_LISTED: usize = 6;

/// One chat room or channel: the system and its place.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Place {
    pub system: String,
    pub place: String,
}

/// What the directory knows of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub asked_at_ms: i64,
    pub deadline_ms: i64,
    pub ended: bool,
    pub posted_in: Vec<Place>,
}

impl Entry {
    pub fn of(tracked: &Tracked) -> Self {
        let asked = &tracked.asked;
        Self {
            // Records of gates that did not say when they asked: the deadline bounds it.
            asked_at_ms: if asked.asked_at_ms > 0 {
                asked.asked_at_ms
            } else {
                asked.deadline_ms
            },
            deadline_ms: asked.deadline_ms,
            ended: tracked.ended.is_some(),
            posted_in: tracked
                .posts
                .iter()
                .map(|p| Place {
                    system: p.system.clone(),
                    place: p.place.clone(),
                })
                .collect(),
        }
    }

    fn waiting(&self, now_ms: i64) -> bool {
        !self.ended && now_ms <= self.deadline_ms
    }
}

/// Which request a typed id names, for one room.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// Exactly one request starts with it, and it was posted here.
    One(RequestId),
    /// Several requests start with it (all of them listed).
    Ambiguous(Vec<RequestId>),
    /// Exactly one request starts with it, but it was not posted here.
    NotHere {
        named: RequestId,
        waiting_here: Vec<RequestId>,
    },
    /// No request of the last 24 hours starts with it.
    Unknown { waiting_here: Vec<RequestId> },
}

/// Whether `typed` names `id`: a prefix of the whole id, or of its part after the client's name.
pub fn starts(id: &RequestId, typed: &str) -> bool {
    id.as_str().starts_with(typed) || id.local().starts_with(typed)
}

/// Whether `typed` is long enough to name a request.
pub fn long_enough(typed: &str) -> bool {
    let local = typed.split_once('.').map_or(typed, |(_, local)| local);
    local.len() >= MIN_TYPED
}

/// The requests the bridge knows, by id.
#[derive(Default)]
pub struct Directory {
    entries: Mutex<BTreeMap<RequestId, Entry>>,
}

impl Directory {
    pub fn note(&self, tracked: &Tracked) {
        self.lock().insert(tracked.request_id.clone(), Entry::of(tracked));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<RequestId, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `rid` was posted in `here`.
    pub fn posted_in(&self, rid: &RequestId, here: &Place) -> bool {
        self.lock().get(rid).is_some_and(|e| e.posted_in.contains(here))
    }

    /// Requests still waiting that were posted in `here`, oldest first.
    pub fn waiting_in(&self, here: &Place, now_ms: i64) -> Vec<RequestId> {
        let entries = self.lock();
        let mut list: Vec<(&RequestId, &Entry)> = entries
            .iter()
            .filter(|(_, e)| e.waiting(now_ms) && e.posted_in.contains(here))
            .collect();
        list.sort_by_key(|(_, e)| e.asked_at_ms);
        list.into_iter().map(|(r, _)| r.clone()).collect()
    }

    pub fn resolve(&self, typed: &str, here: &Place, now_ms: i64) -> Resolved {
        let entries = self.lock();
        resolve(typed, here, now_ms, &entries)
    }

    /// Forgets requests older than the window that have ended.
    pub fn prune(&self, now_ms: i64) {
        self.lock()
            .retain(|_, e| !e.ended || e.asked_at_ms >= now_ms - WINDOW_MS);
    }
}

/// The rule, free of the directory's lock (tested on its own).
pub fn resolve(typed: &str, here: &Place, now_ms: i64, entries: &BTreeMap<RequestId, Entry>) -> Resolved {
    let mut matches: Vec<(&RequestId, &Entry)> = entries
        .iter()
        .filter(|(rid, e)| (e.asked_at_ms >= now_ms - WINDOW_MS || e.waiting(now_ms)) && starts(rid, typed))
        .collect();
    let waiting_here = || {
        let mut list: Vec<(&RequestId, &Entry)> = entries
            .iter()
            .filter(|(_, e)| e.waiting(now_ms) && e.posted_in.contains(here))
            .collect();
        list.sort_by_key(|(_, e)| e.asked_at_ms);
        list.into_iter().map(|(r, _)| r.clone()).collect()
    };
    match matches.len() {
        0 => Resolved::Unknown {
            waiting_here: waiting_here(),
        },
        1 => {
            let (rid, entry) = matches.remove(0);
            if entry.posted_in.contains(here) {
                Resolved::One(rid.clone())
            } else {
                Resolved::NotHere {
                    named: rid.clone(),
                    waiting_here: waiting_here(),
                }
            }
        }
        _ => {
            matches.sort_by_key(|(_, e)| e.asked_at_ms);
            Resolved::Ambiguous(matches.into_iter().map(|(r, _)| r.clone()).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn here() -> Place {
        Place {
            system: "matrix".into(),
            place: "!approvals:x".into(),
        }
    }

    fn entry(asked_at_ms: i64, places: &[Place]) -> Entry {
        Entry {
            asked_at_ms,
            deadline_ms: asked_at_ms + 600_000,
            ended: false,
            posted_in: places.to_vec(),
        }
    }

    fn id(s: &str) -> RequestId {
        RequestId::parse(s).expect("id")
    }

    const NOW: i64 = 1_800_000_000_000;

    #[test]
    fn an_id_planted_as_the_prefix_of_another_makes_the_prefix_ambiguous() {
        // Mai submits `mai.01a217f1`, the first 8 characters of a benign request's id.
        let benign = id("mai.01a217f1-c3d4-7e5f-8a9b-0c1d2e3f4a5b");
        let planted = id("mai.01a217f1");
        let entries: BTreeMap<RequestId, Entry> = [
            (benign.clone(), entry(NOW - 1000, &[here()])),
            (planted.clone(), entry(NOW - 500, &[here()])),
        ]
        .into();
        assert_eq!(
            resolve("01a217f1", &here(), NOW, &entries),
            Resolved::Ambiguous(vec![benign.clone(), planted.clone()])
        );
        assert!(matches!(
            resolve("mai.01a217f1", &here(), NOW, &entries),
            Resolved::Ambiguous(_)
        ));
        assert_eq!(resolve("01a217f1-c3d4", &here(), NOW, &entries), Resolved::One(benign));
    }

    #[test]
    fn only_requests_posted_here_can_be_named_and_all_of_a_day_count() {
        let elsewhere = Place {
            system: "matrix".into(),
            place: "!other:x".into(),
        };
        let other = id("bob.0193ffff-0001");
        let old = id("mai.0193aaaa-0001");
        let mut old_entry = entry(NOW - WINDOW_MS - 1, &[here()]);
        old_entry.ended = true;
        let entries: BTreeMap<RequestId, Entry> = [
            (other.clone(), entry(NOW, std::slice::from_ref(&elsewhere))),
            (old.clone(), old_entry),
        ]
        .into();
        assert_eq!(
            resolve("0193ffff", &here(), NOW, &entries),
            Resolved::NotHere {
                named: other.clone(),
                waiting_here: vec![]
            }
        );
        assert_eq!(resolve("0193ffff", &elsewhere, NOW, &entries), Resolved::One(other));
        // Older than a day and ended: no longer a candidate.
        assert!(matches!(
            resolve("0193aaaa", &here(), NOW, &entries),
            Resolved::Unknown { .. }
        ));
    }

    #[test]
    fn a_request_of_another_client_with_the_same_local_id_is_a_second_match() {
        let mine = id("mai.0193a1b2-0001");
        let theirs = id("bob.0193a1b2-0001");
        let entries: BTreeMap<RequestId, Entry> = [
            (mine.clone(), entry(NOW, &[here()])),
            (theirs.clone(), entry(NOW, &[here()])),
        ]
        .into();
        assert!(matches!(resolve("0193a1b2-0001", &here(), NOW, &entries), Resolved::Ambiguous(v) if v.len() == 2));
        assert_eq!(
            resolve("mai.0193a1b2-0001", &here(), NOW, &entries),
            Resolved::One(mine)
        );
    }

    #[test]
    fn typed_ids_are_long_enough_in_their_local_part() {
        assert!(long_enough("0193a1b2"));
        assert!(!long_enough("0193a1"));
        assert!(!long_enough("mai.0193"));
        assert!(long_enough("mai.0193a1b2"));
    }
}
