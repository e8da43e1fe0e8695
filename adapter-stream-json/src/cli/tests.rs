//! The `exec` command line's unit tests: flags, values and Zero's usage errors.

use super::*;

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn err(list: &[&str]) -> UsageError {
    parse_exec_args(&args(list)).expect_err("must fail")
}

fn ok(list: &[&str]) -> ExecOptions {
    match parse_exec_args(&args(list)).expect("must parse") {
        Parsed::Run(o) => *o,
        Parsed::Help => panic!("unexpected help"),
    }
}

#[test]
fn flag_errors_use_zeros_words() {
    assert_eq!(err(&["--model"]).message, "--model requires a value");
    assert_eq!(err(&["--model", "--x"]).message, "--model requires a value");
    assert_eq!(
        err(&["--provider2"]).message,
        "unknown exec flag \"--provider2\""
    );
    assert_eq!(
        err(&["-o", "xml"]).message,
        "invalid output format \"xml\". Expected text, json, stream-json, or debug."
    );
    assert_eq!(
        err(&["--input-format=yaml", "x"]).message,
        "Invalid input format \"yaml\". Expected text or stream-json."
    );
    assert_eq!(
        err(&["--max-turns", "0", "x"]).message,
        "invalid --max-turns \"0\". Expected a positive integer."
    );
    assert_eq!(
        err(&["--auto", "max", "x"]).message,
        "Invalid autonomy level \"max\". Expected low, medium, or high."
    );
    assert_eq!(err(&[]).message, prompt_required());
    assert_eq!(err(&["-o", "json"]).message, prompt_required());
    assert_eq!(
        err(&["-i", "stream-json", "hello"]).message,
        "Stream-json input does not accept positional prompt text. Pipe JSONL or use --file."
    );
    assert_eq!(
        err(&["--resume", "a", "--fork", "b", "x"]).message,
        "Use either --resume or --fork, not both."
    );
    assert_eq!(
        err(&["--init-session-id", "../x", "p"]).message,
        "invalid --init-session-id \"../x\""
    );
}

#[test]
fn session_store_takes_files_and_refuses_a_database_without_showing_it() {
    ok(&["--session-store", "files", "x"]);
    ok(&["--session-store=FILES", "x"]);
    for list in [
        &["--session-store", "postgres://u:pw-0123@db/x", "x"][..],
        &["--session-store=postgresql://u:pw-0123@db/x", "x"][..],
    ] {
        let message = err(list).message;
        assert!(
            message.starts_with("--session-store postgres is not supported by exec"),
            "{message}"
        );
        assert!(!message.contains("pw-0123"), "{message}");
    }
    assert_eq!(
        err(&["--session-store", "redis://x", "x"]).message,
        "invalid --session-store value. Expected files."
    );
    assert_eq!(
        err(&["--session-store"]).message,
        "--session-store requires a value"
    );
}

#[test]
fn capability_flags_are_checked_as_they_are_read() {
    let o = ok(&[
        "--sandbox",
        "Read-Only",
        "--sandbox-network=allow",
        "--add-dir",
        "a",
        "--add-dir=/b",
        "--sandbox-fallback",
        "refuse",
        "--hooks",
        "h.json",
        "--mcp-config=m.json",
        "--context-window",
        "200k",
        "--auto-compact=70%",
        "--output-schema",
        "s.json",
        "--tag",
        "specialist",
        "p",
    ]);
    let caps = &o.capabilities;
    assert_eq!(caps.sandbox.as_deref(), Some("read-only"));
    assert_eq!(caps.sandbox_network.as_deref(), Some("allow"));
    assert_eq!(caps.sandbox_fallback.as_deref(), Some("refuse"));
    assert_eq!(
        caps.add_dir,
        [
            std::path::PathBuf::from("a"),
            std::path::PathBuf::from("/b")
        ]
    );
    assert_eq!(caps.hooks.as_deref(), Some(std::path::Path::new("h.json")));
    assert_eq!(
        caps.mcp_config.as_deref(),
        Some(std::path::Path::new("m.json"))
    );
    assert_eq!(caps.context_window.as_deref(), Some("200k"));
    assert_eq!(caps.auto_compact.as_deref(), Some("70%"));
    assert_eq!(o.output_schema.as_deref(), Some("s.json"));
    assert_eq!(o.tag.as_deref(), Some("specialist"));
    assert_eq!(
        ok(&["--sandbox=danger-full-access", "p"])
            .capabilities
            .sandbox
            .as_deref(),
        Some("danger-full-access")
    );

    assert_eq!(
        err(&["--sandbox", "full", "p"]).message,
        "Invalid sandbox mode \"full\". Expected read-only, workspace-write, or off."
    );
    assert_eq!(
        err(&["--sandbox-network=open", "p"]).message,
        "Invalid sandbox network \"open\". Expected allow or deny."
    );
    assert_eq!(
        err(&["--sandbox-fallback", "maybe", "p"]).message,
        "Invalid sandbox fallback \"maybe\". Expected refuse, prompt, or allow."
    );
    assert_eq!(
        err(&["--context-window", "lots", "p"]).message,
        "invalid --context-window \"lots\". Expected a token count such as 200000, 200k or 1m."
    );
    assert_eq!(
        err(&["--auto-compact=200", "p"]).message,
        "invalid --auto-compact \"200\". Expected a percentage from 1 to 100, or off."
    );
    assert_eq!(err(&["--hooks"]).message, "--hooks requires a value");
    assert_eq!(
        err(&["--output-schema="]).message,
        "--output-schema requires a value"
    );
    assert_eq!(
        err(&["-o", "stream-json", "--sandbox", "x"]).format,
        OutputFormat::StreamJson
    );
}

#[test]
fn output_format_is_known_only_once_parsed() {
    assert_eq!(
        err(&["--bogus", "-o", "stream-json"]).format,
        OutputFormat::Text
    );
    assert_eq!(
        err(&["-o", "stream-json", "--bogus"]).format,
        OutputFormat::StreamJson
    );
    assert_eq!(
        err(&["-o", "debug", "--bogus"]).format,
        OutputFormat::StreamJson
    );
    assert_eq!(
        err(&["--bogus", "-o", "stream-json"]).message,
        "unknown exec flag \"--bogus\""
    );
}

#[test]
fn both_flag_forms_and_quirks() {
    let o = ok(&[
        "--model=m1",
        "-C",
        "/tmp",
        "--max-turns=3",
        "hello",
        "world",
    ]);
    assert_eq!(o.provider.model.as_deref(), Some("m1"));
    assert_eq!(o.cwd.as_deref(), Some("/tmp"));
    assert_eq!(o.max_turns, Some(3));
    assert_eq!(o.prompt_parts, ["hello", "world"]);
    let o = ok(&["--resume", "--model", "m", "p"]);
    assert!(o.resume_latest);
    let o = ok(&["--resume", "foo", "p"]);
    assert_eq!(o.resume.as_deref(), Some("foo"));
    let o = ok(&["--resume=", "p"]);
    assert!(o.resume_latest);
    let o = ok(&["-p", "-1", "--enabled-tools", "a,b c,a"]);
    assert_eq!(o.prompt_parts, ["-1"]);
    assert_eq!(o.enabled_tools, ["a", "b", "c"]);
    assert!(matches!(
        parse_exec_args(&args(&["--model", "m", "--help", "--bogus"])),
        Ok(Parsed::Help)
    ));
    assert!(parse_exec_args(&args(&["--bogus", "--help"])).is_err());
    let o = ok(&["--list-tools"]);
    assert!(o.list_tools);
    let o = ok(&["-i", "STREAM-JSON", "-o", "Stream-Json"]);
    assert_eq!(o.input_format, InputFormat::StreamJson);
    assert_eq!(o.output_format, OutputFormat::StreamJson);
}

#[test]
fn provider_headers_and_the_cache_key_flag() {
    let o = ok(&[
        "--header",
        "X-Tenant: acme",
        "--header=X-Other: 1",
        "--no-prompt-cache-key",
        "p",
    ]);
    let names: Vec<&str> = o.provider.headers.iter().map(|h| h.name()).collect();
    assert_eq!(names, ["x-tenant", "x-other"]);
    assert!(o.provider.no_prompt_cache_key);
    let o = ok(&["--api-version=v1", "--project", "p", "--location=eu", "p"]);
    assert_eq!(o.provider.api_version.as_deref(), Some("v1"));
    assert_eq!(o.provider.project.as_deref(), Some("p"));
    assert_eq!(o.provider.region.as_deref(), Some("eu"));
    assert_eq!(
        err(&["--header", "nocolon", "p"]).message,
        "--header: invalid header \"nocolon\": expected 'Name: value'"
    );
}

#[test]
fn language_server_flags() {
    let o = ok(&["--lsp-config", "l.json", "--no-lsp-diagnostics", "p"]);
    assert_eq!(
        o.capabilities.lsp_config.as_deref(),
        Some(std::path::Path::new("l.json"))
    );
    assert!(o.capabilities.no_lsp_diagnostics);
    let o = ok(&["--lsp-config=x.json", "p"]);
    assert_eq!(
        o.capabilities.lsp_config.as_deref(),
        Some(std::path::Path::new("x.json"))
    );
    assert!(!o.capabilities.no_lsp_diagnostics);
    assert!(err(&["--lsp-config=", "p"])
        .message
        .contains("--lsp-config"));
}

#[test]
fn guard_flags_and_allow_escalation() {
    let o = ok(&[
        "--settings",
        "s.json",
        "--max-budget-usd",
        "0.25",
        "--fallback-model=mini",
        "p",
    ]);
    assert_eq!(
        o.capabilities.settings.as_deref(),
        Some(std::path::Path::new("s.json"))
    );
    assert_eq!(o.capabilities.max_budget_usd.as_deref(), Some("0.25"));
    assert_eq!(o.capabilities.fallback_model.as_deref(), Some("mini"));
    let o = ok(&["--settings=t.json", "--max-budget-usd=$1", "p"]);
    assert_eq!(o.capabilities.max_budget_usd.as_deref(), Some("$1"));
    assert_eq!(
        err(&["--max-budget-usd", "free", "p"]).message,
        "invalid --max-budget-usd \"free\". Expected a positive amount in USD."
    );
    assert_eq!(
        err(&["--max-budget-usd", "-1", "p"]).message,
        "invalid --max-budget-usd \"-1\". Expected a positive amount in USD."
    );
    assert_eq!(
        err(&["--allow-escalation", "p"]).message,
        crate::cli::ALLOW_ESCALATION
    );
    assert!(err(&["--settings=", "p"]).message.contains("--settings"));
}
