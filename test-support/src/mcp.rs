//! The MCP reference servers from npm (`@modelcontextprotocol/server-everything`,
//! `@modelcontextprotocol/server-filesystem`), pinned in `agent-mcp/tests/servers` and
//! installed there on first use ([`crate::npm::npm_project`]), and started the way every front
//! end's tests start them.
//!
//! A test that needs them starts with `if !test_support::mcp::ready() { return; }`: without
//! Node or the packages it prints one `skipped: …` line and passes, unless
//! `AGENT_SDK_NODE=required` (`.ci/run`), when it fails. After that, [`node`] and [`script`]
//! cannot fail; called without [`ready`], they panic (failing the test) with what is missing.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::component::Skip;
use crate::npm::npm_project;

/// How long [`HttpEverything::start`] waits for the server to report its port.
pub const PORT_TIMEOUT: Duration = Duration::from_secs(30);

/// `agent-mcp/tests/servers`: the npm project holding the reference servers and
/// `listen-port.cjs`.
pub fn servers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../agent-mcp/tests/servers")
}

/// Node and the reference servers, installed (see [`crate::npm::npm_project`]), or why not.
pub fn available() -> Result<(), Skip> {
    crate::npm::node()?;
    npm_project(&servers_dir()).map(|_| ())
}

/// Whether the reference servers can run: `true`, or `false` after printing the one
/// `skipped: …` line (the test returns).
///
/// # Panics
///
/// When they cannot, and `AGENT_SDK_NODE=required`: the test fails.
pub fn ready() -> bool {
    match available() {
        Ok(()) => true,
        Err(skip) => {
            skip.report();
            false
        }
    }
}

/// The installed script of reference server `package` (e.g. `server-everything`,
/// `…/dist/index.js`), installing the packages on first use; panics (failing the test) when
/// they cannot be had.
pub fn script(package: &str) -> String {
    let node_modules = npm_project(&servers_dir()).unwrap_or_else(|skip| panic!("{skip}"));
    let path = node_modules
        .join("@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        path.is_file(),
        "{} is missing after npm ci in {}",
        path.display(),
        servers_dir().display()
    );
    path.display().to_string()
}

/// The absolute path of `node` on `PATH` (ACP requires absolute commands; the others accept
/// it too); panics (failing the test) when Node is not installed or does not run.
pub fn node() -> String {
    match crate::npm::node() {
        Ok((path, _)) => path.display().to_string(),
        Err(skip) => panic!("{skip}"),
    }
}

/// `server-everything` over streamable HTTP on 127.0.0.1, on a free port. Dropping it kills
/// the server.
#[derive(Debug)]
pub struct HttpEverything {
    child: Child,
    url: String,
}

impl HttpEverything {
    /// Starts the server and waits (at most [`PORT_TIMEOUT`], blocking the thread) until it
    /// reports its port; panics (failing the test) when it cannot start or does not report.
    pub fn start() -> Self {
        let mut child = Command::new(node())
            .arg("--require")
            .arg(servers_dir().join("listen-port.cjs"))
            .arg(script("server-everything"))
            .arg("streamableHttp")
            .env("PORT", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("node does not start: {e}"));
        let Some(stderr) = child.stderr.take() else {
            panic!("the server's stderr is not piped");
        };
        let (tx, rx) = mpsc::channel();
        // Reads the port, then drains stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(port) = line.strip_prefix("AGENT_MCP_TEST_PORT=") {
                    let _ = tx.send(port.trim().parse::<u16>().ok());
                }
            }
        });
        let port = match rx.recv_timeout(PORT_TIMEOUT) {
            Ok(Some(port)) => port,
            Ok(None) => panic!("the server reported a port that is not a number"),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the server did not report its port in time: {e}");
            }
        };
        HttpEverything {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }

    /// `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
