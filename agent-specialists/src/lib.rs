//! Zero's specialists for agent-core: named sub-agents the model delegates to through the
//! `Task` tool.
//!
//! A specialist is a markdown manifest ([`manifest`]): frontmatter (`name`, `description`,
//! `extends`, `model`, `reasoningEffort`, `tools`) and a body that is its system prompt.
//! [`SpecialistRegistry::load`] gathers the built-ins (`worker`, `explorer`,
//! `code-review`), the user's (`$XDG_CONFIG_HOME/zero/specialists/*.md`) and the
//! project's (`.zero/specialists/*.md`); the project overrides the user, who overrides the
//! built-ins. [`TaskTools`] makes the tools:
//!
//! - `Task` `{name, description?, prompt, run_in_background?}` runs the specialist as a
//!   sub-agent of the calling run ([`agent_core::subagent`]): a copy of the caller's
//!   provider and model (unless the manifest names another), the manifest's prompt, and
//!   the caller's tools the manifest selects. Its answer is the call's result, headed by
//!   `task_id: …`, the child's id and session id. In the background the call returns the
//!   `task_id` at once;
//! - `TaskOutput` `{task_id, block?, timeout?}` reads a background task (or waits for it);
//! - `TaskStop` `{task_id}` stops one.
//!
//! A child never gets the `Task` tools unless the host allows nesting
//! ([`TaskTools::max_depth`]). Background tasks are bounded in number
//! ([`TaskTools::max_background`]) and stopped when the run that started them ends.
//!
//! ```no_run
//! use agent_core::Agent;
//! use agent_providers::scripted::ScriptedProvider;
//! use agent_specialists::{SpecialistRegistry, TaskTools};
//! use agent_tools::ToolSet;
//!
//! let workspace = std::env::current_dir().unwrap();
//! let registry = SpecialistRegistry::load_for_workspace(&workspace);
//! for error in registry.errors() {
//!     eprintln!("warning: skipped specialist manifest {error}");
//! }
//! let agent = Agent::builder(ScriptedProvider::demo())
//!     .tools(ToolSet::defaults(&workspace).into_tools())
//!     .tools(TaskTools::new(registry).build())
//!     .cwd(&workspace)
//!     .build();
//! # drop(agent);
//! ```

#![warn(missing_docs)]

mod builtin;
pub mod envelope;
pub mod manifest;
mod registry;
mod task;
mod wire;

pub use builtin::builtins;
pub use manifest::{
    parse_manifest, Location, ManifestError, ManifestErrorKind, Specialist, ToolCategory,
    ToolSelector, TASK_TOOL_NAMES,
};
pub use registry::{SpecialistPaths, SpecialistRegistry};
pub use task::{BackgroundTasks, TaskTools, DEFAULT_MAX_BACKGROUND};
