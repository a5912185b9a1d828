//! The crypto provider every rustls config is built on, listeners and
//! upstreams alike: aws-lc-rs, for its hybrid post-quantum key exchange,
//! with ring's cipher suites.
//!
//! # Key exchange
//!
//! [`KX_GROUPS`] in order: X25519MLKEM768 (X25519 with ML-KEM-768,
//! draft-ietf-tls-ecdhe-mlkem, what Chrome and Firefox offer first), then
//! X25519, then P-256, then P-384. As a client (HTTPS upstreams) rustls
//! sends a key share for the hybrid and one for its classical half,
//! X25519, so an upstream without ML-KEM answers with X25519 and no
//! HelloRetryRequest. As a server, rustls takes the client's order among
//! the groups both have (RFC 8446 §4.2.7 leaves the choice to the server;
//! following the client avoids a HelloRetryRequest when its first share is
//! one we have).
//! P-384 stays last because the ring provider offered it before and a
//! client that offers nothing else would otherwise be refused.
//!
//! ring, the provider before this one, has no ML-KEM. aws-lc-rs builds
//! its C library with the cc crate alone on Linux (no cmake, no NASM), so
//! `cargo build` still needs nothing installed by hand.
//!
//! # Record and packet ciphers
//!
//! The cipher suites, and with them every TLS record's and every QUIC
//! packet's AEAD and header protection, are ring's. Its AES-GCM has a
//! VAES/VPCLMULQDQ AVX2 path (BoringSSL's `aes-gcm-avx2-x86_64`), which
//! aws-lc 0.47 has only for AVX-512; AMD's Zen 3 and Intel's client parts
//! have the one and not the other. On a Zen 3 EPYC, sealing one 11 KiB
//! record took ring 1.5 µs against aws-lc-rs's 2.9, and a 1,350-byte QUIC
//! packet with its header mask 0.32–0.39 µs against 0.49. The suites are
//! the same, in the same order. Session tickets, key exchange, signatures
//! and randomness stay on aws-lc-rs.
//!
//! # Certificate compression (RFC 8879)
//!
//! rustls' `brotli` and `zlib` features give every config both compressors
//! and decompressors; the server compresses its Certificate message with
//! the first of its own list (brotli, then zlib) that the client offers
//! (§3: the client's list carries no preference). A compressed chain is
//! kept in the config's cache and reused, so brotli's slow, small setting
//! is paid once per chain, not per handshake. [`compression_cache`] sizes
//! that cache to every chain a listener set can send, twice (one entry per
//! algorithm): rustls' default of four entries would recompress on every
//! handshake once more than two certificates take turns.

use std::sync::Arc;

use rustls::compress::CompressionCache;
use rustls::crypto::aws_lc_rs::{self, kx_group};
use rustls::crypto::ring;
use rustls::crypto::{CryptoProvider, SupportedKxGroup};

/// The key-exchange groups offered and accepted, most preferred first.
pub static KX_GROUPS: [&dyn SupportedKxGroup; 4] = [
    kx_group::X25519MLKEM768,
    kx_group::X25519,
    kx_group::SECP256R1,
    kx_group::SECP384R1,
];

/// ring's cipher suites and aws-lc-rs' signature algorithms, with
/// [`KX_GROUPS`].
pub fn make() -> CryptoProvider {
    CryptoProvider {
        cipher_suites: ring::DEFAULT_CIPHER_SUITES.to_vec(),
        kx_groups: KX_GROUPS.to_vec(),
        ..aws_lc_rs::default_provider()
    }
}

/// A compressed-certificate cache for the listeners of one
/// `server_configs` call, holding `chains` distinct certificate chains
/// compressed by each of the compressors.
pub fn compression_cache(chains: usize) -> Arc<CompressionCache> {
    let algorithms = rustls::compress::default_cert_compressors().len();
    Arc::new(CompressionCache::new(chains.max(1) * algorithms.max(1)))
}

#[cfg(test)]
mod tests {
    use rustls::NamedGroup;

    use super::*;

    #[test]
    fn post_quantum_first_then_x25519_then_p256() {
        let names: Vec<NamedGroup> = make().kx_groups.iter().map(|g| g.name()).collect();
        assert_eq!(
            names,
            [
                NamedGroup::X25519MLKEM768,
                NamedGroup::X25519,
                NamedGroup::secp256r1,
                NamedGroup::secp384r1,
            ]
        );
    }

    #[test]
    fn the_suites_are_aws_lc_rs_own_list_in_its_order() {
        let ours: Vec<_> = make().cipher_suites.iter().map(|s| s.suite()).collect();
        let theirs: Vec<_> = aws_lc_rs::default_provider()
            .cipher_suites
            .iter()
            .map(|s| s.suite())
            .collect();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn both_compressors_are_built_in() {
        let algs: Vec<_> = rustls::compress::default_cert_compressors()
            .iter()
            .map(|c| c.algorithm())
            .collect();
        assert_eq!(
            algs,
            [
                rustls::CertificateCompressionAlgorithm::Brotli,
                rustls::CertificateCompressionAlgorithm::Zlib,
            ]
        );
    }
}
