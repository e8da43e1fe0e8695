//! The web tools: `web_fetch` (a page, HTML turned into Markdown), `web_search` (a
//! configured search backend) and zut's browsing tools over a small page store (`web_search`
//! with references, `web_open`, `web_find`, `web_click`: [`browse`]), over one lazily built
//! HTTP client (reqwest with rustls, the same build agent-providers uses).
//!
//! Which hosts a call may reach follows the call's sandbox: while the OS sandbox confines
//! commands and keeps them off the network, `web_fetch` reaches public hosts only (on their
//! default ports; loopback, private, link-local and other special-use addresses are refused,
//! also when a name resolves to one, and on every redirect), as Zero's does. With the network
//! open to commands (`--sandbox-network allow`) or the sandbox off, any host may be fetched.

mod browse;
mod duckduckgo;
mod fetch;
mod markdown;
mod pages;
mod search;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_core::sandbox::{NetworkAccess, SandboxContext};
use reqwest::Url;

pub use browse::browsing_tools;
pub(crate) use browse::tools as browse_tools;
pub use duckduckgo::DUCKDUCKGO_HTML;
pub use fetch::{WebFetch, WebFetchArgs, DEFAULT_WEB_FETCH_MAX_BYTES, MAX_WEB_FETCH_MAX_BYTES};
pub use markdown::html_to_markdown;
pub use pages::{WebPages, WEB_PAGES_MAX_BYTES, WEB_PAGES_MAX_DOCUMENTS};
pub use search::{SearchBackend, SearchProvider, WebSearch, WebSearchArgs};

/// Redirects `web_fetch` follows; a further one is an error.
pub const MAX_REDIRECTS: usize = 5;

/// What a call may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Public hosts on default ports only.
    Public,
    /// Any host.
    Any,
}

impl Reach {
    /// The reach the call's sandbox allows.
    pub(crate) fn of(sandbox: &SandboxContext) -> Self {
        let policy = &sandbox.policy;
        if !policy.confines() || policy.network == NetworkAccess::Allow {
            Reach::Any
        } else {
            Reach::Public
        }
    }
}

const PUBLIC_ONLY_HINT: &str = "web_fetch only supports public remote HTTP/HTTPS URLs while the sandbox keeps commands off the network";

/// Why `addr` is not a public address, if it is not.
fn non_public(addr: IpAddr) -> Option<&'static str> {
    match addr {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return non_public_v4(v4);
            }
            let segments = v6.segments();
            // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address.
            if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                let [a, b] = segments[6].to_be_bytes();
                let [c, d] = segments[7].to_be_bytes();
                return non_public_v4(Ipv4Addr::new(a, b, c, d));
            }
            if segments[0] == 0x2002 {
                let [a, b] = segments[1].to_be_bytes();
                let [c, d] = segments[2].to_be_bytes();
                return non_public_v4(Ipv4Addr::new(a, b, c, d));
            }
            non_public_v6(v6)
        }
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match () {
        _ if ip.is_loopback() => "loopback hosts are blocked",
        _ if ip.is_private() => "private network hosts are blocked",
        _ if ip.is_link_local() => "link-local hosts are blocked",
        _ if ip.is_multicast() => "multicast hosts are blocked",
        _ if ip.is_documentation() => "documentation hosts are blocked",
        _ if a == 0 || a >= 240 || ip.is_broadcast() => "special-use hosts are blocked",
        _ if a == 100 && (64..128).contains(&b) => "special-use hosts are blocked",
        _ if a == 192 && b == 0 && c == 0 => "special-use hosts are blocked",
        _ if a == 192 && b == 88 && c == 99 => "special-use hosts are blocked",
        _ if a == 198 && (18..20).contains(&b) => "benchmark network hosts are blocked",
        _ => return None,
    })
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    Some(match () {
        _ if ip.is_loopback() => "loopback hosts are blocked",
        _ if ip.is_unspecified() => "unspecified hosts are blocked",
        _ if ip.is_multicast() => "multicast hosts are blocked",
        _ if first & 0xfe00 == 0xfc00 => "private network hosts are blocked",
        _ if first & 0xffc0 == 0xfe80 => "link-local hosts are blocked",
        _ if first == 0x2001 && ip.segments()[1] == 0x0db8 => "documentation hosts are blocked",
        _ if first == 0x2001 && ip.segments()[1] < 0x0200 => "special-use hosts are blocked",
        _ if ip.segments()[..4] == [0x100, 0, 0, 0] => "special-use hosts are blocked",
        // Not global unicast (2000::/3).
        _ if first & 0xe000 != 0x2000 => "non-global hosts are blocked",
        _ => return None,
    })
}

/// Checks a URL before it is requested (and each redirect's): http(s), no user info, a host;
/// with [`Reach::Public`] also a public host (by its literal address or name) on the
/// scheme's default port.
pub(crate) fn check_url(url: &Url, reach: Reach) -> Result<(), String> {
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(format!(
                "only http and https URLs are supported, not {other}:"
            ))
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("URLs with user info are not allowed".into());
    }
    let Some(host) = url.host() else {
        return Err("URL host is required".into());
    };
    if reach == Reach::Any {
        return Ok(());
    }
    let reason = match host {
        url::Host::Ipv4(ip) => non_public(IpAddr::V4(ip)).map(str::to_string),
        url::Host::Ipv6(ip) => non_public(IpAddr::V6(ip)).map(str::to_string),
        url::Host::Domain(name) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            if name == "localhost" || name.ends_with(".localhost") {
                Some("localhost hosts are blocked".to_string())
            } else if name == "metadata" || name == "metadata.google.internal" {
                Some("metadata service hosts are blocked".to_string())
            } else if name.ends_with(".local") || name.ends_with(".internal") {
                Some("local network hosts are blocked".to_string())
            } else {
                None
            }
        }
    };
    if let Some(reason) = reason {
        return Err(format!("{reason}; {PUBLIC_ONLY_HINT}"));
    }
    if url
        .port()
        .is_some_and(|p| Some(p) != default_port(url.scheme()))
    {
        return Err(format!(
            "only default ports are allowed for {} URLs while the sandbox keeps commands off the network",
            url.scheme()
        ));
    }
    Ok(())
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// Resolves names to public addresses only (every address of a name must be public, so a
/// name cannot smuggle a private one in beside a public one).
#[derive(Debug)]
struct PublicResolver;

impl reqwest::dns::Resolve for PublicResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if addrs.is_empty() {
                return Err("the host did not resolve to an address".into());
            }
            if let Some(reason) = addrs.iter().find_map(|a| non_public(a.ip())) {
                return Err(Box::new(Refused(format!(
                    "{host} resolves to a non-public address: {reason}"
                )))
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// A destination the call may not reach (a redirect to it, or a name resolving to a
/// non-public address while only public hosts may be reached).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refused(pub(crate) String);

/// A redirect past [`MAX_REDIRECTS`].
#[derive(Debug, thiserror::Error)]
#[error("too many redirects: maximum is {MAX_REDIRECTS}")]
pub(crate) struct TooManyRedirects;

/// Whether `err`'s chain holds an error of type `E`.
pub(crate) fn caused_by<E: std::error::Error + 'static>(
    err: &(dyn std::error::Error + 'static),
) -> bool {
    let mut current = Some(err);
    while let Some(e) = current {
        if e.is::<E>() {
            return true;
        }
        current = e.source();
    }
    false
}

/// The HTTP clients of the web tools, built on first use.
#[derive(Debug, Default)]
pub(crate) struct Clients {
    public: OnceLock<reqwest::Client>,
    any: OnceLock<reqwest::Client>,
}

/// Timeout of one `web_fetch` request.
pub const WEB_FETCH_TIMEOUT: Duration = Duration::from_secs(30);

impl Clients {
    /// The client for `reach`: redirects checked like the first URL (at most
    /// [`MAX_REDIRECTS`]), names resolved to public addresses only for [`Reach::Public`].
    pub(crate) fn get(&self, reach: Reach) -> Result<&reqwest::Client, String> {
        let cell = match reach {
            Reach::Public => &self.public,
            Reach::Any => &self.any,
        };
        if let Some(client) = cell.get() {
            return Ok(client);
        }
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() > MAX_REDIRECTS {
                return attempt.error(TooManyRedirects);
            }
            match check_url(attempt.url(), reach) {
                Ok(()) => attempt.follow(),
                Err(reason) => attempt.error(Refused(format!("unsafe redirect URL: {reason}"))),
            }
        });
        let mut builder = reqwest::Client::builder()
            .tls_backend_preconfigured(tls_config()?)
            .redirect(policy)
            .timeout(WEB_FETCH_TIMEOUT)
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("agent-sdk-web/", env!("CARGO_PKG_VERSION")))
            .no_proxy();
        if reach == Reach::Public {
            builder = builder.dns_resolver(Arc::new(PublicResolver));
        }
        let client = builder.build().map_err(|e| e.to_string())?;
        Ok(cell.get_or_init(|| client))
    }
}

/// rustls with the *ring* provider and the webpki roots (the system's certificate store is
/// not read): reqwest is built without a crypto provider of its own, so every client is
/// given this configuration.
pub(crate) fn tls_config() -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup failed: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// The whole chain of an error's sources, in one line.
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_reach_refuses_private_hosts_and_ports() {
        let check = |u: &str| check_url(&Url::parse(u).expect("url"), Reach::Public);
        assert!(check("https://docs.rs/serde").is_ok());
        assert!(check("http://8.8.8.8/").is_ok());
        for refused in [
            "http://127.0.0.1/",
            "http://localhost/",
            "http://10.1.2.3/",
            "http://192.168.0.1/",
            "http://169.254.169.254/latest",
            "http://[::1]/",
            "http://[fd00::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[64:ff9b::a00:1]/",
            "http://metadata.google.internal/",
            "https://example.com:8443/",
        ] {
            assert!(check(refused).is_err(), "{refused}");
        }
        assert!(check("file:///etc/passwd")
            .expect_err("scheme")
            .contains("only http and https"));
        assert!(check("https://user:pw@example.com/").is_err());
        let any = |u: &str| check_url(&Url::parse(u).expect("url"), Reach::Any);
        assert!(any("http://127.0.0.1:8080/").is_ok());
        assert!(any("ftp://127.0.0.1/").is_err());
    }
}
