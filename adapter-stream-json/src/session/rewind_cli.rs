//! `adapter-stream-json sessions rewind-plan|rewind <id> --sequence N` (Zero's `zero sessions`,
//! `internal/cli/sessions.go`): the plan's five lines (or `--json`), the rewind's one line,
//! Zero's flags, errors (`[zero] …` on stderr) and exit codes (2 for usage errors and unknown
//! sessions or targets, 1 for the rest). `--force` (this SDK's) lets a rewind overwrite a
//! file someone else changed since the agent's last change; without it such a rewind is
//! refused and nothing changes. Zero's other `sessions` commands (`list`, `tree`, …) are not
//! in this build and say so.

use std::io::Write;

use agent_host::session::zero::rewind::{RewindOptions, RewindPlan};

use super::{default_root, ZeroError, ZeroSessions};

const EXIT_SUCCESS: i32 = 0;
const EXIT_CRASH: i32 = 1;
const EXIT_USAGE: i32 = 2;

const HELP: &str = "Usage:
  zero sessions <command> [flags]

Commands:
  rewind-plan <id>      Preview events kept and dropped by a rewind
  rewind <id>           Restore workspace files and truncate the log to a checkpoint

Flags:
      --json            Print JSON output
      --sequence <n>    Rewind target sequence (rewind-plan, rewind)
      --event <id>      Rewind target event id (rewind-plan, rewind)
      --exclude-target  Drop the target event (rewind-plan, rewind)
      --force           Overwrite files changed since the agent's last change (rewind)
  -h, --help            Show this help
";

/// Zero's session commands this build has, and those it knows but has not.
const COMMANDS: &[&str] = &["rewind-plan", "rewind"];
const ZERO_ONLY: &[&str] = &["list", "children", "lineage", "tree", "compact-plan"];

#[derive(Debug, Default)]
struct Options {
    json: bool,
    sequence: u64,
    event: String,
    exclude_target: bool,
    force: bool,
}

fn usage(err: &mut dyn Write, message: &str) -> i32 {
    let _ = writeln!(err, "[zero] {message}");
    EXIT_USAGE
}

/// Zero's `writeSessionCommandError`: "zero session…" reads "Zero session…"; an unknown
/// session or target is a usage error, the rest exit 1.
fn session_error(err: &mut dyn Write, error: &ZeroError) -> i32 {
    let text = error.to_string();
    let message = match text.strip_prefix("zero session") {
        Some(rest) => format!("Zero session{rest}"),
        None => text,
    };
    let _ = writeln!(err, "[zero] {message}");
    match message.contains("not found") || message.contains("invalid zero session id") {
        true => EXIT_USAGE,
        false => EXIT_CRASH,
    }
}

fn positive(flag: &str, value: &str) -> Result<u64, String> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Err(format!("{flag} requires a value"));
    }
    match trimmed.parse::<i64>() {
        Ok(n) if n > 0 => Ok(n as u64),
        _ => Err(format!(
            "invalid {flag} {}. Expected a positive integer.",
            crate::input::go_quote(value)
        )),
    }
}

/// Zero's `parseSessionsArgs`: the command (default `list`), the rest, the flags; `None` for
/// help.
fn parse(args: &[String]) -> Result<Option<(String, Vec<String>, Options)>, String> {
    let mut options = Options::default();
    let mut command: Option<String> = None;
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        let value = |i: usize| -> Result<String, String> {
            match args.get(i + 1).map(|v| v.trim()) {
                Some(v) if !v.is_empty() && !crate::cli::looks_like_option(v) => Ok(v.to_string()),
                _ => Err(format!("{arg} requires a value")),
            }
        };
        match arg {
            "-h" | "--help" | "help" => return Ok(None),
            "--json" => options.json = true,
            "--exclude-target" => options.exclude_target = true,
            "--force" => options.force = true,
            "--sequence" => {
                options.sequence = positive(arg, &value(i)?)?;
                i += 1;
            }
            "--event" => {
                options.event = value(i)?;
                i += 1;
            }
            _ if arg.starts_with("--sequence=") => {
                options.sequence = positive("--sequence", &arg["--sequence=".len()..])?;
            }
            _ if arg.starts_with("--event=") => {
                let event = arg["--event=".len()..].trim();
                if event.is_empty() {
                    return Err("--event requires a value".into());
                }
                options.event = event.to_string();
            }
            _ if arg.starts_with('-') => return Err(format!("unknown sessions flag {arg:?}")),
            _ if command.is_none() && rest.is_empty() => {
                if !COMMANDS.contains(&arg) && !ZERO_ONLY.contains(&arg) {
                    return Err(format!("unknown sessions command {arg:?}"));
                }
                command = Some(arg.to_string());
            }
            _ => rest.push(arg.to_string()),
        }
        i += 1;
    }
    Ok(Some((
        command.unwrap_or_else(|| "list".into()),
        rest,
        options,
    )))
}

fn pretty(out: &mut dyn Write, value: &impl serde::Serialize) -> i32 {
    match serde_json::to_string_pretty(value) {
        Ok(text) if writeln!(out, "{text}").is_ok() => EXIT_SUCCESS,
        _ => EXIT_CRASH,
    }
}

/// Zero's `formatRewindPlan`, then the files changed since (this SDK's), one line each.
pub fn format_plan(plan: &RewindPlan) -> String {
    let mut lines = vec![
        "Zero session rewind plan".to_string(),
        format!("session: {}", plan.session_id),
        format!("target: {}", plan.target_event_id),
        format!("kept: {}", plan.kept_count),
        format!("dropped: {}", plan.dropped_count),
    ];
    lines.extend(
        plan.changed_since
            .iter()
            .map(|path| format!("changed since: {path}")),
    );
    lines.join("\n")
}

/// Runs `sessions <args>` against Zero's sessions directory of `env`; returns the exit code.
pub fn run_sessions(
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let (command, rest, options) = match parse(args) {
        Ok(Some(parsed)) => parsed,
        Ok(None) => {
            return match out.write_all(HELP.as_bytes()) {
                Ok(()) => EXIT_SUCCESS,
                Err(_) => EXIT_CRASH,
            }
        }
        Err(message) => return usage(err, &message),
    };
    let rewinding = COMMANDS.contains(&command.as_str());
    if !rewinding && (options.sequence > 0 || !options.event.is_empty() || options.exclude_target) {
        return usage(
            err,
            "--sequence, --event, and --exclude-target are only valid for sessions rewind-plan and rewind",
        );
    }
    if !rewinding {
        return usage(
            err,
            &format!(
                "sessions {command} is not in this build (it has rewind-plan and rewind); \
                 Zero's own `zero sessions {command}` reads the same sessions"
            ),
        );
    }
    let [id] = rest.as_slice() else {
        return usage(err, &format!("sessions {command} requires a session id"));
    };
    let store = ZeroSessions::new(default_root(env));
    let plan = match store.plan_rewind(
        id,
        &RewindOptions {
            target_sequence: options.sequence,
            target_event_id: options.event.clone(),
            keep_target: !options.exclude_target,
        },
    ) {
        Ok(plan) => plan,
        Err(error) => return session_error(err, &error),
    };
    if command == "rewind-plan" {
        if options.json {
            return pretty(out, &plan);
        }
        return match writeln!(out, "{}", format_plan(&plan)) {
            Ok(()) => EXIT_SUCCESS,
            Err(_) => EXIT_CRASH,
        };
    }
    match store.get(id) {
        Ok(Some(meta)) if meta.cwd.trim().is_empty() => {
            return usage(
                err,
                "session has no recorded workspace (cwd); cannot restore files",
            )
        }
        Ok(Some(_)) => {}
        Ok(None) => return usage(err, &format!("Zero session not found: {id}")),
        Err(error) => return session_error(err, &error),
    }
    let keep_through = plan.keep_through();
    let report = match store.apply_rewind(id, keep_through, options.force) {
        Ok(report) => report,
        Err(error) => return session_error(err, &error),
    };
    if options.json {
        return pretty(out, &report);
    }
    let line = format!(
        "Rewound {id} to sequence {keep_through}: {} file(s) restored, {} deleted, {} skipped.",
        report.files_restored,
        report.files_deleted,
        report.skipped.len()
    );
    match writeln!(out, "{line}") {
        Ok(()) => EXIT_SUCCESS,
        Err(_) => EXIT_CRASH,
    }
}
