//! The certificate authority of one read-only run: made when the run's proxy starts, its key
//! never leaving the proxy's memory, its certificate installed in that run's container only.
//! It signs a leaf certificate for each allow-listed host the program opens a tunnel to, and
//! its name constraints limit it to the allow-list's domains, so even a leaked key could not
//! vouch for any other site.

use crate::error::EgressError;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, GeneralSubtree, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, NameConstraints,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Leaf configurations kept per run; past this, each tunnel gets a fresh one (a program
/// cycling through wildcard subdomains cannot grow the proxy's memory).
const MAX_CACHED_HOSTS: usize = 256;

/// A run's CA and the TLS configurations of the hosts it has signed for.
pub struct RunCa {
    issuer: Issuer<'static, KeyPair>,
    cert_pem: String,
    /// One key for every leaf of the run: generating a key per host would cost a tunnel more
    /// than the signature does, and the leaves live no longer than the run.
    leaf_key: KeyPair,
    provider: Arc<rustls::crypto::CryptoProvider>,
    leaves: Mutex<HashMap<String, Arc<rustls::ServerConfig>>>,
}

fn failed(what: &'static str) -> impl FnOnce(rcgen::Error) -> EgressError {
    move |source| EgressError::Certificate {
        what,
        detail: source.to_string(),
    }
}

fn validity(params: &mut CertificateParams) {
    let now = time::OffsetDateTime::now_utc();
    // An hour back for a container clock a little behind; two days ahead outlives any run.
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(2);
}

impl RunCa {
    /// A fresh CA whose certificates can only name hosts of `allowed` (entries as in
    /// `read_only_hosts`).
    pub fn generate(allowed: &[String]) -> Result<RunCa, EgressError> {
        let key = KeyPair::generate().map_err(failed("the run CA's key"))?;
        let mut params = CertificateParams::default();
        let mut name = DistinguishedName::new();
        let serial = uuid::Uuid::new_v4().simple().to_string();
        name.push(
            DnType::CommonName,
            format!("Airlock read-only run CA {}", &serial[..12]),
        );
        name.push(DnType::OrganizationName, "Airlock");
        params.distinguished_name = name;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.name_constraints = Some(NameConstraints {
            permitted_subtrees: allowed
                .iter()
                .map(|entry| {
                    let entry = entry.trim().trim_end_matches('.').to_ascii_lowercase();
                    GeneralSubtree::DnsName(entry.strip_prefix("*.").unwrap_or(&entry).to_owned())
                })
                .collect(),
            excluded_subtrees: vec![],
        });
        validity(&mut params);
        let cert = params.self_signed(&key).map_err(failed("the run CA's certificate"))?;
        let cert_pem = cert.pem();
        Ok(RunCa {
            issuer: Issuer::new(params, key),
            cert_pem,
            leaf_key: KeyPair::generate().map_err(failed("the leaf key"))?,
            provider: Arc::new(rustls::crypto::ring::default_provider()),
            leaves: Mutex::new(HashMap::new()),
        })
    }

    /// The CA certificate (PEM), what the run's container trusts.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The TLS server configuration presenting a certificate for `host` (already checked
    /// against the allow-list).
    pub fn server_config(&self, host: &str) -> Result<Arc<rustls::ServerConfig>, EgressError> {
        if let Some(config) = self.leaves.lock().ok().and_then(|leaves| leaves.get(host).cloned()) {
            return Ok(config);
        }
        let mut params = CertificateParams::new(vec![host.to_owned()]).map_err(failed("a host's certificate"))?;
        params.distinguished_name.push(DnType::CommonName, host);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        validity(&mut params);
        let leaf = params
            .signed_by(&self.leaf_key, &self.issuer)
            .map_err(failed("a host's certificate"))?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.leaf_key.serialize_der()));
        let chain = vec![CertificateDer::from(leaf.der().to_vec())];
        let mut config = rustls::ServerConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()
            .and_then(|builder| builder.with_no_client_auth().with_single_cert(chain, key))
            .map_err(|e| EgressError::Certificate {
                what: "a host's TLS configuration",
                detail: e.to_string(),
            })?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        if let Ok(mut leaves) = self.leaves.lock()
            && leaves.len() < MAX_CACHED_HOSTS
        {
            leaves.insert(host.to_owned(), config.clone());
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::client::danger::ServerCertVerifier as _;
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{ServerName, UnixTime};

    fn verify(ca: &RunCa, leaf_host: &str, as_name: &str) -> Result<(), rustls::Error> {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca.cert_pem().as_bytes()).unwrap())
            .unwrap();
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .unwrap();
        let params = CertificateParams::new(vec![leaf_host.to_owned()]).unwrap();
        let leaf = params.signed_by(&ca.leaf_key, &ca.issuer).unwrap();
        verifier
            .verify_server_cert(
                leaf.der(),
                &[],
                &ServerName::try_from(as_name.to_owned()).unwrap(),
                &[],
                UnixTime::now(),
            )
            .map(|_| ())
    }

    #[test]
    fn every_run_has_its_own_ca_limited_to_the_allow_list() {
        let allowed = vec!["docs.python.org".to_owned(), "*.example.org".to_owned()];
        let ca = RunCa::generate(&allowed).unwrap();
        let other = RunCa::generate(&allowed).unwrap();
        assert_ne!(ca.cert_pem(), other.cert_pem(), "a fresh CA per run");
        verify(&ca, "docs.python.org", "docs.python.org").unwrap();
        verify(&ca, "a.example.org", "a.example.org").unwrap();
        assert!(verify(&ca, "docs.python.org", "pypi.org").is_err(), "names must match");
        let outside = verify(&ca, "bank.test", "bank.test").unwrap_err();
        assert!(
            format!("{outside:?}").to_lowercase().contains("name"),
            "a certificate outside the allow-list fails the name constraints: {outside:?}"
        );
        assert!(ca.server_config("docs.python.org").is_ok());
        assert!(Arc::ptr_eq(
            &ca.server_config("docs.python.org").unwrap(),
            &ca.server_config("docs.python.org").unwrap()
        ));
    }
}
