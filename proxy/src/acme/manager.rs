//! The ACME thread: for each certificate the config wants, serve the
//! stored one while it lasts, order a new one when it is due, and retry
//! failures with backoff, never blocking a core.
//!
//! A certificate is due at a point in the CA's renewal window (RFC 9773),
//! asked for when the CA offers ARI, else two thirds through its lifetime;
//! a missing one is due at once. A failed order keeps the certificate in
//! place (the slot is only ever replaced by a newer one), logs the CA's
//! problem document, counts in `/metrics`, and is tried again after a wait
//! that doubles from the issuer's `retry_min` to a day, jittered, and never
//! shorter than the CA's Retry-After.
//!
//! A reload hands the thread the new list ([`run`]); an order under way is
//! finished first (its certificate goes into its slot, which the new
//! configs share), then the list is taken: certificates kept keep their
//! schedule, new ones are looked at at once.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use ringside_acme::{
    renew_at, Account, Backoff, Ca, CertInfo, Challenge, Error, OrderSpec, Responder, StateDir,
};

use super::store::{self, Slot};
use crate::config::acme::AcmeIssuer;
use crate::config::Config;
use crate::tls::certs::AcmeCert;

/// The longest wait between failed orders.
const MAX_BACKOFF: Duration = Duration::from_secs(24 * 3600);
/// How often the CA's renewal window is asked for again, at most.
const ARI_RECHECK: Duration = Duration::from_secs(6 * 3600);

type Wants = Vec<(Arc<AcmeIssuer>, AcmeCert)>;

struct Control {
    pending: Mutex<Option<Wants>>,
    bell: Condvar,
}

fn control() -> &'static Control {
    static C: OnceLock<Control> = OnceLock::new();
    C.get_or_init(|| Control {
        pending: Mutex::new(None),
        bell: Condvar::new(),
    })
}

/// Hands the thread what `cfg` wants, starting it the first time there is
/// anything to do.
pub fn run(cfg: &Config) {
    static STARTED: OnceLock<()> = OnceLock::new();
    let wants = super::wanted(cfg);
    if wants.is_empty() && STARTED.get().is_none() {
        return;
    }
    store::retain(&wants.iter().map(|(_, c)| c.clone()).collect::<Vec<_>>());
    let c = control();
    *c.pending.lock().unwrap_or_else(|e| e.into_inner()) = Some(wants);
    c.bell.notify_one();
    STARTED.get_or_init(|| {
        let spawned = std::thread::Builder::new()
            .name("acme".into())
            .spawn(main_loop);
        if let Err(e) = spawned {
            tracing::error!("cannot start the ACME thread: {e}; no certificate will be ordered");
        }
    });
}

struct Job {
    issuer: Arc<AcmeIssuer>,
    cert: AcmeCert,
    slot: Arc<Slot>,
    /// The certificate in the slot, as renewal sees it.
    info: Option<CertInfo>,
    /// When to look at it next.
    next: SystemTime,
    /// When it is due for renewal, once known.
    renew: Option<SystemTime>,
    ari_next: SystemTime,
    backoff: Backoff,
}

/// One issuer's CA and account, kept between orders.
struct Conn {
    issuer: Arc<AcmeIssuer>,
    ca: Ca,
    account: Option<Account>,
}

fn main_loop() {
    let mut jobs: Vec<Job> = Vec::new();
    let mut conns: HashMap<String, Conn> = HashMap::new();
    let mut rng = seed();
    loop {
        let pending = control()
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(wants) = pending {
            jobs = rebuild(jobs, wants);
            conns.retain(|name, c| {
                jobs.iter()
                    .any(|j| &j.issuer.name == name && j.issuer == c.issuer)
            });
        }
        let now = SystemTime::now();
        if let Some(job) = jobs
            .iter_mut()
            .filter(|j| j.next <= now)
            .min_by_key(|j| j.next)
        {
            // A bug met on a CA's answer must not end renewals for good:
            // the job is tried again later, its CA connection made anew.
            let stepped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                step(job, &mut conns, &mut rng)
            }));
            if stepped.is_err() {
                tracing::error!(issuer = %job.issuer.name, names = ?job.cert.names, "the ACME step failed unexpectedly; trying again in an hour");
                conns.remove(&job.issuer.name);
                job.next = SystemTime::now() + Duration::from_secs(3600);
            }
            continue;
        }
        let wait = jobs
            .iter()
            .map(|j| j.next.duration_since(now).unwrap_or_default())
            .min()
            .unwrap_or(Duration::from_secs(3600));
        let c = control();
        let guard = c.pending.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            drop(c.bell.wait_timeout(guard, wait));
        }
    }
}

/// The new list's jobs, keeping the schedule of those already known.
fn rebuild(old: Vec<Job>, wants: Wants) -> Vec<Job> {
    let mut old: Vec<Option<Job>> = old.into_iter().map(Some).collect();
    let now = SystemTime::now();
    wants
        .into_iter()
        .map(|(issuer, cert)| {
            let kept = old
                .iter_mut()
                .find(|j| {
                    j.as_ref()
                        .is_some_and(|j| j.cert == cert && j.issuer == issuer)
                })
                .and_then(Option::take);
            kept.unwrap_or_else(|| Job {
                slot: store::slot(&cert),
                backoff: Backoff::new(issuer.retry_min, MAX_BACKOFF),
                issuer,
                cert,
                info: None,
                next: now,
                renew: None,
                ari_next: now,
            })
        })
        .collect()
}

/// Looks at one certificate: renews it when due, else schedules the next look.
fn step(job: &mut Job, conns: &mut HashMap<String, Conn>, rng: &mut u64) {
    let now = SystemTime::now();
    if job.info.is_none() {
        // Stored by an earlier run, or by the other process of an upgrade.
        if let Some((key, info)) = super::stored(&job.issuer, &job.cert) {
            if job.slot.get().is_none() || job.slot.not_after() < Some(info.not_after) {
                job.slot.set(key, info.not_after);
                store::tidy();
            }
            job.info = Some(info);
        }
    }
    if let Some(info) = job.info.clone() {
        if now >= job.ari_next || job.renew.is_none() {
            let window = ari(job, &info, conns);
            job.renew = Some(renew_at(&info, window.as_ref(), next_random(rng)));
        }
        let due = job.renew.unwrap_or(now);
        if now < due {
            job.next = due.min(job.ari_next.max(now + Duration::from_secs(1)));
            return;
        }
    }
    match order(job, conns) {
        Ok(()) => {
            job.backoff.reset();
            job.slot.failures.store(0, Relaxed);
            job.renew = None;
            job.ari_next = now;
            job.next = SystemTime::now();
        }
        Err(e) => {
            let failures = job.slot.failures.fetch_add(1, Relaxed) + 1;
            let hint = e.retry_after().map(|d| d.min(MAX_BACKOFF));
            let wait = job.backoff.next(hint, next_random(rng));
            job.next = SystemTime::now() + wait.min(MAX_BACKOFF);
            let problem = match &e {
                Error::Problem(p) => p.json.as_str(),
                _ => "",
            };
            let serving = match job.slot.not_after() {
                Some(_) => "the current certificate keeps serving",
                None => "no certificate to serve yet: handshakes for these names are refused",
            };
            if matches!(e, Error::Transport(_)) {
                conns.remove(&job.issuer.name);
            }
            tracing::warn!(
                issuer = %job.issuer.name,
                names = ?job.cert.names,
                failures,
                retry_in = ?wait,
                problem,
                "ACME order failed: {e}; {serving}"
            );
        }
    }
}

/// The CA's renewal window for the certificate in place, where it offers
/// one; asked for at most every [`ARI_RECHECK`] or as its Retry-After says.
fn ari(
    job: &mut Job,
    info: &CertInfo,
    conns: &mut HashMap<String, Conn>,
) -> Option<ringside_acme::RenewalInfo> {
    let now = SystemTime::now();
    job.ari_next = now + ARI_RECHECK;
    info.ari_id.as_ref()?;
    let conn = connect(&job.issuer, conns).ok()?;
    if !conn.ca.meta().renewal_info {
        return None;
    }
    let leaf = job.slot.get()?.cert.first()?.to_vec();
    match conn.ca.renewal_info(&leaf) {
        Ok(Some(w)) => {
            job.ari_next = now + w.retry_after.unwrap_or(ARI_RECHECK).min(ARI_RECHECK);
            Some(w)
        }
        Ok(None) => None,
        Err(e) => {
            tracing::debug!(issuer = %job.issuer.name, "cannot get the renewal window: {e}");
            None
        }
    }
}

/// The issuer's CA, opened (its directory fetched) on first use.
fn connect<'a>(
    issuer: &Arc<AcmeIssuer>,
    conns: &'a mut HashMap<String, Conn>,
) -> Result<&'a mut Conn, Error> {
    if !conns.contains_key(&issuer.name) {
        let tls = crate::tls::acme_client_config(issuer.ca.as_deref()).map_err(Error::Transport)?;
        let ca = Ca::open(&issuer.directory, tls)?;
        conns.insert(
            issuer.name.clone(),
            Conn {
                issuer: issuer.clone(),
                ca,
                account: None,
            },
        );
    }
    Ok(conns.get_mut(&issuer.name).expect("inserted above"))
}

/// Orders a certificate for the job's names, stores it and puts it in place.
fn order(job: &mut Job, conns: &mut HashMap<String, Conn>) -> Result<(), Error> {
    let issuer = job.issuer.clone();
    let conn = connect(&issuer, conns)?;
    let issued = match issue(job, &issuer, conn) {
        // The CA no longer knows the account (its database was reset, the
        // account was removed): register the key again, once, and retry.
        Err(Error::Problem(p)) if p.kind.ends_with(":accountDoesNotExist") => {
            tracing::info!(issuer = %issuer.name, "the CA does not know the account: registering again");
            conn.account = None;
            issue(job, &issuer, conn)?
        }
        other => other?,
    };
    let (key, info) =
        super::certified(&issued.chain_pem, &issued.key_pem).map_err(Error::Protocol)?;
    if !info.covers(&job.cert.names) {
        return Err(Error::Protocol(format!(
            "the CA issued a certificate for {:?}, not all of {:?}",
            info.names, job.cert.names
        )));
    }
    let state = StateDir::open(&issuer.state).map_err(Error::Protocol)?;
    if let Err(e) = state.save_cert(&issuer.directory, &job.cert.names, &issued) {
        // Served all the same: losing it costs an order at the next start.
        tracing::warn!(issuer = %issuer.name, "cannot store the new certificate: {e}");
    }
    job.slot.set(key, info.not_after);
    tracing::info!(
        issuer = %issuer.name,
        names = ?job.cert.names,
        not_after = ?info.not_after,
        "ACME certificate in use on every core"
    );
    job.info = Some(info);
    Ok(())
}

/// One order on `conn`, registering the account first where needed.
fn issue(job: &Job, issuer: &AcmeIssuer, conn: &mut Conn) -> Result<ringside_acme::Issued, Error> {
    if conn.account.is_none() {
        let state = StateDir::open(&issuer.state).map_err(Error::Protocol)?;
        let key = state.account_key(&issuer.name).map_err(Error::Protocol)?;
        conn.account = Some(conn.ca.account(key, &issuer.contact, issuer.eab.as_ref())?);
    }
    let profile = issuer
        .profile
        .clone()
        .filter(|p| conn.ca.meta().profiles.is_empty() || conn.ca.meta().profiles.contains(p));
    let replaces = job
        .info
        .as_ref()
        .and_then(|i| i.ari_id.clone())
        .filter(|_| conn.ca.meta().renewal_info);
    let spec = OrderSpec {
        names: job.cert.names.clone(),
        challenge: issuer.challenge,
        key: issuer.key_type,
        profile,
        replaces,
    };
    tracing::info!(issuer = %issuer.name, names = ?spec.names, challenge = ?spec.challenge, "ordering an ACME certificate");
    let account = conn.account.as_ref().expect("made above");
    match conn.ca.issue(account, &spec, &mut Publisher) {
        // RFC 9773 §5: a CA refuses an order naming a certificate it does
        // not know as this account's, or one already replaced (a new
        // account, an order whose certificate was lost): not for ever.
        Err(Error::Problem(p)) if spec.replaces.is_some() => {
            tracing::info!(issuer = %issuer.name, problem = %p.kind, "the order naming the certificate it replaces was refused: ordering without");
            let spec = OrderSpec {
                replaces: None,
                ..spec
            };
            conn.ca.issue(account, &spec, &mut Publisher)
        }
        r => r,
    }
}

/// Publishes challenges where the cores answer them.
struct Publisher;

impl Responder for Publisher {
    fn publish(&mut self, c: &Challenge) {
        match c {
            Challenge::Http01 {
                token,
                key_authorization,
            } => store::publish_http01(token, key_authorization),
            Challenge::TlsAlpn01 {
                name,
                cert_der,
                key_pkcs8_der,
            } => match super::challenge_key(cert_der, key_pkcs8_der) {
                Ok(k) => store::publish_alpn(name, k),
                Err(e) => tracing::warn!(name, "cannot present the TLS-ALPN-01 certificate: {e}"),
            },
        }
    }

    fn withdraw(&mut self, c: &Challenge) {
        match c {
            Challenge::Http01 { token, .. } => store::withdraw_http01(token),
            Challenge::TlsAlpn01 { name, .. } => store::withdraw_alpn(name),
        }
    }
}

fn seed() -> u64 {
    let t = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    (t ^ u64::from(std::process::id()).rotate_left(32)) | 1
}

/// xorshift64: jitter needs no more.
fn next_random(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}
