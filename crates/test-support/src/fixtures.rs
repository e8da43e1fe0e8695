//! The recorded model-server streams in `../shared/fixtures/sse` (next to the repository),
//! served as they were captured.

use std::path::PathBuf;

use crate::sse::Sse;

/// Environment variable naming another fixtures directory.
pub const ENV_FIXTURES: &str = "AGENT_SDK_SSE_FIXTURES";

/// The fixtures directory (`$AGENT_SDK_SSE_FIXTURES`, else `../shared/fixtures/sse` beside
/// the repository), when it exists.
pub fn dir() -> Option<PathBuf> {
    let dir = std::env::var_os(ENV_FIXTURES)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../../shared/fixtures/sse"
            ))
        });
    dir.is_dir().then_some(dir)
}

/// The text of fixture `name` (e.g. `llama-server-smollm2/smollm2.openai.stream.plain.sse`).
pub fn text(name: &str) -> Option<String> {
    std::fs::read_to_string(dir()?.join(name)).ok()
}

/// Fixture `name` as an event stream, frame by frame as recorded.
pub fn sse(name: &str) -> Option<Sse> {
    text(name).map(|body| Sse::raw(&body))
}
