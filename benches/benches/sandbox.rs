//! Start-up cost of a confined command beside an unconfined one (issue 19).
//!
//! - `spawn/*`: `bash -c true` prepared by `agent_sandbox::prepare` with the sandbox off
//!   (process group only) and with `workspace-write` (Landlock ruleset built in the parent,
//!   `pre_exec` applying it and the seccomp filter in the child), network denied;
//! - `prepare/*`: `prepare` alone (the ruleset is built per call; the filter once);
//! - `bash-tool/*`: the whole `bash` tool call (`bash -lc true` with the login profile of an
//!   empty `$HOME`, output capture, denial scan) with the sandbox off and on. With the
//!   user's own `$HOME` the profile dominates (pyenv's init alone costs 100+ ms here);
//! - `probe`: the uncached kernel probe (`probe()` itself is cached per process).

use std::process::Stdio;

use agent_core::sandbox::{SandboxContext, SandboxPolicy};
use agent_core::ToolContext;
use agent_sandbox::{prepare, probe_kernel, PrivateTmp, Roots};
use agent_tools::ToolSet;
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;

fn bench_sandbox(c: &mut Criterion) {
    // A clean login profile, so the figures are the sandbox's and not the user's dotfiles'.
    let home = tempfile::tempdir().expect("home");
    std::env::set_var("HOME", home.path());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ws = tempfile::tempdir().expect("tempdir");
    let tmp = PrivateTmp::new().expect("private tmp");
    let roots = Roots::new(ws.path()).tmp(tmp.path());
    let off = SandboxContext::new(SandboxPolicy::off());
    let on = SandboxContext::new(SandboxPolicy::workspace_write());

    let mut group = c.benchmark_group("sandbox");
    group.sample_size(30);
    for (name, sandbox) in [("spawn/off", &off), ("spawn/workspace-write", &on)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    let mut cmd = tokio::process::Command::new("bash");
                    cmd.arg("-c")
                        .arg("true")
                        .current_dir(ws.path())
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null());
                    prepare(&mut cmd, sandbox, &roots).expect("prepare");
                    let status = cmd.status().await.expect("spawn");
                    assert!(status.success());
                })
            })
        });
    }

    for (name, sandbox) in [("prepare/off", &off), ("prepare/workspace-write", &on)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut cmd = tokio::process::Command::new("bash");
                prepare(&mut cmd, sandbox, &roots).expect("prepare")
            })
        });
    }

    let tools = ToolSet::defaults(ws.path());
    let bash = tools.get("bash").expect("bash").clone();
    for (name, sandbox) in [("bash-tool/off", &off), ("bash-tool/workspace-write", &on)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    let ctx = ToolContext::new(ws.path()).with_sandbox(sandbox.clone());
                    let out = bash
                        .call(json!({"command": "true"}), ctx)
                        .await
                        .expect("bash");
                    assert!(!out.is_error, "{}", out.text_content());
                })
            })
        });
    }

    group.sample_size(100);
    group.bench_function("probe", |b| b.iter(probe_kernel));
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = bench_sandbox
}
criterion_main!(benches);
