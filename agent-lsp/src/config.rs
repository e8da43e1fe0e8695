//! Which language server handles which files, and how long the agent waits for them:
//! [`LspConfig`] (the built-in table of [`ServerSpec`]s, merged with a JSON file).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::error::ConfigError;

/// How to start one language server and which files it handles.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    /// Its id (`pyright-langserver`, `rust-analyzer`, …; the built-ins' are their commands'
    /// names, as zut's): named in messages and in configuration.
    pub id: String,
    /// The program: a name looked up on `PATH`, or a path (relative ones resolve against
    /// the workspace).
    pub command: String,
    /// Its arguments (`--stdio`, …).
    pub args: Vec<String>,
    /// The file extensions it handles, without the dot, lower case (`py`, `pyi`).
    pub extensions: Vec<String>,
    /// Files that mark a project root (`Cargo.toml`, `tsconfig.json`): a server is started
    /// for the nearest directory holding one (inside the workspace), else for the
    /// workspace.
    pub root_markers: Vec<String>,
    /// `initializationOptions` of the `initialize` request.
    pub initialization_options: Option<Value>,
    /// What `workspace/configuration` requests are answered from (by section, dotted).
    pub settings: Option<Value>,
    /// More environment variables for the process.
    pub env: BTreeMap<String, String>,
}

impl ServerSpec {
    /// A server `id` started as `command args…` for files of `extensions`.
    pub fn new(id: &str, command: &str, args: &[&str], extensions: &[&str]) -> Self {
        Self {
            id: id.to_string(),
            command: command.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            extensions: extensions.iter().map(|e| e.to_string()).collect(),
            root_markers: Vec::new(),
            initialization_options: None,
            settings: None,
            env: BTreeMap::new(),
        }
    }

    /// The same spec with these root markers.
    #[must_use = "returns the changed spec"]
    pub fn root_markers(mut self, markers: &[&str]) -> Self {
        self.root_markers = markers.iter().map(|m| m.to_string()).collect();
        self
    }

    /// The same spec with these `initializationOptions`.
    #[must_use = "returns the changed spec"]
    pub fn initialization_options(mut self, options: Value) -> Self {
        self.initialization_options = Some(options);
        self
    }

    /// Whether it handles files of `ext` (lower case, no dot).
    pub fn handles(&self, ext: &str) -> bool {
        self.extensions.iter().any(|e| e == ext)
    }
}

/// The language servers the agent may start and how it talks to them. Nothing is started
/// by building one.
#[derive(Debug, Clone, PartialEq)]
pub struct LspConfig {
    /// The servers, in order of preference: for a file, the first that handles its
    /// extension and whose command is installed is used.
    pub servers: Vec<ServerSpec>,
    /// Bound on one request (and on `initialize`).
    pub request_timeout: Duration,
    /// Append a file's new errors to the result of a tool that changed it.
    pub diagnostics_after_edits: bool,
    /// Start a server for an edited file when none runs yet (otherwise only servers a
    /// language-server tool started report after edits).
    pub start_on_edit: bool,
    /// Bound on waiting for a server's diagnostics after an edit.
    pub diagnostics_timeout: Duration,
    /// Most diagnostics shown after an edit.
    pub max_diagnostics: usize,
}

impl Default for LspConfig {
    fn default() -> Self {
        Self::builtin()
    }
}

impl LspConfig {
    /// The built-in table: rust-analyzer, pyright (then basedpyright),
    /// typescript-language-server, gopls, clangd and bash-language-server, found on `PATH`.
    pub fn builtin() -> Self {
        Self {
            servers: builtin_servers(),
            request_timeout: Duration::from_secs(30),
            diagnostics_after_edits: true,
            start_on_edit: false,
            diagnostics_timeout: Duration::from_secs(5),
            max_diagnostics: 10,
        }
    }

    /// Reads a configuration file and merges it onto the built-in table (see
    /// [`Self::merge_json`]).
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut config = Self::builtin();
        config
            .merge_json(&text)
            .map_err(|message| ConfigError::Invalid {
                path: path.to_path_buf(),
                message,
            })?;
        Ok(config)
    }

    /// Merges a JSON document onto this configuration:
    ///
    /// ```json
    /// {
    ///   "servers": {
    ///     "pyright-langserver": {"command": "/opt/node/bin/pyright-langserver"},
    ///     "ruby": {"command": "ruby-lsp", "fileTypes": [".rb"], "rootMarkers": ["Gemfile"]},
    ///     "clangd": {"disabled": true}
    ///   },
    ///   "diagnosticsAfterEdits": true,
    ///   "startOnEdit": false,
    ///   "requestTimeoutMs": 30000,
    ///   "diagnosticsTimeoutMs": 5000,
    ///   "maxDiagnostics": 10
    /// }
    /// ```
    ///
    /// A server with a built-in id changes only the fields given; a new id is added before
    /// the built-ins (it wins for its file types); `disabled` removes one. A server's fields
    /// are `command`, `args`, `fileTypes` (`.py` or `py`), `rootMarkers`,
    /// `initializationOptions`, `settings` (answers to `workspace/configuration`), `env`
    /// and `disabled`. The error says what is wrong and where.
    pub fn merge_json(&mut self, text: &str) -> Result<(), String> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let file: FileConfig = serde_path_to_error::deserialize(de).map_err(|e| {
            match e.path().to_string().as_str() {
                "." => e.inner().to_string(),
                path => format!("{path}: {}", e.inner()),
            }
        })?;
        let mut added = Vec::new();
        for (id, entry) in file.servers {
            if entry.disabled == Some(true) {
                self.servers.retain(|s| s.id != id);
                continue;
            }
            let existing = self.servers.iter_mut().find(|s| s.id == id);
            let spec = match existing {
                Some(spec) => spec,
                None => {
                    let Some(command) = entry.command.clone() else {
                        return Err(format!("servers.{id}: a new server needs a command"));
                    };
                    if entry.file_types.as_ref().is_none_or(Vec::is_empty) {
                        return Err(format!("servers.{id}: a new server needs fileTypes"));
                    }
                    added.push(ServerSpec::new(&id, &command, &[], &[]));
                    let last = added.len() - 1;
                    &mut added[last]
                }
            };
            entry.apply(spec)?;
        }
        added.append(&mut self.servers);
        self.servers = added;
        if let Some(on) = file.diagnostics_after_edits {
            self.diagnostics_after_edits = on;
        }
        if let Some(on) = file.start_on_edit {
            self.start_on_edit = on;
        }
        if let Some(ms) = file.request_timeout_ms {
            self.request_timeout = positive_ms("requestTimeoutMs", ms)?;
        }
        if let Some(ms) = file.diagnostics_timeout_ms {
            self.diagnostics_timeout = positive_ms("diagnosticsTimeoutMs", ms)?;
        }
        if let Some(n) = file.max_diagnostics {
            self.max_diagnostics = n.max(1);
        }
        Ok(())
    }

    /// The servers that handle files of `ext` (lower case, no dot), in order.
    pub fn servers_for(&self, ext: &str) -> impl Iterator<Item = &ServerSpec> {
        let ext = ext.to_string();
        self.servers.iter().filter(move |s| s.handles(&ext))
    }

    /// The server with this id.
    pub fn server(&self, id: &str) -> Option<&ServerSpec> {
        self.servers.iter().find(|s| s.id == id)
    }
}

fn positive_ms(field: &str, ms: u64) -> Result<Duration, String> {
    match ms {
        0 => Err(format!("{field} must be at least 1")),
        ms => Ok(Duration::from_millis(ms)),
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    servers: BTreeMap<String, FileServer>,
    diagnostics_after_edits: Option<bool>,
    start_on_edit: Option<bool>,
    request_timeout_ms: Option<u64>,
    diagnostics_timeout_ms: Option<u64>,
    max_diagnostics: Option<usize>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileServer {
    command: Option<String>,
    args: Option<Vec<String>>,
    file_types: Option<Vec<String>>,
    root_markers: Option<Vec<String>>,
    initialization_options: Option<Value>,
    settings: Option<Value>,
    env: Option<BTreeMap<String, String>>,
    disabled: Option<bool>,
}

impl FileServer {
    fn apply(self, spec: &mut ServerSpec) -> Result<(), String> {
        if let Some(command) = self.command {
            if command.trim().is_empty() {
                return Err(format!("servers.{}.command is empty", spec.id));
            }
            spec.command = command;
        }
        if let Some(args) = self.args {
            spec.args = args;
        }
        if let Some(types) = self.file_types {
            spec.extensions = types
                .iter()
                .map(|t| t.trim().trim_start_matches('.').to_ascii_lowercase())
                .filter(|t| !t.is_empty())
                .collect();
        }
        if let Some(markers) = self.root_markers {
            spec.root_markers = markers;
        }
        if let Some(options) = self.initialization_options {
            merge(&mut spec.initialization_options, options);
        }
        if let Some(settings) = self.settings {
            merge(&mut spec.settings, settings);
        }
        if let Some(env) = self.env {
            spec.env = env;
        }
        Ok(())
    }
}

/// Merges `value` into `into`: objects key by key (recursively), anything else replaced.
fn merge(into: &mut Option<Value>, value: Value) {
    match (into.as_mut(), value) {
        (Some(Value::Object(old)), Value::Object(new)) => {
            for (key, value) in new {
                let mut slot = old.remove(&key);
                merge(&mut slot, value);
                if let Some(slot) = slot {
                    old.insert(key, slot);
                }
            }
        }
        (_, value) => *into = Some(value),
    }
}

fn builtin_servers() -> Vec<ServerSpec> {
    let python_roots = [
        "pyproject.toml",
        "pyrightconfig.json",
        "setup.py",
        "setup.cfg",
        "requirements.txt",
    ];
    vec![
        ServerSpec::new("rust-analyzer", "rust-analyzer", &[], &["rs"])
            .root_markers(&["Cargo.toml"]),
        ServerSpec::new(
            "pyright-langserver",
            "pyright-langserver",
            &["--stdio"],
            &["py", "pyi"],
        )
        .root_markers(&python_roots),
        ServerSpec::new(
            "basedpyright-langserver",
            "basedpyright-langserver",
            &["--stdio"],
            &["py", "pyi"],
        )
        .root_markers(&python_roots),
        ServerSpec::new(
            "typescript-language-server",
            "typescript-language-server",
            &["--stdio"],
            &["ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs"],
        )
        .root_markers(&["tsconfig.json", "jsconfig.json", "package.json"])
        // One semantic tsserver: the syntax-only one answers early requests from the open
        // file alone (an import for a definition), which is no answer for an agent.
        .initialization_options(serde_json::json!({"tsserver": {"useSyntaxServer": "never"}})),
        ServerSpec::new("gopls", "gopls", &["serve"], &["go"]).root_markers(&["go.work", "go.mod"]),
        ServerSpec::new(
            "clangd",
            "clangd",
            &[],
            &["c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx"],
        )
        .root_markers(&[
            "compile_commands.json",
            "compile_flags.txt",
            "CMakeLists.txt",
        ]),
        ServerSpec::new(
            "bash-language-server",
            "bash-language-server",
            &["start"],
            &["sh", "bash"],
        ),
    ]
}

/// The LSP `languageId` of a file extension (lower case, no dot).
pub fn language_id(ext: &str) -> &str {
    match ext {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => "cpp",
        "sh" | "bash" => "shellscript",
        "rb" => "ruby",
        "java" => "java",
        "lua" => "lua",
        "zig" => "zig",
        other => other,
    }
}

/// The lower-case extension of `path`, without the dot.
pub(crate) fn extension(path: &Path) -> Option<String> {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .filter(|e| !e.is_empty())
}

/// The program `command` names: a path with a `/` (relative ones against `workspace`), or
/// the first executable file of that name on `PATH`.
pub(crate) fn resolve_command(command: &str, workspace: &Path) -> Option<PathBuf> {
    if command.contains('/') {
        let path = workspace.join(command);
        return is_executable(&path).then_some(path);
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(command))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_table_covers_the_usual_languages_in_order() {
        let config = LspConfig::builtin();
        let ids = |ext| {
            config
                .servers_for(ext)
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids("py"), ["pyright-langserver", "basedpyright-langserver"]);
        assert_eq!(ids("tsx"), ["typescript-language-server"]);
        assert_eq!(ids("rs"), ["rust-analyzer"]);
        assert_eq!(ids("go"), ["gopls"]);
        assert_eq!(ids("hpp"), ["clangd"]);
        assert_eq!(ids("sh"), ["bash-language-server"]);
        assert!(ids("xyz").is_empty());
        assert_eq!(language_id("tsx"), "typescriptreact");
    }

    #[test]
    fn a_file_overrides_adds_and_disables_servers() {
        let mut config = LspConfig::builtin();
        config
            .merge_json(
                r#"{"servers": {
                    "pyright-langserver": {"command": "/opt/pyright", "settings": {"python": {"x": 1}}},
                    "ruby": {"command": "ruby-lsp", "fileTypes": [".RB"]},
                    "clangd": {"disabled": true}
                },
                "diagnosticsAfterEdits": false, "startOnEdit": true,
                "requestTimeoutMs": 1500, "maxDiagnostics": 3}"#,
            )
            .expect("valid");
        let pyright = config.server("pyright-langserver").expect("kept");
        let mut ts = LspConfig::builtin();
        ts.merge_json(r#"{"servers": {"typescript-language-server": {"initializationOptions": {"tsserver": {"path": "/x"}}}}}"#)
            .expect("valid");
        assert_eq!(
            ts.server("typescript-language-server")
                .and_then(|s| s.initialization_options.clone()),
            Some(serde_json::json!({"tsserver": {"useSyntaxServer": "never", "path": "/x"}})),
            "objects merge"
        );
        assert_eq!(pyright.command, "/opt/pyright");
        assert_eq!(pyright.args, ["--stdio"]);
        assert_eq!(
            pyright.settings,
            Some(serde_json::json!({"python": {"x": 1}}))
        );
        assert_eq!(config.servers[0].id, "ruby");
        assert_eq!(config.servers[0].extensions, ["rb"]);
        assert!(config.server("clangd").is_none());
        assert!(!config.diagnostics_after_edits && config.start_on_edit);
        assert_eq!(config.request_timeout, Duration::from_millis(1500));
        assert_eq!(config.max_diagnostics, 3);
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let cases = [
            (
                r#"{"servers": {"new": {"fileTypes": ["x"]}}}"#,
                "needs a command",
            ),
            (
                r#"{"servers": {"new": {"command": "x"}}}"#,
                "needs fileTypes",
            ),
            (
                r#"{"servers": {"gopls": {"comand": "x"}}}"#,
                "unknown field `comand`",
            ),
            (r#"{"requestTimeoutMs": 0}"#, "requestTimeoutMs"),
            (r#"{"servers": []}"#, "invalid type"),
            ("{", "EOF"),
        ];
        for (text, needle) in cases {
            let err = LspConfig::builtin().merge_json(text).expect_err(text);
            assert!(err.contains(needle), "{text}: {err}");
        }
        let err = LspConfig::from_file(Path::new("/nonexistent/lsp.json")).expect_err("missing");
        assert!(err.to_string().contains("/nonexistent/lsp.json"), "{err}");
    }

    #[test]
    fn commands_are_found_on_path_or_by_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(resolve_command("sh", dir.path()).is_some());
        assert!(resolve_command("no-such-language-server-x", dir.path()).is_none());
        assert!(resolve_command("./missing", dir.path()).is_none());
    }
}
