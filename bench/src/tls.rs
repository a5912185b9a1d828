//! HTTPS: a rustls client driven by hand on the core's own runtime.
//!
//! rustls' unbuffered API is sans-I/O: the connection task reads the
//! socket into the connection's ciphertext buffer and hands it to rustls,
//! whose plaintext is copied once, into the response buffer; a request is
//! encrypted straight into the connection's record buffer and sent with
//! one `send`. All on the same monoio runtime as plain HTTP: no thread, no
//! blocking call. The buffers live as long as the connection, so nothing
//! of ours is allocated per request; rustls 0.23 still decrypts each
//! received record into a Vec of its own (in-place decryption is its
//! stated plan), where its buffered API would also queue each sent record
//! in one and copy both ways once more.
//!
//! One [`ClientConfig`] per core (see `crate::worker`): its session cache
//! is that core's, so without `-k`, where every request makes a new TLS
//! connection, the handshakes after the first resume a session (TLS 1.3
//! tickets, TLS 1.2 ids) as a browser's would, with no lock shared across
//! cores. Resumed handshakes are counted (`tls_resumed`);
//! `--tls-no-resume` turns resumption off, for a run of full handshakes.
//!
//! Key exchange: aws-lc-rs' groups, post-quantum X25519MLKEM768 first;
//! `--tls-group` offers one group alone, and the report names the group
//! the server chose.
//!
//! Verification: against the PEM roots of `--cacert`, else the system's
//! bundle; `--insecure` accepts any certificate, as `curl -k` does, but
//! still checks the handshake's signature against the certificate sent.

use std::io;
use std::sync::Arc;

use monoio::buf::{IoBuf, IoBufMut};
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::TcpStream;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::client::UnbufferedClientConnection;
use rustls::crypto::aws_lc_rs::{self, kx_group};
use rustls::crypto::{CryptoProvider, SupportedKxGroup};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::unbuffered::{ConnectionState, EncodeError, EncryptError, UnbufferedStatus};
use rustls::{
    CipherSuite, ClientConfig, DigitallySignedStruct, HandshakeKind, RootCertStore,
    SignatureScheme, SupportedProtocolVersion,
};

/// Where the system's CA bundle is (Debian and its kin first, then Fedora's).
const SYSTEM_ROOTS: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
];

/// Ciphertext buffer per direction: a few whole TLS records.
const TLS_BUF: usize = 64 * 1024;

/// How to verify and what to offer, from the flags.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    pub insecure: bool,
    pub cacert: Option<std::path::PathBuf>,
    /// ALPN protocols to offer, most wanted first (`h2` for `--h2`).
    pub alpn: Vec<Vec<u8>>,
    /// ab's `-f`: the protocol version (`TLS1.2`, `TLS1.3`, `ALL`).
    pub protocol: Option<String>,
    /// ab's `-Z`: OpenSSL cipher-suite names, `:`-separated.
    pub ciphers: Option<String>,
    /// `--tls-group`: the key-exchange groups offered, `:`-separated, in
    /// order (see [`GROUPS`]).
    pub group: Option<String>,
    /// `--tls-no-resume`: every handshake a full one.
    pub no_resume: bool,
}

/// `--tls-group`'s names and what each offers. Without it the client
/// offers aws-lc-rs' default order, post-quantum first: X25519MLKEM768,
/// X25519, P-256, P-384, as browsers do. A key share is sent for the first
/// group of the list only (and for X25519 beside X25519MLKEM768, its
/// classical half). A list and not one group, because OpenSSL 3.0 serving
/// an ECDSA P-256 certificate refuses a client whose supported groups lack
/// P-256 ("no shared cipher"): `x25519:p256` gets X25519 there.
pub const GROUPS: [(&str, &dyn SupportedKxGroup); 7] = [
    ("x25519mlkem768", kx_group::X25519MLKEM768),
    ("x25519", kx_group::X25519),
    ("p256", kx_group::SECP256R1),
    ("secp256r1", kx_group::SECP256R1),
    ("p384", kx_group::SECP384R1),
    ("secp384r1", kx_group::SECP384R1),
    ("secp256r1mlkem768", kx_group::SECP256R1MLKEM768),
];

/// The groups `--tls-group LIST` asks for, in its order.
pub fn groups_named(list: &str) -> Result<Vec<&'static dyn SupportedKxGroup>, String> {
    let mut out: Vec<&'static dyn SupportedKxGroup> = Vec::new();
    for name in list.split(':') {
        let g = GROUPS
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, g)| *g)
            .ok_or_else(|| {
                let names: Vec<&str> = GROUPS.iter().map(|(n, _)| *n).collect();
                format!(
                    "--tls-group: expected names among {}, `:`-separated, got {name:?}",
                    names.join(", ")
                )
            })?;
        if !out.iter().any(|o| o.name() == g.name()) {
            out.push(g);
        }
    }
    Ok(out)
}

/// The OpenSSL name of each suite rustls offers on aws-lc-rs (ab's `-Z` and the
/// report speak OpenSSL's names).
const SUITE_NAMES: [(CipherSuite, &str); 9] = [
    (
        CipherSuite::TLS13_AES_128_GCM_SHA256,
        "TLS_AES_128_GCM_SHA256",
    ),
    (
        CipherSuite::TLS13_AES_256_GCM_SHA384,
        "TLS_AES_256_GCM_SHA384",
    ),
    (
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
        "TLS_CHACHA20_POLY1305_SHA256",
    ),
    (
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        "ECDHE-ECDSA-AES128-GCM-SHA256",
    ),
    (
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        "ECDHE-ECDSA-AES256-GCM-SHA384",
    ),
    (
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        "ECDHE-ECDSA-CHACHA20-POLY1305",
    ),
    (
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        "ECDHE-RSA-AES128-GCM-SHA256",
    ),
    (
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        "ECDHE-RSA-AES256-GCM-SHA384",
    ),
    (
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        "ECDHE-RSA-CHACHA20-POLY1305",
    ),
];

/// The suites offered, in order: those `-Z` names, or AES-128-GCM first,
/// then AES-256-GCM, then ChaCha20. rustls's own order puts AES-256 first,
/// where browsers and h2load offer AES-128 first: with the same suite the
/// server does the same work under either client.
///
/// The suites are ring's, as the server's are: its AES-GCM has a VAES/AVX2
/// path aws-lc lacks without AVX-512, and a load generator that spends
/// less opening records measures the server, not itself. Key exchange
/// stays on aws-lc-rs for X25519MLKEM768.
fn provider(opts: &TlsOptions) -> Result<CryptoProvider, String> {
    let mut p = CryptoProvider {
        cipher_suites: rustls::crypto::ring::DEFAULT_CIPHER_SUITES.to_vec(),
        ..aws_lc_rs::default_provider()
    };
    if let Some(name) = &opts.group {
        p.kx_groups = groups_named(name)?;
    }
    match &opts.ciphers {
        Some(list) => {
            let mut chosen = Vec::new();
            for name in list.split(':').filter(|n| !n.is_empty()) {
                let found = SUITE_NAMES
                    .iter()
                    .find(|(_, n)| n.eq_ignore_ascii_case(name))
                    .and_then(|(id, _)| p.cipher_suites.iter().find(|s| s.suite() == *id));
                if let Some(s) = found {
                    chosen.push(*s);
                }
            }
            if chosen.is_empty() {
                let names: Vec<&str> = SUITE_NAMES.iter().map(|(_, n)| *n).collect();
                return Err(format!(
                    "-Z {list}: none of these suites is one rustls offers ({})",
                    names.join(":")
                ));
            }
            p.cipher_suites = chosen;
        }
        None => {
            let rank = |name: &str| {
                if name.contains("AES_128") {
                    0
                } else if name.contains("AES_256") {
                    1
                } else {
                    2
                }
            };
            p.cipher_suites
                .sort_by_key(|s| rank(s.suite().as_str().unwrap_or_default()));
        }
    }
    Ok(p)
}

/// The versions `-f` allows: TLS 1.3 and 1.2 unless it names one.
fn versions(opts: &TlsOptions) -> Result<&'static [&'static SupportedProtocolVersion], String> {
    static TLS12: [&SupportedProtocolVersion; 1] = [&rustls::version::TLS12];
    static TLS13: [&SupportedProtocolVersion; 1] = [&rustls::version::TLS13];
    match opts
        .protocol
        .as_deref()
        .map(str::to_ascii_uppercase)
        .as_deref()
    {
        None | Some("ALL") => Ok(rustls::DEFAULT_VERSIONS),
        Some("TLS1.2") => Ok(&TLS12),
        Some("TLS1.3") => Ok(&TLS13),
        Some(other) => Err(format!(
            "-f {other}: rustls speaks TLS1.2 and TLS1.3 only (or ALL)"
        )),
    }
}

/// Checks `-f` and `-Z` once, before the run, as the roots are.
pub fn check(opts: &TlsOptions) -> Result<(), String> {
    let p = Arc::new(provider(opts)?);
    ClientConfig::builder_with_provider(p)
        .with_protocol_versions(versions(opts)?)
        .map(|_| ())
        .map_err(|e| format!("-f and -Z: {e}"))
}

/// The roots to verify against: read once, before the run, so a bad
/// `--cacert` stops it rather than failing every connect.
pub fn roots(opts: &TlsOptions) -> Result<Arc<RootCertStore>, String> {
    let mut store = RootCertStore::empty();
    if opts.insecure {
        return Ok(Arc::new(store));
    }
    let (path, what) = match &opts.cacert {
        Some(p) => (p.clone(), "--cacert"),
        None => match SYSTEM_ROOTS
            .iter()
            .find(|p| std::path::Path::new(p).exists())
        {
            Some(p) => (p.into(), "system roots"),
            None => {
                return Err("no system CA bundle found: give --cacert FILE or --insecure".into())
            }
        },
    };
    let certs = CertificateDer::pem_file_iter(&path)
        .map_err(|e| format!("{what}: cannot read {}: {e}", path.display()))?;
    for c in certs {
        let c = c.map_err(|e| format!("{what}: {}: {e}", path.display()))?;
        let _ = store.add(c);
    }
    if store.is_empty() {
        return Err(format!(
            "{what}: no usable certificate in {} (PEM expected)",
            path.display()
        ));
    }
    Ok(Arc::new(store))
}

/// A core's client configuration, with its own session cache.
pub fn client_config(opts: &TlsOptions, roots: &Arc<RootCertStore>) -> Arc<ClientConfig> {
    // Checked by `check` before the run.
    let provider = Arc::new(provider(opts).expect("checked"));
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions(opts).expect("checked"))
        .expect("checked");
    let mut cfg = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCert(provider)))
            .with_no_client_auth()
    } else {
        builder
            .with_root_certificates(roots.clone())
            .with_no_client_auth()
    };
    cfg.alpn_protocols = opts.alpn.clone();
    if opts.no_resume {
        cfg.resumption = Resumption::disabled();
    }
    Arc::new(cfg)
}

/// `--insecure`: any certificate, but a handshake signed by its key.
#[derive(Debug)]
struct AnyCert(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// What ab reports of a TLS connection, taken from the first handshake.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct TlsInfo {
    /// "TLSv1.3"
    pub protocol: String,
    /// OpenSSL's name for the suite, as ab prints it.
    pub cipher: String,
    /// The server key's size in bits (0 if unknown).
    pub key_bits: u32,
    /// The cipher's key size in bits.
    pub cipher_bits: u32,
    /// ab's "Server Temp Key": "X25519 253 bits", "ECDH P-256 256 bits".
    pub temp_key: String,
    /// The key-exchange group negotiated, by its IANA name:
    /// "X25519MLKEM768", "X25519", "secp256r1".
    pub group: String,
    /// The SNI sent (none for an IP address).
    pub server_name: Option<String>,
    /// The ALPN protocol the server chose.
    pub alpn: Option<String>,
}

/// One TLS connection over a TCP stream.
pub struct TlsStream {
    tcp: TcpStream,
    tls: UnbufferedClientConnection,
    /// Ciphertext read and not yet consumed by rustls (its length is what
    /// was read; the socket reads into the spare capacity).
    cin: Vec<u8>,
    /// Records to send: `cout[..out]` (initialised once, to its capacity).
    cout: Vec<u8>,
    out: usize,
    /// The socket said EOF.
    eof: bool,
    /// Plaintext rustls had decrypted when a send came first (the server
    /// spoke right after the handshake): handed out by the next read.
    early: Vec<u8>,
}

/// Why a handshake failed, for the user.
#[derive(Debug)]
pub struct HandshakeError(pub String);

fn tls_err(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl TlsStream {
    /// Handshakes over `tcp`, with SNI from `host` (none for an IP).
    pub async fn connect(
        tcp: TcpStream,
        cfg: Arc<ClientConfig>,
        host: &str,
    ) -> Result<TlsStream, HandshakeError> {
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| HandshakeError(format!("{host}: not a server name: {e}")))?;
        let tls = UnbufferedClientConnection::new(cfg, name)
            .map_err(|e| HandshakeError(e.to_string()))?;
        let mut s = TlsStream {
            tcp,
            tls,
            cin: Vec::with_capacity(TLS_BUF),
            cout: vec![0; TLS_BUF],
            out: 0,
            eof: false,
            early: Vec::new(),
        };
        loop {
            let UnbufferedStatus { discard, state } = s.tls.process_tls_records(&mut s.cin);
            let mut send = false;
            let mut read = false;
            let mut done = false;
            match state.map_err(|e| HandshakeError(e.to_string()))? {
                ConnectionState::EncodeTlsData(mut e) => {
                    let mut r = e.encode(&mut s.cout[s.out..]);
                    if let Err(EncodeError::InsufficientSize(n)) = r {
                        s.cout.resize(s.out + n.required_size, 0);
                        r = e.encode(&mut s.cout[s.out..]);
                    }
                    s.out += r.map_err(|e| HandshakeError(e.to_string()))?;
                }
                ConnectionState::TransmitTlsData(t) => {
                    t.done();
                    send = true;
                }
                ConnectionState::BlockedHandshake => read = true,
                ConnectionState::WriteTraffic(_) | ConnectionState::ReadTraffic(_) => done = true,
                ConnectionState::PeerClosed | ConnectionState::Closed => {
                    return Err(HandshakeError("the server closed the connection".into()))
                }
                other => return Err(HandshakeError(format!("unexpected state {other:?}"))),
            }
            s.consumed(discard);
            if send {
                s.send()
                    .await
                    .map_err(|e| HandshakeError(format!("send: {e}")))?;
            }
            if done {
                return Ok(s);
            }
            if read {
                match s.recv().await {
                    Ok(true) => {}
                    Ok(false) => {
                        return Err(HandshakeError("the server closed the connection".into()))
                    }
                    Err(e) => return Err(HandshakeError(format!("receive: {e}"))),
                }
            }
        }
    }

    pub fn resumed(&self) -> bool {
        self.tls.handshake_kind() == Some(HandshakeKind::Resumed)
    }

    pub fn alpn(&self) -> Option<&[u8]> {
        self.tls.alpn_protocol()
    }

    pub fn info(&self, host: &str) -> TlsInfo {
        let t = &self.tls;
        let protocol = match t.protocol_version() {
            Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3".to_string(),
            Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2".to_string(),
            Some(v) => format!("{v:?}"),
            None => String::new(),
        };
        let (cipher, cipher_bits) = t
            .negotiated_cipher_suite()
            .map(|s| openssl_name(&format!("{:?}", s.suite())))
            .unwrap_or_default();
        let temp_key = t
            .negotiated_key_exchange_group()
            .map(|g| match format!("{:?}", g.name()).as_str() {
                "X25519" => "X25519 253 bits".to_string(),
                "secp256r1" => "ECDH P-256 256 bits".to_string(),
                "secp384r1" => "ECDH P-384 384 bits".to_string(),
                other => other.to_string(),
            })
            .unwrap_or_default();
        let group = t
            .negotiated_key_exchange_group()
            .and_then(|g| g.name().as_str())
            .unwrap_or_default()
            .to_string();
        let key_bits = t
            .peer_certificates()
            .and_then(|c| c.first())
            .map_or(0, |c| crate::der::key_bits(c.as_ref()));
        let server_name = host
            .parse::<std::net::IpAddr>()
            .is_err()
            .then(|| host.to_string());
        TlsInfo {
            protocol,
            cipher,
            key_bits,
            cipher_bits,
            temp_key,
            group,
            server_name,
            alpn: t
                .alpn_protocol()
                .map(|p| String::from_utf8_lossy(p).into_owned()),
        }
    }

    /// Drops the first `n` bytes of `cin`: the records rustls is done with.
    fn consumed(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        let len = self.cin.len();
        self.cin.copy_within(n..len, 0);
        self.cin.truncate(len - n);
    }

    /// Sends `cout[..out]`.
    async fn send(&mut self) -> io::Result<()> {
        if self.out == 0 {
            return Ok(());
        }
        let out = std::mem::take(&mut self.cout);
        let n = self.out;
        self.out = 0;
        let (res, slice) = self.tcp.write_all(out.slice(0..n)).await;
        self.cout = slice.into_inner();
        res.map(|_| ())
    }

    /// Reads ciphertext into `cin`'s spare capacity: Ok(false) at EOF.
    async fn recv(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.cin.len() == self.cin.capacity() {
            self.cin.reserve(TLS_BUF);
        }
        let buf = std::mem::take(&mut self.cin);
        let (len, cap) = (buf.len(), buf.capacity());
        let (res, slice) = self.tcp.read(buf.slice_mut(len..cap)).await;
        self.cin = slice.into_inner();
        if res? == 0 {
            self.eof = true;
            return Ok(false);
        }
        Ok(true)
    }

    /// Sends all of `data`, encrypted straight into the record buffer.
    pub async fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        loop {
            // No ciphertext in: only what rustls owes is asked for, so the
            // state is WriteTraffic unless it has records to send first.
            let UnbufferedStatus { state, .. } = self.tls.process_tls_records(&mut []);
            match state.map_err(tls_err)? {
                ConnectionState::WriteTraffic(mut w) => {
                    let mut r = w.encrypt(data, &mut self.cout[self.out..]);
                    if let Err(EncryptError::InsufficientSize(n)) = r {
                        self.cout.resize(self.out + n.required_size, 0);
                        r = w.encrypt(data, &mut self.cout[self.out..]);
                    }
                    self.out += r.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                    break;
                }
                ConnectionState::EncodeTlsData(mut e) => {
                    let mut r = e.encode(&mut self.cout[self.out..]);
                    if let Err(EncodeError::InsufficientSize(n)) = r {
                        self.cout.resize(self.out + n.required_size, 0);
                        r = e.encode(&mut self.cout[self.out..]);
                    }
                    self.out += r.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                }
                ConnectionState::TransmitTlsData(t) => t.done(),
                // Decrypted data waits (an HTTP/2 server's SETTINGS that came
                // with the handshake's last flight): rustls will not encrypt
                // before it is taken, so it is kept for the next read.
                ConnectionState::ReadTraffic(mut r) => {
                    while let Some(rec) = r.next_record() {
                        self.early.extend_from_slice(rec.map_err(tls_err)?.payload);
                    }
                }
                ConnectionState::PeerClosed | ConnectionState::Closed => {
                    return Err(io::ErrorKind::BrokenPipe.into())
                }
                other => {
                    return Err(io::Error::other(format!(
                        "TLS: cannot send in state {other:?}"
                    )))
                }
            }
        }
        self.send().await
    }

    /// Appends decrypted bytes to `buf` (growing it only when one record
    /// does not fit in its spare capacity); returns how many, 0 at the end
    /// of the stream (close_notify or EOF).
    pub async fn read(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        if !self.early.is_empty() {
            let n = self.early.len().min(buf.capacity() - buf.len()).max(1);
            buf.extend_from_slice(&self.early[..n]);
            self.early.drain(..n);
            return (Ok(n), buf);
        }
        // Every whole record already read is decrypted before returning, so
        // that one socket read is one turn of the caller's, as over TCP.
        let mut got = 0;
        loop {
            let UnbufferedStatus { mut discard, state } =
                self.tls.process_tls_records(&mut self.cin);
            let (mut idle, mut full, mut closed, mut send) = (false, false, false, false);
            let state = match state {
                Ok(s) => s,
                Err(e) => return (Err(tls_err(e)), buf),
            };
            match state {
                ConnectionState::ReadTraffic(mut r) => loop {
                    let room = buf.capacity() - buf.len();
                    match r.peek_len() {
                        None => break,
                        Some(l) if l.get() > room => {
                            if got > 0 {
                                full = true; // the rest stays for the next read
                                break;
                            }
                            buf.reserve(l.get());
                        }
                        Some(_) => {}
                    }
                    match r.next_record() {
                        Some(Ok(rec)) => {
                            discard += rec.discard;
                            buf.extend_from_slice(rec.payload);
                            got += rec.payload.len();
                        }
                        Some(Err(e)) => return (Err(tls_err(e)), buf),
                        None => break,
                    }
                },
                ConnectionState::EncodeTlsData(mut e) => match e.encode(&mut self.cout[self.out..])
                {
                    Ok(n) => self.out += n,
                    Err(e) => return (Err(io::Error::new(io::ErrorKind::InvalidData, e)), buf),
                },
                ConnectionState::TransmitTlsData(t) => {
                    t.done();
                    send = true;
                }
                ConnectionState::PeerClosed | ConnectionState::Closed => closed = true,
                // Nothing whole left to decrypt.
                _ => idle = true,
            }
            self.consumed(discard);
            if send {
                if let Err(e) = self.send().await {
                    return (Err(e), buf);
                }
                continue;
            }
            if got > 0 && (full || idle || closed) {
                return (Ok(got), buf);
            }
            if closed {
                return (Ok(0), buf);
            }
            if idle {
                match self.recv().await {
                    Ok(true) => {}
                    Ok(false) => return (Ok(0), buf),
                    Err(e) => return (Err(e), buf),
                }
            }
        }
    }
}

/// OpenSSL's name for a suite (what ab prints) and its key size in bits,
/// from rustls' name for it.
fn openssl_name(rustls_name: &str) -> (String, u32) {
    let bits = if rustls_name.contains("128") {
        128
    } else {
        256
    };
    let name = match rustls_name {
        "TLS13_AES_128_GCM_SHA256" => "TLS_AES_128_GCM_SHA256",
        "TLS13_AES_256_GCM_SHA384" => "TLS_AES_256_GCM_SHA384",
        "TLS13_CHACHA20_POLY1305_SHA256" => "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" => "ECDHE-ECDSA-AES128-GCM-SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384" => "ECDHE-ECDSA-AES256-GCM-SHA384",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256" => "ECDHE-ECDSA-CHACHA20-POLY1305",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" => "ECDHE-RSA-AES128-GCM-SHA256",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384" => "ECDHE-RSA-AES256-GCM-SHA384",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256" => "ECDHE-RSA-CHACHA20-POLY1305",
        other => other,
    };
    (name.to_string(), bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(protocol: Option<&str>, ciphers: Option<&str>) -> TlsOptions {
        TlsOptions {
            protocol: protocol.map(str::to_owned),
            ciphers: ciphers.map(str::to_owned),
            ..TlsOptions::default()
        }
    }

    fn names(o: &TlsOptions) -> Vec<&'static str> {
        provider(o)
            .unwrap()
            .cipher_suites
            .iter()
            .map(|s| s.suite().as_str().unwrap())
            .collect()
    }

    #[test]
    fn aes_128_is_offered_first_unless_z_says() {
        let all = names(&opts(None, None));
        assert!(all[0].contains("AES_128"), "{all:?}");
        let last_128 = all.iter().rposition(|n| n.contains("AES_128")).unwrap();
        let first_other = all.iter().position(|n| !n.contains("AES_128")).unwrap();
        assert!(last_128 < first_other, "{all:?}");
        let z = names(&opts(
            None,
            Some("ECDHE-RSA-CHACHA20-POLY1305:nonsense:TLS_AES_256_GCM_SHA384"),
        ));
        assert_eq!(
            z,
            [
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
                "TLS13_AES_256_GCM_SHA384"
            ]
        );
        assert!(provider(&opts(None, Some("RC4-MD5"))).is_err());
    }

    #[test]
    fn tls_group_offers_that_group_alone() {
        let groups = |g: Option<&str>| {
            let o = TlsOptions {
                group: g.map(str::to_owned),
                ..TlsOptions::default()
            };
            provider(&o).map(|p| {
                p.kx_groups
                    .iter()
                    .map(|g| g.name().as_str().unwrap())
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(groups(None).unwrap()[..2], ["X25519MLKEM768", "X25519"]);
        assert_eq!(groups(Some("X25519MLKEM768")).unwrap(), ["X25519MLKEM768"]);
        assert_eq!(groups(Some("x25519")).unwrap(), ["X25519"]);
        assert_eq!(groups(Some("p256")).unwrap(), ["secp256r1"]);
        assert_eq!(
            groups(Some("x25519:P256:secp256r1")).unwrap(),
            ["X25519", "secp256r1"]
        );
        assert!(groups(Some("x25519:")).is_err());
        assert!(groups(Some("ffdhe2048"))
            .unwrap_err()
            .contains("--tls-group"));
    }

    #[test]
    fn f_chooses_what_rustls_speaks() {
        assert!(check(&opts(None, None)).is_ok());
        assert!(check(&opts(Some("tls1.2"), None)).is_ok());
        assert!(check(&opts(Some("TLS1.3"), None)).is_ok());
        assert!(check(&opts(Some("ALL"), None)).is_ok());
        assert!(check(&opts(Some("TLS1.1"), None))
            .unwrap_err()
            .contains("-f"));
        // TLS 1.3 alone with only TLS 1.2 suites leaves nothing to offer.
        assert!(check(&opts(Some("TLS1.3"), Some("ECDHE-RSA-AES128-GCM-SHA256"))).is_err());
    }
}
