//! The provider fault matrix end to end: the binary against a local OpenAI-compatible
//! server that fails in every way a real one does. Every case ends with the protocol's
//! terminal lines (`error` + `run_end`, or `final` + `run_end`), the right exit code, and
//! a readable session.

mod common;

use std::io::Write;
use std::process::Stdio;

use common::{wait_output, Run, Sandbox, RUN_TIMEOUT};
use test_support::{sse, End, Fault, FaultServer};

/// Runs one prompt against `url` with one retry, a 1 ms backoff and a 500 ms idle timeout.
fn run_against(sb: &Sandbox, url: &str, extra_env: &[(&str, &str)]) -> Run {
    let mut args = common::openai_exec(url, Some("sk-fault-matrix-key-0123456789"));
    args.push("Say something.");
    let mut cmd = sb.command(&args);
    cmd.env("AGENT_SDK_MAX_RETRIES", "1")
        .env("AGENT_SDK_RETRY_BACKOFF_MS", "1")
        .env("AGENT_SDK_IDLE_TIMEOUT_MS", "500")
        .envs(extra_env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let _ = child.stdin.take().expect("stdin").write_all(b"");
    let run = Run::from(wait_output(child, RUN_TIMEOUT));
    run.assert_framing();
    assert!(
        !run.stdout.contains("sk-fault-matrix-key"),
        "{}",
        run.stdout
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    run
}

/// Asserts a run that failed on the provider: `run_start`, maybe text, `error` +
/// `run_end{error, 3}`, and a session whose events all parse.
fn assert_provider_failure(sb: &Sandbox, run: &Run, case: &str, message_has: &str) {
    assert_eq!(run.code, 3, "{case}: {}\n{}", run.stdout, run.stderr);
    let events = run.events();
    let n = events.len();
    assert_eq!(events[0]["type"], "run_start", "{case}");
    assert_eq!(events[n - 2]["type"], "error", "{case}: {}", run.stdout);
    assert_eq!(events[n - 2]["code"], "provider_error", "{case}");
    let message = events[n - 2]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(message_has),
        "{case}: {message:?} lacks {message_has:?}"
    );
    assert_eq!(events[n - 1]["status"], "error", "{case}");
    assert!(
        !events.iter().any(|e| e["type"] == "final"),
        "{case}: no final after a failure"
    );
    assert_session_readable(sb, &events[0]);
}

fn assert_session_readable(sb: &Sandbox, start: &serde_json::Value) {
    let id = start["sessionId"].as_str().expect("sessionId");
    let events = common::session_events(&sb.sessions(), id);
    assert!(!events.is_empty(), "the session recorded the prompt");
}

fn assert_success(sb: &Sandbox, run: &Run, case: &str, text: &str) {
    assert_eq!(run.code, 0, "{case}: {}\n{}", run.stdout, run.stderr);
    let finals = run.of("final");
    assert_eq!(finals.len(), 1, "{case}: {}", run.stdout);
    assert_eq!(finals[0]["text"], text, "{case}");
    assert_eq!(run.events().last().expect("last")["status"], "success");
    assert_session_readable(sb, &run.events()[0]);
}

#[test]
fn transient_statuses_are_retried_then_succeed() {
    for (code, headers) in [
        (429u16, vec![("retry-after", "1")]),
        (500, vec![]),
        (502, vec![]),
        (503, vec![]),
        (529, vec![]),
    ] {
        let sb = Sandbox::new();
        let failure = headers
            .iter()
            .fold(Fault::status(code), |f, (name, value)| {
                f.header(name, value)
            });
        let server = FaultServer::start([failure, Fault::sse(sse::chat::text("recovered"))]);
        let run = run_against(&sb, &server.v1(), &[]);
        assert_success(&sb, &run, &format!("HTTP {code}"), "recovered");
        assert_eq!(server.request_count(), 2, "HTTP {code}: one retry");
    }
}

#[test]
fn persistent_statuses_fail_after_the_retry_budget() {
    for (code, words) in [
        (429u16, "rate limited"),
        (500, "server error"),
        (502, "server error"),
        (503, "server error"),
        (529, "overloaded"),
    ] {
        let sb = Sandbox::new();
        let server = FaultServer::start([Fault::status(code).header("retry-after-ms", "1")]);
        let run = run_against(&sb, &server.v1(), &[]);
        assert_provider_failure(&sb, &run, &format!("HTTP {code}"), words);
        assert_eq!(
            server.request_count(),
            2,
            "HTTP {code}: first attempt plus one retry"
        );
    }
}

#[test]
fn connection_refused_is_a_provider_error() {
    let sb = Sandbox::new();
    let url = format!("{}/v1", test_support::refused_url());
    let run = run_against(&sb, &url, &[]);
    assert_provider_failure(&sb, &run, "refused", "connect");
}

#[test]
fn a_reset_after_content_keeps_the_content_and_fails() {
    let sb = Sandbox::new();
    let partial = sse::chat::Stream::new()
        .delta("partial answer")
        .unfinished();
    let server = FaultServer::start([Fault::sse_then(partial, End::Reset)]);
    let run = run_against(&sb, &server.v1(), &[]);
    assert_provider_failure(&sb, &run, "reset", "");
    assert_eq!(run.of("text")[0]["delta"], "partial answer");
    assert_eq!(
        server.request_count(),
        1,
        "no retry once the response started"
    );
}

#[test]
fn a_truncated_sse_frame_fails() {
    let sb = Sandbox::new();
    // The "half" chunk whole, then half of the next one.
    let stream = sse::chat::Stream::new()
        .delta("half")
        .delta("cut here")
        .done();
    let server = FaultServer::start([Fault::truncated(&stream, 2)]);
    let run = run_against(&sb, &server.v1(), &[]);
    assert_provider_failure(&sb, &run, "truncated", "ended before");
    assert_eq!(run.of("text")[0]["delta"], "half");
}

#[test]
fn a_stalled_stream_hits_the_idle_timeout() {
    let sb = Sandbox::new();
    let partial = sse::chat::Stream::new().delta("then silence").unfinished();
    let server = FaultServer::start([Fault::sse_then(partial, End::Stall)]);
    let run = run_against(&sb, &server.v1(), &[]);
    assert_provider_failure(&sb, &run, "stall", "idle");
}

#[test]
fn an_empty_response_fails_cleanly() {
    let sb = Sandbox::new();
    let server = FaultServer::start([Fault::empty()]);
    let run = run_against(&sb, &server.v1(), &[]);
    assert_provider_failure(&sb, &run, "empty", "");
}

#[test]
fn bad_tool_calls_become_error_results_and_the_run_goes_on() {
    for (case, name, args) in [
        ("invalid JSON arguments", "list_dir", "{\"path\": nope"),
        ("unknown tool", "no_such_tool", "{}"),
        ("arguments not an object", "read_file", "[1,2,3]"),
    ] {
        let sb = Sandbox::new();
        let server = FaultServer::start([
            Fault::sse(sse::chat::tool_call(name, args)),
            Fault::sse(sse::chat::text("handled")),
        ]);
        let run = run_against(&sb, &server.v1(), &[]);
        assert_success(&sb, &run, case, "handled");
        let results = run.of("tool_result");
        assert_eq!(results.len(), 1, "{case}: {}", run.stdout);
        assert_eq!(results[0]["status"], "error", "{case}: {}", results[0]);
        assert_eq!(
            server.request_count(),
            2,
            "{case}: the model saw the error and answered"
        );
        assert!(
            server.requests()[1].contains("call_1"),
            "{case}: the error result went back to the model"
        );
    }
}

#[test]
fn provider_errors_that_echo_the_request_never_show_the_key() {
    let sb = Sandbox::new();
    let server = FaultServer::start([Fault::EchoHeaders]);
    let run = run_against(&sb, &server.v1(), &[]);
    assert_provider_failure(&sb, &run, "echo", "bad request");
    assert!(
        server.requests()[0]
            .head()
            .contains("sk-fault-matrix-key-0123456789"),
        "the key was sent to the server"
    );
}
