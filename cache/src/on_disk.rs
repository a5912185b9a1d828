//! The memory tier's link to the disk tier (`store::disk`): every stored
//! response is written through to this core's files after it was sent; a
//! large one then leaves memory, and its hits are sent from its file
//! without a copy (a memory entry keeps its head and the open file). A
//! key the memory tier does not hold is looked for on disk, and brought
//! back into memory (its head, and a small body). After a restart the
//! files answer at once, while the index is read in the background.
//!
//! Purges: a URL's file is removed with it. A purge by prefix or tag
//! reaches the entries in memory at once; objects on disk that memory does
//! not hold are checked when they are brought back, against the orders
//! given since they were stored. Those orders are kept in a log beside
//! the core's directory, so a purge holds across a restart.

use std::cell::RefCell;
use std::io::Write;
use std::path::PathBuf;
use std::rc::Rc;

use bytes::Bytes;

use crate::core::bump;
use crate::entry::{headers_iter, Body, Dates, Variant};
use crate::key::Key;
use crate::purge::{Order, Target};
use crate::store::disk::{self, Disk};
use crate::{record, CoreCache, Settings};

/// Bodies above this leave memory once they are on disk.
pub const DISK_ONLY: u64 = 64 * 1024;
/// The store's generation: bumped when what a record means changes.
const GENERATION: u64 = 1;
/// Purge orders kept (the oldest go first).
const ORDERS_MAX: usize = 4096;

/// One core's disk tier and its purge log.
pub struct Tier {
    pub disk: Disk,
    /// (when, order) for each purge by prefix or tag.
    orders: RefCell<Vec<(u64, Order)>>,
    log: PathBuf,
}

impl Tier {
    pub fn open(s: &Settings, worker: usize) -> Option<Tier> {
        let root = s.disk.as_ref()?;
        let dir = disk::core_dir(root, worker);
        let disk = match Disk::open(&dir, s.disk_size, GENERATION) {
            Ok(d) => d,
            Err(e) => {
                tracing::error!(dir = %dir.display(), error = %e, "cannot open the cache's disk tier; memory only");
                return None;
            }
        };
        let log = root.join(format!("purges-core-{worker}.log"));
        let orders = std::fs::read_to_string(&log)
            .map(|t| t.lines().filter_map(|l| parse_line(&s.name, l)).collect())
            .unwrap_or_default();
        Some(Tier {
            disk,
            orders: RefCell::new(orders),
            log,
        })
    }

    /// Notes a purge by prefix or tag for the objects only on disk.
    pub fn note(&self, now: u64, order: &Order) {
        if matches!(order.target, Target::Key(_)) {
            return;
        }
        let mut orders = self.orders.borrow_mut();
        orders.push((now, order.clone()));
        let rewrite = orders.len() > ORDERS_MAX;
        if rewrite {
            let over = orders.len() - ORDERS_MAX;
            orders.drain(..over);
        }
        // Blocking, and rare: a purge by prefix or tag.
        let text: String = if rewrite {
            orders.iter().map(|(t, o)| line(*t, o)).collect()
        } else {
            line(now, order)
        };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(!rewrite)
            .write(true)
            .truncate(rewrite)
            .open(&self.log);
        if let Err(e) = file.and_then(|mut f| f.write_all(text.as_bytes())) {
            tracing::warn!(log = %self.log.display(), error = %e, "cannot keep a purge for the disk tier");
        }
    }

    /// Whether an order given after `stored` takes the object; and
    /// whether only softly.
    fn purged(&self, key: &[u8], tags: &[Box<[u8]>], stored: u64) -> Option<bool> {
        let orders = self.orders.borrow();
        let mut soft = None;
        for (at, o) in orders.iter().filter(|(at, _)| *at >= stored) {
            let _ = at;
            if o.matches(key, tags) {
                if !o.soft {
                    return Some(false);
                }
                soft = Some(true);
            }
        }
        soft
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn line(at: u64, o: &Order) -> String {
    let (kind, parts) = match &o.target {
        Target::Key(k) => ("K", vec![hex(k)]),
        Target::Prefix(p) => ("P", vec![hex(p)]),
        Target::Tags(t) => ("T", t.iter().map(|t| hex(t)).collect()),
    };
    format!("{at} {} {kind} {}\n", u8::from(o.soft), parts.join(","))
}

fn parse_line(cache: &str, l: &str) -> Option<(u64, Order)> {
    let mut f = l.split(' ');
    let at = f.next()?.parse().ok()?;
    let soft = f.next()? == "1";
    let kind = f.next()?;
    let parts: Vec<Vec<u8>> = f.next()?.split(',').map(unhex).collect::<Option<_>>()?;
    let target = match kind {
        "P" => Target::Prefix(parts.into_iter().next()?),
        "T" => Target::Tags(parts),
        _ => return None,
    };
    Some((
        at,
        Order {
            cache: cache.to_owned(),
            target,
            soft,
        },
    ))
}

impl CoreCache {
    /// Reads the disk tier's index in the background (call once, on the
    /// core).
    pub fn start(self: &Rc<Self>) {
        if self.disk.is_none() {
            return;
        }
        let c = self.clone();
        ringside_runtime::task::spawn(async move {
            if let Some(t) = &c.disk {
                match t.disk.rebuild().await {
                    Ok(r) => {
                        tracing::debug!(?r, "cache disk tier read");
                        c.refresh_gauges();
                    }
                    Err(e) => tracing::warn!(error = %e, "cache disk tier not read"),
                }
            }
        });
    }

    /// The variant of `key` matching the request, from memory or, failing
    /// that, from disk (brought back into memory).
    pub async fn find<'h>(
        self: &Rc<Self>,
        key: &Key,
        request: impl Iterator<Item = (&'h [u8], &'h [u8])> + Clone,
    ) -> Option<Rc<Variant>> {
        if let Some(v) = self.lookup(key, request.clone()) {
            return Some(v);
        }
        let tier = self.disk.as_ref()?;
        if self.has(key) || !tier.disk.contains(key.hash) {
            return None;
        }
        let found = tier.disk.get(key.hash, &key.bytes).await.ok()??;
        let Some(d) = record::decode(&found.head) else {
            tier.disk.remove(key.hash);
            return None;
        };
        let soft = match tier.purged(&key.bytes, &d.tags, d.meta.response_time) {
            Some(false) => {
                tier.disk.remove(key.hash);
                return None;
            }
            s => s.is_some(),
        };
        let body = match found.body.clone() {
            Some(b) if found.body_len <= DISK_ONLY => Body::Memory(b),
            _ => Body::Disk(Rc::new(found)),
        };
        let v = Variant {
            vary: d.vary,
            secondary: d.secondary,
            meta: d.meta,
            status: d.status,
            dates: Dates::of(headers_iter(&d.headers)),
            headers: d.headers,
            body,
            tags: d.tags,
            soft_purged: std::cell::Cell::new(soft),
            encoded: RefCell::default(),
        };
        let matches = crate::policy::vary::secondary(&v.vary, request) == v.secondary;
        let (v, _) = self.keep_in_memory(key, v);
        bump(&self.stats.from_disk);
        matches.then_some(v)
    }

    /// Writes `v` (stored in memory now) through to disk, after the
    /// response was sent; a large body then leaves memory.
    pub(crate) fn write_through(self: &Rc<Self>, key: &Key, v: &Rc<Variant>) {
        let (Some(_), Some(body)) = (&self.disk, v.body.bytes()) else {
            return;
        };
        let head = record::encode(v);
        let body: Bytes = body.clone();
        let (c, key, v) = (self.clone(), Key::from_bytes(key.bytes.clone()), v.clone());
        ringside_runtime::task::spawn(async move {
            let Some(t) = &c.disk else { return };
            match t.disk.put(key.hash, &key.bytes, &head, body).await {
                Ok(true) => {
                    if v.body.len() > DISK_ONLY {
                        if let Ok(Some(found)) = t.disk.get(key.hash, &key.bytes).await {
                            c.to_file(&key, &v, found);
                        }
                    }
                    c.refresh_gauges();
                }
                Ok(false) => {}
                Err(e) => tracing::debug!(error = %e, "cache object not written to disk"),
            }
        });
    }

    /// Replaces `v`'s body in memory by its file, if `v` is still the
    /// variant stored.
    fn to_file(&self, key: &Key, v: &Rc<Variant>, found: disk::Found) {
        let moved = Variant {
            vary: v.vary.clone(),
            secondary: v.secondary,
            meta: v.meta,
            status: v.status,
            dates: v.dates,
            headers: v.headers.clone(),
            body: Body::Disk(Rc::new(found)),
            tags: v.tags.clone(),
            soft_purged: std::cell::Cell::new(v.soft_purged.get()),
            encoded: RefCell::default(),
        };
        self.replace(key, v, moved);
    }
}

impl Order {
    /// Whether the order takes an object with this key and these tags.
    pub fn matches(&self, key: &[u8], tags: &[Box<[u8]>]) -> bool {
        match &self.target {
            Target::Key(k) => key == &k[..],
            Target::Prefix(p) => Key::path_starts_with(key, p),
            Target::Tags(want) => tags.iter().any(|t| want.iter().any(|w| w[..] == t[..])),
        }
    }
}
