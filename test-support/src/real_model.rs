//! The real model server of `examples/tests/real_model.rs`: llama.cpp's `llama-server`
//! running SmolLM2, started by `eval "$(scripts/real-model.sh start)"` (`.ci/run` does it on
//! every run), which exports `AGENT_SDK_LLAMA_URL`. Tests never build it (about 6 minutes on
//! 2 cores): without the variable they print one `skipped: …` line and pass, unless
//! `AGENT_SDK_REAL_MODEL=required` (`.ci/run`), when they fail.

use crate::component::{Skip, REAL_MODEL_REQUIRED};

/// The variable holding the server's base URL (no `/v1`).
pub const URL_ENV: &str = "AGENT_SDK_LLAMA_URL";

/// The server's base URL (no trailing `/`), or why there is none.
pub fn server() -> Result<String, Skip> {
    match std::env::var(URL_ENV) {
        Ok(url) if !url.trim().is_empty() => Ok(url.trim().trim_end_matches('/').to_string()),
        _ => Err(Skip::new(
            REAL_MODEL_REQUIRED,
            "the real model (llama-server)",
            format!("{URL_ENV} is not set"),
            "start one with `eval \"$(scripts/real-model.sh start)\"` (builds llama.cpp once, \
             about 6 minutes), or run .ci/run",
        )),
    }
}

/// [`server`], or `None` after printing the one `skipped: …` line (the test returns).
///
/// # Panics
///
/// When there is no server and `AGENT_SDK_REAL_MODEL=required`: the test fails.
pub fn server_url() -> Option<String> {
    server().map_err(|skip| skip.report()).ok()
}
