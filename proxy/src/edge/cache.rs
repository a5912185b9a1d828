//! The cache step of a route with `cache = "NAME"`, between access and
//! content: a fresh stored response answers the request; a stale one is
//! served (within the client's max-stale) or revalidated with its
//! validators through the forward loop; a miss joins the fetch already
//! under way for its key or starts one, whose response goes to the client
//! and, when RFC 9111 lets a shared cache keep it, into this core's store.
//!
//! ```text
//! GET/HEAD ─▶ key ─▶ lookup ─ fresh ─────────────────────────▶ answer from store (hit)
//!                       │ stale, client's max-stale ──────────▶ answer stale
//!                       │ stale ─▶ forward with validators ─ 304 ─▶ refresh, answer from store
//!                       │                                  ─ 200 ─▶ relay and store
//!                       │                                  ─ 5xx/failed, stale-if-error ─▶ answer stale
//!                       │ miss ─▶ fill under way? wait for it (lock timeout) ─▶ look again
//!                       ▼
//!                    forward, capturing ─▶ complete and storable? store : remember as a pass
//! POST/PUT/DELETE/PATCH ─▶ forward; a success invalidates the target and its Location
//! PURGE (allowed addresses) ─▶ drop the URL, a prefix, or a tag's responses; soft: mark stale
//! ```

use std::rc::Rc;
use std::sync::Arc;

use ringside_cache::core::{bump, FillGuard};
use ringside_cache::entry::{headers_iter, Body, Dates, Variant};
use ringside_cache::fill::{End, Fill};
use ringside_cache::key::Key;
use ringside_cache::policy::{self, Directives, Meta, RequestFacts, Usable};
use ringside_cache::purge::{Broadcast, Member, Order, Target};
use ringside_cache::serve::{self, Encoded};
use ringside_cache::CoreCache;
use ringside_http::capture::{Capture, Fields, Tee};
use ringside_http::compress;
use ringside_http::{Error, Exchange, Kind, Method};
use ringside_runtime::coalesce::Queued;
use ringside_runtime::task;

use super::{set_cache_status, Edge};

fn unix_now() -> u64 {
    ringside_http::date::unix_now()
}

impl Edge {
    /// Proxy route `i`'s request through its cache `c`.
    pub(super) async fn cached(
        &self,
        ex: &mut Exchange<'_>,
        i: usize,
        c: &Rc<CoreCache>,
    ) -> Result<(), Error> {
        let method = ex.method();
        if ex.method_bytes() == b"PURGE" {
            set_cache_status(ex, "BYPASS");
            return purge(ex, c, self.purges.as_deref());
        }
        if !matches!(method, Method::Get | Method::Head) {
            // Caught for its head alone: its Location and
            // Content-Location say what else it changed.
            set_cache_status(ex, "BYPASS");
            let mut cap = Box::new(Capture::new(0));
            cap.strip_conditions = false;
            cap.cache_status = Some(Box::from(&b"ringside; fwd=method"[..]));
            ex.capture(cap);
            let r = self.proxy(ex, i).await;
            let cap = ex.take_capture().expect("captured");
            if policy::invalidates(ex.method_bytes(), ex.status()) {
                invalidate(ex, c, &cap.headers);
            }
            return r;
        }
        if ex.body_kind() != ringside_http::BodyKind::Empty {
            // A GET with a body: the body may matter to the origin, so it
            // goes on with it, neither answered from the store nor stored.
            set_cache_status(ex, "BYPASS");
            let mut cap = Box::new(Capture::new(0));
            cap.strip_conditions = false;
            cap.cache_status = Some(Box::from(&b"ringside; fwd=bypass; detail=request-body"[..]));
            ex.capture(cap);
            return self.proxy(ex, i).await;
        }
        let now = unix_now();
        let key = Key::of(ex, &c.settings);
        let req = Directives::of_request(ex.headers());
        let mut found = c.find(&key, ex.headers()).await;
        if let Some(v) = &found {
            match policy::usable(&v.meta(), &req, now) {
                Usable::Fresh => {
                    set_cache_status(ex, "HIT");
                    bump(&c.stats.hits);
                    let mut buf = [0u8; 48];
                    let line = hit_line(v, now, &mut buf);
                    return answer(ex, c, &key, v, now, line).await;
                }
                Usable::Stale { refresh: false } => {
                    set_cache_status(ex, "STALE");
                    bump(&c.stats.stale);
                    return answer(ex, c, &key, v, now, b"ringside; hit; fwd=stale").await;
                }
                // Within stale-while-revalidate: served stale, and one
                // request refreshes it after its answer went out.
                Usable::Stale { refresh: true } => {
                    set_cache_status(ex, "UPDATING");
                    bump(&c.stats.stale);
                    let line = b"ringside; hit; fwd=stale; detail=updating";
                    answer(ex, c, &key, v, now, line).await?;
                    if let Some(fill) = c.begin_fill(&key, Fields::new()) {
                        let v = v.clone();
                        return self.refresh(ex, i, c, &key, &v, fill, now).await;
                    }
                    return Ok(());
                }
                Usable::Validate => {}
            }
        }
        if req.only_if_cached {
            return ex.send_with(
                504,
                [(
                    &b"Cache-Status"[..],
                    &b"ringside; fwd=miss; detail=only-if-cached"[..],
                )]
                .into_iter(),
                b"",
            );
        }
        let mut fill = None;
        if method == Method::Get && !c.is_pass(&key, now) {
            if let Some(f) = c.fill_of(&key) {
                // Another request fetches (or revalidates) this key: a
                // miss streams its response as it comes, where it may be
                // this one's; else wait for its end and take what it
                // stored (or go on alone when it stored nothing, or took
                // too long).
                bump(&c.stats.collapsed);
                if found.is_none() {
                    if let Some(r) = self.follow(ex, c, &f, &req).await {
                        return r;
                    }
                } else {
                    let _q = Queued::new();
                    let _ = task::timeout(c.settings.lock_timeout, f.ended()).await;
                }
                let now = unix_now();
                found = c.find(&key, ex.headers()).await;
                if let Some(v) = &found {
                    if policy::usable(&v.meta(), &req, now) == Usable::Fresh {
                        set_cache_status(ex, "HIT");
                        bump(&c.stats.hits);
                        return answer(ex, c, &key, v, now, b"ringside; hit; detail=collapsed")
                            .await;
                    }
                }
            }
            fill = c.begin_fill(&key, fields_of(ex));
        }
        bump(&c.stats.misses);
        let verdict = match &found {
            Some(_) => "EXPIRED",
            None if fill.is_none() && method == Method::Get => "BYPASS",
            None => "MISS",
        };
        set_cache_status(ex, verdict);
        let fwd = match &found {
            Some(_) => "stale",
            None if c.has(&key) => "vary-miss",
            None => "uri-miss",
        };
        let mut cap = Box::new(Capture::new(c.settings.max_object));
        cap.cache_status = Some(format!("ringside; fwd={fwd}").into_bytes().into());
        if let Some(v) = &found {
            cap.validators = v.validators();
            cap.hold_not_modified = !cap.validators.is_empty();
            cap.hold_errors = v.meta().serves_on_error(now);
        } else {
            // Nothing stored to answer the client's own conditions or
            // ranges from: they go on, and a 304 or 206 is never stored.
            cap.strip_conditions = false;
            // The requests that wait on this fetch hear of it as it comes.
            cap.sink = fill.as_ref().map(|g| Tee(g.fill.clone()));
        }
        ex.capture(cap);
        let r = self.proxy(ex, i).await;
        let cap = ex.take_capture().expect("captured");
        let response_time = unix_now();
        if let Some(v) = &found {
            if !ex.responded() {
                if r.is_ok() && cap.status == 304 {
                    set_cache_status(ex, "REVALIDATED");
                    bump(&c.stats.revalidated);
                    let nv = refreshed(c, v, &cap, now, response_time);
                    let line = b"ringside; fwd=stale; fwd-status=304";
                    let out = answer(ex, c, &key, &nv, response_time, line).await;
                    c.store(&key, nv);
                    return out;
                }
                if (r.is_err() || cap.status >= 500) && v.meta().serves_on_error(response_time) {
                    set_cache_status(ex, "STALE");
                    bump(&c.stats.stale);
                    let line = b"ringside; hit; fwd=stale; detail=stale-if-error";
                    return answer(ex, c, &key, v, response_time, line).await;
                }
            }
        }
        r?;
        let whole = method == Method::Get && ex.complete() && cap.status != 0;
        if whole {
            if cap.over {
                // Too large to keep: later requests for it go on side by
                // side rather than wait for one another's whole transfer.
                c.note_pass(&key, now);
            } else {
                keep(c, &key, ex, *cap, now, response_time);
            }
        }
        if let Some(g) = fill {
            g.fill.finish(whole);
        }
        Ok(())
    }

    /// Streams the response another request is fetching for this key, as
    /// it arrives, when it may answer this request too (storable for a
    /// shared cache, the same Vary values, fresh for this request's
    /// directives). `None`: it may not, or its head did not come within
    /// the lock timeout, or it ended already (the store has it, if it was
    /// storable): the caller goes on.
    async fn follow(
        &self,
        ex: &mut Exchange<'_>,
        c: &CoreCache,
        fill: &Fill,
        req: &Directives,
    ) -> Option<Result<(), Error>> {
        let deadline = ringside_runtime::clock::now() + c.settings.lock_timeout;
        {
            let _q = Queued::new();
            while fill.head().is_none() && fill.end() == End::Open {
                let seen = fill.version();
                task::timeout_at(deadline, fill.changed(seen)).await.ok()?;
            }
        }
        let head = fill.head()?;
        if fill.end() != End::Open {
            return None;
        }
        let pairs = headers_iter(&head.headers);
        let facts = RequestFacts {
            get: true,
            authorization: ex.header("authorization").is_some(),
            no_store: req.no_store,
        };
        policy::storable(facts, head.status, pairs.clone()).ok()?;
        let names = policy::vary::names(pairs.clone());
        let theirs = policy::vary::secondary(&names, headers_iter(&fill.request));
        if policy::vary::secondary(&names, ex.headers()) != theirs {
            return None;
        }
        let now = unix_now();
        let meta = Meta::of(head.status, pairs.clone(), now, now, &c.limits);
        if policy::usable(&meta, req, now) != Usable::Fresh {
            return None;
        }
        set_cache_status(ex, "HIT");
        bump(&c.stats.hits);
        let shown = pairs
            .filter(|(n, _)| {
                policy::kept_in_store(n)
                    && !n.eq_ignore_ascii_case(b"date")
                    && !ringside_http::capture::targeted_cache_field(n)
            })
            .chain([(
                &b"Cache-Status"[..],
                &b"ringside; hit; detail=collapsed"[..],
            )]);
        let body = head
            .length
            .map_or(ringside_http::Body::Stream, ringside_http::Body::Sized);
        if let Err(e) = ex.start_from(head.status, shown, body) {
            return Some(Err(e));
        }
        let mut at = 0;
        loop {
            let seen = fill.version();
            let piece = fill.body_from(at);
            if !piece.is_empty() {
                at += piece.len();
                if let Err(e) = ex.write_body(&piece).await {
                    return Some(Err(e));
                }
                continue;
            }
            match fill.end() {
                End::Done => return Some(ex.finish().await),
                End::Failed => {
                    let why = "the fetch this request waited on broke";
                    return Some(Err(Error::new(Kind::InvalidResponse, why)));
                }
                End::Open => {
                    // What came so far reaches the client before the wait.
                    if let Err(e) = ex.flush().await {
                        return Some(Err(e));
                    }
                    fill.changed(seen).await
                }
            }
        }
    }
}

/// A request's fields, kept for the Vary of the response it fetches.
fn fields_of(ex: &Exchange<'_>) -> Fields {
    ex.headers().map(|(n, v)| (n.into(), v.into())).collect()
}

impl Edge {
    /// Revalidates `v` after its stale copy answered the client
    /// (stale-while-revalidate): the answer is sent first, then the
    /// upstream's response is caught whole, none of it to the client, and
    /// refreshes or replaces what is stored. Over HTTP/1 the connection's
    /// next request waits for it, as under nginx's background update.
    #[allow(clippy::too_many_arguments)]
    async fn refresh(
        &self,
        ex: &mut Exchange<'_>,
        i: usize,
        c: &Rc<CoreCache>,
        key: &Key,
        v: &Rc<Variant>,
        _fill: FillGuard,
        now: u64,
    ) -> Result<(), Error> {
        ex.flush().await?;
        let mut cap = Box::new(Capture::new(c.settings.max_object));
        cap.validators = v.validators();
        cap.detached = true;
        ex.capture(cap);
        let r = self.proxy(ex, i).await;
        let cap = ex.take_capture().expect("captured");
        let response_time = unix_now();
        if r.is_err() || cap.status == 0 {
            return Ok(());
        }
        if cap.status == 304 {
            bump(&c.stats.revalidated);
            let nv = refreshed(c, v, &cap, now, response_time);
            c.store(key, nv);
        } else if !cap.over {
            keep(c, key, ex, *cap, now, response_time);
        }
        Ok(())
    }
}

/// `v` refreshed by the 304 `cap` caught (RFC 9111 §4.3.4).
fn refreshed(c: &CoreCache, v: &Variant, cap: &Capture, now: u64, response_time: u64) -> Variant {
    let mut fresh = cap.headers.clone();
    if let Some(d) = &cap.date {
        fresh.retain(|(n, _)| !n.eq_ignore_ascii_case(b"date"));
        fresh.push((Box::from(&b"Date"[..]), d.clone()));
    }
    let merged = policy::updated_by_304(v.pairs(), fresh.iter().map(|(n, v)| (&n[..], &v[..])));
    let meta = Meta::of(
        v.status,
        merged.iter().copied(),
        now,
        response_time,
        &c.limits,
    );
    v.refreshed(&fresh, meta)
}

/// Stores a response caught whole, when a shared cache may; else
/// remembers the key as one to fetch without waiting (hit-for-miss).
fn keep(
    c: &Rc<CoreCache>,
    key: &Key,
    ex: &Exchange<'_>,
    cap: Capture,
    now: u64,
    response_time: u64,
) {
    let facts = RequestFacts {
        get: true,
        authorization: ex.header("authorization").is_some(),
        no_store: Directives::of_request(ex.headers()).no_store,
    };
    let mut headers: Fields = cap
        .headers
        .into_iter()
        .filter(|(n, _)| policy::kept_in_store(n) || n.eq_ignore_ascii_case(b"age"))
        .collect();
    if let Some(d) = cap.date {
        headers.push((Box::from(&b"Date"[..]), d));
    }
    let pairs = headers.iter().map(|(n, v)| (&n[..], &v[..]));
    if policy::storable(facts, cap.status, pairs.clone()).is_err() {
        // A 206 or 304 answered the client's own range or conditions: it
        // says nothing of the key's full response, which may well be
        // storable, so the key is not made a pass for it.
        if !matches!(cap.status, 206 | 304) {
            c.note_pass(key, now);
        }
        return;
    }
    let meta = Meta::of(cap.status, pairs.clone(), now, response_time, &c.limits);
    let vary = policy::vary::names(pairs.clone());
    let secondary = policy::vary::secondary(&vary, ex.headers());
    let tags = Variant::tags_of(pairs);
    // Age was read into the meta; it is sent as reckoned from now on.
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case(b"age"));
    c.store(
        key,
        Variant {
            vary,
            secondary,
            meta,
            status: cap.status,
            dates: Dates::of(headers_iter(&headers)),
            headers,
            body: Body::Memory(cap.body.into()),
            tags,
            soft_purged: Default::default(),
            encoded: Default::default(),
        },
    );
}

/// Answers from the store: compressed where the route compresses such a
/// response and the client takes a coding (the copy made once and kept).
async fn answer(
    ex: &mut Exchange<'_>,
    c: &CoreCache,
    key: &Key,
    v: &Variant,
    now: u64,
    line: &[u8],
) -> Result<(), Error> {
    let mut varies = false;
    let encoded = ex.compression().cloned().and_then(|p| {
        if !p.eligible(v.status, v.pairs(), Some(v.body.len())) {
            return None;
        }
        varies = true;
        let coding = p.choose(ex.header("accept-encoding"), &compress::CACHED_ORDER)?;
        let (body, made) = v.encoded_in(coding, &p.levels)?;
        if made {
            c.recharge(key);
        }
        Some(Encoded { coding, body })
    });
    serve::answer(ex, v, now, line, encoded.as_ref(), varies).await
}

/// `ringside; hit; ttl=N` in `buf`, without an allocation per hit.
fn hit_line<'b>(v: &Variant, now: u64, buf: &'b mut [u8; 48]) -> &'b [u8] {
    const HEAD: &[u8] = b"ringside; hit; ttl=";
    let m = v.meta();
    let left = m.lifetime.saturating_sub(m.age(now));
    buf[..HEAD.len()].copy_from_slice(HEAD);
    let mut digits = [0u8; 20];
    let d = ringside_http::grammar::decimal(left, &mut digits);
    buf[HEAD.len()..HEAD.len() + d.len()].copy_from_slice(d);
    &buf[..HEAD.len() + d.len()]
}

/// After a successful unsafe request: its target and the same host's
/// `Location` and `Content-Location` are dropped (RFC 9111 §4.4).
fn invalidate(ex: &Exchange<'_>, c: &CoreCache, response: &Fields) {
    let key = Key::of(ex, &c.settings);
    c.invalidate(&key);
    for (n, v) in response {
        let named =
            n.eq_ignore_ascii_case(b"location") || n.eq_ignore_ascii_case(b"content-location");
        if let Some(k) = named.then(|| key.sibling(v)).flatten() {
            c.invalidate(&k);
        }
    }
}

/// `PURGE`: from the cache's `purge_from` only (loopback where it has
/// none). The target
/// names a URL, or with a trailing `*` a prefix; `Surrogate-Key` (or
/// `Cache-Tag`) names tags instead; `Soft-Purge: 1` marks stale rather
/// than drops. Applied here, and posted to every other core.
fn purge(ex: &mut Exchange<'_>, c: &CoreCache, cast: Option<&Purges>) -> Result<(), Error> {
    // Loopback alone by default; a purge_from list replaces it.
    let allowed = ex.peer().is_ok_and(|a| {
        let ip = a.ip().to_canonical();
        match &c.settings.purge_from[..] {
            [] => ip.is_loopback(),
            from => from.iter().any(|n| n.contains(ip)),
        }
    });
    if !allowed {
        return ex.send_status(403);
    }
    let soft = ex.header("soft-purge").is_some_and(|v| v == b"1");
    let tags: Vec<Vec<u8>> = ex
        .headers()
        .filter(|(n, _)| {
            n.eq_ignore_ascii_case(b"surrogate-key") || n.eq_ignore_ascii_case(b"cache-tag")
        })
        .flat_map(|(_, v)| v.split(|&b| b == b' ' || b == b','))
        .filter(|t| !t.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    let target = if !tags.is_empty() {
        Target::Tags(tags)
    } else if let Some(prefix) = ex.path().strip_suffix(b"*") {
        Target::Prefix(prefix.to_vec())
    } else {
        Target::Key(Key::of(ex, &c.settings).bytes)
    };
    let order = Order {
        cache: c.settings.name.clone(),
        target,
        soft,
    };
    let n = order.apply(c);
    if let Some(p) = cast {
        p.0.send(&p.1, &order);
    }
    let body = format!("{{\"purged_here\": {n}}}\n");
    ex.send(
        200,
        &[("Content-Type", b"application/json")],
        body.as_bytes(),
    )
}

/// The purge broadcast of this config's cores, and this core's place in it.
pub struct Purges(pub Arc<Broadcast>, pub Member);
