//! What an agent knows of the project: instructions and skills given to the builder reach
//! the system prompt in order, and the model loads a skill's body with the `skill` tool.

use agent_core::event::ToolStatus;
use agent_core::instructions::{Instruction, InstructionRules, Instructions};
use agent_core::skills::{Skill, Skills};
use agent_core::{Agent, AgentEvent};
use agent_providers::scripted::{ScriptedProvider, Turn};
use futures::StreamExt;

#[tokio::test]
async fn instructions_then_skills_follow_the_system_prompt() {
    let mut instructions = Instructions::new();
    instructions.push(Instruction::new("## Team rules", "Use tabs."));
    let skills = Skills::new([Skill::new("release", "Cut a release", "Bump, tag, push.")]);
    let agent = Agent::builder(ScriptedProvider::new([Turn::new().text("ok")]))
        .system_prompt("base")
        .append_system_prompt("appended")
        .instructions(instructions)
        .skills(skills)
        .build();
    let system = agent.system_prompt().expect("system prompt");
    assert!(
        system.starts_with("base\n\nappended\n\n## Team rules\n\nUse tabs.\n\n<available_skills>"),
        "{system}"
    );
    assert!(system.contains("- release: Cut a release\n</available_skills>"));
    assert!(
        !system.contains("Bump, tag"),
        "bodies stay out of the prompt"
    );
    let names: Vec<&str> = agent.tools().iter().map(|t| t.name()).collect();
    assert_eq!(names, ["skill"]);
}

#[tokio::test]
async fn no_skills_no_tool_and_a_host_tool_named_skill_wins() {
    let agent = Agent::builder(ScriptedProvider::new([Turn::new().text("ok")]))
        .skills(Skills::default())
        .instructions(Instructions::new())
        .build();
    assert!(agent.tools().is_empty());
    assert_eq!(agent.system_prompt(), None);

    let skills = Skills::new([Skill::new("a", "", "A")]);
    let agent = Agent::builder(ScriptedProvider::new([Turn::new().text("ok")]))
        .tool(skills.tool())
        .skills(skills)
        .build();
    assert_eq!(agent.tools().len(), 1);
}

#[tokio::test]
async fn the_model_loads_a_skill_from_a_root() {
    let dir = tempfile::tempdir().expect("tempdir");
    let skill = dir.path().join("deploy/SKILL.md");
    std::fs::create_dir_all(skill.parent().expect("dir")).expect("mkdir");
    std::fs::write(
        &skill,
        "---\ndescription: Ship to production\n---\nRun the deploy script.",
    )
    .expect("write");
    let found = Skills::discover([dir.path()]);
    assert!(found.warnings.is_empty());
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "skill", r#"{"name":"deploy"}"#),
        Turn::new().tool_call("c2", "skill", r#"{"skill":"nope"}"#),
        Turn::new().text("done"),
    ]);
    let agent = Agent::builder(provider).skills(found.skills).build();
    let mut run = agent.prompt("ship it");
    let mut results = Vec::new();
    while let Some(event) = run.next().await {
        if let AgentEvent::ToolResult {
            content, status, ..
        } = event
        {
            results.push((status == ToolStatus::Error, format!("{content:?}")));
        }
    }
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(!results[0].0 && results[0].1.contains("Run the deploy script."));
    assert!(results[1].0 && results[1].1.contains("Available skills: deploy."));
}

#[test]
fn rules_load_from_files_and_the_embedder_adds_to_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("AGENTS.md"), "Project rule.").expect("write");
    let rules = InstructionRules {
        walk: agent_core::instructions::Walk::WorkingDirectory,
        ..InstructionRules::default()
    };
    let mut loaded = Instructions::load(&rules, dir.path());
    assert!(loaded.warnings.is_empty());
    loaded
        .instructions
        .push(Instruction::new("## Embedder", "Added by hand."));
    assert_eq!(
        loaded.instructions.render().as_deref(),
        Some("## Instructions from AGENTS.md\n\nProject rule.\n\n## Embedder\n\nAdded by hand.")
    );
}
