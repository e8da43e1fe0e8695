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

/// The two rule sets that decide whether a name (an environment variable, an assignment, a
/// JSON key) holds a secret. Both read the one table [`SENSITIVE_WORDS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRules {
    /// The tool-output scrubber's rules ([`is_sensitive_name`]): broad, for environment
    /// variables and `key=value` assignments in tool output.
    Scrubber,
    /// Zero stream-json's protocol-level key redaction (its spec §4.3): a fixed, narrower
    /// set that must not change, since clients see which keys come out as `[REDACTED]`.
    ProtocolKeys,
}

/// How one rule set matches a [`SensitiveWord`] against a normalised name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WordMatch {
    /// Not used by this rule set.
    Unused,
    /// The whole normalised name equals the word.
    Exact,
    /// The normalised name ends with the word (so also equals it).
    Suffix,
}

/// One entry of the table of sensitive words, saying how each rule set uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SensitiveWord {
    /// The word, lower-case `[a-z0-9]` only.
    pub word: &'static str,
    /// How [`NameRules::Scrubber`] uses it.
    pub scrubber: WordMatch,
    /// How [`NameRules::ProtocolKeys`] uses it.
    pub protocol_keys: WordMatch,
}

const fn word(word: &'static str, scrubber: WordMatch, protocol_keys: WordMatch) -> SensitiveWord {
    SensitiveWord {
        word,
        scrubber,
        protocol_keys,
    }
}

/// Every sensitive word of every rule set, in one table so the sets cannot drift apart
/// unnoticed: a word added for one set shows, on the same line, whether the other uses it.
pub const SENSITIVE_WORDS: &[SensitiveWord] = {
    use WordMatch::{Exact, Suffix, Unused};
    &[
        word("accesskey", Suffix, Unused),
        word("accesskeyid", Suffix, Unused),
        word("accesstoken", Unused, Suffix),
        word("apikey", Suffix, Suffix),
        word("auth", Exact, Unused),
        word("authkey", Suffix, Unused),
        word("authorization", Suffix, Exact),
        word("bearer", Exact, Exact),
        word("clientsecret", Suffix, Suffix),
        word("credential", Suffix, Exact),
        word("credentials", Suffix, Exact),
        word("idtoken", Unused, Suffix),
        word("passphrase", Exact, Unused),
        word("passwd", Suffix, Exact),
        word("password", Suffix, Exact),
        word("privatekey", Suffix, Suffix),
        word("pwd", Exact, Exact),
        word("refreshtoken", Unused, Suffix),
        word("secret", Suffix, Exact),
        word("secretkey", Suffix, Unused),
        word("token", Suffix, Exact),
    ]
};

/// True when `normalized` (already lower-cased and reduced to `[a-z0-9]` the way the rule
/// set's caller does it) is sensitive under `rules`.
pub fn is_sensitive_normalized(rules: NameRules, normalized: &str) -> bool {
    SENSITIVE_WORDS.iter().any(|entry| {
        let how = match rules {
            NameRules::Scrubber => entry.scrubber,
            NameRules::ProtocolKeys => entry.protocol_keys,
        };
        match how {
            WordMatch::Unused => false,
            WordMatch::Exact => normalized == entry.word,
            WordMatch::Suffix => normalized.ends_with(entry.word),
        }
    })
}

/// True when an assignment to `name` holds a secret ([`NameRules::Scrubber`]): the name,
/// reduced to ASCII `[a-z0-9]` and lower-cased, is a sensitive word or ends with one
/// (`OPENAI_API_KEY`, `githubToken`, `db_password`), but not plural counters such as
/// `promptTokens` or `max_tokens`.
pub fn is_sensitive_name(name: &str) -> bool {
    let norm: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    is_sensitive_normalized(NameRules::Scrubber, &norm)
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
/// quote a path, a command line or a server's error body; so may the reason and path of a
/// sandbox block. Successful output is left to the
/// tool (the built-in tools scrub their own).
pub(crate) fn scrub_error_output(output: &mut crate::tool_output::ToolOutput) {
    // A sandbox block quotes what the command did (a path, its stderr): scrubbed whatever
    // the result's status.
    if let Some(block) = &mut output.block {
        if let Cow::Owned(clean) = scrub_known_values(&block.reason) {
            block.reason = clean;
            output.redacted = true;
        }
        if let Some(Cow::Owned(clean)) = block.path.as_deref().map(scrub_known_values) {
            block.path = Some(clean);
            output.redacted = true;
        }
    }
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

    /// The rule sets as they were before they shared one table, word for word.
    fn old_rules(rules: NameRules, norm: &str) -> bool {
        let (exact, suffixes): (&[&str], &[&str]) = match rules {
            NameRules::Scrubber => (
                &[
                    "auth",
                    "bearer",
                    "credential",
                    "credentials",
                    "pwd",
                    "passphrase",
                ],
                &[
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
                ],
            ),
            NameRules::ProtocolKeys => (
                &[
                    "accesstoken",
                    "apikey",
                    "authorization",
                    "bearer",
                    "clientsecret",
                    "credential",
                    "credentials",
                    "idtoken",
                    "password",
                    "passwd",
                    "privatekey",
                    "pwd",
                    "refreshtoken",
                    "secret",
                    "token",
                ],
                &[
                    "apikey",
                    "clientsecret",
                    "accesstoken",
                    "refreshtoken",
                    "idtoken",
                    "privatekey",
                ],
            ),
        };
        exact.contains(&norm) || suffixes.iter().any(|s| norm.ends_with(s))
    }

    #[test]
    fn one_table_keeps_both_rule_sets_exactly() {
        let mut names: Vec<String> = Vec::new();
        for entry in SENSITIVE_WORDS {
            for prefix in ["", "x", "my", "openai", "tokens", "api"] {
                for suffix in ["", "s", "x", "id", "key", "token"] {
                    names.push(format!("{prefix}{}{suffix}", entry.word));
                }
            }
        }
        names.extend(
            [
                "",
                "a",
                "tokens",
                "prompttokens",
                "maxtokens",
                "key",
                "keyboard",
                "author",
                "monkey",
                "passwords",
                "secrets",
                "authkeys",
            ]
            .map(String::from),
        );
        for rules in [NameRules::Scrubber, NameRules::ProtocolKeys] {
            for name in &names {
                assert_eq!(
                    is_sensitive_normalized(rules, name),
                    old_rules(rules, name),
                    "{rules:?} {name}"
                );
            }
        }
        // Where the two sets differ, on purpose.
        assert!(is_sensitive_normalized(NameRules::Scrubber, "githubtoken"));
        assert!(!is_sensitive_normalized(
            NameRules::ProtocolKeys,
            "githubtoken"
        ));
        assert!(is_sensitive_normalized(NameRules::ProtocolKeys, "idtoken"));
        assert!(!is_sensitive_normalized(NameRules::Scrubber, "auths"));
        // The table is sorted and holds each word once.
        assert!(SENSITIVE_WORDS.windows(2).all(|w| w[0].word < w[1].word));
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
