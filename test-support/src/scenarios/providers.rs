//! The provider scenarios: each front end answers one prompt through each provider that
//! speaks its own wire format (Gemini, Vertex AI, Azure OpenAI, Amazon Bedrock), against
//! the mock model answering in that vendor's format.
//!
//! The harness starts every binary with its OpenAI flags; a scenario's `--provider` (and
//! the settings that provider needs) come after them and win. The harness's base URL (the
//! mock's `/v1`) serves as the vendor's endpoint, and the scenario's key as its credential
//! (Gemini's key, Azure's `api-key`, a Vertex access token, a Bedrock API key).

use super::{strings, Fact};
use crate::{bedrock, gemini, Reply};

/// What one provider scenario adds to the table's base.
pub(crate) struct ProviderRun {
    /// The flags choosing the provider.
    pub(crate) flags: Vec<String>,
    /// The credential given with `--api-key`.
    pub(crate) key: String,
    /// The mock model's replies, in the vendor's format.
    pub(crate) replies: Vec<Reply>,
    /// What must hold.
    pub(crate) facts: Vec<Fact>,
}

/// The provider scenario `name` (`provider_<id>_answers`).
pub(crate) fn run(name: &str) -> ProviderRun {
    let (flags, answer, reply, path, body): (&[&str], &str, Reply, &str, &str) = match name {
        "provider_gemini_answers" => (
            &["--provider", "gemini"],
            "Hello from Gemini.",
            gemini::text("Hello from Gemini."),
            "/models/gpt-test:streamGenerateContent?alt=sse",
            "\"generationConfig\":",
        ),
        "provider_vertex_answers" => (
            &["--provider", "vertex", "--project", "proj-e2e", "--region", "us-central1"],
            "Hello from Vertex.",
            gemini::text("Hello from Vertex."),
            "/v1/projects/proj-e2e/locations/us-central1/publishers/google/models/gpt-test:streamGenerateContent",
            "\"contents\":",
        ),
        "provider_azure_answers" => (
            &["--provider", "azure", "--api-version", "2024-10-21"],
            "Hello from Azure.",
            Reply::chat_text("Hello from Azure."),
            "/openai/deployments/gpt-test/chat/completions?api-version=2024-10-21",
            "\"messages\":",
        ),
        "provider_bedrock_answers" => (
            &["--provider", "bedrock", "--region", "us-east-1"],
            "Hello from Bedrock.",
            bedrock::text("Hello from Bedrock."),
            "/model/gpt-test/converse-stream",
            "\"inferenceConfig\":",
        ),
        other => panic!("no provider scenario {other:?}"),
    };
    ProviderRun {
        flags: strings(flags),
        key: "provider-e2e-credential-0123".into(),
        replies: vec![reply],
        facts: vec![
            Fact::Answers(0, vec![answer]),
            Fact::Usage(0, 10, 5),
            Fact::Path(0, path),
            Fact::Request {
                index: 0,
                contains: strings(&[body, "Do the task."]),
                lacks: Vec::new(),
            },
        ],
    }
}
