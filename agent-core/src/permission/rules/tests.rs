use super::*;
use crate::tool::{ToolContext, ToolError, ToolOutput};
use serde_json::{json, Value};

struct Fake(&'static str, SideEffect);

#[async_trait::async_trait]
impl Tool for Fake {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        ""
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn side_effect(&self) -> SideEffect {
        self.1
    }
    async fn call(&self, _: Value, _: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(""))
    }
}

const BASH: Fake = Fake("bash", SideEffect::Shell);
const READ: Fake = Fake("read_file", SideEffect::Read);
const WRITE: Fake = Fake("write_file", SideEffect::Write);
const FETCH: Fake = Fake("web_fetch", SideEffect::Network);

fn rules(list: &[(RuleAction, &str)]) -> RuleSet {
    let mut set = RuleSet::new().with_home(Some("/home/u".into()));
    for (action, rule) in list {
        set.add(*action, rule, &RuleSource::Sdk)
            .expect("valid rule");
    }
    set
}

fn decide(set: &RuleSet, tool: &Fake, args: Value) -> Option<(RuleAction, String)> {
    let target = tool.call_target(&args);
    set.evaluate(tool, tool.name(), &target, Path::new("/ws"))
        .map(|d| (d.action, d.rule))
}

fn run(command: &str) -> Value {
    json!({ "command": command })
}

use RuleAction::{Allow, Ask, Deny};

#[test]
fn a_command_prefix_allows_each_simple_command_and_nothing_else() {
    let set = rules(&[(Allow, "Bash(git status:*)")]);
    let allowed = Some((Allow, "Bash(git status:*)".to_string()));
    assert_eq!(decide(&set, &BASH, run("git status -s")), allowed);
    assert_eq!(decide(&set, &BASH, run("git status")), allowed);
    assert_eq!(
        decide(&set, &BASH, run("  git   status   --short ")),
        allowed
    );
    assert_eq!(decide(&set, &BASH, run("timeout 5 git status")), allowed);
    assert_eq!(
        decide(&set, &BASH, run("git status && git status -s")),
        allowed
    );
    for other in [
        "git status; rm x",
        "git status && rm -rf /",
        "git status | sh",
        "git statusx",
        "git status $(rm x)",
        "echo 'git status'",
        "git status 'open",
        "rm x",
    ] {
        assert_eq!(decide(&set, &BASH, run(other)), None, "{other}");
    }
}

#[test]
fn command_wildcards_follow_claude_codes_rules() {
    let set = rules(&[
        (Allow, "Bash(ls *)"),
        (Allow, "Bash(npm*)"),
        (Allow, "Bash(git * main)"),
    ]);
    for yes in [
        "ls",
        "ls -la",
        "npm",
        "npmrc",
        "npm test",
        "git checkout main",
        "git push origin main",
    ] {
        assert!(decide(&set, &BASH, run(yes)).is_some(), "{yes}");
    }
    for no in ["lsof", "git main", "git checkout main2"] {
        assert_eq!(decide(&set, &BASH, run(no)), None, "{no}");
    }
    let exact = rules(&[(Allow, "Bash(npm run build)")]);
    assert!(decide(&exact, &BASH, run("npm run build")).is_some());
    assert_eq!(decide(&exact, &BASH, run("npm run build:dev")), None);
}

#[test]
fn deny_beats_ask_beats_allow_and_any_part_of_a_command_counts() {
    let set = rules(&[
        (Allow, "Bash"),
        (Ask, "Bash(git push:*)"),
        (Deny, "Bash(rm:*)"),
        (Allow, "Read"),
        (Deny, "Read(./secrets/**)"),
    ]);
    assert_eq!(decide(&set, &BASH, run("ls")), Some((Allow, "Bash".into())));
    assert_eq!(
        decide(&set, &BASH, run("ls && rm -rf x")),
        Some((Deny, "Bash(rm:*)".into()))
    );
    assert_eq!(
        decide(&set, &BASH, run("git push origin main")),
        Some((Ask, "Bash(git push:*)".into()))
    );
    assert_eq!(
        decide(&set, &BASH, run("git push; rm y")),
        Some((Deny, "Bash(rm:*)".into())),
        "deny before ask"
    );
    assert_eq!(
        decide(&set, &READ, json!({"path": "secrets/key.pem"})),
        Some((Deny, "Read(./secrets/**)".into()))
    );
    assert_eq!(
        decide(&set, &READ, json!({"path": "src/lib.rs"})),
        Some((Allow, "Read".into()))
    );
    // A line that cannot be parsed is still denied on its text.
    assert_eq!(
        decide(&set, &BASH, run("rm -rf / 'open")),
        Some((Deny, "Bash(rm:*)".into()))
    );
}

#[test]
fn path_patterns_are_gitignore_patterns_under_their_base() {
    let set = rules(&[(Allow, "Read(./src/**)")]);
    let read = |path: &str| decide(&set, &READ, json!({ "path": path }));
    assert!(read("src/lib.rs").is_some());
    assert!(read("/ws/src/a/b.rs").is_some());
    assert!(read("./src/../src/x").is_some());
    assert_eq!(read("README.md"), None);
    assert_eq!(read("src/../README.md"), None, "cleaned before matching");
    assert_eq!(read("/etc/passwd"), None);
    assert_eq!(read("../ws2/src/x"), None);
    // A read with no path reads the whole workspace, which the rule does not cover.
    assert_eq!(decide(&set, &READ, json!({"pattern": "x"})), None);

    let floating = rules(&[(Deny, "Read(.env)"), (Deny, "Edit(*.key)")]);
    assert!(decide(&floating, &READ, json!({"path": "a/b/.env"})).is_some());
    assert!(decide(&floating, &WRITE, json!({"path": "deep/x.key"})).is_some());
    assert_eq!(decide(&floating, &WRITE, json!({"path": "x.keys"})), None);

    let anchored = rules(&[
        (Deny, "Read(~/.ssh/**)"),
        (Deny, "Read(//etc/**)"),
        (Deny, "Write(/build)"),
    ]);
    assert!(decide(&anchored, &READ, json!({"path": "/home/u/.ssh/id_rsa"})).is_some());
    assert!(decide(&anchored, &READ, json!({"path": "/etc/hosts"})).is_some());
    assert!(
        decide(&anchored, &WRITE, json!({"path": "build/out.o"})).is_some(),
        "a directory's pattern covers what is in it"
    );
    assert_eq!(decide(&anchored, &READ, json!({"path": "etc/x"})), None);
    // Edit rules are for writers, Read rules for readers.
    assert_eq!(decide(&anchored, &READ, json!({"path": "build/x"})), None);
}

#[test]
fn domains_mcp_tools_and_own_names() {
    let set = rules(&[
        (Allow, "WebFetch(domain:docs.rs)"),
        (Allow, "WebFetch(domain:*.example.com)"),
        (Allow, "mcp__github__create_issue"),
        (Deny, "mcp__fs"),
        (Allow, "exec_command(cargo:*)"),
    ]);
    let fetch = |url: &str| decide(&set, &FETCH, json!({ "url": url }));
    assert!(fetch("https://docs.rs/serde").is_some());
    assert!(fetch("https://api.example.com/").is_some());
    assert_eq!(fetch("https://example.com/"), None);
    assert_eq!(fetch("https://docs.rs.evil.com/"), None);
    let mcp = |name: &'static str| decide(&set, &Fake(name, SideEffect::Network), json!({}));
    assert_eq!(
        mcp("mcp_github_create_issue").map(|d| d.0),
        Some(Allow),
        "agent-mcp's name of the tool"
    );
    assert_eq!(mcp("mcp__github__create_issue").map(|d| d.0), Some(Allow));
    assert_eq!(mcp("mcp_github_delete_repo"), None);
    assert_eq!(mcp("mcp_fs_read").map(|d| d.0), Some(Deny));
    let exec = Fake("exec_command", SideEffect::Shell);
    assert!(decide(&set, &exec, json!({"cmd": "cargo test"})).is_some());
    assert_eq!(
        decide(&set, &BASH, run("cargo test")),
        None,
        "named for exec_command only"
    );
}

#[test]
fn rules_the_syntax_does_not_allow_are_errors() {
    for bad in [
        "",
        "Bash(",
        "Bash()",
        "Bash(git:* status)",
        "Bash(:*)",
        "WebFetch(example.com)",
        "WebFetch(domain:)",
        "WebSearch(rust)",
        "mcp__",
        "mcp__srv__tool(x)",
        "Read(../x)",
        "Read([ab)",
        "Ba sh",
        "Bash)x(",
    ] {
        let err = Rule::parse(bad).expect_err(bad);
        assert_eq!(err.rule, bad);
        assert!(err.to_string().contains("invalid permission rule"), "{err}");
    }
    let mut set = RuleSet::new();
    let err = set
        .add_all(Allow, ["Bash(ls:*)", "Bash(:*)"], &RuleSource::Sdk)
        .expect_err("the second is bad");
    assert_eq!(err.rule, "Bash(:*)");
    assert!(set.is_empty(), "nothing is added when one is bad");
}

#[test]
fn apply_orders_rules_before_the_mode() {
    let verdict = |action| Verdict {
        action,
        granted: false,
        reason: None,
    };
    let rule = |action| DecidingRule {
        rule: "Bash(x:*)".into(),
        action,
        source: "sdk".into(),
    };
    let mut v = verdict(PermissionAction::Prompt);
    assert!(apply(&mut v, Some(&rule(Allow)), false));
    assert_eq!((v.action, v.granted), (PermissionAction::Allow, true));
    assert_eq!(
        v.reason.as_deref(),
        Some("permission rule allow Bash(x:*) (sdk)")
    );
    let mut v = verdict(PermissionAction::Prompt);
    assert!(
        !apply(&mut v, Some(&rule(Allow)), true),
        "no rule allows an escalation"
    );
    assert_eq!(v.action, PermissionAction::Prompt);
    let mut v = verdict(PermissionAction::Deny);
    assert!(
        !apply(&mut v, Some(&rule(Allow)), false),
        "plan mode stays read-only"
    );
    assert!(!apply(&mut v, Some(&rule(Ask)), false));
    assert_eq!(v.action, PermissionAction::Deny);
    let mut v = verdict(PermissionAction::Allow);
    assert!(apply(&mut v, Some(&rule(Ask)), false));
    assert_eq!(v.action, PermissionAction::Prompt);
    let mut v = verdict(PermissionAction::Allow);
    assert!(apply(&mut v, Some(&rule(Deny)), false));
    assert_eq!(v.action, PermissionAction::Deny);
    assert!(!apply(&mut verdict(PermissionAction::Prompt), None, false));
}
