//! Purges reach every core: each core keeps its own store, so a purge
//! taken on one core is applied there at once and posted to the others'
//! mailboxes, whose bells wake them to apply it (the runtime's doorbell).
//! The mailbox's lock is taken only by purges, never by a request.

use std::rc::Rc;
use std::sync::{Arc, Mutex};

use ringside_runtime::doorbell::{self, Bell, Listener};

use crate::CoreCache;

/// What a purge drops (or, soft, marks stale).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// One key's responses (all its variants).
    Key(Vec<u8>),
    /// Keys whose path starts with this.
    Prefix(Vec<u8>),
    /// Responses that carry any of these tags (`Surrogate-Key`, `Cache-Tag`).
    Tags(Vec<Vec<u8>>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Order {
    /// The cache's name, as each core's caches are found by it.
    pub cache: String,
    pub target: Target,
    pub soft: bool,
}

impl Order {
    /// Applies the order to one core's cache; how many entries it took.
    pub fn apply(&self, c: &CoreCache) -> usize {
        c.purge_order(self, ringside_http::date::unix_now())
    }
}

/// One core's mailbox and bell.
struct Post {
    orders: Mutex<Vec<Order>>,
    bell: Arc<Bell>,
}

/// Every core's mailbox, shared by the cores of one config.
#[derive(Default)]
pub struct Broadcast {
    posts: Mutex<Vec<Arc<Post>>>,
}

/// A core's place in the broadcast: keep it as long as its caches live.
pub struct Member {
    post: Arc<Post>,
    _listener: Rc<Listener>,
}

impl Broadcast {
    /// Joins this core (call on its thread, inside its runtime):
    /// `caches` finds its cache of a name.
    pub fn join(
        self: &Arc<Self>,
        caches: impl Fn(&str) -> Option<Rc<CoreCache>> + 'static,
    ) -> std::io::Result<Member> {
        let post = Arc::new(Post {
            orders: Mutex::default(),
            bell: doorbell::here()?,
        });
        let mine = post.clone();
        let listener: Rc<Listener> = Rc::new(move || {
            let orders =
                std::mem::take(&mut *mine.orders.lock().unwrap_or_else(|p| p.into_inner()));
            for o in orders {
                if let Some(c) = caches(&o.cache) {
                    o.apply(&c);
                }
            }
        });
        doorbell::listen(&listener);
        let mut posts = self.posts.lock().unwrap_or_else(|p| p.into_inner());
        posts.retain(|p| Arc::strong_count(p) > 1);
        posts.push(post.clone());
        Ok(Member {
            post,
            _listener: listener,
        })
    }

    /// Posts `order` to every core but `me`'s, ringing each.
    pub fn send(&self, me: &Member, order: &Order) {
        let posts = self.posts.lock().unwrap_or_else(|p| p.into_inner());
        for p in posts.iter().filter(|p| !Arc::ptr_eq(p, &me.post)) {
            p.orders
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(order.clone());
            p.bell.ring();
        }
    }
}
