//! The scenarios of what the agent knows of the project: instructions (`AGENTS.md` and the
//! like), skills and slash commands. One workspace serves them all: a git repository with
//! an `AGENTS.md` at its root and in `sub/` (where the binary works), a `CLAUDE.md` and a
//! `ZERO.md` in `sub/`, the user's `ZERO.md` (`$XDG_CONFIG_HOME/zero/`) and zut's
//! (`root/zut/AGENTS.md`, the harness's `$ZUT_HOME`), two skills and a malformed one in
//! `~/.agents/skills`, and three commands (a project `review` shadowing the user's, a
//! `plain` one without frontmatter, Zero's `fix`) with a malformed file. Each front end
//! reads its own set in its own order ([`FrontEnd`] facts).

use serde_json::json;

use super::{failed, ok, strings, Fact, FrontEnd, Paths, Place, Prompt, Scenario};
use crate::{Reply, Script};

/// Scenario `name` of this module, if it is one (the table lists their names).
pub(super) fn build(name: &str, _paths: &Paths) -> Option<Scenario> {
    Some(match name {
        "project_instructions_reach_the_model_in_order" => instructions(),
        "project_skill_tool_loads_a_body_and_lists_names" => skills(),
        "project_slash_command_expands_where_the_protocol_has_commands" => commands(),
        "project_no_context_files_leaves_the_instructions_out" => no_context_files(),
        _ => return None,
    })
}

fn scenario(model: impl Into<Script<Reply>>, prompt: &str) -> Scenario {
    Scenario {
        name: "",
        model: model.into(),
        files: Vec::new(),
        hooks: None,
        flags: Vec::new(),
        api_key: None,
        approve: false,
        prompts: vec![Prompt {
            text: prompt.into(),
            interrupt_when: Vec::new(),
        }],
        facts: Vec::new(),
        cwd: None,
        model_id: None,
        env: Vec::new(),
    }
}

fn ws(path: &str, text: &str) -> (Place, String) {
    (Place::Ws(path.into()), text.into())
}

fn request(contains: &[&str], lacks: &[&str]) -> Fact {
    Fact::Request {
        index: 0,
        contains: strings(contains),
        lacks: strings(lacks),
    }
}

fn in_order(needles: &[&str]) -> Fact {
    Fact::InOrder(0, strings(needles))
}

/// The repository: instructions at its root and in `sub/`, the user's own files.
fn repository() -> Vec<(Place, String)> {
    vec![
        ws(".git/HEAD", "ref: refs/heads/main\n"),
        ws("AGENTS.md", "RULE-ROOT: run the tests before you answer.\n"),
        ws(
            "sub/AGENTS.md",
            "RULE-SUB: this directory is a Rust crate.\n",
        ),
        ws("sub/CLAUDE.md", "RULE-CLAUDE: keep answers short.\n"),
        ws(
            "sub/ZERO.md",
            "RULE-ZERO-MD: never read, AGENTS.md comes first.\n",
        ),
        (
            Place::Root("config/zero/ZERO.md".into()),
            "RULE-USER-ZERO: the operator likes British spelling.\n".into(),
        ),
        (
            Place::Root("zut/AGENTS.md".into()),
            "RULE-ZUT-HOME: the zut user's own rules.\n".into(),
        ),
    ]
}

fn instructions() -> Scenario {
    Scenario {
        files: repository(),
        cwd: Some("sub".into()),
        facts: vec![
            in_order(&["RULE-ROOT", "RULE-SUB"]),
            request(&[], &["RULE-ZERO-MD"]),
            Fact::Answers(0, vec!["ok"]),
            Fact::For(
                &[FrontEnd::Exec],
                vec![
                    in_order(&[
                        "## User guidelines (ZERO.md)",
                        "RULE-USER-ZERO",
                        "## Project guidelines (AGENTS.md)",
                        "RULE-ROOT",
                        "## Project guidelines (sub/AGENTS.md)",
                        "RULE-SUB",
                    ]),
                    request(
                        &["the project guidelines take precedence"],
                        &["RULE-CLAUDE", "RULE-ZUT-HOME"],
                    ),
                ],
            ),
            Fact::For(
                &[FrontEnd::Rpc],
                vec![
                    in_order(&[
                        "Project context instructions loaded from AGENTS.md files.",
                        "RULE-ZUT-HOME",
                        "RULE-ROOT",
                        "RULE-SUB",
                    ]),
                    request(&[], &["RULE-USER-ZERO", "RULE-CLAUDE"]),
                ],
            ),
            Fact::For(
                &[FrontEnd::Acp, FrontEnd::Zcode],
                vec![
                    in_order(&[
                        "## Instructions from AGENTS.md",
                        "RULE-ROOT",
                        "## Instructions from sub/AGENTS.md",
                        "RULE-SUB",
                        "## Instructions from sub/CLAUDE.md",
                        "RULE-CLAUDE",
                    ]),
                    request(&[], &["RULE-USER-ZERO", "RULE-ZUT-HOME"]),
                ],
            ),
        ],
        ..scenario([Reply::chat_text("ok")], "Do the task.")
    }
}

fn skills() -> Scenario {
    let calls = crate::sse::chat::Stream::new()
        .tool_call("s1", "skill", &json!({"name": "alpha-review"}).to_string())
        .tool_call("s2", "skill", &json!({"skill": "nope"}).to_string())
        .finish("tool_calls")
        .done();
    Scenario {
        files: vec![
            (
                Place::Home(".agents/skills/alpha-review/SKILL.md".into()),
                "---\nname: alpha-review\ndescription: Review checklist for Rust changes\n---\n\
                 SKILL-BODY-ALPHA: look for unwraps, then run clippy.\n"
                    .into(),
            ),
            (
                Place::Home(".agents/skills/beta-release/SKILL.md".into()),
                "---\ndescription: How to cut a release\n---\nSKILL-BODY-BETA\n".into(),
            ),
            (
                Place::Home(".agents/skills/broken/SKILL.md".into()),
                "---\nname: broken\ndescription: BROKEN-SKILL\n".into(),
            ),
        ],
        facts: vec![
            request(
                &[
                    "<available_skills>",
                    "- alpha-review: Review checklist for Rust changes",
                    "- beta-release: How to cut a release",
                ],
                &["SKILL-BODY-ALPHA", "SKILL-BODY-BETA", "BROKEN-SKILL"],
            ),
            ok(0, "s1", &["SKILL-BODY-ALPHA: look for unwraps"]),
            failed(
                0,
                "s2",
                &[
                    "unknown skill",
                    "nope",
                    "Available skills: alpha-review, beta-release.",
                ],
            ),
            Fact::ToolMessage(1, "s1", "SKILL-BODY-ALPHA".into()),
            Fact::Stderr(strings(&["broken/SKILL.md", "not closed"])),
            Fact::Answers(0, vec!["loaded"]),
        ],
        ..scenario(
            [Reply::sse(calls), Reply::chat_text("loaded")],
            "Review my change.",
        )
    }
}

fn commands() -> Scenario {
    Scenario {
        files: vec![
            ws(
                ".claude/commands/review.md",
                "---\ndescription: Review a file for bugs\nargument-hint: <file>\n---\n\
                 CMD-REVIEW-PROJECT: review $1 line by line.\n",
            ),
            (
                Place::Home(".claude/commands/review.md".into()),
                "---\ndescription: USER-REVIEW-SHADOWED\n---\nCMD-REVIEW-USER $ARGUMENTS\n".into(),
            ),
            (
                Place::Root("config/zero/commands/plain.md".into()),
                "CMD-PLAIN: summarise the repository.\n".into(),
            ),
            ws(
                ".zero/commands/fix.md",
                "---\ndescription: Fix the failing test\n---\nCMD-FIX $ARGUMENTS\n",
            ),
            ws(
                ".claude/commands/broken.md",
                "---\ndescription: BROKEN-COMMAND\n",
            ),
        ],
        facts: vec![
            Fact::Answers(0, vec!["reviewed"]),
            request(&[], &["CMD-REVIEW-USER"]),
            Fact::For(
                &[FrontEnd::Exec, FrontEnd::Rpc],
                vec![request(&["/review src/lib.rs"], &["CMD-REVIEW-PROJECT"])],
            ),
            Fact::For(
                &[FrontEnd::Acp, FrontEnd::Zcode],
                vec![
                    request(
                        &["CMD-REVIEW-PROJECT: review src/lib.rs line by line."],
                        &["/review src/lib.rs"],
                    ),
                    Fact::Stderr(strings(&["broken.md", "not closed"])),
                ],
            ),
        ],
        ..scenario([Reply::chat_text("reviewed")], "/review src/lib.rs")
    }
}

fn no_context_files() -> Scenario {
    Scenario {
        files: repository(),
        cwd: Some("sub".into()),
        flags: strings(&["--no-context-files"]),
        facts: vec![
            request(
                &[],
                &[
                    "RULE-ROOT",
                    "RULE-SUB",
                    "RULE-CLAUDE",
                    "RULE-USER-ZERO",
                    "RULE-ZUT-HOME",
                ],
            ),
            Fact::Answers(0, vec!["ok"]),
        ],
        ..scenario([Reply::chat_text("ok")], "Do the task.")
    }
}
