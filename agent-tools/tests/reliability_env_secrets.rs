//! A key held in a sensitive environment variable never leaves a tool: not through `env`,
//! `printenv NAME` (a bare value no pattern recognises), a file that holds it, nor `bash`
//! progress. One test in its own binary, because it sets the process environment.
//!
//! Property runs use `AGENT_SDK_PROPTEST_CASES` cases (default 256, divided by 32 here
//! because every case starts shells).

use std::time::Duration;

use agent_core::{tool::ProgressSink, ToolContext};
use agent_tools::ToolSet;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use serde_json::json;

const VAR: &str = "RELIABILITY_TEST_API_KEY";

fn cases() -> u32 {
    let cases: u32 = std::env::var("AGENT_SDK_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(256);
    (cases / 32).max(6)
}

#[test]
fn environment_keys_never_reach_tool_output_or_progress() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut runner = TestRunner::new(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let keys = prop_oneof![
        "[A-Za-z0-9_-]{12,48}",
        "sk-[A-Za-z0-9]{20,40}",
        "[a-f0-9]{32}",
    ];
    let result = runner.run(&keys, |key| {
        // Only this test runs in this binary; nothing else reads the environment now.
        std::env::set_var(VAR, &key);
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(".env"), format!("export THING={key}\n")).expect("file");
        let tools = ToolSet::defaults(dir.path());
        let commands = [
            "env".to_string(),
            format!("printenv {VAR}"),
            format!("printf '%s\\n' \"${VAR}\" >&2; exit 1"),
            // Long enough to report progress before it ends; the key straddles the start
            // of the 2048-byte progress tail.
            format!(
                "printenv {VAR}; head -c {} /dev/zero | tr '\\0' x; sleep 0.35",
                2047 - key.len().div_ceil(2)
            ),
        ];
        let mut outputs = Vec::new();
        for command in &commands {
            let (sink, mut progress) = ProgressSink::channel();
            let mut ctx = ToolContext::new(dir.path());
            ctx.progress = sink;
            let bash = tools.get("bash").expect("bash");
            let out = rt.block_on(async {
                tokio::time::timeout(
                    Duration::from_secs(60),
                    bash.call(json!({"command": command}), ctx),
                )
                .await
                .expect("bash finished")
            });
            let text = match out {
                Ok(out) => out.text_content(),
                Err(err) => err.to_string(),
            };
            prop_assert!(
                text.contains("[REDACTED]"),
                "{command}: the key is not reported as redacted: {text}"
            );
            outputs.push((command.clone(), text));
            while let Ok(p) = progress.try_recv() {
                outputs.push((format!("progress of {command}"), p.text));
            }
        }
        let read = rt.block_on(async {
            tools
                .get("read_file")
                .expect("read_file")
                .call(json!({"path": ".env"}), ToolContext::new(dir.path()))
                .await
        });
        outputs.push((
            "read_file".into(),
            read.map(|o| o.text_content())
                .unwrap_or_else(|e| e.to_string()),
        ));
        // Not even a part of it: any 10 consecutive characters of the key count as a leak.
        let window = key.len().min(10);
        for (what, text) in &outputs {
            for part in key.as_bytes().windows(window) {
                let part = std::str::from_utf8(part).expect("ascii key");
                prop_assert!(
                    !text.contains(part),
                    "{what} leaked {part:?} of the key: {text}"
                );
            }
        }
        Ok(())
    });
    std::env::remove_var(VAR);
    if let Err(err) = result {
        panic!("{err}");
    }
}
