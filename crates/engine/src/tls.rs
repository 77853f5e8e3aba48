//! TLS for `https://` sources: a connection is either a plain TCP stream or rustls over one ([`Wire`]). The
//! handshake is done blocking when the connection is opened (like the TCP connect), then the socket is made
//! non-blocking and read and written by `http.rs`'s epoll loop through the same `Read`/`Write` calls as plain
//! HTTP. The server's certificate is checked against Mozilla's roots (webpki-roots) unless `--insecure` was
//! given ([`set_insecure`]), which accepts any certificate (self-signed test and home servers).
//!
//! rustls' buffered API keeps received records in its own buffers; decrypted bytes are read into the engine's
//! one scratch buffer and only counted.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme, StreamOwned};

static INSECURE: AtomicBool = AtomicBool::new(false);

/// Accept any server certificate from now on (`--insecure`); set once before connections are made.
pub fn set_insecure(insecure: bool) {
    INSECURE.store(insecure, Ordering::Relaxed);
}

/// One connection to the server: plain TCP or TLS over TCP.
pub enum Wire {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl Wire {
    /// TLS over `tcp` for `host`, with the handshake completed (blocking: `tcp` must still be blocking).
    pub fn tls(mut tcp: TcpStream, host: &str) -> Result<Wire, String> {
        let name = ServerName::try_from(host.to_string()).map_err(|e| format!("bad TLS server name: {e}"))?;
        let mut conn = ClientConnection::new(config(), name).map_err(|e| e.to_string())?;
        while conn.is_handshaking() {
            if let Err(e) = conn.complete_io(&mut tcp) {
                return Err(handshake_error(e));
            }
        }
        Ok(Wire::Tls(Box::new(StreamOwned::new(conn, tcp))))
    }

    /// The TCP stream underneath.
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Wire::Plain(s) => s,
            Wire::Tls(s) => &s.sock,
        }
    }

    /// Encrypted bytes are waiting to be written to the socket (watch it for writability).
    pub fn wants_write(&self) -> bool {
        match self {
            Wire::Plain(_) => false,
            Wire::Tls(s) => s.conn.wants_write(),
        }
    }

    /// Writes what TLS still holds to the socket, as far as it takes it now.
    pub fn push(&mut self) -> io::Result<()> {
        if let Wire::Tls(s) = self {
            while s.conn.wants_write() {
                s.conn.write_tls(&mut s.sock)?;
            }
        }
        Ok(())
    }
}

fn handshake_error(e: io::Error) -> String {
    let text = e.to_string();
    if text.contains("certificate") && !INSECURE.load(Ordering::Relaxed) {
        format!(
            "TLS handshake failed: {text} (a self-signed or private-CA server: pass --insecure to accept its \
             certificate)"
        )
    } else {
        format!("TLS handshake failed: {text}")
    }
}

impl AsFd for Wire {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.tcp().as_fd()
    }
}

impl Read for Wire {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Wire::Plain(s) => s.read(buf),
            Wire::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Wire {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Wire::Plain(s) => s.write(buf),
            Wire::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Wire::Plain(s) => s.flush(),
            Wire::Tls(s) => s.flush(),
        }
    }
}

/// The client configuration: verified against webpki-roots, or (with `--insecure`) accepting any certificate.
fn config() -> Arc<ClientConfig> {
    static VERIFIED: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    static ANY: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    let provider = || Arc::new(rustls::crypto::ring::default_provider());
    if INSECURE.load(Ordering::Relaxed) {
        ANY.get_or_init(|| {
            let verifier = Arc::new(AnyCertificate(provider()));
            let builder = ClientConfig::builder_with_provider(provider()).with_safe_default_protocol_versions();
            let config =
                builder.map(|b| b.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth());
            Arc::new(config.unwrap_or_else(|_| unreachable_config()))
        })
        .clone()
    } else {
        VERIFIED
            .get_or_init(|| {
                let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
                let builder = ClientConfig::builder_with_provider(provider()).with_safe_default_protocol_versions();
                let config = builder.map(|b| b.with_root_certificates(roots).with_no_client_auth());
                Arc::new(config.unwrap_or_else(|_| unreachable_config()))
            })
            .clone()
    }
}

/// ring's default provider supports the safe default versions; should that ever change, TLS 1.3 alone.
fn unreachable_config() -> ClientConfig {
    ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map(|b| {
            b.with_root_certificates(rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() })
                .with_no_client_auth()
        })
        .unwrap_or_else(|e| panic!("ring supports no TLS version: {e}"))
}

/// `--insecure`: any certificate is accepted; signatures are still checked with the provider's algorithms.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
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
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
