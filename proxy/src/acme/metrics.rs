//! The ACME certificates in `/metrics`: how long each has left, and how
//! many orders for it failed since the last success.

use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;
use std::time::SystemTime;

use crate::metrics::text::{esc, family};

pub fn render(out: &mut String) {
    let slots = super::store::all();
    if slots.is_empty() {
        return;
    }
    family(
        out,
        "ringside_acme_certificate_days_left",
        "gauge",
        "Days until the ACME certificate in use expires (negative once it has); absent until one is issued.",
    );
    let now = SystemTime::now();
    for s in &slots {
        let Some(end) = s.not_after() else { continue };
        let left = match end.duration_since(now) {
            Ok(d) => d.as_secs_f64(),
            Err(e) => -e.duration().as_secs_f64(),
        };
        let _ = writeln!(
            out,
            "ringside_acme_certificate_days_left{{issuer=\"{}\",names=\"{}\"}} {:.4}",
            esc(&s.id.issuer),
            esc(&s.id.names.join(",")),
            left / 86_400.0
        );
    }
    family(
        out,
        "ringside_acme_order_failures",
        "gauge",
        "Failed ACME orders for the certificate since its last success.",
    );
    for s in &slots {
        let _ = writeln!(
            out,
            "ringside_acme_order_failures{{issuer=\"{}\",names=\"{}\"}} {}",
            esc(&s.id.issuer),
            esc(&s.id.names.join(",")),
            s.failures.load(Relaxed)
        );
    }
}
