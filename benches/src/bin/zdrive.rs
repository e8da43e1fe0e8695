//! A minimal ZCode app-server (and ACP) client for `benches/process.sh`: it drives a front end over
//! stdio the way a host does, so the front end's wall time and peak RSS can be measured by
//! hyperfine and `/usr/bin/time` around it.
//!
//! ```text
//! zdrive prompt [WORKSPACE] -- CMD ARGS…   session/create, session/subscribe, session/send,
//!                                          read until turn.completed/turn.failed, close stdin,
//!                                          wait for exit (exit 0 on turn.completed)
//! zdrive acp [WORKSPACE] -- CMD ARGS…      ACP: initialize, session/new, session/prompt
//!                                          (answered when the turn ends), close stdin, wait
//! zdrive idle N [WORKSPACE] -- CMD ARGS…   N × session/create, then print the front end's
//!                                          RSS (/proc/PID/status) at 0, N/10, N/2 and N
//!                                          sessions and the KiB per session
//! ```
//!
//! With `ZDRIVE_TIMES=FILE`, `prompt` and `acp` append the front end's own wall time in
//! milliseconds to FILE, one line a run: from just before it is spawned to its exit, as
//! hyperfine times a command it starts (the driver's own start-up and exit are not in it).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::Instant;

use serde_json::{json, Value};

struct Server {
    /// When the front end was spawned.
    spawned: Instant,
    /// Whether requests carry `"jsonrpc": "2.0"` (ACP does; ZCode rejects it).
    jsonrpc: bool,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn spawn(cmd: &[String], jsonrpc: bool) -> Result<Self, String> {
        let (program, args) = cmd.split_first().ok_or("no command given after --")?;
        let spawned = Instant::now();
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {program}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Self {
            spawned,
            jsonrpc,
            child,
            stdin: Some(stdin),
            stdout,
            next_id: 1,
        })
    }

    /// Sends a request; returns its id.
    fn send(&mut self, method: &str, params: Value) -> Result<u64, String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut line = json!({"id": id, "method": method, "params": params});
        if self.jsonrpc {
            line["jsonrpc"] = json!("2.0");
        }
        // One write per message, as editors and ZCode's client send them: `writeln!` on the
        // unbuffered pipe wrote each piece of the JSON's formatting on its own, and the front
        // end woke for every piece.
        let mut bytes = serde_json::to_vec(&line).map_err(|e| format!("encode: {e}"))?;
        bytes.push(b'\n');
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin.write_all(&bytes).map_err(|e| format!("write: {e}"))?;
        Ok(id)
    }

    /// Reads lines until `stop` says so; returns the line that stopped it.
    fn read_until(&mut self, mut stop: impl FnMut(&Value) -> bool) -> Result<Value, String> {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self
                .stdout
                .read_line(&mut line)
                .map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err("the front end closed stdout".into());
            }
            let value: Value = serde_json::from_str(&line).map_err(|e| format!("{e}: {line}"))?;
            if stop(&value) {
                return Ok(value);
            }
        }
    }

    fn response(&mut self, id: u64) -> Result<Value, String> {
        let reply = self.read_until(|v| {
            v.get("method").is_none() && v.get("id").and_then(Value::as_u64) == Some(id)
        })?;
        match reply.get("error") {
            Some(err) => Err(format!("request {id} failed: {err}")),
            None => Ok(reply["result"].clone()),
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.send(method, params)?;
        self.response(id)
    }

    fn rss_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    fn finish(mut self) -> Result<bool, String> {
        drop(self.stdin.take());
        let status = self.child.wait().map_err(|e| format!("wait: {e}"))?;
        let lived = self.spawned.elapsed();
        if let Some(path) = std::env::var_os("ZDRIVE_TIMES") {
            let line = format!("{:.3}\n", lived.as_secs_f64() * 1000.0);
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(line.as_bytes()))
                .map_err(|e| format!("ZDRIVE_TIMES: {e}"))?;
        }
        Ok(status.success())
    }
}

fn create(server: &mut Server, workspace: &str) -> Result<String, String> {
    let created = server.call(
        "session/create",
        json!({"workspace": {"workspacePath": workspace, "workspaceKey": workspace}, "mode": "yolo"}),
    )?;
    created["session"]["sessionId"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("no session id in {created}"))
}

fn prompt(workspace: &str, cmd: &[String]) -> Result<bool, String> {
    let mut server = Server::spawn(cmd, false)?;
    let sid = create(&mut server, workspace)?;
    server.call("session/subscribe", json!({"sessionId": sid}))?;
    server.call(
        "session/send",
        json!({"sessionId": sid, "content": "Say hello."}),
    )?;
    let end = server.read_until(|v| {
        let kind = v.pointer("/params/type").and_then(Value::as_str);
        matches!(kind, Some("turn.completed" | "turn.failed"))
    })?;
    let ok = end.pointer("/params/type").and_then(Value::as_str) == Some("turn.completed");
    if !ok {
        eprintln!("zdrive: the turn failed: {end}");
    }
    Ok(server.finish()? && ok)
}

/// One prompt over the Agent Client Protocol: initialize, session/new, session/prompt (its
/// response arrives when the turn has ended).
fn acp(workspace: &str, cmd: &[String]) -> Result<bool, String> {
    let mut server = Server::spawn(cmd, true)?;
    server.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    )?;
    let created = server.call("session/new", json!({"cwd": workspace, "mcpServers": []}))?;
    let sid = created["sessionId"]
        .as_str()
        .ok_or_else(|| format!("no session id in {created}"))?
        .to_string();
    let done = server.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Say hello."}]}),
    )?;
    let ok = done["stopReason"] == "end_turn";
    if !ok {
        eprintln!("zdrive: the prompt ended with {done}");
    }
    Ok(server.finish()? && ok)
}

fn idle(n: usize, workspace: &str, cmd: &[String]) -> Result<bool, String> {
    let mut server = Server::spawn(cmd, false)?;
    server.call("session/list", json!({}))?;
    let base = server.rss_kib("VmRSS:");
    println!("sessions=0 rss_kib={base}");
    let marks = [n / 10, n / 2, n];
    let mut done = 0;
    for mark in marks {
        // Pipelined: all requests of a step are written before the replies are read.
        let ids: Vec<u64> = (done..mark)
            .map(|_| {
                server.send(
                    "session/create",
                    json!({"workspace": {"workspacePath": workspace, "workspaceKey": workspace}}),
                )
            })
            .collect::<Result<_, _>>()?;
        for id in ids {
            server.response(id)?;
        }
        done = mark;
        let rss = server.rss_kib("VmRSS:");
        println!(
            "sessions={mark} rss_kib={rss} per_session_kib={:.1}",
            (rss.saturating_sub(base)) as f64 / mark.max(1) as f64
        );
    }
    println!("peak_rss_kib={}", server.rss_kib("VmHWM:"));
    server.finish()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(split) = args.iter().position(|a| a == "--") else {
        eprintln!(
            "usage: zdrive prompt|acp [WORKSPACE] -- CMD… | zdrive idle N [WORKSPACE] -- CMD…"
        );
        return ExitCode::from(2);
    };
    let (head, cmd) = (&args[..split], &args[split + 1..]);
    // A bound on the whole run: a front end that never answers must not hang the bench.
    // Exiting closes the front end's stdin, so it ends too.
    let limit = std::env::var("ZDRIVE_TIMEOUT_S")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(limit));
        eprintln!("zdrive: no result within {limit} s");
        std::process::exit(124);
    });
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| ".".into());
    let result = match head.first().map(String::as_str) {
        Some("prompt") => prompt(head.get(1).unwrap_or(&cwd), cmd),
        Some("acp") => acp(head.get(1).unwrap_or(&cwd), cmd),
        Some("idle") => {
            let n = head.get(1).and_then(|n| n.parse().ok()).unwrap_or(1000);
            idle(n, head.get(2).unwrap_or(&cwd), cmd)
        }
        _ => Err("the first word must be prompt or idle".into()),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(err) => {
            eprintln!("zdrive: {err}");
            ExitCode::from(1)
        }
    }
}
