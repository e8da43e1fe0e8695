//! What an exec run leaves on disk: its agent records to the session's real storage
//! ([`ZeroStorage`](crate::session::ZeroStorage), without transcripts), and the session's
//! directory holds Zero's files only, written by the recorder from the events.

use std::sync::{Arc, Mutex};

use agent_providers::scripted::{ScriptedProvider, Turn};

use super::{run_exec, ExecHooks, ExecIo};
use crate::session::{ZeroSessions, EVENTS_FILE, LOCK_FILE, METADATA_FILE};

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buf {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("buffer").extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every path under `dir`, relative, sorted.
fn tree(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(at) = dirs.pop() {
        for entry in std::fs::read_dir(&at).expect("dir").flatten() {
            let path = entry.path();
            let name = path
                .strip_prefix(dir)
                .expect("inside")
                .display()
                .to_string();
            if path.is_dir() {
                dirs.push(path);
                out.push(format!("{name}/"));
            } else {
                out.push(name);
            }
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_session_holds_zeros_files_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (data, work) = (dir.path().join("data"), dir.path().join("work"));
    std::fs::create_dir_all(&work).expect("work");
    std::fs::write(work.join("a.txt"), "old").expect("a.txt");
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "write_file", r#"{"path":"a.txt","content":"x"}"#),
        Turn::new().text("Written."),
    ]);
    let env_data = data.clone();
    let hooks = ExecHooks {
        provider: Some(Arc::new(provider)),
        env: Arc::new(move |k| (k == "XDG_DATA_HOME").then(|| env_data.display().to_string())),
        cwd: Some(work.clone()),
        ..ExecHooks::default()
    };
    let out = Buf::default();
    let io = ExecIo {
        stdin: Box::new(std::io::empty()),
        stdout: Box::new(out.clone()),
        stderr: Box::new(std::io::sink()),
    };
    let args: Vec<String> = [
        "-o",
        "stream-json",
        "--skip-permissions-unsafe",
        "--init-session-id",
        "s1",
        "Write a.txt",
    ]
    .map(String::from)
    .to_vec();
    let code = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        run_exec(&args, io, hooks),
    )
    .await
    .expect("run_exec finishes");
    let stdout = String::from_utf8_lossy(&out.0.lock().expect("buffer")).into_owned();
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(
        std::fs::read_to_string(work.join("a.txt")).expect("a.txt"),
        "x"
    );

    let sessions = ZeroSessions::new(data.join("zero").join("sessions"));
    let files = tree(&sessions.session_dir("s1"));
    let blobs: Vec<&String> = files.iter().filter(|f| f.starts_with("blobs/")).collect();
    let zero: Vec<&str> = files
        .iter()
        .filter(|f| !f.starts_with("blobs/"))
        .map(String::as_str)
        .collect();
    assert_eq!(zero, [EVENTS_FILE, METADATA_FILE, LOCK_FILE], "{files:?}");
    assert_eq!(blobs.len(), 2, "the checkpoint's blob: {files:?}");
    let events = sessions.read_events("s1").expect("Zero reads them");
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"message"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"message"), "{kinds:?}");
    assert!(kinds.contains(&"tool_call"), "{kinds:?}");
    let meta = sessions.get("s1").expect("get").expect("meta");
    assert_eq!(meta.event_count, events.len() as u64);
    assert!(meta.extra.is_empty(), "no host fields: {:?}", meta.extra);
}
