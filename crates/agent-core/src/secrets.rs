//! A process-wide list of secret values (API keys given on a command line or in a config)
//! that output scrubbers must hide wherever they appear.
//!
//! Providers register the keys they are built with; tool-output scrubbers (such as
//! `agent_tools::scrub_secrets`) replace every registered value. Values from sensitive
//! environment variables need no registration.

use std::sync::{OnceLock, RwLock};

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
}
