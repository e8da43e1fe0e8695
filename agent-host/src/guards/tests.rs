use super::*;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(&path, text).expect("write");
    path
}

fn texts(rules: &RuleSet) -> Vec<(RuleAction, String)> {
    rules
        .iter()
        .map(|(a, r, _)| (a, r.text().to_string()))
        .collect()
}

#[test]
fn a_settings_files_permissions_are_its_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(
        dir.path(),
        "s.json",
        r#"{"model": "x", "permissions": {"allow": ["Bash(git status:*)"],
            "deny": ["Read(./secrets/**)"], "defaultMode": "default"}}"#,
    );
    let rules = read_settings(&path, RuleSource::Settings(path.clone()), true).expect("reads");
    assert_eq!(
        texts(&rules),
        [
            (RuleAction::Deny, "Read(./secrets/**)".into()),
            (RuleAction::Allow, "Bash(git status:*)".into())
        ]
    );
    let source = rules.iter().next().map(|(_, _, s)| s.to_string());
    assert_eq!(source, Some(format!("settings {}", path.display())));
    let none = write(dir.path(), "none.json", r#"{"env": {}}"#);
    assert!(read_settings(&none, RuleSource::Sdk, true)
        .expect("reads")
        .is_empty());
}

#[test]
fn a_bad_file_or_rule_is_an_error_naming_the_file_and_the_rule() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        ("a.json", "{not json", "not valid JSON"),
        ("b.json", "[]", "a settings file is a JSON object"),
        (
            "c.json",
            r#"{"permissions": []}"#,
            "permissions: expected an object",
        ),
        (
            "d.json",
            r#"{"permissions": {"deny": "Bash"}}"#,
            "permissions.deny: expected a list of rules",
        ),
        (
            "e.json",
            r#"{"permissions": {"allow": ["Read", 3]}}"#,
            "permissions.allow[1]: expected a rule (a string), got 3",
        ),
        (
            "f.json",
            r#"{"permissions": {"ask": ["Bash(ls:*)", "WebFetch(example.com)"]}}"#,
            "permissions.ask[1]: invalid permission rule \"WebFetch(example.com)\": a WebFetch \
             specifier is domain:<host>",
        ),
    ];
    for (name, text, message) in cases {
        let path = write(dir.path(), name, text);
        let err = read_settings(&path, RuleSource::Sdk, true).expect_err(name);
        let shown = err.to_string();
        assert!(
            shown.starts_with(&format!("{}: ", path.display())),
            "{shown}"
        );
        assert!(shown.contains(message), "{shown} lacks {message}");
    }
    let missing = dir.path().join("missing.json");
    let err = Guards::load(Some(&missing), None, None).expect_err("missing");
    assert!(
        err.to_string()
            .starts_with(&format!("--settings {}: ", missing.display())),
        "{err}"
    );
}

#[test]
fn flags_are_checked() {
    assert_eq!(parse_budget("0.01"), Ok(0.01));
    assert_eq!(parse_budget(" $2 "), Ok(2.0));
    for bad in ["0", "-1", "abc", "inf", "NaN", ""] {
        assert_eq!(parse_budget(bad), Err(GuardFlagError::Budget(bad.into())));
    }
    let err = Guards::load(None, None, Some(" ")).expect_err("blank");
    assert_eq!(err.to_string(), "--fallback-model: expected a model id");
    let guards = Guards::load(None, Some("1.5"), Some("mini")).expect("loads");
    assert_eq!(guards.max_budget_usd, Some(1.5));
    assert_eq!(guards.fallback_model.as_deref(), Some("mini"));
}

#[test]
fn an_untrusted_project_may_narrow_but_not_allow() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}"#,
    );
    write(
        dir.path(),
        ".claude/settings.local.json",
        r#"{"permissions": {"ask": ["Bash(git push:*)"]}}"#,
    );
    let mut guards = Guards::load(None, None, None).expect("loads");
    assert_eq!(
        texts(&guards.project_rules(dir.path()).expect("reads")),
        [
            (RuleAction::Deny, "Bash(rm:*)".into()),
            (RuleAction::Allow, "Bash".into()),
            (RuleAction::Ask, "Bash(git push:*)".into()),
        ]
    );
    guards.project = Some(ProjectTrust::Untrusted);
    assert_eq!(
        texts(&guards.project_rules(dir.path()).expect("reads")),
        [
            (RuleAction::Deny, "Bash(rm:*)".into()),
            (RuleAction::Ask, "Bash(git push:*)".into()),
        ]
    );
    guards.project = None;
    assert!(guards.project_rules(dir.path()).expect("reads").is_empty());
}
