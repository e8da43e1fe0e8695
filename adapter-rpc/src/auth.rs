//! Token authentication for `hello`.

use secrecy::{ExposeSecret, SecretString};
use subtle::ConstantTimeEq;

/// The token `hello` must carry, when one is required.
pub struct Token(SecretString);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token([REDACTED])")
    }
}

impl Token {
    /// The token from `ZUTCORE_RPC_TOKEN`; `None` when the variable is unset or empty.
    pub fn from_env() -> Option<Self> {
        std::env::var("ZUTCORE_RPC_TOKEN")
            .ok()
            .filter(|t| !t.is_empty())
            .map(|t| Self(SecretString::from(t)))
    }

    /// A token with the given secret.
    pub fn new(secret: SecretString) -> Self {
        Self(secret)
    }

    /// Compares `candidate` with the token in time independent of where they differ
    /// (`subtle`'s constant-time slice comparison; only the length is not hidden, and an
    /// attacker learns nothing useful from it without the content).
    pub fn matches(&self, candidate: &str) -> bool {
        bool::from(
            self.0
                .expose_secret()
                .as_bytes()
                .ct_eq(candidate.as_bytes()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_matches() {
        let token = Token::new(SecretString::from("s3cret"));
        assert!(token.matches("s3cret"));
        assert!(!token.matches("s3cre"));
        assert!(!token.matches("s3cret!"));
        assert!(!token.matches(""));
        assert!(!format!("{token:?}").contains("s3cret"));
    }
}
