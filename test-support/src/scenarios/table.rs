//! The scenario table: hooks, the sandbox, sub-agents, the context budget, a key kept
//! out of tool errors, and the language servers (in `lsp`).

use serde_json::{json, Value};

use super::{failed, ok, strings, Fact, FileIs, Paths, Place, Prompt, Scenario};
use crate::{sse, Reply, Request, Script};

/// Every scenario's name, in the table's order.
pub const NAMES: &[&str] = &[
    "hook_pre_tool_use_vetoes_bash",
    "hook_zero_after_tool_output_reaches_the_model",
    "hook_post_tool_use_context_reaches_the_model",
    "hook_post_tool_use_feedback_reaches_the_model",
    "hook_user_prompt_submit_blocks_one_prompt",
    "hook_stop_forces_one_continuation",
    "hook_that_hangs_or_is_missing_fails_open",
    "hook_zero_missing_command_fails_closed_before_a_tool",
    "hooks_file_that_does_not_exist_refuses_to_start",
    "project_hooks_file_has_no_effect",
    "session_hooks_run_at_start_and_end",
    "sandbox_refuses_a_write_outside_the_workspace",
    "sandbox_off_allows_it",
    "sandbox_add_dir_makes_a_directory_writable",
    "sandbox_bad_value_refuses_to_start",
    "task_runs_a_child_and_shows_its_progress",
    "task_explorer_is_refused_a_write_and_usage_adds_up",
    "task_child_asks_permission_in_its_own_name",
    "task_child_that_fails_is_the_task_error",
    "task_interrupted_mid_child_bash_leaves_no_process",
    "task_two_in_the_background_read_with_task_output",
    "task_project_manifest_overrides_the_builtin",
    "context_auto_compaction",
    "context_auto_compact_off_never_compacts",
    "provider_gemini_answers",
    "provider_vertex_answers",
    "provider_azure_answers",
    "provider_bedrock_answers",
    "api_key_redacted_from_a_tool_error",
    "project_instructions_reach_the_model_in_order",
    "project_skill_tool_loads_a_body_and_lists_names",
    "project_slash_command_expands_where_the_protocol_has_commands",
    "project_no_context_files_leaves_the_instructions_out",
    "lsp_edit_reports_the_error_and_the_fix_clears_it",
    "tools_answer_to_the_sdk_names_in_every_catalogue",
    "rules_from_settings_allow_and_deny_each_call",
    "rules_settings_with_a_bad_rule_refuse_to_start",
    "budget_cap_ends_the_run_after_the_first_call",
    "fallback_model_answers_when_the_model_is_overloaded",
];

/// The key of [`NAMES`]' `api_key_redacted_from_a_tool_error`: shaped like no key a
/// protocol's own redaction knows, so only the registered secret can hide it.
pub const SECRET: &str = "zq9-plural-zalpha-4711-capability";

/// Scenario `name` for one run in `paths`; panics for a name not in [`NAMES`].
pub fn build(name: &str, p: &Paths) -> Scenario {
    let s = match name {
        "hook_pre_tool_use_vetoes_bash" => hook_veto(),
        "hook_zero_after_tool_output_reaches_the_model" => hook_after(
            json!({"enabled": true, "hooks": [{"id": "fmt", "event": "afterTool",
                "matcher": "read_file", "command": "echo", "args": ["formatted 2 files"]}]}),
            "Hook output:\nformatted 2 files",
        ),
        "hook_post_tool_use_context_reaches_the_model" => {
            let output = json!({"hookSpecificOutput": {"hookEventName": "PostToolUse",
                "additionalContext": "checked by the audit hook"}});
            hook_after(
                claude(
                    "PostToolUse",
                    Some("Read|read_file"),
                    &format!("echo '{output}'"),
                ),
                "checked by the audit hook",
            )
        }
        "hook_post_tool_use_feedback_reaches_the_model" => hook_after(
            claude(
                "PostToolUse",
                Some("read_file"),
                "echo 'AFTER-HOOK-NOTE' >&2; exit 2",
            ),
            "AFTER-HOOK-NOTE",
        ),
        "hook_user_prompt_submit_blocks_one_prompt" => Scenario {
            hooks: Some(claude(
                "UserPromptSubmit",
                None,
                "if grep -q forbidden; then echo 'not that topic' >&2; exit 2; fi",
            )),
            prompts: vec![prompt("do the forbidden thing"), prompt("something else")],
            facts: vec![
                Fact::Blocked(0),
                Fact::RequestsBy(0, 0),
                Fact::Answers(1, vec!["fine"]),
                Fact::Requests(1),
            ],
            ..base([Reply::chat_text("fine")])
        },
        "hook_stop_forces_one_continuation" => Scenario {
            hooks: Some(claude(
                "Stop",
                None,
                "if grep -q '\"stop_hook_active\":true'; then exit 0; fi; \
                 echo 'run the tests first' >&2; exit 2",
            )),
            facts: vec![
                Fact::Requests(2),
                request(1, &["run the tests first"], &[]),
                Fact::Answers(0, vec!["first answer", "tests pass"]),
            ],
            ..base([
                Reply::chat_text("first answer"),
                Reply::chat_text("tests pass"),
            ])
        },
        "hook_that_hangs_or_is_missing_fails_open" => hook_hangs(p),
        "hook_zero_missing_command_fails_closed_before_a_tool" => Scenario {
            hooks: Some(json!({"enabled": true, "hooks": [
                {"id": "gone-before", "event": "beforeTool", "matcher": "bash",
                 "command": "/nonexistent/zero-hook"},
                {"id": "gone-after", "event": "afterTool", "matcher": "grep",
                 "command": "/nonexistent/zero-hook"}
            ]})),
            facts: vec![
                ok(0, "l1", &[]),
                failed(0, "b1", &["\"gone-before\""]),
                file(Place::Ws("marker".into()), FileIs::Absent),
                Fact::Answers(0, vec!["done"]),
            ],
            ..base([
                calls(
                    &[
                        // grep: a tool of every front end's catalogue (zut has no list).
                        (
                            "l1",
                            "grep",
                            json!({"pattern": "no-such-text", "path": "."}),
                        ),
                        ("b1", "bash", bash("touch marker")),
                    ],
                    10,
                    5,
                ),
                Reply::chat_text("done"),
            ])
        },
        "hooks_file_that_does_not_exist_refuses_to_start" => Scenario {
            flags: vec![
                "--hooks".into(),
                p.root.join("missing-hooks.json").display().to_string(),
            ],
            prompts: Vec::new(),
            facts: vec![Fact::Refused(strings(&["missing-hooks.json"]))],
            ..base([Reply::chat_text("never")])
        },
        "project_hooks_file_has_no_effect" => Scenario {
            files: vec![(
                Place::Ws(".zero/hooks.json".into()),
                json!({"enabled": true, "hooks": [
                    {"id": "veto", "event": "beforeTool", "matcher": "bash",
                     "command": "sh", "args": ["-c", "touch vetoed; echo project veto; exit 1"]},
                    {"id": "start", "event": "sessionStart", "command": "touch",
                     "args": ["started"]}
                ]})
                .to_string(),
            )],
            facts: vec![
                ok(0, "b1", &[]),
                file(Place::Ws("marker".into()), FileIs::Present),
                file(Place::Ws("vetoed".into()), FileIs::Absent),
                file(Place::Ws("started".into()), FileIs::Absent),
            ],
            ..base([
                Reply::chat_call("b1", "bash", bash("touch marker")),
                Reply::chat_text("ok"),
            ])
        },
        "session_hooks_run_at_start_and_end" => session_hooks(p),
        "provider_gemini_answers"
        | "provider_vertex_answers"
        | "provider_azure_answers"
        | "provider_bedrock_answers" => {
            let run = super::providers::run(name);
            Scenario {
                flags: run.flags,
                api_key: Some(run.key),
                facts: run.facts,
                ..base(run.replies)
            }
        }
        "sandbox_refuses_a_write_outside_the_workspace" => Scenario {
            flags: strings(&["--sandbox", "workspace-write"]),
            facts: vec![
                Fact::Block(0, "w1", "sandbox"),
                file(Place::Home("confined".into()), FileIs::Absent),
                Fact::Answers(0, vec!["blocked"]),
            ],
            ..base([write_home("confined"), Reply::chat_text("blocked")])
        },
        "sandbox_off_allows_it" => Scenario {
            flags: strings(&["--sandbox", "off"]),
            facts: vec![
                ok(0, "w1", &[]),
                Fact::Unblocked(0, "w1"),
                file(Place::Home("free".into()), FileIs::Text("hi\n".into())),
                Fact::Answers(0, vec!["written"]),
            ],
            ..base([write_home("free"), Reply::chat_text("written")])
        },
        "sandbox_add_dir_makes_a_directory_writable" => {
            let shared = p.home.join("shared");
            Scenario {
                files: vec![(Place::Home("shared/.keep".into()), String::new())],
                flags: vec![
                    "--sandbox".into(),
                    "workspace-write".into(),
                    "--add-dir".into(),
                    shared.display().to_string(),
                ],
                facts: vec![
                    ok(0, "b1", &[]),
                    file(
                        Place::Home("shared/note.txt".into()),
                        FileIs::Text("shared\n".into()),
                    ),
                ],
                ..base([
                    Reply::chat_call(
                        "b1",
                        "bash",
                        bash(&format!("echo shared > {}/note.txt", shared.display())),
                    ),
                    Reply::chat_text("ok"),
                ])
            }
        }
        "sandbox_bad_value_refuses_to_start" => Scenario {
            flags: strings(&["--sandbox", "sometimes"]),
            prompts: Vec::new(),
            facts: vec![Fact::Refused(strings(&["sometimes"]))],
            ..base([Reply::chat_text("never")])
        },
        "task_runs_a_child_and_shows_its_progress" => task_progress(),
        "task_explorer_is_refused_a_write_and_usage_adds_up" => task_refused_write(),
        "task_child_asks_permission_in_its_own_name" => task_permission(),
        "task_child_that_fails_is_the_task_error" => Scenario {
            facts: vec![
                failed(0, "t1", &["the child's request is refused"]),
                Fact::Answers(0, vec!["the explorer failed, moving on"]),
                Fact::Requests(3),
                Fact::ToolMessage(2, "t1", "specialist explorer failed".into()),
            ],
            ..base(
                Script::new()
                    .route(
                        |r| r.specialist_call("explorer"),
                        [Reply::error(
                            400,
                            "invalid_request_error",
                            "the child's request is refused",
                        )],
                    )
                    .fallback([
                        Reply::chat_call("t1", "Task", task("explorer", "look", "Look.")),
                        Reply::chat_text("the explorer failed, moving on"),
                    ]),
            )
        },
        "task_interrupted_mid_child_bash_leaves_no_process" => task_interrupted(p),
        "task_two_in_the_background_read_with_task_output" => Scenario {
            facts: vec![
                ok(0, "t1", &["Task launched in background."]),
                ok(0, "t2", &["Task launched in background."]),
                ok(0, "o1", &["status: completed", "alpha result"]),
                ok(0, "o2", &["status: completed", "beta result"]),
                Fact::Answers(0, vec!["both read"]),
                Fact::Requests(5),
            ],
            ..base(two_background_explorers())
        },
        "task_project_manifest_overrides_the_builtin" => task_manifest(),
        "context_auto_compaction" => Scenario {
            flags: strings(&["--context-window", "1000", "--auto-compact", "50"]),
            facts: vec![
                Fact::Requests(5),
                request(4, &["SUMMARY: the workspace was listed three times."], &[]),
                Fact::Answers(0, vec!["done"]),
            ],
            ..base([
                listing("l1", 100),
                listing("l2", 120),
                listing("l3", 900),
                answer("SUMMARY: the workspace was listed three times.", 100, 10),
                answer("done", 60, 5),
            ])
        },
        "context_auto_compact_off_never_compacts" => Scenario {
            flags: strings(&["--context-window", "1000", "--auto-compact", "off"]),
            facts: vec![Fact::Requests(3), Fact::Answers(0, vec!["finished"])],
            ..base([
                listing("l1", 100),
                listing("l2", 990),
                answer("finished", 990, 5),
            ])
        },
        "api_key_redacted_from_a_tool_error" => Scenario {
            api_key: Some(SECRET.into()),
            facts: vec![
                Fact::Tool {
                    prompt: 0,
                    id: "r1",
                    ok: false,
                    contains: strings(&["[REDACTED]"]),
                    lacks: strings(&[SECRET]),
                },
                Fact::ToolMessage(1, "r1", "[REDACTED]".into()),
                Fact::NotInStderr(SECRET.into()),
            ],
            ..base([
                Reply::chat_call("r1", "read_file", json!({ "path": SECRET })),
                Reply::chat_text("no such file"),
            ])
        },
        "lsp_edit_reports_the_error_and_the_fix_clears_it" => super::lsp::edit_reports_the_error(p),
        "tools_answer_to_the_sdk_names_in_every_catalogue" => sdk_names_everywhere(),
        other => super::project::build(other, p)
            .or_else(|| super::guards::build(other, p))
            .unwrap_or_else(|| panic!("no scenario {other:?} in the table")),
    };
    Scenario {
        name: named(name),
        ..s
    }
}

fn named(name: &str) -> &'static str {
    NAMES
        .iter()
        .find(|n| **n == name)
        .copied()
        .unwrap_or("unknown")
}

/// [`base`] for the scenarios of the other modules.
pub(super) fn base_of(model: impl Into<Script<Reply>>) -> Scenario {
    base(model)
}

/// A scenario of one prompt on `model`, no files, hooks or flags, no facts yet.
fn base(model: impl Into<Script<Reply>>) -> Scenario {
    Scenario {
        name: "",
        model: model.into(),
        files: Vec::new(),
        hooks: None,
        flags: Vec::new(),
        api_key: None,
        approve: false,
        prompts: vec![prompt("Do the task.")],
        facts: Vec::new(),
        cwd: None,
        model_id: None,
        env: Vec::new(),
    }
}

fn prompt(text: &str) -> Prompt {
    Prompt {
        text: text.into(),
        interrupt_when: Vec::new(),
    }
}

fn file(place: Place, is: FileIs) -> Fact {
    Fact::File(place, is)
}

fn request(index: usize, contains: &[&str], lacks: &[&str]) -> Fact {
    Fact::Request {
        index,
        contains: strings(contains),
        lacks: strings(lacks),
    }
}

/// Claude Code settings with one command hook on `event`.
fn claude(event: &str, matcher: Option<&str>, command: &str) -> Value {
    let mut entry = json!({"hooks": [{"type": "command", "command": command}]});
    if let Some(matcher) = matcher {
        entry["matcher"] = json!(matcher);
    }
    json!({"hooks": {event: [entry]}})
}

fn bash(command: &str) -> Value {
    json!({ "command": command })
}

fn task(name: &str, description: &str, prompt: &str) -> Value {
    json!({"name": name, "description": description, "prompt": prompt})
}

/// A model turn calling every `(id, name, args)`, with its own usage.
fn calls(calls: &[(&str, &str, Value)], prompt: u64, completion: u64) -> Reply {
    let mut stream = sse::chat::Stream::new();
    for (id, name, args) in calls {
        stream = stream.tool_call(id, name, &args.to_string());
    }
    Reply::sse(
        stream
            .finish("tool_calls")
            .usage(prompt, completion, 0)
            .done(),
    )
}

fn call(id: &str, name: &str, args: Value, prompt: u64, completion: u64) -> Reply {
    calls(&[(id, name, args)], prompt, completion)
}

/// A model turn answering `text`, with its own usage.
fn answer(text: &str, prompt: u64, completion: u64) -> Reply {
    Reply::sse(
        sse::chat::Stream::new()
            .text(text)
            .finish("stop")
            .usage(prompt, completion, 0)
            .done(),
    )
}

fn listing(id: &str, prompt_tokens: u64) -> Reply {
    call(id, "list_dir", json!({"path": "."}), prompt_tokens, 20)
}

/// A bash call `w1` writing `$HOME/<name>` (HOME is outside the workspace).
fn write_home(name: &str) -> Reply {
    Reply::chat_call("w1", "bash", bash(&format!("echo hi > \"$HOME/{name}\"")))
}

fn notes() -> (Place, String) {
    (Place::Ws("notes.txt".into()), "some notes\n".into())
}

fn hook_veto() -> Scenario {
    Scenario {
        hooks: Some(claude(
            "PreToolUse",
            Some("Bash"),
            "echo 'no shell in this repo' >&2; exit 2",
        )),
        facts: vec![
            failed(0, "b1", &["blocked by hook", "no shell in this repo"]),
            file(Place::Ws("marker".into()), FileIs::Absent),
            Fact::ToolMessage(1, "b1", "no shell in this repo".into()),
            Fact::Answers(0, vec!["understood"]),
            Fact::Requests(2),
        ],
        ..base([
            Reply::chat_call("b1", "bash", bash("touch marker")),
            Reply::chat_text("understood"),
        ])
    }
}

/// A hook after `read_file` whose output (`shown`) reaches the result and the model.
fn hook_after(hooks: Value, shown: &str) -> Scenario {
    Scenario {
        files: vec![notes()],
        hooks: Some(hooks),
        facts: vec![
            ok(0, "r1", &["some notes", shown]),
            Fact::ToolMessage(1, "r1", shown.into()),
            Fact::Answers(0, vec!["read it"]),
        ],
        ..base([
            Reply::chat_call("r1", "read_file", json!({"path": "notes.txt"})),
            Reply::chat_text("read it"),
        ])
    }
}

fn hook_hangs(p: &Paths) -> Scenario {
    let ws = p.ws.display();
    let hang = format!("sleep 600 & echo $! > {ws}/child.pid; echo $$ > {ws}/hook.pid; wait");
    Scenario {
        hooks: Some(
            json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": hang, "timeout": 1},
                {"type": "command", "command": "/nonexistent/hook-command", "timeout": 5}
            ]}]}}),
        ),
        facts: vec![
            ok(0, "b1", &[]),
            file(Place::Ws("marker".into()), FileIs::Present),
            Fact::Answers(0, vec!["done anyway"]),
            Fact::PidsGone(vec![
                Place::Ws("hook.pid".into()),
                Place::Ws("child.pid".into()),
            ]),
        ],
        ..base([
            Reply::chat_call("b1", "bash", bash("touch marker")),
            Reply::chat_text("done anyway"),
        ])
    }
}

fn session_hooks(p: &Paths) -> Scenario {
    let ws = p.ws.display();
    Scenario {
        hooks: Some(json!({"hooks": {
            "SessionStart": [{"hooks": [{"type": "command",
                "command": format!("cat > {ws}/start.json; echo START-CONTEXT-42")}]}],
            "SessionEnd": [{"hooks": [{"type": "command",
                "command": format!("cat > {ws}/end.json")}]}]
        }})),
        facts: vec![
            Fact::Answers(0, vec!["hi"]),
            file(
                Place::Ws("start.json".into()),
                FileIs::Json("hook_event_name", json!("SessionStart")),
            ),
            file(
                Place::Ws("start.json".into()),
                FileIs::Json("source", json!("startup")),
            ),
            request(0, &["START-CONTEXT-42"], &[]),
            file(
                Place::Ws("end.json".into()),
                FileIs::Json("hook_event_name", json!("SessionEnd")),
            ),
            Fact::Requests(1),
        ],
        ..base([Reply::chat_text("hi")])
    }
}

fn task_progress() -> Scenario {
    let read = Reply::sse(
        sse::chat::Stream::new()
            .text("Reading.")
            .tool_call("k1", "read_file", &json!({"path": "notes.txt"}).to_string())
            .finish("tool_calls")
            .usage(7, 2, 0)
            .done(),
    );
    Scenario {
        files: vec![(
            Place::Ws("notes.txt".into()),
            "the tests live in tests/\n".into(),
        )],
        facts: vec![
            ok(0, "t1", &["CHILD-ANSWER tests live in tests/"]),
            Fact::Answers(0, vec!["parent done"]),
            Fact::Requests(4),
            request(3, &["CHILD-ANSWER tests live in tests/"], &[]),
            Fact::Usage(0, 42, 12),
        ],
        ..base(
            Script::new()
                .route(
                    |r| r.specialist_call("explorer"),
                    [read, answer("CHILD-ANSWER tests live in tests/", 5, 1)],
                )
                .fallback([
                    call(
                        "t1",
                        "Task",
                        task("explorer", "find the tests", "Where are the tests?"),
                        10,
                        5,
                    ),
                    answer("parent done", 20, 4),
                ]),
        )
    }
}

fn task_refused_write() -> Scenario {
    let write = json!({"path": "pwned.txt", "content": "x"});
    Scenario {
        facts: vec![
            ok(0, "t1", &["I may not write."]),
            file(Place::Ws("pwned.txt".into()), FileIs::Absent),
            Fact::Answers(0, vec!["parent done"]),
            Fact::Requests(5),
            request(4, &["I may not write."], &[]),
            Fact::Usage(0, 10 + 6 + 7 + 5 + 20, 5 + 1 + 2 + 1 + 4),
        ],
        ..base(
            Script::new()
                .route(
                    |r| r.specialist_call("explorer"),
                    [
                        call("c1", "list_dir", json!({"path": "."}), 6, 1),
                        call("c2", "write_file", write, 7, 2),
                        answer("I may not write.", 5, 1),
                    ],
                )
                .fallback([
                    call(
                        "t1",
                        "Task",
                        task("explorer", "try to write", "Write pwned.txt."),
                        10,
                        5,
                    ),
                    answer("parent done", 20, 4),
                ]),
        )
    }
}

fn task_permission() -> Scenario {
    Scenario {
        approve: true,
        facts: vec![
            ok(0, "t1", &["The child wrote done.txt."]),
            file(
                Place::Ws("done.txt".into()),
                FileIs::Text("child was here".into()),
            ),
            Fact::Answers(0, vec!["The worker is done."]),
            Fact::Usage(0, 10 + 5 + 6 + 20, 2 + 1 + 2 + 3),
        ],
        ..base(
            Script::new()
                .route(
                    |r| r.specialist_call("worker"),
                    [
                        call(
                            "w1",
                            "bash",
                            bash("printf 'child was here' > done.txt"),
                            5,
                            1,
                        ),
                        answer("The child wrote done.txt.", 6, 2),
                    ],
                )
                .fallback([
                    call(
                        "t1",
                        "Task",
                        task(
                            "worker",
                            "write the file",
                            "Write done.txt saying the child was here.",
                        ),
                        10,
                        2,
                    ),
                    answer("The worker is done.", 20, 3),
                ]),
        )
    }
}

fn task_interrupted(p: &Paths) -> Scenario {
    let ws = p.ws.display();
    let command = format!("sleep 300 & echo $! > {ws}/sleep.pid; echo $$ > {ws}/bash.pid; wait");
    let pids = vec![Place::Ws("bash.pid".into()), Place::Ws("sleep.pid".into())];
    Scenario {
        prompts: vec![Prompt {
            text: "Delegate.".into(),
            interrupt_when: pids.clone(),
        }],
        facts: vec![Fact::PidsGone(pids), Fact::Requests(2)],
        ..base(
            Script::new()
                .route(
                    |r| r.specialist_call("worker"),
                    [Reply::chat_call("c1", "bash", bash(&command))],
                )
                .fallback([Reply::chat_call(
                    "t1",
                    "Task",
                    task("worker", "wait", "Wait a long time."),
                )]),
        )
    }
}

/// The model of a parent launching explorers on `alpha` and `beta` in the background, then
/// reading both with `TaskOutput`; each child answers `<topic> result`.
fn two_background_explorers() -> Script<Reply> {
    Script::respond(|request: &Request, _| {
        if request.specialist_call("explorer") {
            let topic = match request.contains("Look at alpha") {
                true => "alpha",
                false => "beta",
            };
            return answer(&format!("{topic} result"), 3, 1);
        }
        match request.earlier_calls() {
            0 => {
                let task = |topic: &str| {
                    json!({"name": "explorer", "description": topic,
                           "prompt": format!("Look at {topic}."), "run_in_background": true})
                };
                calls(
                    &[("t1", "Task", task("alpha")), ("t2", "Task", task("beta"))],
                    10,
                    1,
                )
            }
            1 => {
                let reads: Vec<(String, Value)> = request
                    .task_ids()
                    .iter()
                    .enumerate()
                    .map(|(i, id)| {
                        let args = json!({"task_id": id, "block": true, "timeout": 30000});
                        (format!("o{}", i + 1), args)
                    })
                    .collect();
                let reads: Vec<(&str, &str, Value)> = reads
                    .iter()
                    .map(|(id, args)| (id.as_str(), "TaskOutput", args.clone()))
                    .collect();
                calls(&reads, 10, 1)
            }
            _ => answer("both read", 10, 1),
        }
    })
}

fn task_manifest() -> Scenario {
    Scenario {
        files: vec![
            (
                Place::Ws(".zero/specialists/explorer.md".into()),
                "---\nname: explorer\ndescription: The project's explorer.\ntools: [read-only]\n\
                 ---\nPROJECT-EXPLORER-PROMPT: look in src/ first.\n"
                    .into(),
            ),
            (
                Place::Ws(".zero/specialists/bad.md".into()),
                "---\nname: bad\ndescription: Broken.\ntools:\n  - read-only\n  - Task\n---\n\
                 prompt\n"
                    .into(),
            ),
        ],
        facts: vec![
            ok(0, "t1", &["project explorer here"]),
            Fact::ChildPrompt(
                "explorer",
                "PROJECT-EXPLORER-PROMPT",
                "read-only codebase exploration specialist",
            ),
            request(0, &["The project's explorer."], &["- bad: Broken."]),
            Fact::Stderr(strings(&["skipped specialist manifest", "bad.md:6:"])),
            Fact::Answers(0, vec!["done"]),
            Fact::Usage(0, 10 + 7 + 20, 5 + 3 + 4),
        ],
        ..base(
            Script::new()
                .route(
                    |r| r.specialist_call("explorer"),
                    [answer("project explorer here", 7, 3)],
                )
                .fallback([
                    call("t1", "Task", task("explorer", "who", "Who are you?"), 10, 5),
                    answer("done", 20, 4),
                ]),
        )
    }
}

/// Every front end offers its program's catalogue (exec Zero's, rpc zut's, ZCode and ACP
/// the SDK's), and each answers to the SDK names of the tools it renames: `edit_file` with
/// the SDK's arguments reaches zut's `edit`, `write_file` its `write`, `read_file` its
/// `read`, under the same implementations.
fn sdk_names_everywhere() -> Scenario {
    Scenario {
        files: vec![(Place::Ws("notes.txt".into()), "alpha\nbeta\n".into())],
        facts: vec![
            ok(0, "e1", &["notes.txt"]),
            ok(0, "w1", &[]),
            ok(0, "r1", &["fresh"]),
            file(
                Place::Ws("notes.txt".into()),
                FileIs::Text("alpha\nBETA\n".into()),
            ),
            file(Place::Ws("new.txt".into()), FileIs::Text("fresh\n".into())),
            Fact::Answers(0, vec!["done"]),
        ],
        ..base([
            calls(
                &[
                    (
                        "e1",
                        "edit_file",
                        json!({"path": "notes.txt", "old_string": "beta", "new_string": "BETA"}),
                    ),
                    (
                        "w1",
                        "write_file",
                        json!({"path": "new.txt", "content": "fresh\n"}),
                    ),
                ],
                10,
                5,
            ),
            calls(&[("r1", "read_file", json!({"path": "new.txt"}))], 20, 5),
            Reply::chat_text("done"),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_builds_a_scenario_with_facts_and_names_are_unique() {
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = Paths::new(dir.path(), &dir.path().join("ws"), &dir.path().join("home"));
        let mut seen = std::collections::HashSet::new();
        for name in NAMES {
            assert!(seen.insert(*name), "{name} is listed twice");
            let scenario = build(name, &paths);
            assert_eq!(scenario.name, *name);
            assert!(!scenario.facts.is_empty(), "{name} expects nothing");
            assert_eq!(scenario.refused(), scenario.prompts.is_empty(), "{name}");
            scenario.write_files(&paths);
        }
    }

    #[test]
    fn facts_fail_when_they_do_not_hold() {
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = Paths::new(dir.path(), &dir.path().join("ws"), &dir.path().join("home"));
        let scenario = build("hook_pre_tool_use_vetoes_bash", &paths);
        let seen = super::super::Observed::default();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            scenario.check(&paths, &seen)
        }));
        assert!(
            result.is_err(),
            "an empty run cannot satisfy the veto scenario"
        );
    }
}
