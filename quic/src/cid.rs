//! Connection IDs that name the worker holding the connection.
//!
//! Eight bytes: the first chosen so that the group's steering program
//! (`udp_group::cid_worker`) maps it to this worker, the rest random.
//! `validate` is what quinn-proto asks before it answers a packet for a
//! connection it does not hold with a stateless reset: an ID of another
//! worker is refused there, so a packet that reaches the wrong worker (the
//! group rebuilt, the program absent) never resets its owner's connection.

use std::time::Duration;

use quinn_proto::{ConnectionId, ConnectionIdGenerator, InvalidCid};
use ringside_runtime::udp_group::{cid_first_byte, cid_worker};

pub const CID_LEN: usize = 8;

pub struct WorkerCids {
    pub worker: usize,
    pub workers: usize,
}

impl ConnectionIdGenerator for WorkerCids {
    fn generate_cid(&mut self) -> ConnectionId {
        let mut b = [0u8; CID_LEN];
        aws_lc_rs::rand::fill(&mut b).expect("the system's random source");
        b[0] = cid_first_byte(self.worker, self.workers, b[0]);
        ConnectionId::new(&b)
    }

    fn validate(&self, cid: &ConnectionId) -> Result<(), InvalidCid> {
        if cid.len() == CID_LEN && cid_worker(cid, self.workers) == self.worker {
            Ok(())
        } else {
            Err(InvalidCid)
        }
    }

    fn cid_len(&self) -> usize {
        CID_LEN
    }

    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}

/// The destination connection ID's first byte of a datagram's first
/// packet, as the steering program reads it; `None` if too short.
pub fn dcid_first_byte(datagram: &[u8]) -> Option<(u8, bool)> {
    let first = *datagram.first()?;
    let long = first & 0x80 != 0;
    let at = if long { 6 } else { 1 };
    datagram.get(at).map(|&b| (b, long))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_ids_validate_only_on_their_worker() {
        for workers in [1, 2, 3, 16] {
            for worker in 0..workers {
                let mut g = WorkerCids { worker, workers };
                for _ in 0..50 {
                    let id = g.generate_cid();
                    assert_eq!(id.len(), CID_LEN);
                    assert_eq!(cid_worker(&id, workers), worker);
                    assert!(g.validate(&id).is_ok());
                    for other in (0..workers).filter(|&o| o != worker) {
                        let o = WorkerCids {
                            worker: other,
                            workers,
                        };
                        assert!(o.validate(&id).is_err(), "{worker} vs {other} of {workers}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_first_byte_is_read_where_the_program_reads_it() {
        assert_eq!(dcid_first_byte(&[0x40, 7, 1]), Some((7, false)));
        assert_eq!(dcid_first_byte(&[0xc0, 0, 0, 0, 1, 8, 9]), Some((9, true)));
        assert_eq!(dcid_first_byte(&[0xc0, 0, 0]), None);
        assert_eq!(dcid_first_byte(&[]), None);
    }
}
