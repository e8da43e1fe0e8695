//! The language-server scenario: an edit that breaks a Python file's types gets pyright's
//! error in its result (each front end in its own words), the fix clears it, and the server
//! is gone when the run ends. Both edits are `write_file` calls, a tool (and argument
//! shape) every front end's catalogue has under that name or answers to.

use serde_json::json;

use super::{ok, strings, Fact, FileIs, Paths, Place, Scenario};
use crate::Reply;

const UTIL_PY: &str = "def add(a: int, b: int) -> int:\n    return a + b\n";
const MAIN_PY: &str = "from util import add\n\ntotal: int = add(1, 2)\nprint(total)\n";
const BROKEN_PY: &str = "from util import add\n\ntotal: int = add(\"x\", 2)\nprint(total)\n";

/// The error pyright reports for [`BROKEN_PY`], in every front end's words.
const ERROR: &str = "Argument of type \"Literal['x']\" cannot be assigned to parameter \"a\"";

/// `lsp_edit_reports_the_error_and_the_fix_clears_it`. pyright (npm) is started by the
/// first edit (`startOnEdit` in the `--lsp-config` file) through `sh`, which writes its pid
/// (the server's: `exec`) to the root's `lsp.pid`. Without Node the scenario is a plain
/// answer after a `skipped:` line (a failure under `AGENT_SDK_NODE=required`).
pub(super) fn edit_reports_the_error(p: &Paths) -> Scenario {
    let base = |replies: Vec<Reply>| super::table::base_of(replies);
    if let Err(skip) = crate::lsp::available() {
        skip.report();
        return Scenario {
            facts: vec![Fact::Answers(0, vec!["skipped"])],
            ..base(vec![Reply::chat_text("skipped")])
        };
    }
    let server = crate::lsp::bin("pyright-langserver");
    let pid = p.root.join("lsp.pid");
    let command = format!(
        "echo $$ > '{}'; exec '{}' --stdio",
        pid.display(),
        server.display()
    );
    let config = json!({
        "servers": {"pyright-langserver": {"command": "sh", "args": ["-c", command]}},
        "startOnEdit": true,
        "diagnosticsTimeoutMs": 60000,
        "requestTimeoutMs": 60000
    });
    Scenario {
        files: vec![
            (
                Place::Ws("pyproject.toml".into()),
                "[project]\nname = \"fixture\"\n".into(),
            ),
            (Place::Ws("util.py".into()), UTIL_PY.into()),
            (Place::Ws("main.py".into()), MAIN_PY.into()),
            (Place::Root("lsp.json".into()), config.to_string()),
        ],
        flags: vec![
            "--lsp-config".into(),
            p.root.join("lsp.json").display().to_string(),
        ],
        facts: vec![
            ok(0, "w1", &["main.py:3:18", ERROR]),
            Fact::ToolMessage(1, "w1", ERROR.into()),
            Fact::Tool {
                prompt: 0,
                id: "e1",
                ok: true,
                contains: Vec::new(),
                lacks: strings(&[ERROR, "main.py:3:18"]),
            },
            Fact::File(Place::Ws("main.py".into()), FileIs::Text(MAIN_PY.into())),
            Fact::Answers(0, vec!["fixed"]),
            Fact::PidsGone(vec![Place::Root("lsp.pid".into())]),
        ],
        ..base(vec![
            Reply::chat_call(
                "w1",
                "write_file",
                json!({"path": "main.py", "content": BROKEN_PY}),
            ),
            Reply::chat_call(
                "e1",
                "write_file",
                json!({"path": "main.py", "content": MAIN_PY}),
            ),
            Reply::chat_text("fixed"),
        ])
    }
}
