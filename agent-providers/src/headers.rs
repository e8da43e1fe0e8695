//! Extra HTTP headers a user adds to every request of a provider (`--header 'Name: value'`):
//! a gateway's tenant or routing header, a proxy's own key.
//!
//! Every value is held as a [`SecretString`]; one that looks like a secret
//! ([`CustomHeader::is_secret`]: a sensitive name such as `X-Api-Key` or `Authorization`,
//! a `Bearer`/`Basic` credential, or a long token-shaped value) is never shown in Debug
//! output, is registered with [`agent_core::secrets`] when the provider is built, and is
//! scrubbed from error messages, as API keys are.

use std::fmt;
use std::str::FromStr;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use secrecy::{ExposeSecret, SecretString};

/// One extra header: a valid HTTP name and value.
#[derive(Clone)]
pub struct CustomHeader {
    name: HeaderName,
    value: SecretString,
    secret: bool,
}

/// A header given as `Name: value` that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidHeader {
    /// No `:` between name and value.
    #[error("invalid header {0:?}: expected 'Name: value'")]
    Shape(String),
    /// The name is empty or holds characters a header name cannot.
    #[error("invalid header name {0:?}")]
    Name(String),
    /// The value holds characters a header value cannot (control characters, newlines).
    #[error("invalid value for header {0:?}: it holds characters an HTTP header cannot")]
    Value(String),
}

impl CustomHeader {
    /// A header `name: value`, both checked as HTTP allows them (the value is trimmed).
    pub fn new(name: &str, value: &str) -> Result<Self, InvalidHeader> {
        let name = name.trim();
        let parsed = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| InvalidHeader::Name(name.to_string()))?;
        let value = value.trim();
        HeaderValue::from_str(value).map_err(|_| InvalidHeader::Value(name.to_string()))?;
        let secret = looks_secret(parsed.as_str(), value);
        Ok(Self {
            name: parsed,
            value: SecretString::from(value.to_string()),
            secret,
        })
    }

    /// The header name (lower-case, as HTTP/2 sends it).
    pub fn name(&self) -> &str {
        self.name.as_str()
    }

    /// The value. Callers must not print it when [`CustomHeader::is_secret`].
    pub fn value(&self) -> &SecretString {
        &self.value
    }

    /// Whether the value looks like a credential: the name is a sensitive one
    /// ([`agent_core::secrets::is_sensitive_name`], or ends in `key`, `signature` or
    /// `cookie`), the value is a `Bearer`/`Basic` credential, or it is a long unbroken
    /// token mixing letters and digits.
    pub fn is_secret(&self) -> bool {
        self.secret
    }

    /// The header as sent: marked sensitive (never logged by the HTTP stack) when secret.
    pub(crate) fn to_pair(&self) -> (HeaderName, HeaderValue) {
        // Checked in `new`.
        let mut value = HeaderValue::from_str(self.value.expose_secret())
            .unwrap_or_else(|_| HeaderValue::from_static(""));
        value.set_sensitive(self.secret);
        (self.name.clone(), value)
    }
}

impl FromStr for CustomHeader {
    type Err = InvalidHeader;

    /// Parses `Name: value` (as `curl -H` takes it).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, value) = s.split_once(':').ok_or_else(|| {
            InvalidHeader::Shape(match looks_secret("", s) {
                true => "[REDACTED]".to_string(),
                false => s.to_string(),
            })
        })?;
        Self::new(name, value)
    }
}

impl fmt::Debug for CustomHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = match self.secret {
            true => "[REDACTED]",
            false => self.value.expose_secret(),
        };
        write!(f, "{}: {value}", self.name)
    }
}

impl PartialEq for CustomHeader {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.value.expose_secret() == other.value.expose_secret()
    }
}

/// Whether `value` of header `name` looks like a credential (see
/// [`CustomHeader::is_secret`]).
fn looks_secret(name: &str, value: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    if agent_core::secrets::is_sensitive_name(&lower)
        || ["key", "signature", "cookie", "session"]
            .iter()
            .any(|end| lower.ends_with(end))
    {
        return true;
    }
    let v = value.trim();
    let scheme = v.split_once(' ').map(|(s, _)| s.to_ascii_lowercase());
    if matches!(scheme.as_deref(), Some("bearer" | "basic" | "token")) {
        return true;
    }
    v.len() >= 20
        && !v.contains(char::is_whitespace)
        && v.chars().any(|c| c.is_ascii_digit())
        && v.chars().any(|c| c.is_ascii_alphabetic())
}

/// Adds `extra` to `headers` (replacing a provider's own header of the same name: a gateway
/// may need another `anthropic-version` or `authorization`), and the secret values to
/// `secrets` so error messages are scrubbed of them.
pub(crate) fn apply(
    extra: &[CustomHeader],
    headers: &mut HeaderMap,
    secrets: &mut Vec<SecretString>,
) {
    for header in extra {
        let (name, value) = header.to_pair();
        headers.insert(name, value);
        if header.secret {
            secrets.push(header.value.clone());
        }
    }
}

/// Registers the secret values among `headers` with [`agent_core::secrets`], so tool output
/// hides them.
pub fn register_secrets(headers: &[CustomHeader]) {
    for header in headers.iter().filter(|h| h.secret) {
        agent_core::secrets::register_secret(header.value.expose_secret());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parse_like_curl_and_bad_ones_are_named() {
        let h: CustomHeader = "X-Tenant:  acme ".parse().expect("parses");
        assert_eq!((h.name(), h.value().expose_secret()), ("x-tenant", "acme"));
        assert!(!h.is_secret());
        assert_eq!(format!("{h:?}"), "x-tenant: acme");
        let h: CustomHeader = "X-Trace: a:b:c".parse().expect("colons in the value");
        assert_eq!(h.value().expose_secret(), "a:b:c");
        assert_eq!(
            "no colon".parse::<CustomHeader>(),
            Err(InvalidHeader::Shape("no colon".into()))
        );
        assert_eq!(
            "bad name: x".parse::<CustomHeader>(),
            Err(InvalidHeader::Name("bad name".into()))
        );
        assert_eq!(
            ": x".parse::<CustomHeader>(),
            Err(InvalidHeader::Name(String::new()))
        );
        assert_eq!(
            "X-A: a\u{7}b".parse::<CustomHeader>(),
            Err(InvalidHeader::Value("X-A".into()))
        );
    }

    #[test]
    fn secret_looking_values_are_hidden() {
        for (line, secret) in [
            ("X-Api-Key: short", true),
            ("api-key: abc", true),
            ("Authorization: Bearer abc", true),
            ("Proxy-Authorization: Basic dXNlcjpwYXNz", true),
            ("Ocp-Apim-Subscription-Key: 0123", true),
            ("X-Gateway: Bearer tok-1", true),
            ("Cookie: sid=1", true),
            ("X-Custom: sk-proj-0123456789abcdefghij", true),
            ("X-Region: eu-west-1", false),
            ("X-Tenant: my organisation name", false),
            ("X-Max-Tokens: 1000", false),
        ] {
            let h: CustomHeader = line.parse().expect(line);
            assert_eq!(h.is_secret(), secret, "{line}");
            let debug = format!("{h:?}");
            let value = line.split_once(':').map(|(_, v)| v.trim()).unwrap_or("");
            assert_eq!(debug.contains(value), !secret, "{debug}");
        }
        let err = "Bearer sk-0123456789abcdefghij"
            .parse::<CustomHeader>()
            .expect_err("no name");
        assert!(!err.to_string().contains("sk-0123"), "{err}");
    }
}
