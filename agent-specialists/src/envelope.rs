//! What a specialist child is told: its system prompt (the invocation header and the
//! specialist's instructions) and its prompt (the task and how to report).

use crate::manifest::Specialist;

/// The child's system prompt: `base` (a host's own preamble, if any), who the child is and
/// how it should behave, then the specialist's instructions.
pub fn system_prompt(
    specialist: &Specialist,
    description: Option<&str>,
    base: Option<&str>,
) -> String {
    let mut out = String::new();
    if let Some(base) = base.map(str::trim).filter(|b| !b.is_empty()) {
        out.push_str(base);
        out.push_str("\n\n");
    }
    out.push_str("# Specialist Invocation\n\n");
    out.push_str(&format!("Specialist: {}\n", specialist.name));
    if let Some(description) = description.map(str::trim).filter(|d| !d.is_empty()) {
        out.push_str(&format!("Task description: {description}\n"));
    }
    out.push_str(
        "\nYou are a specialized sub-agent invoked by another agent. Stay strictly within the \
         assigned task: do not broaden its scope or start unrelated work. Complete it, report \
         concrete outcomes, and stop when done. Your final message is all the other agent \
         sees of your work.\n",
    );
    let instructions = specialist.system_prompt.trim();
    if !instructions.is_empty() {
        out.push_str("\n## Specialist Instructions\n\n");
        out.push_str(instructions);
        out.push('\n');
    }
    out.trim_end().to_string()
}

/// The child's prompt: the assigned task and the reporting rules.
pub fn task_prompt(prompt: &str) -> String {
    format!(
        "## Assigned Task\n\n{}\n\n## Reporting\n\n\
         - Summarize the actions taken and their outcomes.\n\
         - Mention blockers, uncertainty or follow-ups only when relevant.\n\
         - Return the requested result without extra commentary.",
        prompt.trim()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_names_the_specialist_and_carries_its_instructions() {
        let spec = Specialist::new("explorer", "Explores.", "Find things.");
        let system = system_prompt(&spec, Some(" Find sessions "), Some("Base."));
        assert!(system.starts_with("Base.\n\n# Specialist Invocation"));
        assert!(system.contains("Specialist: explorer\nTask description: Find sessions\n"));
        assert!(system.ends_with("## Specialist Instructions\n\nFind things."));
        let prompt = task_prompt("  Look at src/.  ");
        assert!(prompt.starts_with("## Assigned Task\n\nLook at src/.\n\n## Reporting"));
    }
}
