//! What the run knows of the project, read where `zero exec` reads it
//! ([`ProjectContext::zero`]): the user's `ZERO.md` and the repository's `AGENTS.md` /
//! `ZERO.md` / `.zero/AGENTS.md` files (read when the agent is built, not for
//! `--list-tools`; `--no-context-files` turns them off), and the skills of
//! `$ZERO_SKILLS_DIR` (else `$XDG_DATA_HOME/zero/skills`) and `~/.agents/skills` (their
//! frontmatter, read with the tools: the `skill` tool is listed when there is a skill).
//! What was skipped is a `[zero] WARNING:` line on stderr. A prompt `/name args` goes to
//! the model as it is, as `zero exec` sends it: commands are its TUI's.

use std::path::Path;

use agent_core::instructions::Instructions;
use agent_core::skills::Skills;
use agent_host::context_files::ProjectContext;

use super::EnvLookup;
use crate::cli::ExecOptions;

/// The run's rule: Zero's, without instructions under `--no-context-files`.
fn context(o: &ExecOptions, env: &EnvLookup) -> ProjectContext {
    let context = ProjectContext::zero(&|name| env(name));
    match o.no_context_files {
        true => context.without_instructions(),
        false => context,
    }
}

/// The skills (none: `None`), and a line for stderr per skill skipped.
pub(super) fn skills(
    o: &ExecOptions,
    workspace: &Path,
    env: &EnvLookup,
    notices: &mut Vec<String>,
) -> Option<Skills> {
    let found = context(o, env).skills(workspace);
    notices.extend(
        found
            .warnings
            .iter()
            .map(|w| format!("[zero] WARNING: {w}")),
    );
    Some(found.skills).filter(|s| !s.is_empty())
}

/// The instructions (none: `None`), and a line for stderr per file skipped.
pub(super) fn instructions(
    o: &ExecOptions,
    workspace: &Path,
    env: &EnvLookup,
    notices: &mut Vec<String>,
) -> Option<Instructions> {
    let loaded = context(o, env).instructions(workspace);
    notices.extend(
        loaded
            .warnings
            .iter()
            .map(|w| format!("[zero] WARNING: {w}")),
    );
    Some(loaded.instructions).filter(|i| !i.is_empty())
}
