//! Real confinement on this kernel: Landlock and seccomp must be there (CI runs on a kernel
//! with Landlock ABI >= 4 and seccomp; a machine without them fails these tests, it does
//! not skip them).
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use agent_core::sandbox::{
    NetworkAccess, SandboxContext, SandboxFallback, SandboxPolicy, SandboxSupport,
};
use agent_sandbox::{prepare, probe, DenialKind, PrivateTmp, ProcessGroup, Roots, SandboxError};
use tokio::io::AsyncReadExt;

const LIMIT: Duration = Duration::from_secs(30);

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `script` with `bash -c` under `policy` in `ws` (with `tmp` as the private temp dir).
async fn run(
    policy: SandboxPolicy,
    ws: &Path,
    tmp: &Path,
    script: &str,
) -> (Ran, agent_sandbox::Confinement) {
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(script)
        .current_dir(ws)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let roots = Roots::new(ws).tmp(tmp);
    let confinement = prepare(&mut cmd, &SandboxContext::new(policy), &roots).expect("prepare");
    let child = cmd.spawn().expect("spawn");
    let _group = ProcessGroup::of(&child);
    let out = tokio::time::timeout(LIMIT, child.wait_with_output())
        .await
        .expect("command timed out")
        .expect("wait");
    let ran = Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    (ran, confinement)
}

/// A path outside every writable root that the test may create and must clean up.
struct Outside(PathBuf);

impl Outside {
    fn new(dir: &Path, tag: &str) -> Self {
        let name = format!("agent-sandbox-test-{}-{tag}", std::process::id());
        let path = dir.join(name);
        let _ = std::fs::remove_file(&path);
        Self(path)
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn home() -> PathBuf {
    PathBuf::from(std::env::var_os("HOME").expect("HOME is set"))
}

#[test]
fn this_kernel_supports_landlock_and_seccomp() {
    let support = probe();
    assert!(
        support.landlock_abi.is_some_and(|abi| abi >= 4),
        "Landlock ABI >= 4 is required for these tests: {support:?}"
    );
    assert!(support.seccomp, "seccomp is required: {support:?}");
}

#[tokio::test]
async fn workspace_write_confines_writes_to_the_workspace_and_temp_dir() {
    let ws = tempfile::tempdir().unwrap();
    let tmp = PrivateTmp::new().unwrap();
    let in_home = Outside::new(&home(), "home");
    let in_etc = Outside::new(Path::new("/etc"), "etc");
    let script = format!(
        "touch ws.txt && echo tmp > \"$TMPDIR/t.txt\" && echo ok; \
         touch '{}'; echo home=$?; touch '{}'; echo etc=$?",
        in_home.0.display(),
        in_etc.0.display()
    );
    let (ran, confinement) = run(
        SandboxPolicy::workspace_write(),
        ws.path(),
        tmp.path(),
        &script,
    )
    .await;
    assert!(confinement.filesystem_confined() && confinement.network_filtered());
    assert!(ran.stdout.contains("ok"), "{}{}", ran.stdout, ran.stderr);
    assert!(ws.path().join("ws.txt").exists());
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("t.txt")).unwrap(),
        "tmp\n"
    );
    assert!(
        ran.stdout.contains("home=1") && ran.stdout.contains("etc=1"),
        "{}",
        ran.stdout
    );
    assert!(!in_home.0.exists(), "wrote to $HOME");
    assert!(!in_etc.0.exists(), "wrote to /etc");
    let denial = confinement
        .find_denial(&ran.stderr, ws.path())
        .expect("the refusal is recognised");
    assert_eq!(denial.kind, DenialKind::FileSystem);
    assert_eq!(
        denial.path.as_deref(),
        Some(&*in_home.0.display().to_string())
    );
}

#[tokio::test]
async fn read_only_refuses_writes_in_the_workspace() {
    let ws = tempfile::tempdir().unwrap();
    let tmp = PrivateTmp::new().unwrap();
    let (ran, confinement) = run(
        SandboxPolicy::read_only(),
        ws.path(),
        tmp.path(),
        "cat /etc/hostname >/dev/null && echo read=ok; echo x > out.txt; echo write=$?; \
         echo y > \"$TMPDIR/scratch\" && echo tmp=ok",
    )
    .await;
    assert!(
        ran.stdout.contains("read=ok"),
        "{}{}",
        ran.stdout,
        ran.stderr
    );
    assert!(ran.stdout.contains("write=1"), "{}", ran.stdout);
    assert!(
        ran.stdout.contains("tmp=ok"),
        "{}{}",
        ran.stdout,
        ran.stderr
    );
    assert!(!ws.path().join("out.txt").exists());
    let denial = confinement
        .find_denial(&ran.stderr, ws.path())
        .expect("denial");
    let expected = std::fs::canonicalize(ws.path()).unwrap().join("out.txt");
    assert_eq!(
        denial.path.as_deref(),
        Some(&*expected.display().to_string())
    );
}

#[tokio::test]
async fn network_deny_refuses_a_local_connection_and_allow_permits_it() {
    let ws = tempfile::tempdir().unwrap();
    let tmp = PrivateTmp::new().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("echo hello > /dev/tcp/127.0.0.1/{port}");

    let (ran, confinement) = run(
        SandboxPolicy::workspace_write(),
        ws.path(),
        tmp.path(),
        &script,
    )
    .await;
    assert_ne!(ran.code, Some(0), "connected despite network deny");
    let denial = confinement
        .find_denial(&ran.stderr, ws.path())
        .expect("denial");
    assert_eq!(denial.kind, DenialKind::Network, "{}", ran.stderr);

    let allow = SandboxPolicy::workspace_write().network(NetworkAccess::Allow);
    let accept = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut got = String::new();
        socket.read_to_string(&mut got).await.unwrap();
        got
    });
    let (ran, confinement) = run(allow, ws.path(), tmp.path(), &script).await;
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(!confinement.network_filtered());
    let got = tokio::time::timeout(LIMIT, accept).await.unwrap().unwrap();
    assert_eq!(got, "hello\n");
}

#[tokio::test]
async fn landlock_alone_refuses_tcp_when_seccomp_is_unavailable() {
    let ws = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut support = probe();
    support.seccomp = false;
    let sandbox = SandboxContext {
        policy: SandboxPolicy::workspace_write(),
        support: Some(support),
        escalation: None,
    };
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(format!("echo hi > /dev/tcp/127.0.0.1/{port}"))
        .stderr(Stdio::piped());
    let confinement = prepare(&mut cmd, &sandbox, &Roots::new(ws.path())).unwrap();
    let out = tokio::time::timeout(LIMIT, cmd.output())
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("connect: Permission denied"), "{stderr}");
    assert_eq!(
        confinement.find_denial(&stderr, ws.path()).map(|d| d.kind),
        Some(DenialKind::Network)
    );
}

#[tokio::test]
async fn udp_sockets_are_refused_too() {
    let ws = tempfile::tempdir().unwrap();
    let tmp = PrivateTmp::new().unwrap();
    // bash opens a UDP socket for /dev/udp: only seccomp stops that (Landlock covers TCP).
    let (ran, _) = run(
        SandboxPolicy::workspace_write(),
        ws.path(),
        tmp.path(),
        "echo x > /dev/udp/127.0.0.1/9; echo udp=$?",
    )
    .await;
    assert!(ran.stdout.contains("udp=1"), "{}{}", ran.stdout, ran.stderr);
}

#[tokio::test]
async fn children_of_a_confined_command_stay_confined() {
    let ws = tempfile::tempdir().unwrap();
    let tmp = PrivateTmp::new().unwrap();
    let a = Outside::new(&home(), "child-a");
    let b = Outside::new(&home(), "child-b");
    let script = format!(
        "sh -c \"touch '{}'\"; setsid sh -c \"touch '{}'\"; \
         nohup bash -c 'touch nested.txt' >/dev/null 2>&1; echo done",
        a.0.display(),
        b.0.display()
    );
    let (ran, _) = run(
        SandboxPolicy::workspace_write(),
        ws.path(),
        tmp.path(),
        &script,
    )
    .await;
    assert!(ran.stdout.contains("done"), "{}{}", ran.stdout, ran.stderr);
    assert!(
        !a.0.exists() && !b.0.exists(),
        "a child escaped: {}",
        ran.stderr
    );
    assert!(ws.path().join("nested.txt").exists());
}

#[tokio::test]
async fn off_allows_everything() {
    let ws = tempfile::tempdir().unwrap();
    let tmp = PrivateTmp::new().unwrap();
    let outside = Outside::new(&home(), "off");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "touch '{}' && echo > /dev/tcp/127.0.0.1/{port} && echo ok",
        outside.0.display()
    );
    let (ran, confinement) = run(SandboxPolicy::off(), ws.path(), tmp.path(), &script).await;
    assert!(!confinement.is_confined());
    assert!(ran.stdout.contains("ok"), "{}", ran.stderr);
    assert!(outside.0.exists());
}

#[tokio::test]
async fn an_unenforceable_policy_follows_its_fallback() {
    let ws = tempfile::tempdir().unwrap();
    let no_kernel = SandboxSupport::unavailable("simulated: landlock_create_ruleset failed");
    let refuse = SandboxContext {
        policy: SandboxPolicy::workspace_write().fallback(SandboxFallback::Refuse),
        support: Some(no_kernel.clone()),
        escalation: None,
    };
    let mut cmd = tokio::process::Command::new("true");
    let err = prepare(&mut cmd, &refuse, &Roots::new(ws.path())).unwrap_err();
    assert!(matches!(err, SandboxError::Refused { .. }), "{err}");
    assert!(err.to_string().contains("simulated"), "{err}");

    // `allow` (and `prompt`, once the gate asked) run with what is there: nothing here.
    let allow = SandboxContext {
        policy: SandboxPolicy::workspace_write().fallback(SandboxFallback::Allow),
        support: Some(no_kernel),
        escalation: None,
    };
    let confinement = prepare(&mut cmd, &allow, &Roots::new(ws.path())).unwrap();
    assert!(!confinement.is_confined());
    assert!(
        confinement.describe().contains("not enforced"),
        "{}",
        confinement.describe()
    );
}

#[tokio::test]
async fn the_process_group_dies_with_the_guard() {
    let ws = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg("sleep 300 & echo $!; wait")
        .stdout(Stdio::piped());
    prepare(
        &mut cmd,
        &SandboxContext::new(SandboxPolicy::workspace_write()),
        &Roots::new(ws.path()),
    )
    .unwrap();
    let mut child = cmd.spawn().unwrap();
    let group = ProcessGroup::of(&child);
    let mut stdout = child.stdout.take().unwrap();
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while tokio::time::timeout(LIMIT, stdout.read(&mut byte))
        .await
        .unwrap()
        .unwrap()
        == 1
        && byte[0] != b'\n'
    {
        line.push(byte[0]);
    }
    let sleeper: i32 = String::from_utf8(line).unwrap().trim().parse().unwrap();
    drop(group);
    let status = tokio::time::timeout(LIMIT, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(!status.success());
    let gone = tokio::time::timeout(LIMIT, async {
        // Polls /proc: the sleeper disappears (or turns zombie) once the group is killed.
        loop {
            let state =
                std::fs::read_to_string(format!("/proc/{sleeper}/stat")).unwrap_or_default();
            if state.is_empty()
                || state
                    .rsplit(')')
                    .next()
                    .is_some_and(|s| s.trim_start().starts_with('Z'))
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(gone.is_ok(), "the background sleeper outlived its group");
}
