//! The recorded model-server streams in `shared/fixtures/sse` (next to the repository, or
//! next to any directory above it, so that git worktrees find it too), served as they were
//! captured.

use std::path::PathBuf;

use crate::sse::Sse;

/// Environment variable naming another fixtures directory.
pub const ENV_FIXTURES: &str = "AGENT_SDK_SSE_FIXTURES";

/// The fixtures directory, when it exists: `$AGENT_SDK_SSE_FIXTURES`, else the first
/// `shared/fixtures/sse` found beside the repository or one of the directories above it.
pub fn dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(ENV_FIXTURES) {
        let dir = PathBuf::from(dir);
        return dir.is_dir().then_some(dir);
    }
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|a| a.join("shared/fixtures/sse"))
        .find(|d| d.is_dir())
}

/// The text of fixture `name` (e.g. `llama-server-smollm2/smollm2.openai.stream.plain.sse`).
pub fn text(name: &str) -> Option<String> {
    std::fs::read_to_string(dir()?.join(name)).ok()
}

/// Fixture `name` as an event stream, frame by frame as recorded.
pub fn sse(name: &str) -> Option<Sse> {
    text(name).map(|body| Sse::raw(&body))
}
