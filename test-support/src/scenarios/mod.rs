//! The capability scenarios every front end runs, written once.
//!
//! A [`Scenario`] is what one end-to-end run of a front-end binary needs and shows: the mock
//! model's [`Script`], the files written before the start (a `--hooks` file, specialists,
//! …), the flags, the prompts, and the facts expected at the level of the agent ([`Fact`]:
//! "call `b1` failed with the hook's reason", "the two background tasks' results were
//! read", "the turn's usage was 42 in, 12 out", "no process of the tool is left").
//!
//! Each front end has one harness (in its crate's `tests/`) that runs every scenario of
//! [`NAMES`] through its binary: it builds the scenario in a fresh directory ([`Paths`]),
//! starts the [`MockModel`](crate::MockModel), spawns the binary with the scenario's
//! flags, sends the prompts, reads what its protocol shows into an [`Observed`] (the tool
//! outcomes, the answer, the usage, a refusal to start), checks the scenario's facts with
//! [`Scenario::check`], then makes its own protocol's checks (frame shapes, names) in a
//! per-protocol expectation hook. [`scenario_tests!`](crate::scenario_tests) makes one test
//! per scenario and a test that the harness lists the whole table.

mod guards;
mod lsp;
mod project;
mod providers;
mod table;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::{Reply, Request, Script};

pub use guards::{FALLBACK_MODEL, PRICED_MODEL, SETTINGS};
pub use table::{build, NAMES, SECRET};

/// How long a fact about processes waits for them to be gone.
const GONE_WAIT: Duration = Duration::from_secs(20);

/// The directories of one run: a root outside the workspace (hooks file, stderr log), the
/// workspace (the binary's working directory) and a home (`$HOME`, outside the workspace).
#[derive(Debug, Clone)]
pub struct Paths {
    /// A directory of the run's own, outside the workspace.
    pub root: PathBuf,
    /// The workspace.
    pub ws: PathBuf,
    /// `$HOME` of the binary.
    pub home: PathBuf,
}

impl Paths {
    /// The three directories, created if missing.
    pub fn new(root: &Path, ws: &Path, home: &Path) -> Self {
        for dir in [root, ws, home] {
            if let Err(e) = std::fs::create_dir_all(dir) {
                panic!("cannot create {}: {e}", dir.display());
            }
        }
        Self {
            root: root.to_path_buf(),
            ws: ws.to_path_buf(),
            home: home.to_path_buf(),
        }
    }

    /// Where `place` is.
    pub fn of(&self, place: &Place) -> PathBuf {
        match place {
            Place::Ws(name) => self.ws.join(name),
            Place::Home(name) => self.home.join(name),
            Place::Root(name) => self.root.join(name),
        }
    }
}

/// A file of a run, relative to one of its [`Paths`].
#[derive(Debug, Clone, PartialEq)]
pub enum Place {
    /// In the workspace.
    Ws(String),
    /// In `$HOME`.
    Home(String),
    /// In the root, outside the workspace.
    Root(String),
}

/// One prompt of a scenario.
#[derive(Debug, Clone)]
pub struct Prompt {
    /// The user's text.
    pub text: String,
    /// When every one of these files exists (pid files a tool writes), the harness
    /// interrupts the turn its protocol's way (abort, cancel, stop, SIGINT).
    pub interrupt_when: Vec<Place>,
}

impl Prompt {
    /// Waits (bounded) until every [`Prompt::interrupt_when`] file holds a pid, and asserts
    /// each of those processes runs: the moment to interrupt the turn. Returns the pids.
    pub async fn running(&self, paths: &Paths) -> Vec<i32> {
        let mut pids = Vec::new();
        for place in &self.interrupt_when {
            let pid = crate::procs::pid_in(&paths.of(place), GONE_WAIT).await;
            assert!(crate::procs::alive(pid), "{place:?}: {pid} is not running");
            pids.push(pid);
        }
        pids
    }

    /// [`Prompt::running`] for a synchronous test (it runs a runtime of its own).
    pub fn running_blocking(&self, paths: &Paths) -> Vec<i32> {
        match tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
        {
            Ok(runtime) => runtime.block_on(self.running(paths)),
            Err(e) => panic!("no runtime: {e}"),
        }
    }
}

/// One capability scenario. Built by [`build`] for one run's [`Paths`].
pub struct Scenario {
    /// Its name in [`NAMES`].
    pub name: &'static str,
    /// The model's replies (moved into the run's mock model).
    pub model: Script<Reply>,
    /// Files written before the binary starts.
    pub files: Vec<(Place, String)>,
    /// The content of the file given with `--hooks`, if any.
    pub hooks: Option<Value>,
    /// More flags for the binary.
    pub flags: Vec<String>,
    /// The key given with `--api-key` (else the harness's own test key).
    pub api_key: Option<String>,
    /// Run where the protocol asks before a tool runs, allowing every request (otherwise
    /// the harness runs with the most autonomy its protocol has).
    pub approve: bool,
    /// The prompts, in order, in one session.
    pub prompts: Vec<Prompt>,
    /// What must hold when the run is over.
    pub facts: Vec<Fact>,
    /// The sub-directory of the workspace the binary works in (its working directory, or
    /// the session's workspace), when not the workspace itself.
    pub cwd: Option<String>,
    /// The model the binary asks for, when not the harness's own (`gpt-test`): a model the
    /// catalogue prices, say.
    pub model_id: Option<&'static str>,
    /// Environment variables of the binary, set after the harness's own (so they win).
    pub env: Vec<(&'static str, &'static str)>,
}

impl Scenario {
    /// Writes the scenario's files under `paths`.
    pub fn write_files(&self, paths: &Paths) {
        for (place, text) in &self.files {
            write(&paths.of(place), text);
        }
    }

    /// Writes the hooks file (if any) as `dir/name`; returns its path.
    pub fn write_hooks(&self, dir: &Path, name: &str) -> Option<PathBuf> {
        let hooks = self.hooks.as_ref()?;
        let path = dir.join(name);
        write(&path, &hooks.to_string());
        Some(path)
    }

    /// Whether the binary is expected to refuse to start (no prompt is sent).
    pub fn refused(&self) -> bool {
        self.facts.iter().any(|f| matches!(f, Fact::Refused(_)))
    }

    /// Checks every fact against what the run showed; panics naming the scenario and the
    /// first fact that does not hold.
    pub fn check(&self, paths: &Paths, seen: &Observed) {
        for fact in &self.facts {
            if let Err(why) = fact.check(paths, seen) {
                panic!(
                    "scenario {}: {fact:?}: {why}\nobserved: {seen:#?}",
                    self.name
                );
            }
        }
    }
}

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Err(e) = std::fs::write(path, text) {
        panic!("cannot write {}: {e}", path.display());
    }
}

/// What a harness read from its protocol during one run.
#[derive(Debug, Default)]
pub struct Observed {
    /// The message of the binary's refusal to start (stderr or the protocol's error line).
    pub refusal: Option<String>,
    /// One per prompt sent.
    pub turns: Vec<Turn>,
    /// The requests the mock model received, at the end of the run.
    pub requests: Vec<Request>,
    /// The binary's stderr (at the end of the run).
    pub stderr: String,
    /// The front end the harness runs ([`Fact::For`] facts apply to it).
    pub front_end: Option<FrontEnd>,
}

/// The front ends, for facts that differ between them ([`Fact::For`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontEnd {
    /// `adapter-stream-json exec` (`zero exec`).
    Exec,
    /// `adapter-rpc rpc` (`zut rpc`).
    Rpc,
    /// `adapter-acp acp`.
    Acp,
    /// `adapter-acp app-server` (ZCode).
    Zcode,
}

/// What one prompt's turn showed.
#[derive(Debug, Default, Clone)]
pub struct Turn {
    /// The outcome of each top-level tool call, in order.
    pub tools: Vec<ToolOutcome>,
    /// The answer as the protocol shows it.
    pub said: Said,
    /// The turn's tokens (input, output), parent and children together, where shown.
    pub usage: Option<(u64, u64)>,
    /// The prompt was blocked before the model was called.
    pub blocked: bool,
    /// The turn ended cancelled (interrupted).
    pub cancelled: bool,
    /// How many requests the model had received when the turn ended.
    pub requests: usize,
}

/// The answer of a turn.
#[derive(Debug, Default, Clone, PartialEq)]
pub enum Said {
    /// Not shown (or nothing said).
    #[default]
    Nothing,
    /// Every text the model streamed in the turn, concatenated.
    All(String),
    /// The text of the turn's last model call (the final answer).
    Last(String),
}

/// The outcome of one tool call.
#[derive(Debug, Default, Clone)]
pub struct ToolOutcome {
    /// The call id.
    pub id: String,
    /// Whether it succeeded.
    pub ok: bool,
    /// Its result or error text.
    pub text: String,
    /// The code of the block that refused it (`sandbox`, …), if one is shown.
    pub block: Option<String>,
}

/// What a file holds at the end of a run.
#[derive(Debug, Clone, PartialEq)]
pub enum FileIs {
    /// It does not exist.
    Absent,
    /// It exists.
    Present,
    /// Its whole text.
    Text(String),
    /// It is JSON whose `key` is this value.
    Json(&'static str, Value),
}

/// A fact expected after a run, at the level of the agent.
#[derive(Debug, Clone)]
pub enum Fact {
    /// Call `id` of prompt `prompt`: succeeded or not, its text containing every needle and
    /// none of `lacks`.
    Tool {
        /// The prompt's index.
        prompt: usize,
        /// The call id.
        id: &'static str,
        /// Whether it succeeded.
        ok: bool,
        /// Texts its result shows.
        contains: Vec<String>,
        /// Texts its result never shows.
        lacks: Vec<String>,
    },
    /// Call `id` of prompt `prompt` was refused by a block with this code.
    Block(usize, &'static str, &'static str),
    /// The texts the model answered in prompt `prompt`, in order (the last is the answer).
    Answers(usize, Vec<&'static str>),
    /// Call `id` of prompt `prompt` shows no block.
    Unblocked(usize, &'static str),
    /// Prompt `prompt` was blocked before any model call.
    Blocked(usize),
    /// Prompt `prompt` ended cancelled.
    Cancelled(usize),
    /// The model had received this many requests when prompt `.0`'s turn ended.
    RequestsBy(usize, usize),
    /// The model received exactly this many requests in the whole run.
    Requests(usize),
    /// Prompt `.0`'s tokens (input, output), parent and children together, where the
    /// protocol shows them.
    Usage(usize, u64, u64),
    /// Request `index` contains every needle and none of `lacks`.
    Request {
        /// Index of the request in arrival order.
        index: usize,
        /// Texts it carries.
        contains: Vec<String>,
        /// Texts it never carries.
        lacks: Vec<String>,
    },
    /// The tool message of call `call` in request `request` contains the text.
    ToolMessage(usize, &'static str, String),
    /// The system prompt of specialist `.0`'s first call contains `.1` and not `.2`.
    ChildPrompt(&'static str, &'static str, &'static str),
    /// A file at the end of the run.
    File(Place, FileIs),
    /// The processes whose pids these files hold are gone (waiting a bounded time).
    PidsGone(Vec<Place>),
    /// A line of stderr contains every needle.
    Stderr(Vec<String>),
    /// No line of stderr contains the text.
    NotInStderr(String),
    /// The binary refused to start, its message containing every needle.
    Refused(Vec<String>),
    /// Request `.0` contains every needle, in this order.
    InOrder(usize, Vec<String>),
    /// These facts, for these front ends only (the harness names its own in
    /// [`Observed::front_end`]).
    For(&'static [FrontEnd], Vec<Fact>),
    /// The path (and query) of request `.0` contains `.1` (the provider's endpoint).
    Path(usize, &'static str),
}

type Checked = Result<(), String>;

fn turn(seen: &Observed, prompt: usize) -> Result<&Turn, String> {
    seen.turns
        .get(prompt)
        .ok_or_else(|| format!("no turn {prompt}"))
}

fn has_all(text: &str, needles: &[String], lacks: &[String]) -> Checked {
    if let Some(n) = needles.iter().find(|n| !text.contains(n.as_str())) {
        return Err(format!("{n:?} is not in {text:?}"));
    }
    if let Some(n) = lacks.iter().find(|n| text.contains(n.as_str())) {
        return Err(format!("{n:?} is in {text:?}"));
    }
    Ok(())
}

fn request(seen: &Observed, index: usize) -> Result<&Request, String> {
    seen.requests
        .get(index)
        .ok_or_else(|| format!("only {} requests", seen.requests.len()))
}

impl Fact {
    fn check(&self, paths: &Paths, seen: &Observed) -> Checked {
        match self {
            Fact::Tool {
                prompt,
                id,
                ok,
                contains,
                lacks,
            } => {
                let tool = tool(seen, *prompt, id)?;
                if tool.ok != *ok {
                    return Err(format!("ok is {}", tool.ok));
                }
                has_all(&tool.text, contains, lacks)
            }
            Fact::Block(prompt, id, code) => {
                let tool = tool(seen, *prompt, id)?;
                match tool.block.as_deref() {
                    Some(shown) if shown == *code => Ok(()),
                    other => Err(format!("block {other:?}")),
                }
            }
            Fact::Unblocked(prompt, id) => match &tool(seen, *prompt, id)?.block {
                None => Ok(()),
                Some(code) => Err(format!("block {code}")),
            },
            Fact::Answers(prompt, texts) => {
                let said = &turn(seen, *prompt)?.said;
                let holds = match said {
                    Said::Nothing => texts.is_empty(),
                    Said::All(all) => *all == texts.concat(),
                    Said::Last(last) => texts.last().is_some_and(|t| t == last),
                };
                holds.then_some(()).ok_or_else(|| format!("{said:?}"))
            }
            Fact::Blocked(prompt) => turn(seen, *prompt)?
                .blocked
                .then_some(())
                .ok_or_else(|| "not blocked".into()),
            Fact::Cancelled(prompt) => turn(seen, *prompt)?
                .cancelled
                .then_some(())
                .ok_or_else(|| "not cancelled".into()),
            Fact::RequestsBy(prompt, n) => {
                let shown = turn(seen, *prompt)?.requests;
                (shown == *n)
                    .then_some(())
                    .ok_or_else(|| format!("{shown} requests"))
            }
            Fact::Requests(n) => (seen.requests.len() == *n)
                .then_some(())
                .ok_or_else(|| format!("{} requests", seen.requests.len())),
            Fact::Usage(prompt, input, output) => match turn(seen, *prompt)?.usage {
                None => Ok(()),
                Some(shown) if shown == (*input, *output) => Ok(()),
                Some(shown) => Err(format!("usage {shown:?}")),
            },
            Fact::Request {
                index,
                contains,
                lacks,
            } => has_all(&request(seen, *index)?.text(), contains, lacks),
            Fact::ToolMessage(index, call, needle) => {
                let message = request(seen, *index)?
                    .tool_message(call)
                    .ok_or_else(|| format!("no tool message {call}"))?;
                has_all(&message, std::slice::from_ref(needle), &[])
            }
            Fact::ChildPrompt(name, has, lacks) => {
                let child = seen
                    .requests
                    .iter()
                    .find(|r| r.specialist_call(name))
                    .ok_or_else(|| format!("no call of {name}"))?;
                let system = child.json()["messages"][0]["content"].to_string();
                has_all(&system, &[has.to_string()], &[lacks.to_string()])
            }
            Fact::File(place, is) => file(&paths.of(place), is),
            Fact::PidsGone(files) => {
                let mut pids = Vec::new();
                for place in files {
                    let path = paths.of(place);
                    let text = std::fs::read_to_string(&path)
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                    let pid: i32 = text
                        .trim()
                        .parse()
                        .map_err(|e| format!("{}: {text:?}: {e}", path.display()))?;
                    pids.push(pid);
                }
                let left = crate::procs::wait_gone_blocking(&pids, GONE_WAIT);
                left.is_empty()
                    .then_some(())
                    .ok_or_else(|| format!("still running: {left:?}"))
            }
            Fact::Stderr(needles) => seen
                .stderr
                .lines()
                .any(|l| needles.iter().all(|n| l.contains(n.as_str())))
                .then_some(())
                .ok_or_else(|| format!("no such line in {:?}", seen.stderr)),
            Fact::NotInStderr(needle) => (!seen.stderr.contains(needle.as_str()))
                .then_some(())
                .ok_or_else(|| format!("{needle:?} is in {:?}", seen.stderr)),
            Fact::Path(index, needle) => {
                let path = &request(seen, *index)?.path;
                path.contains(needle)
                    .then_some(())
                    .ok_or_else(|| format!("{needle:?} is not in {path:?}"))
            }
            Fact::Refused(needles) => match &seen.refusal {
                Some(message) => has_all(message, needles, &[]),
                None => Err("it started".into()),
            },
            Fact::InOrder(index, needles) => {
                let text = request(seen, *index)?.text();
                let mut from = 0;
                for needle in needles {
                    match text[from..].find(needle.as_str()) {
                        Some(at) => from += at + needle.len(),
                        None => {
                            return Err(format!("{needle:?} is not after byte {from} of {text:?}"))
                        }
                    }
                }
                Ok(())
            }
            Fact::For(fronts, facts) => {
                let Some(front) = seen.front_end else {
                    return Err("the harness names no front end (Observed::front_end)".into());
                };
                if !fronts.contains(&front) {
                    return Ok(());
                }
                facts.iter().try_for_each(|fact| {
                    fact.check(paths, seen)
                        .map_err(|e| format!("{fact:?}: {e}"))
                })
            }
        }
    }
}

fn tool<'a>(seen: &'a Observed, prompt: usize, id: &str) -> Result<&'a ToolOutcome, String> {
    turn(seen, prompt)?
        .tools
        .iter()
        .find(|t| t.id == id)
        .ok_or_else(|| format!("no outcome of {id}"))
}

fn file(path: &Path, is: &FileIs) -> Checked {
    let text = std::fs::read_to_string(path);
    match (is, text) {
        (FileIs::Absent, Err(_)) | (FileIs::Present, Ok(_)) => Ok(()),
        (FileIs::Absent, Ok(_)) => Err(format!("{} exists", path.display())),
        (_, Err(e)) => Err(format!("{}: {e}", path.display())),
        (FileIs::Text(want), Ok(text)) => (text == *want)
            .then_some(())
            .ok_or_else(|| format!("it holds {text:?}")),
        (FileIs::Json(key, want), Ok(text)) => {
            let json: Value = serde_json::from_str(&text).map_err(|e| format!("{text}: {e}"))?;
            (json[key] == *want)
                .then_some(())
                .ok_or_else(|| format!("{key} in {json}"))
        }
    }
}

/// One test per scenario of [`NAMES`], each calling the harness's `run(name)`, and a test
/// that the list here is the whole table: a harness writes `scenario_tests!(async run);`
/// (multi-threaded `#[tokio::test]`s awaiting `run("…")`) or `scenario_tests!(sync run);`
/// (plain `#[test]`s).
#[macro_export]
macro_rules! scenario_tests {
    ($kind:ident $run:ident) => {
        $crate::scenario_tests!(@list $kind $run;
            hook_pre_tool_use_vetoes_bash,
            hook_zero_after_tool_output_reaches_the_model,
            hook_post_tool_use_context_reaches_the_model,
            hook_post_tool_use_feedback_reaches_the_model,
            hook_user_prompt_submit_blocks_one_prompt,
            hook_stop_forces_one_continuation,
            hook_that_hangs_or_is_missing_fails_open,
            hook_zero_missing_command_fails_closed_before_a_tool,
            hooks_file_that_does_not_exist_refuses_to_start,
            project_hooks_file_has_no_effect,
            session_hooks_run_at_start_and_end,
            sandbox_refuses_a_write_outside_the_workspace,
            sandbox_off_allows_it,
            sandbox_add_dir_makes_a_directory_writable,
            sandbox_bad_value_refuses_to_start,
            task_runs_a_child_and_shows_its_progress,
            task_explorer_is_refused_a_write_and_usage_adds_up,
            task_child_asks_permission_in_its_own_name,
            task_child_that_fails_is_the_task_error,
            task_interrupted_mid_child_bash_leaves_no_process,
            task_two_in_the_background_read_with_task_output,
            task_project_manifest_overrides_the_builtin,
            project_instructions_reach_the_model_in_order,
            project_skill_tool_loads_a_body_and_lists_names,
            project_slash_command_expands_where_the_protocol_has_commands,
            project_no_context_files_leaves_the_instructions_out,
            context_auto_compaction,
            context_auto_compact_off_never_compacts,
            provider_gemini_answers,
            provider_vertex_answers,
            provider_azure_answers,
            provider_bedrock_answers,
            api_key_redacted_from_a_tool_error,
            lsp_edit_reports_the_error_and_the_fix_clears_it,
            tools_answer_to_the_sdk_names_in_every_catalogue,
            rules_from_settings_allow_and_deny_each_call,
            rules_settings_with_a_bad_rule_refuse_to_start,
            budget_cap_ends_the_run_after_the_first_call,
            fallback_model_answers_when_the_model_is_overloaded
        );
    };
    (@list async $run:ident; $($name:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                $run(stringify!($name)).await;
            }
        )+
        $crate::scenario_tests!(@every $($name),+);
    };
    (@list sync $run:ident; $($name:ident),+) => {
        $(
            #[test]
            fn $name() {
                $run(stringify!($name));
            }
        )+
        $crate::scenario_tests!(@every $($name),+);
    };
    (@every $($name:ident),+) => {
        #[test]
        fn the_harness_runs_every_scenario_of_the_table() {
            let mut listed = vec![$(stringify!($name)),+];
            listed.sort_unstable();
            let mut table = $crate::scenarios::NAMES.to_vec();
            table.sort_unstable();
            assert_eq!(listed, table, "scenario_tests! lists every scenario of the table");
        }
    };
}

/// `Fact::Tool` for a call that succeeded, showing every needle.
pub fn ok(prompt: usize, id: &'static str, contains: &[&str]) -> Fact {
    Fact::Tool {
        prompt,
        id,
        ok: true,
        contains: strings(contains),
        lacks: Vec::new(),
    }
}

/// `Fact::Tool` for a call that failed, showing every needle.
pub fn failed(prompt: usize, id: &'static str, contains: &[&str]) -> Fact {
    Fact::Tool {
        prompt,
        id,
        ok: false,
        contains: strings(contains),
        lacks: Vec::new(),
    }
}

/// Owned copies of `items`.
pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}
