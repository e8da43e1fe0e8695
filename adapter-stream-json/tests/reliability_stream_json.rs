//! Reliability of the Zero stream-json front end: the input parser under arbitrary input,
//! garbage through the binary, sessions under SIGKILL, keys that never leak, SIGTERM during a
//! long `bash` call, a closed stdout, and a client that stops reading.
//!
//! Property runs use `AGENT_SDK_PROPTEST_CASES` cases (default 256; the ones that spawn the
//! binary use a fraction of it).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use adapter_stream_json::input::parse_input;
use adapter_stream_json::session::{SessionEvent, ZeroSessions};
use common::{line_reader, wait_output, Piped, Run, Sandbox, RUN_TIMEOUT};
use proptest::prelude::*;
use serde_json::{json, Value};
use test_support::prop::{cases, runner};
use test_support::{procs, sse, Fault, FaultServer};

fn prompt_line(content: &str) -> String {
    json!({"schemaVersion": 2, "type": "prompt", "content": content}).to_string()
}

// ---------------------------------------------------------------------------------------------
// The input parser
// ---------------------------------------------------------------------------------------------

/// Arbitrary JSON, the input's own words among the leaves.
fn json_value() -> BoxedStrategy<Value> {
    let words = [json!(2), json!("prompt"), json!("message"), json!("user")];
    test_support::prop::json_value(words.to_vec())
}

/// A valid input event, then mutated: a field dropped, added, or retyped.
fn mutated_event() -> impl Strategy<Value = String> {
    const FIELDS: [&str; 7] = [
        "schemaVersion",
        "type",
        "content",
        "role",
        "images",
        "Content",
        "extra",
    ];
    let base = prop_oneof![
        Just(json!({"schemaVersion": 2, "type": "prompt", "content": "hi"})),
        Just(
            json!({"schemaVersion": 2, "type": "message", "role": "user", "content": "hi",
                    "images": [{"mediaType": "png", "data": "aGVsbG8="}]})
        ),
    ];
    (
        base,
        prop::sample::select(&FIELDS[..]),
        json_value(),
        0..3u8,
    )
        .prop_map(|(mut event, field, value, op)| {
            let map = event.as_object_mut().expect("object");
            match op {
                0 => {
                    map.remove(field);
                }
                _ => {
                    map.insert(field.to_string(), value);
                }
            }
            event.to_string()
        })
}

/// One input line: arbitrary bytes, arbitrary JSON, mutated events, valid events, deep
/// nesting, huge strings, blank lines.
fn input_line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        2 => prop::collection::vec(any::<u8>(), 0..64),
        2 => json_value().prop_map(|v| v.to_string().into_bytes()),
        4 => mutated_event().prop_map(String::into_bytes),
        2 => "\\PC{1,12}".prop_map(|c| prompt_line(&c).into_bytes()),
        1 => (1usize..400).prop_map(|d| format!("{}{}", "[".repeat(d), "]".repeat(d)).into_bytes()),
        1 => (1usize..400).prop_map(|d| format!("{}1{}", "{\"a\":".repeat(d), "}".repeat(d)).into_bytes()),
        1 => Just(prompt_line(&"x".repeat(200_000)).into_bytes()),
        1 => Just(b"  \r".to_vec()),
        1 => Just(vec![0xff, 0xfe, b'{', 0x00]),
    ]
}

/// Every message the parser may give, by its fixed prefix or whole text.
fn is_protocol_error(message: &str, lines: usize) -> bool {
    if let Some(rest) = message.strip_prefix("Invalid stream-json input at line ") {
        let Some((number, what)) = rest.split_once(": ") else {
            return false;
        };
        let number: usize = number.parse().unwrap_or(0);
        let known = [
            "expected a JSON object.",
            "schemaVersion must be 2",
            "content is required",
            "role must be user",
            "type must be prompt or message",
        ];
        return number >= 1
            && number <= lines
            && (known.contains(&what) || what.starts_with("unknown field "));
    }
    false
}

#[test]
fn the_input_parser_never_panics_and_always_answers_in_zero_words() {
    let strategy = prop::collection::vec(input_line(), 0..6);
    let result = runner(cases()).run(&strategy, |lines| {
        let mut data = Vec::new();
        for line in &lines {
            data.extend_from_slice(line);
            data.push(b'\n');
        }
        let text = String::from_utf8_lossy(&data).into_owned();
        let count = text.split('\n').count();
        match parse_input(&text) {
            Ok(events) => prop_assert!(events.len() <= lines.len()),
            Err(err) => prop_assert!(
                is_protocol_error(&err.0, count),
                "not a protocol error: {:?}",
                err.0
            ),
        }
        Ok(())
    });
    if let Err(err) = result {
        panic!("{err}");
    }
}

#[test]
fn nesting_past_serde_limits_is_a_plain_input_error() {
    for depth in [127, 128, 129, 10_000, 1_000_000] {
        let line = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let err = parse_input(&line).expect_err("not an object");
        assert_eq!(
            err.0, "Invalid stream-json input at line 1: expected a JSON object.",
            "depth {depth}"
        );
        let line = format!(
            "{{\"schemaVersion\":2,\"type\":\"prompt\",\"content\":{}\"x\"{}}}",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let err = parse_input(&line).expect_err("content is not a string");
        assert_eq!(
            err.0, "Invalid stream-json input at line 1: expected a JSON object.",
            "depth {depth}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Garbage through the binary
// ---------------------------------------------------------------------------------------------

fn run_input(sb: &Sandbox, script: &Path, stdin: &[u8]) -> Run {
    let mut child = sb
        .script_command(script, &["-i", "stream-json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut input = child.stdin.take().expect("stdin");
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let run = Run::from(wait_output(child, RUN_TIMEOUT));
    let _ = writer.join();
    run
}

#[test]
fn chaos_garbage_lines_give_exactly_the_parser_s_usage_error() {
    let sb = Sandbox::new();
    let script = sb.script("s.json", &json!({"turns": [{"steps": [{"text": "fine"}]}]}));
    let strategy = (
        prop::collection::vec(input_line(), 1..6),
        prop::collection::vec(input_line(), 0..3),
    );
    let result = runner((cases() / 16).max(8)).run(&strategy, |(before, after)| {
        // Valid prompts interleaved with garbage; the garbage makes the input invalid.
        let mut data = prompt_line("first").into_bytes();
        data.push(b'\n');
        for line in &before {
            data.extend_from_slice(line);
            data.push(b'\n');
        }
        data.extend_from_slice(
            b"{\"schemaVersion\":2,\"type\":\"prompt\",\"content\":\"x\",\"bogus\":1}\n",
        );
        for line in &after {
            data.extend_from_slice(line);
            data.push(b'\n');
        }
        let expected = parse_input(&String::from_utf8_lossy(&data))
            .expect_err("the input holds an unknown field")
            .0;
        let run = run_input(&sb, &script, &data);
        run.assert_usage_error(&expected);
        Ok(())
    });
    if let Err(err) = result {
        panic!("{err}");
    }
    // And a valid input after all that garbage still runs.
    let run = run_input(&sb, &script, format!("{}\n", prompt_line("ok")).as_bytes());
    assert_eq!(run.code, 0, "{}", run.stdout);
}

// ---------------------------------------------------------------------------------------------
// Crash-safe sessions
// ---------------------------------------------------------------------------------------------

/// A turn writing files (checkpoints, session events) and streaming text.
fn busy_script() -> Value {
    let mut first = vec![json!({"text": "working "})];
    for i in 0..6 {
        first.push(json!({"tool_call": {"id": format!("w{i}"), "name": "write_file",
            "args": [json!({"path": format!("f{i}.txt"), "content": "x".repeat(2000)}).to_string()]}}));
    }
    let mut second = Vec::new();
    for i in 0..30 {
        second.push(json!({"text": format!("chunk {i} ")}));
    }
    second.push(json!({"usage": {"input": 10, "output": 30}}));
    json!({"turns": [{"steps": first}, {"steps": second}]})
}

/// Every line of `events.jsonl` parses except possibly a torn last line without newline;
/// sequences run 1..n without gaps; metadata is readable and follows the log as exec's
/// buffered store keeps it: once per second of events, so the events it has not counted
/// are of its `updatedAt`'s second, but for a last one a kill between the two writes left
/// uncounted, and it is never ahead by more than one (a torn event it counted). With
/// `contiguous` false, sequences need only increase (that torn event's number stays unused).
fn assert_session_consistent(store: &ZeroSessions, id: &str, contiguous: bool) -> usize {
    let meta = store
        .get(id)
        .unwrap_or_else(|e| panic!("{id}: metadata unreadable: {e}"))
        .unwrap_or_else(|| panic!("{id}: metadata missing"));
    let events = store
        .read_events(id)
        .unwrap_or_else(|e| panic!("{id}: events unreadable: {e}"));
    for (i, event) in events.iter().enumerate() {
        match contiguous {
            true => assert_eq!(event.sequence, i as u64 + 1, "{id}: sequence gap"),
            false => assert!(
                i == 0 || event.sequence > events[i - 1].sequence,
                "{id}: sequences out of order"
            ),
        }
    }
    let last = events.last().map_or(0, |e| e.sequence);
    let uncounted: Vec<&SessionEvent> = events
        .iter()
        .filter(|e| e.sequence > meta.event_count)
        .collect();
    let lag_of_one_second = uncounted
        .iter()
        .rev()
        .skip(1)
        .all(|e| e.created_at == meta.updated_at);
    assert!(
        meta.event_count <= last + 1 && lag_of_one_second,
        "{id}: metadata counts {} events (updated {}), the file holds {:?}",
        meta.event_count,
        meta.updated_at,
        uncounted
            .iter()
            .map(|e| (e.sequence, &e.created_at))
            .collect::<Vec<_>>()
    );
    events.len()
}

#[test]
fn sessions_survive_sigkill_at_random_points() {
    let sb = Sandbox::new();
    let script = sb.script("busy.json", &busy_script());
    let trials = (cases() / 16).clamp(8, 64);
    let mut rng_state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        rng_state
    };
    let mut ids = Vec::new();
    for _ in 0..trials {
        let mut child = sb
            .script_command(&script, &["--skip-permissions-unsafe", "work"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let lines = line_reader(child.stdout.take().expect("stdout"));
        // Kill after a random number of lines (0 = right after start-up output begins).
        let kill_after = next() % 40;
        let mut seen = 0;
        let mut id = None;
        while seen <= kill_after {
            match lines.recv_timeout(RUN_TIMEOUT) {
                Ok(line) => {
                    if id.is_none() {
                        let v: Value = serde_json::from_str(&line).expect("json");
                        id = v["sessionId"].as_str().map(str::to_string);
                    }
                    seen += 1;
                }
                Err(_) => break,
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        if let Some(id) = id {
            ids.push(id);
        }
    }
    let store = ZeroSessions::new(sb.sessions());
    let listed = store.list().expect("list");
    let dirs = std::fs::read_dir(sb.sessions()).expect("sessions").count();
    assert_eq!(listed.len(), dirs, "every session directory is listed");
    for id in &ids {
        assert!(listed.iter().any(|m| &m.session_id == id), "{id} is listed");
    }
    let script_ok = sb.script(
        "ok.json",
        &json!({"turns": [{"steps": [{"text": "resumed"}]}]}),
    );
    for meta in &listed {
        let before = assert_session_consistent(&store, &meta.session_id, true);
        let run = sb.exec_script(&script_ok, &["--resume", &meta.session_id, "continue"], "");
        assert_eq!(
            run.code, 0,
            "{} does not resume: {}\n{}",
            meta.session_id, run.stdout, run.stderr
        );
        let after = assert_session_consistent(&store, &meta.session_id, true);
        assert!(
            after > before,
            "{}: the resumed run was recorded",
            meta.session_id
        );
    }
}

#[test]
fn a_torn_last_line_is_recovered_on_resume() {
    let sb = Sandbox::new();
    let script = sb.script("busy.json", &busy_script());
    let run = sb.exec_script(&script, &["--skip-permissions-unsafe", "work"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let id = run.session_id();
    let path = sb.sessions().join(&id).join("events.jsonl");
    let whole = std::fs::read(&path).expect("events");
    let meta_path = sb.sessions().join(&id).join("metadata.json");
    let meta = std::fs::read(&meta_path).expect("metadata");
    let store = ZeroSessions::new(sb.sessions());
    let complete = store.read_events(&id).expect("events").len();
    let last_start = whole[..whole.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let ok = sb.script(
        "ok.json",
        &json!({"turns": [{"steps": [{"text": "again"}]}]}),
    );
    // Tear the last line at several points: one byte, the middle, all but its newline.
    let line_len = whole.len() - last_start;
    for cut in [1, line_len / 2, line_len - 1] {
        std::fs::write(&path, &whole[..last_start + cut]).expect("tear");
        let events = store.read_events(&id).expect("a torn tail stays readable");
        // A last line missing only its newline is still whole JSON and is kept.
        let expected = match cut == line_len - 1 {
            true => complete,
            false => complete - 1,
        };
        assert_eq!(
            events.len(),
            expected,
            "cut {cut}: only the torn event is lost"
        );
        let run = sb.exec_script(&ok, &["--resume", &id, "again"], "");
        assert_eq!(run.code, 0, "cut {cut}: {}\n{}", run.stdout, run.stderr);
        let data = std::fs::read_to_string(&path).expect("events");
        assert!(data.ends_with('\n'));
        for line in data.lines() {
            serde_json::from_str::<Value>(line)
                .unwrap_or_else(|e| panic!("cut {cut}: a bad line survived ({e}): {line}"));
        }
        assert_session_consistent(&store, &id, false);
        std::fs::write(&path, &whole).expect("restore");
        std::fs::write(&meta_path, &meta).expect("restore");
    }
}

// ---------------------------------------------------------------------------------------------
// No leaked secrets
// ---------------------------------------------------------------------------------------------

fn all_files(dir: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                all_files(&path, out);
            } else {
                out.push(path);
            }
        }
    }
}

#[test]
fn random_keys_never_reach_stdout_stderr_or_session_files() {
    let strategy = prop_oneof!["[A-Za-z0-9_-]{16,48}", "sk-[A-Za-z0-9]{24,40}"];
    let result = runner((cases() / 32).max(6)).run(&strategy, |key| {
        let sb = Sandbox::new();
        let server = FaultServer::start([
            Fault::sse(sse::chat::tool_call(
                "bash",
                &json!({"command": "env; printenv OPENAI_API_KEY; echo \"key=$OPENAI_API_KEY\" >&2"})
                    .to_string(),
            )),
            Fault::EchoHeaders,
        ]);
        let url = server.v1();
        let mut args = common::openai_exec(&url, None);
        args.extend(["--skip-permissions-unsafe", "Run env."]);
        let mut child = sb
            .command(&args)
            .env("OPENAI_API_KEY", &key)
            .env("AGENT_SDK_MAX_RETRIES", "0")
            .spawn_piped();
        let _ = child.stdin.take();
        let run = Run::from(wait_output(child, RUN_TIMEOUT));
        run.assert_framing();
        prop_assert_eq!(run.code, 3, "the echo reply fails the run: {}", run.stdout);
        let results = run.of("tool_result");
        prop_assert_eq!(results.len(), 1);
        prop_assert_eq!(&results[0]["status"], "ok", "bash ran: {}", results[0]);
        prop_assert!(
            server.requests().iter().all(|r| r.head().contains(&key)),
            "the key reached the server"
        );
        prop_assert!(!run.stdout.contains(&key), "stdout: {}", run.stdout);
        prop_assert!(!run.stderr.contains(&key), "stderr: {}", run.stderr);
        let mut files = Vec::new();
        all_files(&sb.dir.path().join("data"), &mut files);
        prop_assert!(!files.is_empty());
        for file in files {
            let data = std::fs::read(&file).expect("read");
            prop_assert!(
                !String::from_utf8_lossy(&data).contains(&key),
                "{} holds the key",
                file.display()
            );
        }
        Ok(())
    });
    if let Err(err) = result {
        panic!("{err}");
    }
}

// ---------------------------------------------------------------------------------------------
// No orphans, no hangs
// ---------------------------------------------------------------------------------------------

#[test]
fn sigterm_during_a_long_bash_call_leaves_no_process_behind() {
    signal_during_a_long_bash_call(libc::SIGTERM);
}

/// SIGINT follows the same rule as SIGTERM.
#[test]
fn sigint_during_a_long_bash_call_is_the_same_rule() {
    signal_during_a_long_bash_call(libc::SIGINT);
}

/// A signal mid-turn: `error{interrupted}` then `run_end{interrupted, 130}`, exit 130, and
/// no process of the bash call's group left.
fn signal_during_a_long_bash_call(signal: i32) {
    let sb = Sandbox::new();
    // Inside the workspace: the sandbox (workspace-write by default) refuses writes elsewhere.
    let pid_file = sb.work().join("bash.pid");
    let command = format!(
        "sleep 300 & sleep 300 & echo $$ > {}; wait",
        pid_file.display()
    );
    let script = sb.script(
        "long.json",
        &json!({"turns": [
            {"steps": [{"tool_call": {"id": "b1", "name": "bash",
                "args": [json!({"command": command}).to_string()]}}]},
            {"steps": [{"text": "never"}]}
        ]}),
    );
    let mut child = sb
        .script_command(&script, &["--skip-permissions-unsafe", "go"])
        .spawn_piped();
    let lines = line_reader(child.stdout.take().expect("stdout"));
    let pgid = procs::pid_in_blocking(&pid_file, RUN_TIMEOUT);
    assert!(!procs::group(pgid).is_empty(), "the bash group is running");
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(child.id() as i32, signal) };
    let mut seen = Vec::new();
    while let Ok(line) = lines.recv_timeout(RUN_TIMEOUT) {
        seen.push(serde_json::from_str::<Value>(&line).expect("json"));
    }
    let output = wait_output(child, RUN_TIMEOUT);
    assert_eq!(output.status.code(), Some(130));
    let tail: Vec<&Value> = seen.iter().rev().take(2).collect();
    assert_eq!(tail[1]["type"], "error", "{seen:?}");
    assert_eq!(tail[1]["code"], "interrupted");
    assert_eq!(tail[0]["type"], "run_end");
    assert_eq!(tail[0]["status"], "interrupted");
    assert_eq!(tail[0]["exitCode"], 130);
    let left = procs::wait_group_gone_blocking(pgid, Duration::from_secs(10));
    assert!(
        left.is_empty(),
        "processes of group {pgid} outlived the run: {left:?}"
    );
}

#[test]
fn a_stdout_closed_mid_run_ends_the_process_with_exit_1_and_no_panic() {
    let sb = Sandbox::new();
    let mut steps = Vec::new();
    for i in 0..200 {
        steps.push(json!({"text": format!("line {i} ")}));
        if i == 0 {
            steps.push(json!({"delay_ms": 200}));
        }
    }
    let script = sb.script("many.json", &json!({"turns": [{"steps": steps}]}));
    let mut child = sb.script_command(&script, &["go"]).spawn_piped();
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("run_start");
    assert!(first.contains("run_start"));
    drop(stdout);
    let run = Run::from(wait_output(child, RUN_TIMEOUT));
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

#[test]
fn a_client_that_stops_reading_does_not_grow_memory() {
    const TOTAL: usize = 32 << 20;
    const CHUNK: usize = 8192;
    let sb = Sandbox::new();
    // `TOTAL` bytes of text in `CHUNK`-byte deltas, then the finish chunk and `[DONE]`.
    let server = FaultServer::start([Fault::chat_flood(CHUNK, TOTAL / CHUNK)]);
    let url = server.v1();
    let mut args = common::openai_exec(&url, None);
    args.push("flood");
    let mut child = sb
        .command(&args)
        .env("AGENT_SDK_MAX_RETRIES", "0")
        .env("ZERO_CHECKPOINTS", "off")
        .spawn_piped();
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("run_start");
    let baseline = procs::rss_kib(child.id());
    // Stop reading: the pipe fills, the writer blocks, and so must everything behind it.
    // Stalled: no frame went out for two seconds.
    let stalled_at =
        server.wait_for_flood_stall(Duration::from_secs(2), TOTAL / CHUNK, RUN_TIMEOUT) * CHUNK;
    let rss = procs::rss_kib(child.id());
    eprintln!("stalled after {stalled_at} of {TOTAL} bytes; RSS {baseline} -> {rss} KiB");
    assert!(
        stalled_at < TOTAL / 4 * 3,
        "the server could push {stalled_at} of {TOTAL} bytes past a client that reads nothing"
    );
    assert!(
        rss < baseline + 64 * 1024,
        "RSS grew from {baseline} KiB to {rss} KiB while the client read nothing"
    );
    // Reading again drains the run to its end.
    let reader = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stdout.read_to_string(&mut rest);
        rest
    });
    let output = wait_output(child, RUN_TIMEOUT * 2);
    let rest = reader.join().expect("reader");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let last = rest.lines().last().expect("lines");
    assert!(last.contains("\"run_end\""), "{last}");
}
