//! The language servers from npm (`pyright`, `typescript-language-server` with
//! `typescript`), pinned in `agent-lsp/tests/servers` and installed there on first use
//! ([`crate::npm::npm_project`]).
//!
//! A test that needs them starts with `if !test_support::lsp::ready() { return; }`: without
//! Node or the packages it prints one `skipped: …` line and passes, unless
//! `AGENT_SDK_NODE=required` (`.ci/run`), when it fails. After that, [`bin`] and
//! [`tsserver_lib`] cannot fail; called without [`ready`], they panic (failing the test).

use std::path::PathBuf;

use crate::component::Skip;
use crate::npm::npm_project;

/// `agent-lsp/tests/servers`: the npm project holding the language servers.
pub fn servers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../agent-lsp/tests/servers")
}

/// Node and the language servers, installed, or why not.
pub fn available() -> Result<(), Skip> {
    crate::npm::node()?;
    npm_project(&servers_dir()).map(|_| ())
}

/// Whether the language servers can run: `true`, or `false` after printing the one
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

fn node_modules() -> PathBuf {
    npm_project(&servers_dir()).unwrap_or_else(|skip| panic!("{skip}"))
}

/// The absolute path of the installed command `name` (`pyright-langserver`,
/// `typescript-language-server`; they run with the `node` on `PATH`).
pub fn bin(name: &str) -> PathBuf {
    let path = node_modules().join(".bin").join(name);
    assert!(
        path.is_file(),
        "{} is missing after npm ci in {}",
        path.display(),
        servers_dir().display()
    );
    path
}

/// The `lib` directory of the installed `typescript` (typescript-language-server's
/// `tsserver.path`).
pub fn tsserver_lib() -> PathBuf {
    node_modules().join("typescript").join("lib")
}
