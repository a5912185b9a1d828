//! The keys every worker of the process shares: the stateless reset key
//! (a reset a worker sends must be one the client can check against the
//! token another worker's connection gave it) and the Retry token key (a
//! token issued on one worker is checked on whichever gets the next
//! Initial). Made once per process from the system's random source; a
//! restart issues new ones, as nginx and quinn do.

use std::sync::{Arc, OnceLock};

use aws_lc_rs::{hkdf, hmac};

struct Keys {
    reset: [u8; 32],
    token: [u8; 32],
}

fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut k = Keys {
            reset: [0; 32],
            token: [0; 32],
        };
        aws_lc_rs::rand::fill(&mut k.reset).expect("the system's random source");
        aws_lc_rs::rand::fill(&mut k.token).expect("the system's random source");
        k
    })
}

pub(crate) fn reset_key() -> Arc<hmac::Key> {
    Arc::new(hmac::Key::new(hmac::HMAC_SHA256, &keys().reset))
}

pub(crate) fn token_key() -> Arc<hkdf::Prk> {
    Arc::new(hkdf::Salt::new(hkdf::HKDF_SHA256, &[]).extract(&keys().token))
}
