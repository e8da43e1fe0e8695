//! Vertex AI: Gemini and Anthropic models in a Google Cloud project.
//!
//! - Gemini models: `POST {root}/v1/projects/{project}/locations/{location}/publishers/google/
//!   models/{model}:streamGenerateContent?alt=sse`, with the Gemini API's request and stream
//!   formats ([`crate::gemini`]; Vertex knows no function-call ids).
//! - Anthropic models (ids starting with `claude`, as Vertex names them:
//!   `claude-sonnet-4-5@20250929`): `…/publishers/anthropic/models/{model}:streamRawPredict`
//!   with the Messages body ([`crate::anthropic`]) without `model` and with
//!   `anthropic_version: vertex-2023-10-16`; the answer is the Messages event stream.
//! - `{root}` is `https://{location}-aiplatform.googleapis.com`, or
//!   `https://aiplatform.googleapis.com` for the `global` location; a base URL replaces it
//!   (a proxy, a test server).
//! - Credentials ([`auth`]): an access token given as `--api-key` or in
//!   [`ENV_ACCESS_TOKEN`]; else the file [`ENV_CREDENTIALS`] names (or gcloud's application
//!   default credentials): a service account's key signs an RS256 JWT exchanged at its
//!   `token_uri`, gcloud's user credentials refresh theirs; tokens are cached until shortly
//!   before they expire.
//! - Project: `--project`, [`ENV_PROJECT`] (also `GCLOUD_PROJECT`, `CLOUDSDK_CORE_PROJECT` and
//!   Claude Code's `ANTHROPIC_VERTEX_PROJECT_ID`), else the credentials file's. Location:
//!   `--region`/`--location`, [`ENV_LOCATION`] (also `CLOUD_ML_REGION`), else `global`.
//! - Errors are read as Google's (`status` names, `RetryInfo`), for both publishers.

pub mod auth;
mod client;

pub use client::VertexProvider;

/// The project.
pub const ENV_PROJECT: &str = "GOOGLE_CLOUD_PROJECT";
/// The location (region).
pub const ENV_LOCATION: &str = "GOOGLE_CLOUD_LOCATION";
/// The credentials file (a service account key or gcloud's user credentials).
pub const ENV_CREDENTIALS: &str = "GOOGLE_APPLICATION_CREDENTIALS";
/// An OAuth access token used as is.
pub const ENV_ACCESS_TOKEN: &str = "GOOGLE_OAUTH_ACCESS_TOKEN";
/// The location used when none is given.
pub const DEFAULT_LOCATION: &str = "global";
/// The `anthropic_version` of Anthropic models on Vertex AI.
pub const ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// The service root for `location`.
pub fn root(location: &str) -> String {
    match location {
        "global" => "https://aiplatform.googleapis.com".to_string(),
        _ => format!("https://{location}-aiplatform.googleapis.com"),
    }
}

/// Whether `location` is written as Google's locations are (`us-central1`, `europe-west4`,
/// `global`): it becomes part of a host name.
pub fn valid_location(location: &str) -> bool {
    !location.is_empty()
        && location.len() <= 40
        && location
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !location.starts_with('-')
        && !location.ends_with('-')
}
