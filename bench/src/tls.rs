//! HTTPS: a rustls client driven by hand on the core's own runtime.
//!
//! rustls is sans-I/O: it takes ciphertext in and hands ciphertext out, so
//! the connection task reads the socket into the connection's own buffer,
//! feeds rustls from it, and writes rustls' records with one `send`, on
//! the same monoio runtime as plain HTTP: no thread, no blocking call. The
//! buffers live as long as the connection, so a kept-alive connection
//! allocates none of ours per request.
//!
//! One [`ClientConfig`] per core (see `crate::worker`): its session cache
//! is that core's, so without `-k`, where every request makes a new TLS
//! connection, the handshakes after the first resume a session (TLS 1.3
//! tickets, TLS 1.2 ids) as a browser's would, with no lock shared across
//! cores. Resumed handshakes are counted (`tls_resumed`).
//!
//! Verification: against the PEM roots of `--cacert`, else the system's
//! bundle; `--insecure` accepts any certificate, as `curl -k` does, but
//! still checks the handshake's signature against the certificate sent.

use std::io::{self, Read, Write};
use std::sync::Arc;

use monoio::buf::IoBufMut;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::TcpStream;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::ClientConnection;
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, HandshakeKind, RootCertStore, SignatureScheme};

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
    let provider = Arc::new(ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default versions");
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
    /// The SNI sent (none for an IP address).
    pub server_name: Option<String>,
    /// The ALPN protocol the server chose.
    pub alpn: Option<String>,
}

/// One TLS connection over a TCP stream.
pub struct TlsStream {
    tcp: TcpStream,
    tls: ClientConnection,
    /// Ciphertext read and not yet taken by rustls: `cin[cpos..]`.
    cin: Vec<u8>,
    cpos: usize,
    /// Ciphertext to send.
    cout: Vec<u8>,
    /// The socket said EOF.
    eof: bool,
    /// Decrypted bytes rustls holds for us.
    plain: usize,
    /// The peer sent close_notify.
    closed: bool,
}

/// Why a handshake failed, for the user.
#[derive(Debug)]
pub struct HandshakeError(pub String);

impl TlsStream {
    /// Handshakes over `tcp`, with SNI from `host` (none for an IP).
    pub async fn connect(
        tcp: TcpStream,
        cfg: Arc<ClientConfig>,
        host: &str,
    ) -> Result<TlsStream, HandshakeError> {
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| HandshakeError(format!("{host}: not a server name: {e}")))?;
        let tls = ClientConnection::new(cfg, name).map_err(|e| HandshakeError(e.to_string()))?;
        let mut s = TlsStream {
            tcp,
            tls,
            cin: Vec::with_capacity(TLS_BUF),
            cpos: 0,
            cout: Vec::with_capacity(TLS_BUF),
            eof: false,
            plain: 0,
            closed: false,
        };
        while s.tls.is_handshaking() {
            if s.tls.wants_write() {
                s.flush()
                    .await
                    .map_err(|e| HandshakeError(format!("send: {e}")))?;
                continue;
            }
            match s.feed().await {
                Ok(true) => {}
                Ok(false) => return Err(HandshakeError("the server closed the connection".into())),
                Err(e) => {
                    // Tell the server why (rustls queued an alert), then say it.
                    let _ = s.flush().await;
                    return Err(HandshakeError(e.to_string()));
                }
            }
        }
        // TLS 1.2: the client's Finished may still be queued.
        s.flush()
            .await
            .map_err(|e| HandshakeError(format!("send: {e}")))?;
        Ok(s)
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
            server_name,
            alpn: t
                .alpn_protocol()
                .map(|p| String::from_utf8_lossy(p).into_owned()),
        }
    }

    /// Sends all of `data`, encrypted.
    pub async fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        self.tls.writer().write_all(data)?;
        self.flush().await
    }

    /// Writes out whatever rustls has queued, in one send.
    async fn flush(&mut self) -> io::Result<()> {
        while self.tls.wants_write() {
            self.tls.write_tls(&mut self.cout)?;
        }
        if self.cout.is_empty() {
            return Ok(());
        }
        let out = std::mem::take(&mut self.cout);
        let (res, mut out) = self.tcp.write_all(out).await;
        out.clear();
        self.cout = out;
        res.map(|_| ())
    }

    /// Feeds rustls ciphertext, reading the socket when none is left:
    /// Ok(false) at EOF. What rustls cannot take yet stays in `cin`.
    async fn feed(&mut self) -> io::Result<bool> {
        loop {
            if self.cpos < self.cin.len() {
                let mut rest = &self.cin[self.cpos..];
                let n = self.tls.read_tls(&mut rest)?;
                self.cpos += n;
                if self.cpos == self.cin.len() {
                    self.cin.clear();
                    self.cpos = 0;
                }
                let st = self
                    .tls
                    .process_new_packets()
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                self.plain = st.plaintext_bytes_to_read();
                self.closed = st.peer_has_closed();
                return Ok(true);
            }
            if self.eof {
                return Ok(false);
            }
            let buf = std::mem::take(&mut self.cin);
            let cap = buf.capacity();
            let (res, slice) = self.tcp.read(buf.slice_mut(0..cap)).await;
            self.cin = slice.into_inner();
            self.cpos = 0;
            if res? == 0 {
                self.eof = true;
            }
        }
    }

    /// Appends decrypted bytes to `buf` within its capacity; returns how
    /// many, 0 at the end of the stream (close_notify or EOF).
    pub async fn read(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        loop {
            if self.plain > 0 {
                // Only as many bytes as rustls holds are zeroed and copied into.
                let len = buf.len();
                let n = self.plain.min(buf.capacity() - len);
                buf.resize(len + n, 0);
                return match self.tls.reader().read(&mut buf[len..]) {
                    Ok(got) => {
                        buf.truncate(len + got);
                        self.plain -= got;
                        (Ok(got), buf)
                    }
                    Err(e) => {
                        buf.truncate(len);
                        (Err(e), buf)
                    }
                };
            }
            if self.closed {
                return (Ok(0), buf);
            }
            // What rustls owes the peer (key updates, alerts) goes first.
            if self.tls.wants_write() {
                if let Err(e) = self.flush().await {
                    return (Err(e), buf);
                }
            }
            match self.feed().await {
                Ok(true) => {}
                Ok(false) => return (Ok(0), buf),
                Err(e) => return (Err(e), buf),
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
