//! The provider flags every binary accepts — `--provider openai|openai-responses|anthropic|
//! gemini|azure|azure-responses|vertex|bedrock|scripted --model M --base-url URL --api-key KEY
//! --script FILE --header 'N: V' --api-version V --project P --region R` — as
//! one clap [`Args`] struct to flatten, and the clap-free function that turns them into a
//! provider; and the
//! capability flags ([`CapabilityArgs`]: `--hooks`, `--mcp-config`, `--sandbox`, …), which
//! [`crate::capabilities`] loads; and where sessions are kept ([`SessionStoreArgs`]:
//! `--session-store files|postgres://…`).
//!
//! Precedence, per setting: the flag; else the binary's own environment variable for it, if
//! it has one ([`ProviderEnv`]: `ZERO_PROVIDER` for Zero, `ADAPTER_ACP_*` for adapter-acp);
//! else, for the base URL and key, the provider's standard variable (`OPENAI_BASE_URL`,
//! `OPENAI_API_KEY`, `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`, … resolved by
//! [`agent_providers::build_provider`]); else the default (`scripted`, the offline demo;
//! the provider's default model; the vendor's URL). A blank environment value counts as
//! unset. A key given on the command line is registered with [`agent_core::secrets`] at
//! once, so tool output hides it.
//!
//! ```
//! use agent_host::cli::{ProviderArgs, ProviderEnv};
//! use clap::Parser;
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     provider: ProviderArgs,
//! }
//!
//! let cli = Cli::parse_from(["bin", "--provider", "scripted"]);
//! let provider = cli.provider.build(&ProviderEnv::NONE).expect("the demo always builds");
//! assert_eq!(provider.id(), "scripted");
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use agent_core::Provider;
use agent_providers::config::ParseProviderIdError;
use agent_providers::headers::InvalidHeader;
use agent_providers::{ConfigError, CustomHeader, ProviderConfig, ProviderId};
use clap::Args;
use secrecy::{ExposeSecret, SecretString};

/// The provider used when neither the flag nor the binary's variable names one.
pub const DEFAULT_PROVIDER: ProviderId = ProviderId::Scripted;

/// The provider flags. Flatten into a binary's clap struct (`#[command(flatten)]`); a
/// binary that parses its arguments by hand fills the fields itself.
#[derive(Debug, Clone, Default, Args)]
pub struct ProviderArgs {
    /// Provider: openai, openai-responses, anthropic, gemini, azure, azure-responses, vertex,
    /// bedrock or scripted (default: scripted, the offline demo). Given twice, the last
    /// wins (as in Zero's own parser).
    #[arg(long, value_name = "ID", overrides_with = "provider")]
    pub provider: Option<String>,
    /// Model id (default: the provider's default model).
    #[arg(long)]
    pub model: Option<String>,
    /// Base URL of the provider's API (default: $OPENAI_BASE_URL or $ANTHROPIC_BASE_URL,
    /// else the vendor's).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// API key (default: $OPENAI_API_KEY or $ANTHROPIC_API_KEY); never printed.
    #[arg(long, value_name = "KEY", value_parser = parse_secret)]
    pub api_key: Option<SecretString>,
    /// Script file for --provider scripted (default: the built-in demo).
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Extra HTTP header sent with every request to the provider, as `'Name: value'`
    /// (repeatable); secret-looking values are hidden like keys.
    #[arg(long = "header", value_name = "NAME: VALUE", value_parser = parse_header)]
    pub headers: Vec<CustomHeader>,
    /// Never send the session id as OpenAI's `prompt_cache_key` (for servers that reject
    /// the field; by default Responses sends it, Chat Completions to OpenAI's own API only).
    #[arg(long)]
    pub no_prompt_cache_key: bool,
    /// Azure OpenAI API version (default: $OPENAI_API_VERSION, $AZURE_OPENAI_API_VERSION,
    /// else 2025-04-01-preview).
    #[arg(long, value_name = "VERSION")]
    pub api_version: Option<String>,
    /// Google Cloud project of --provider vertex (default: $GOOGLE_CLOUD_PROJECT, else the
    /// service account's).
    #[arg(long, value_name = "PROJECT")]
    pub project: Option<String>,
    /// Region: the location of --provider vertex (default: $GOOGLE_CLOUD_LOCATION, else
    /// global), the AWS region of --provider bedrock (default: $AWS_REGION, the profile's).
    #[arg(long, visible_alias = "location", value_name = "REGION")]
    pub region: Option<String>,
}

fn parse_header(value: &str) -> Result<CustomHeader, InvalidHeader> {
    value.parse()
}

/// The capability flags every binary accepts besides the provider flags (see
/// [`crate::capabilities`]): hooks, MCP servers, the OS sandbox, the context budget and the
/// language servers.
/// Flatten into a binary's clap struct, or fill the pub fields by hand (stream-json's own
/// parser). Values are checked by [`crate::capabilities::Capabilities::load`], which names
/// the flag of a bad one.
#[derive(Debug, Clone, Default, Args)]
pub struct CapabilityArgs {
    /// Command hooks file: Zero's `hooks.json` or Claude Code's `hooks` settings (detected
    /// by shape).
    #[arg(long, value_name = "FILE")]
    pub hooks: Option<PathBuf>,
    /// MCP servers file in Claude Code's and Cursor's format: `{"mcpServers": {NAME:
    /// {"command", "args", "env", "cwd"} | {"type": "http", "url", "headers"}}}`.
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
    /// OS sandbox for commands: read-only, workspace-write or off (also
    /// danger-full-access). Default: workspace-write.
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<String>,
    /// Network access of sandboxed commands: allow or deny (default: deny unless the
    /// sandbox is off).
    #[arg(long, value_name = "allow|deny")]
    pub sandbox_network: Option<String>,
    /// Extra writable directory for sandboxed commands (repeatable; relative to the
    /// workspace).
    #[arg(long = "add-dir", value_name = "DIR")]
    pub add_dir: Vec<PathBuf>,
    /// When the kernel cannot enforce the sandbox: refuse, prompt or allow (default:
    /// prompt).
    #[arg(long, value_name = "refuse|prompt|allow")]
    pub sandbox_fallback: Option<String>,
    /// Context window in tokens (200000, 200k, 1m), instead of the model catalogue's.
    #[arg(long, value_name = "N")]
    pub context_window: Option<String>,
    /// Compact automatically at this share of the context window (85, 85%) or never
    /// (off). Default: 85%.
    #[arg(long, value_name = "PERCENT|off")]
    pub auto_compact: Option<String>,
    /// Language servers file (JSON, merged onto the built-in table of rust-analyzer,
    /// pyright, typescript-language-server, gopls, clangd and bash-language-server):
    /// `{"servers": {ID: {"command", "args", "fileTypes", …}}, …}`.
    #[arg(long, value_name = "FILE")]
    pub lsp_config: Option<PathBuf>,
    /// Do not append a file's errors from its language server to the result of an edit.
    #[arg(long)]
    pub no_lsp_diagnostics: bool,
    /// Settings file in Claude Code's format: its `permissions.allow`, `ask` and `deny` rule
    /// lists (`Bash(git status:*)`, `Read(./src/**)`, `WebFetch(domain:example.com)`,
    /// `mcp__server__tool`) decide tool calls before the permission mode (see
    /// [`crate::guards`]).
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// The most one prompt may cost, in USD: the run ends before a model call once its
    /// priced cost reaches it (a model without prices ends it too).
    #[arg(long, value_name = "USD")]
    pub max_budget_usd: Option<String>,
    /// Model a call is made with once more when the model is overloaded, rate-limited after
    /// the retries, or the server fails (5xx).
    #[arg(long, value_name = "ID")]
    pub fallback_model: Option<String>,
}

/// The environment variable [`SessionStoreArgs`] falls back on.
pub const SESSION_STORE_ENV: &str = "AGENT_SESSION_STORE";

/// Where a multi-session front end keeps its sessions: `--session-store files|postgres://…`
/// (else `$AGENT_SESSION_STORE`, else `files`). Flatten into a binary's clap struct. The
/// value may be a URL with a password: it is kept as a secret and never shown in Debug
/// output. agent-store-postgres's `StoreSpec::from_args` parses it and opens the store.
#[derive(Debug, Clone, Default, Args)]
pub struct SessionStoreArgs {
    /// Where sessions are kept: `files` (the data directory, the default) or a PostgreSQL
    /// URL (`postgres://user:password@host/db`) shared by a fleet of processes (default:
    /// $AGENT_SESSION_STORE, else files).
    #[arg(long = "session-store", value_name = "files|URL", value_parser = parse_secret)]
    pub session_store: Option<SecretString>,
}

impl SessionStoreArgs {
    /// The flag's value, else the non-blank value of [`SESSION_STORE_ENV`] looked up through
    /// `lookup`; `None` means the files.
    pub fn value(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Option<SecretString> {
        self.session_store.clone().or_else(|| {
            lookup(SESSION_STORE_ENV)
                .filter(|v| !v.trim().is_empty())
                .map(SecretString::from)
        })
    }

    /// [`value`](Self::value) with the process environment.
    pub fn value_from_env(&self) -> Option<SecretString> {
        self.value(&|name| std::env::var(name).ok())
    }
}

fn parse_secret(value: &str) -> Result<SecretString, std::convert::Infallible> {
    Ok(SecretString::from(value))
}

/// The environment variables a binary reads for the provider settings its command line
/// leaves out (besides the providers' standard key and URL variables, which every binary
/// reads).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProviderEnv {
    /// Variable naming the provider (e.g. `ZERO_PROVIDER`).
    pub provider: Option<&'static str>,
    /// Variable naming the model.
    pub model: Option<&'static str>,
    /// Variable holding the base URL.
    pub base_url: Option<&'static str>,
    /// Variable holding the script file.
    pub script: Option<&'static str>,
}

impl ProviderEnv {
    /// No variables of the binary's own (zut RPC).
    pub const NONE: ProviderEnv = ProviderEnv {
        provider: None,
        model: None,
        base_url: None,
        script: None,
    };
}

/// The provider settings could not be turned into a provider.
#[derive(Debug, thiserror::Error)]
pub enum ProviderArgsError {
    /// `--provider` (or the binary's variable) names no known provider.
    #[error(transparent)]
    UnknownProvider(#[from] ParseProviderIdError),
    /// The provider could not be built (a missing key, a bad base URL or script, …).
    #[error(transparent)]
    Provider(#[from] ConfigError),
}

impl ProviderArgs {
    /// The provider configuration these flags describe, with the binary's variables `env`
    /// looked up through `lookup` (tests pass a map; [`config_from_env`](Self::config_from_env)
    /// passes the process environment). Registers a key given here for scrubbing.
    pub fn config(
        &self,
        env: &ProviderEnv,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ProviderConfig, ProviderArgsError> {
        let from_env = |name: Option<&'static str>| {
            name.and_then(lookup)
                .filter(|value| !value.trim().is_empty())
        };
        let id = match self.provider.clone().or_else(|| from_env(env.provider)) {
            Some(id) => id.trim().parse()?,
            None => DEFAULT_PROVIDER,
        };
        if let Some(key) = &self.api_key {
            agent_core::secrets::register_secret(key.expose_secret());
        }
        let mut config = ProviderConfig::new(id);
        config.model = self.model.clone().or_else(|| from_env(env.model));
        config.base_url = self.base_url.clone().or_else(|| from_env(env.base_url));
        config.api_key = self.api_key.clone();
        config.script = self
            .script
            .clone()
            .or_else(|| from_env(env.script).map(PathBuf::from));
        agent_providers::headers::register_secrets(&self.headers);
        config.headers = self.headers.clone();
        config.prompt_cache_key = self.no_prompt_cache_key.then_some(false);
        config.api_version = self.api_version.clone();
        config.project = self.project.clone();
        config.region = self.region.clone();
        Ok(config)
    }

    /// [`config`](Self::config) with the process environment.
    pub fn config_from_env(&self, env: &ProviderEnv) -> Result<ProviderConfig, ProviderArgsError> {
        self.config(env, &|name| std::env::var(name).ok())
    }

    /// The provider these flags describe, with the process environment.
    pub fn build(&self, env: &ProviderEnv) -> Result<Arc<dyn Provider>, ProviderArgsError> {
        build_provider(&self.config_from_env(env)?)
    }
}

/// Builds the provider `config` describes ([`agent_providers::build_provider`]: the
/// standard key and URL variables, the `AGENT_SDK_*` HTTP settings), registering its key
/// for scrubbing.
pub fn build_provider(config: &ProviderConfig) -> Result<Arc<dyn Provider>, ProviderArgsError> {
    if let Some(key) = &config.api_key {
        agent_core::secrets::register_secret(key.expose_secret());
    }
    Ok(agent_providers::build_provider(config)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::collections::HashMap;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        provider: ProviderArgs,
    }

    fn parse(args: &[&str]) -> ProviderArgs {
        Cli::try_parse_from(std::iter::once("bin").chain(args.iter().copied()))
            .expect("parses")
            .provider
    }

    const ENV: ProviderEnv = ProviderEnv {
        provider: Some("X_PROVIDER"),
        model: Some("X_MODEL"),
        base_url: Some("X_BASE_URL"),
        script: Some("X_SCRIPT"),
    };

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn flags_beat_the_binarys_variables_which_beat_the_defaults() {
        let args = parse(&[
            "--provider",
            " openai ",
            "--model",
            "m1",
            "--base-url",
            "http://127.0.0.1:1/v1",
            "--api-key",
            "sk-flag-0123456789",
            "--script",
            "s.json",
        ]);
        let env = lookup(&[
            ("X_PROVIDER", "anthropic"),
            ("X_MODEL", "m2"),
            ("X_BASE_URL", "http://x"),
            ("X_SCRIPT", "t.json"),
        ]);
        let config = args.config(&ENV, &env).expect("config");
        assert_eq!(config.id, ProviderId::OpenAi);
        assert_eq!(config.model.as_deref(), Some("m1"));
        assert_eq!(config.base_url.as_deref(), Some("http://127.0.0.1:1/v1"));
        assert_eq!(
            config
                .api_key
                .as_ref()
                .map(|k| k.expose_secret().to_string()),
            Some("sk-flag-0123456789".into())
        );
        assert_eq!(config.script, Some(PathBuf::from("s.json")));
        assert!(agent_core::secrets::registered_secrets()
            .iter()
            .any(|s| s == "sk-flag-0123456789"));

        let config = parse(&[]).config(&ENV, &env).expect("config");
        assert_eq!(config.id, ProviderId::Anthropic);
        assert_eq!(config.model.as_deref(), Some("m2"));
        assert_eq!(config.base_url.as_deref(), Some("http://x"));
        assert!(config.api_key.is_none());
        assert_eq!(config.script, Some(PathBuf::from("t.json")));

        // Blank variables are unset; no variables at all give the defaults.
        let blank = lookup(&[("X_PROVIDER", " "), ("X_MODEL", "")]);
        let config = parse(&[]).config(&ENV, &blank).expect("config");
        assert_eq!(config.id, DEFAULT_PROVIDER);
        assert!(config.model.is_none());
        let config = parse(&[]).config(&ProviderEnv::NONE, &env).expect("config");
        assert_eq!(config.id, DEFAULT_PROVIDER);
        assert!(config.model.is_none() && config.base_url.is_none() && config.script.is_none());
    }

    #[test]
    fn errors_keep_the_providers_words() {
        let err = parse(&["--provider", "nope"])
            .config(&ProviderEnv::NONE, &lookup(&[]))
            .expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "unknown provider \"nope\": expected openai, openai-responses, anthropic, gemini, azure, \
             azure-responses, vertex, bedrock or scripted"
        );
        let err = parse(&[
            "--provider",
            "scripted",
            "--script",
            "/nonexistent/script.json",
        ])
        .build(&ProviderEnv::NONE)
        .err()
        .expect("missing script");
        assert!(matches!(err, ProviderArgsError::Provider(_)), "{err}");
    }

    #[derive(Parser)]
    struct StoreCli {
        #[command(flatten)]
        store: SessionStoreArgs,
    }

    #[test]
    fn the_session_store_flag_beats_the_variable_and_its_url_stays_hidden() {
        let cli = StoreCli::try_parse_from([
            "bin",
            "--session-store",
            "postgres://u:pw-hidden-0123@db/x",
        ])
        .expect("parses");
        assert!(!format!("{:?}", cli.store).contains("pw-hidden-0123"));
        let env = lookup(&[(SESSION_STORE_ENV, "files")]);
        let value = cli.store.value(&env).expect("the flag");
        assert_eq!(value.expose_secret(), "postgres://u:pw-hidden-0123@db/x");
        let none = StoreCli::try_parse_from(["bin"]).expect("parses").store;
        assert_eq!(
            none.value(&env).map(|v| v.expose_secret().to_string()),
            Some("files".to_string())
        );
        assert!(none.value(&lookup(&[(SESSION_STORE_ENV, " ")])).is_none());
        assert!(none.value(&lookup(&[])).is_none());
    }

    #[test]
    fn headers_repeat_and_the_cache_key_can_be_turned_off() {
        let args = parse(&[
            "--header",
            "X-Tenant: acme",
            "--header",
            "X-Proxy-Key: pk-hidden-0123456789",
            "--no-prompt-cache-key",
        ]);
        assert!(!format!("{args:?}").contains("pk-hidden-0123456789"));
        let config = args
            .config(&ProviderEnv::NONE, &lookup(&[]))
            .expect("config");
        let names: Vec<&str> = config.headers.iter().map(|h| h.name()).collect();
        assert_eq!(names, ["x-tenant", "x-proxy-key"]);
        assert_eq!(config.prompt_cache_key, Some(false));
        let config = parse(&[
            "--api-version",
            "2024-10-21",
            "--project",
            "p1",
            "--location",
            "eu",
        ])
        .config(&ProviderEnv::NONE, &lookup(&[]))
        .expect("config");
        assert_eq!(
            (
                config.api_version.as_deref(),
                config.project.as_deref(),
                config.region.as_deref()
            ),
            (Some("2024-10-21"), Some("p1"), Some("eu"))
        );
        assert!(agent_core::secrets::registered_secrets()
            .iter()
            .any(|s| s == "pk-hidden-0123456789"));
        assert_eq!(
            parse(&[])
                .config(&ENV, &lookup(&[]))
                .expect("config")
                .prompt_cache_key,
            None
        );
        let err = Cli::try_parse_from(["bin", "--header", "no colon here"])
            .err()
            .expect("a bad header");
        assert!(err.to_string().contains("expected 'Name: value'"), "{err}");
    }

    #[test]
    fn the_key_never_shows_in_debug_output() {
        let args = parse(&["--api-key", "sk-secret-debug-0123"]);
        assert!(!format!("{args:?}").contains("sk-secret-debug-0123"));
    }
}
