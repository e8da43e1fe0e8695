//! The built-in specialists: `worker`, `explorer` and `code-review`, with Zero's prompts
//! and tool sets.

use crate::manifest::{Location, Specialist, ToolCategory, ToolSelector};

const WORKER_PROMPT: &str = "You are a focused task specialist inside Zero.

Complete the assigned task precisely, stay within scope, and report:
- the concrete work performed
- the outcome
- any blockers or follow-ups";

const EXPLORER_PROMPT: &str = "You are a read-only codebase exploration specialist inside Zero.

Find relevant files, symbols, tests, and behavior quickly. Do not edit files or run shell commands. Report concise findings with paths and line references when useful.";

const CODE_REVIEW_PROMPT: &str = "You are a code review specialist inside Zero.

Review changes for correctness bugs, regressions, unsafe behavior, and missing tests. Prioritize actionable findings over style feedback.";

/// The built-in specialists, in name order.
pub fn builtins() -> Vec<Specialist> {
    use ToolCategory::*;
    let make = |name: &str, description: &str, prompt: &str, tools: &[ToolCategory]| {
        let mut spec = Specialist::new(name, description, prompt)
            .with_tools(tools.iter().map(|c| ToolSelector::Category(*c)));
        spec.location = Location::Builtin;
        spec
    };
    vec![
        make(
            "code-review",
            "Reviews code changes for correctness, regressions, and missing tests.",
            CODE_REVIEW_PROMPT,
            &[ReadOnly],
        ),
        make(
            "explorer",
            "Performs fast read-only codebase exploration without modifying files.",
            EXPLORER_PROMPT,
            &[ReadOnly],
        ),
        make(
            "worker",
            "Handles general delegated coding tasks and reports concrete outcomes.",
            WORKER_PROMPT,
            &[ReadOnly, Edit, Execute, Plan],
        ),
    ]
}
