//! Specialist manifests: which one wins, malformed ones, the user directory, the model and
//! reasoning a child runs.

use super::*;

#[tokio::test]
async fn a_project_manifest_overrides_the_builtin_and_the_user_one() {
    let ws = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    let project_dir = ws.path().join(".zero").join("specialists");
    std::fs::create_dir_all(&project_dir).unwrap();
    std::fs::write(
        user.path().join("explorer.md"),
        "---\nname: explorer\ndescription: User explorer.\n---\nUser prompt.\n",
    )
    .unwrap();
    std::fs::write(
        user.path().join("docs.md"),
        "---\nname: docs\ndescription: Writes docs.\ntools: [edit]\n---\nWrite docs.\n",
    )
    .unwrap();
    std::fs::write(
        project_dir.join("explorer.md"),
        "---\nname: explorer\ndescription: Project explorer.\ntools:\n  - read-only\n  - plan\n---\n\nProject explorer prompt: look in src/ first.\n",
    )
    .unwrap();
    std::fs::write(
        project_dir.join("strict-review.md"),
        "---\nname: strict-review\nextends: code-review\nreasoningEffort: high\n---\nBe strict about tests.\n",
    )
    .unwrap();
    let paths = SpecialistPaths {
        user: Some(user.path().to_path_buf()),
        project: Some(project_dir.clone()),
    };
    let registry = SpecialistRegistry::load(&paths);
    assert!(registry.errors().is_empty(), "{:?}", registry.errors());
    assert_eq!(
        registry.names(),
        ["code-review", "docs", "explorer", "strict-review", "worker"]
    );
    let explorer = registry.get("explorer").unwrap();
    assert_eq!(explorer.location, agent_specialists::Location::Project);
    assert_eq!(explorer.description, "Project explorer.");
    assert_eq!(
        registry.get("docs").unwrap().location,
        agent_specialists::Location::User
    );
    let strict = registry.get("strict-review").unwrap();
    assert_eq!(
        strict.description,
        registry.get("code-review").unwrap().description
    );
    assert!(strict
        .system_prompt
        .starts_with("You are a code review specialist"));
    assert!(strict.system_prompt.ends_with("\n\nBe strict about tests."));
    assert_eq!(strict.reasoning, Some(agent_core::ReasoningLevel::High));

    // Through Task, the child runs the project's prompt and tools.
    let seen: Arc<Mutex<Vec<ProviderRequest>>> = Arc::default();
    let log = seen.clone();
    let provider = Router(move |request: &ProviderRequest| {
        log.lock().unwrap().push(request.clone());
        if child_of(request, "explorer") {
            return Turn::new().text("project explorer here");
        }
        match step(request) {
            0 => {
                let (id, name, args) = task_call("c1", "explorer", "Who are you?", false);
                Turn::new().tool_call(id, name, args)
            }
            _ => Turn::new().text("done"),
        }
    });
    let agent = agent_with(provider, ws.path(), registry, |t| t).build();
    let events = collect(agent.prompt("go")).await;
    assert!(result_of(&events, "c1")
        .1
        .ends_with("project explorer here"));
    let requests = seen.lock().unwrap().clone();
    let child = requests.iter().find(|r| child_of(r, "explorer")).unwrap();
    assert!(child
        .system
        .as_deref()
        .unwrap()
        .contains("Project explorer prompt: look in src/ first."));
    let mut tools: Vec<&str> = child.tools.iter().map(|t| t.name.as_str()).collect();
    tools.sort();
    assert_eq!(
        tools,
        [
            "glob",
            "grep",
            "list_dir",
            "plan",
            "read_file",
            "view_image"
        ]
    );
    // The Task description lists the project's specialists.
    let task = requests[0].tools.iter().find(|t| t.name == "Task").unwrap();
    assert!(task.description.contains("- explorer: Project explorer."));
    assert!(task.description.contains("- docs: Writes docs."));
}

#[tokio::test]
async fn a_malformed_manifest_is_an_error_naming_its_file_and_line() {
    let ws = tempfile::tempdir().unwrap();
    let project_dir = ws.path().join(".zero").join("specialists");
    std::fs::create_dir_all(&project_dir).unwrap();
    let bad = project_dir.join("bad.md");
    std::fs::write(
        &bad,
        "---\nname: bad\ndescription: Broken.\ntools:\n  - read-only\n  - Task\n---\nprompt\n",
    )
    .unwrap();
    let syntax = project_dir.join("syntax.md");
    std::fs::write(
        &syntax,
        "---\nname: syntax\nthis line has no colon\n---\nprompt\n",
    )
    .unwrap();
    std::fs::write(
        project_dir.join("cycle.md"),
        "---\nname: cycle\nextends: cycle\n---\n",
    )
    .unwrap();
    std::fs::write(project_dir.join("notes.txt"), "not a manifest").unwrap();
    std::fs::write(
        project_dir.join("good.md"),
        "---\nname: good\ndescription: Fine.\n---\nFine prompt.\n",
    )
    .unwrap();
    let registry = SpecialistRegistry::load(&SpecialistPaths {
        user: None,
        project: Some(project_dir.clone()),
    });
    let mut errors: Vec<String> = registry.errors().iter().map(|e| e.to_string()).collect();
    errors.sort();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(
        errors[0].starts_with(&format!("{}:6: ", bad.display()))
            && errors[0].contains("cannot be given \"Task\""),
        "{errors:?}"
    );
    assert!(
        errors[1].contains("cycle.md:3: ") && errors[1].contains("cycle"),
        "{errors:?}"
    );
    assert!(
        errors[2].starts_with(&format!("{}:3: ", syntax.display()))
            && errors[2].contains("expected `key: value`"),
        "{errors:?}"
    );
    assert_eq!(
        registry.names(),
        ["code-review", "explorer", "good", "worker"]
    );
    // Zero skips a bad manifest with a warning but fails on a broken `extends`.
    let fatal = registry.fatal_error().expect("the cycle is fatal to Zero");
    assert_eq!(fatal.kind, agent_specialists::ManifestErrorKind::Extends);
    assert!(fatal.path.ends_with("cycle.md"));
}

#[test]
fn the_user_directory_follows_xdg_config_home() {
    let ws = Path::new("/ws");
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    };
    let paths =
        SpecialistPaths::resolve(ws, env(&[("XDG_CONFIG_HOME", "/cfg"), ("HOME", "/home/u")]));
    assert_eq!(
        paths.user.as_deref(),
        Some(Path::new("/cfg/zero/specialists"))
    );
    assert_eq!(
        paths.project.as_deref(),
        Some(Path::new("/ws/.zero/specialists"))
    );
    let paths = SpecialistPaths::resolve(ws, env(&[("HOME", "/home/u")]));
    assert_eq!(
        paths.user.as_deref(),
        Some(Path::new("/home/u/.config/zero/specialists"))
    );
    let paths = SpecialistPaths::resolve(ws, env(&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/h")]));
    assert_eq!(paths.user, None);
}

#[tokio::test]
async fn a_child_runs_the_manifests_model_and_reasoning_or_inherits_the_parents() {
    let ws = tempfile::tempdir().unwrap();
    let project_dir = ws.path().join(".zero").join("specialists");
    std::fs::create_dir_all(&project_dir).unwrap();
    std::fs::write(
        project_dir.join("pinned.md"),
        "---\nname: pinned\ndescription: Own model and effort.\nmodel: child-model\nreasoningEffort: low\n---\nPinned.\n",
    )
    .unwrap();
    std::fs::write(
        project_dir.join("plain.md"),
        "---\nname: plain\ndescription: Inherits both.\n---\nPlain.\n",
    )
    .unwrap();
    std::fs::write(
        project_dir.join("model-only.md"),
        "---\nname: model-only\ndescription: Own model only.\nmodel: other-model\n---\nModel only.\n",
    )
    .unwrap();
    let registry = SpecialistRegistry::load(&SpecialistPaths {
        user: None,
        project: Some(project_dir),
    });
    assert!(registry.errors().is_empty(), "{:?}", registry.errors());
    let seen: Arc<Mutex<Vec<ProviderRequest>>> = Arc::default();
    let log = seen.clone();
    let provider = Router(move |request: &ProviderRequest| {
        log.lock().unwrap().push(request.clone());
        for name in ["pinned", "plain", "model-only"] {
            if child_of(request, name) {
                return Turn::new().text(format!("{name} answered"));
            }
        }
        match step(request) {
            0 => {
                let mut turn = Turn::new();
                for (id, name) in [("c1", "pinned"), ("c2", "plain"), ("c3", "model-only")] {
                    let (id, tool, args) = task_call(id, name, "Answer.", false);
                    turn = turn.tool_call(id, tool, args);
                }
                turn
            }
            _ => Turn::new().text("done"),
        }
    });
    let agent = agent_with(provider, ws.path(), registry, |t| t)
        .model("parent-model")
        .reasoning(agent_core::ReasoningLevel::High)
        .build();
    let events = collect(agent.prompt("go")).await;
    for call in ["c1", "c2", "c3"] {
        assert_eq!(*result_of(&events, call).0, ToolStatus::Ok, "{call}");
    }
    let requests = seen.lock().unwrap().clone();
    let of = |name: &str| {
        let r = requests
            .iter()
            .find(|r| child_of(r, name))
            .unwrap_or_else(|| panic!("no request of {name}"));
        (r.model.clone(), r.reasoning)
    };
    use agent_core::ReasoningLevel::{High, Low, Medium};
    assert_eq!(requests[0].model, "parent-model");
    assert_eq!(requests[0].reasoning, High);
    assert_eq!(of("pinned"), ("child-model".to_string(), Low));
    assert_eq!(of("plain"), ("parent-model".to_string(), High));
    // Zero's rule: an own model without an effort does not inherit the parent's effort.
    assert_eq!(of("model-only"), ("other-model".to_string(), Medium));
}
