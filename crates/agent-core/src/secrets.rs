//! A process-wide list of secret values (API keys given on a command line or in a config)
//! that output scrubbers must hide wherever they appear.
//!
//! Providers register the keys they are built with; tool-output scrubbers (such as
//! `agent_tools::scrub_secrets`) replace every registered value. Values from sensitive
//! environment variables ([`is_sensitive_name`]) need no registration:
//! [`scrub_known_values`] replaces both wherever they appear.

use std::borrow::Cow;
use std::sync::{OnceLock, RwLock};

/// The replacement token for a removed secret.
pub const REDACTED: &str = "[REDACTED]";

/// Shortest value that is registered (shorter values such as `1` or `true` would hide
/// ordinary words).
pub const MIN_SECRET_LEN: usize = 8;

fn registry() -> &'static RwLock<Vec<String>> {
    static REGISTRY: OnceLock<RwLock<Vec<String>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// Registers `secret` (trimmed) for scrubbing; values shorter than [`MIN_SECRET_LEN`]
/// bytes are ignored.
pub fn register_secret(secret: &str) {
    let secret = secret.trim();
    if secret.len() < MIN_SECRET_LEN {
        return;
    }
    let mut values = registry().write().unwrap_or_else(|e| e.into_inner());
    if !values.iter().any(|v| v == secret) {
        values.push(secret.to_string());
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    }
}

/// The registered secrets, longest first.
pub fn registered_secrets() -> Vec<String> {
    registry()
        .read()
        .map(|v| v.clone())
        .unwrap_or_else(|e| e.into_inner().clone())
}

/// True when an assignment to `name` holds a secret: the name, lower-cased and reduced to
/// `[a-z0-9]`, is a sensitive word or ends with one (`OPENAI_API_KEY`, `githubToken`,
/// `db_password`), but not plural counters such as `promptTokens` or `max_tokens`.
pub fn is_sensitive_name(name: &str) -> bool {
    let norm: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    const EXACT: &[&str] = &[
        "auth",
        "bearer",
        "credential",
        "credentials",
        "pwd",
        "passphrase",
    ];
    const SUFFIXES: &[&str] = &[
        "apikey",
        "secret",
        "secretkey",
        "token",
        "password",
        "passwd",
        "privatekey",
        "accesskey",
        "accesskeyid",
        "clientsecret",
        "credential",
        "credentials",
        "authorization",
        "authkey",
    ];
    EXACT.contains(&norm.as_str()) || SUFFIXES.iter().any(|s| norm.ends_with(s))
}

/// Shortest environment value that is scrubbed by exact match (shorter values such as
/// `1` or `true` would redact ordinary words).
pub const MIN_ENV_SECRET_LEN: usize = 8;

/// The values of this process's environment variables with sensitive names
/// ([`is_sensitive_name`]: `OPENAI_API_KEY`, `ZUTCORE_RPC_TOKEN`, …) of at least
/// [`MIN_ENV_SECRET_LEN`] bytes, longest first.
pub fn sensitive_env_values() -> Vec<String> {
    let mut values: Vec<String> = std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, value)| is_sensitive_name(name) && value.trim().len() >= MIN_ENV_SECRET_LEN)
        .map(|(_, value)| value.trim().to_string())
        .collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    values
}

/// Replaces every registered secret ([`register_secret`]) and every sensitive environment
/// value ([`sensitive_env_values`]) in `text` with [`REDACTED`], without allocating when
/// there is none. Exact values only: pattern-based scrubbing is the tools crate's job.
pub fn scrub_known_values(text: &str) -> Cow<'_, str> {
    let mut out: Cow<'_, str> = Cow::Borrowed(text);
    for value in registered_secrets()
        .into_iter()
        .chain(sensitive_env_values())
    {
        if out.contains(value.as_str()) {
            out = Cow::Owned(out.replace(value.as_str(), REDACTED));
        }
    }
    out
}

/// Scrubs the text of an error result with [`scrub_known_values`], marking it redacted when
/// anything was removed. The loop passes every error result through this before it becomes
/// content (the model's transcript, the events, the session): a tool's error message may
/// quote a path, a command line or a server's error body. Successful output is left to the
/// tool (the built-in tools scrub their own).
pub(crate) fn scrub_error_output(output: &mut crate::tool::ToolOutput) {
    if !output.is_error {
        return;
    }
    for block in &mut output.content {
        if let crate::message::ContentBlock::Text { text } = block {
            if let Cow::Owned(clean) = scrub_known_values(text) {
                *text = clean;
                output.redacted = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_long_values_once_longest_first() {
        register_secret("  abcdefgh  ");
        register_secret("abcdefgh");
        register_secret("abcdefghijkl");
        register_secret("short");
        let values = registered_secrets();
        assert_eq!(values.iter().filter(|v| *v == "abcdefgh").count(), 1);
        assert!(!values.iter().any(|v| v == "short"));
        let long = values.iter().position(|v| v == "abcdefghijkl");
        let short = values.iter().position(|v| v == "abcdefgh");
        assert!(long < short);
    }

    #[test]
    fn sensitive_names() {
        for yes in [
            "OPENAI_API_KEY",
            "githubToken",
            "db_password",
            "client-secret",
            "pwd",
        ] {
            assert!(is_sensitive_name(yes), "{yes}");
        }
        for no in [
            "promptTokens",
            "max_tokens",
            "tokens",
            "keyboard",
            "monkey",
            "author",
        ] {
            assert!(!is_sensitive_name(no), "{no}");
        }
    }

    #[test]
    fn known_values_are_replaced_exactly() {
        let secret = "exact-known-value-0123456789";
        assert!(matches!(scrub_known_values(secret), Cow::Borrowed(_)));
        register_secret(secret);
        assert_eq!(
            scrub_known_values(&format!("open {secret}: no such file")),
            "open [REDACTED]: no such file"
        );
    }
}
