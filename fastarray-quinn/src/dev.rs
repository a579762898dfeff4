//! A certificate generated at start, and quinn configurations around it:
//! a server that presents it and a client that trusts it alone. For tests,
//! examples and development on one machine; a game with a real
//! certificate builds its own [`quinn::ServerConfig`] and
//! [`quinn::ClientConfig`] (with [`transport_config`] if it likes).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use quinn::rustls::RootCertStore;
use quinn::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A self-signed certificate and its key, generated at start (rcgen, with
/// ring): what [`server_config`](Self::server_config) presents and
/// [`client_config`](Self::client_config) trusts. Clients of another
/// process need its [`der`](Self::der) bytes.
pub struct DevCertificate {
    cert: CertificateDer<'static>,
    key: PrivatePkcs8KeyDer<'static>,
}

impl fmt::Debug for DevCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key stays out of logs.
        f.debug_struct("DevCertificate")
            .field("der_bytes", &self.cert.len())
            .finish_non_exhaustive()
    }
}

/// Why a configuration could not be made.
#[derive(Debug)]
#[non_exhaustive]
pub enum SetupError {
    /// rcgen could not generate the certificate (a name that is not a
    /// valid DNS name or IP address).
    Certificate(rcgen::Error),
    /// rustls refused the certificate or its key.
    Tls(quinn::rustls::Error),
    /// rustls could not make a verifier trusting the certificate.
    Verifier(quinn::rustls::client::VerifierBuilderError),
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Certificate(error) => write!(f, "generating the certificate: {error}"),
            Self::Tls(error) => write!(f, "TLS configuration: {error}"),
            Self::Verifier(error) => write!(f, "TLS certificate verifier: {error}"),
        }
    }
}

impl std::error::Error for SetupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Certificate(error) => Some(error),
            Self::Tls(error) => Some(error),
            Self::Verifier(error) => Some(error),
        }
    }
}

impl DevCertificate {
    /// A new self-signed certificate for `names` (DNS names or IP
    /// addresses; a client's `server_name` must be one of them).
    pub fn generate<I, S>(names: I) -> Result<Self, SetupError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let names: Vec<String> = names.into_iter().map(Into::into).collect();
        let certified =
            rcgen::generate_simple_self_signed(names).map_err(SetupError::Certificate)?;
        Ok(Self {
            cert: certified.cert.der().clone(),
            key: PrivatePkcs8KeyDer::from(certified.key_pair.serialize_der()),
        })
    }

    /// The certificate, DER-encoded: what a client elsewhere must trust.
    pub fn der(&self) -> &[u8] {
        &self.cert
    }

    /// A server configuration presenting the certificate, with
    /// [`transport_config`]'s transport.
    pub fn server_config(&self) -> Result<quinn::ServerConfig, SetupError> {
        let key = PrivateKeyDer::Pkcs8(self.key.clone_key());
        let mut config = quinn::ServerConfig::with_single_cert(vec![self.cert.clone()], key)
            .map_err(SetupError::Tls)?;
        config.transport_config(Arc::new(transport_config()));
        Ok(config)
    }

    /// A client configuration that trusts this certificate and no other,
    /// with [`transport_config`]'s transport: the TLS handshake is real,
    /// and a server without the key is refused.
    pub fn client_config(&self) -> Result<quinn::ClientConfig, SetupError> {
        let mut roots = RootCertStore::empty();
        roots.add(self.cert.clone()).map_err(SetupError::Tls)?;
        let mut config = quinn::ClientConfig::with_root_certificates(Arc::new(roots))
            .map_err(SetupError::Verifier)?;
        config.transport_config(Arc::new(transport_config()));
        Ok(config)
    }
}

/// quinn's transport, set for game state over datagrams: a keep-alive
/// every second, so a connection whose game sends nothing for a while is
/// not closed idle (after 10 s of silence it is), and room for a few
/// hundred datagrams queued each way. Everything else is quinn's default
/// (datagrams on, MTU discovery on).
pub fn transport_config() -> quinn::TransportConfig {
    let mut transport = quinn::TransportConfig::default();
    transport.keep_alive_interval(Some(Duration::from_secs(1)));
    transport.max_idle_timeout(Some(
        quinn::IdleTimeout::try_from(Duration::from_secs(10))
            .expect("10 s is a valid idle timeout"),
    ));
    transport.datagram_receive_buffer_size(Some(1 << 20));
    transport.datagram_send_buffer_size(1 << 20);
    transport
}
