//! One simple command: its program (after wrappers), arguments and redirections, and the
//! risk categories they make.

use super::*;

#[derive(Debug, Default)]
pub(super) struct Stage {
    pub(super) program: String,
    /// Downloads something (curl, wget).
    pub(super) fetches: bool,
    /// Runs code from its input (sh, bash, python…).
    pub(super) interpreter: bool,
    /// Runs code from its input or arguments (`bash -c`, `python -c`, `source`).
    pub(super) runs_code: bool,
}

pub(super) const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "ash",
];
pub(super) const INTERPRETERS: &[&str] = &[
    "python", "python2", "python3", "perl", "ruby", "node", "php", "deno", "bun", "source", ".",
];
pub(super) const WRAPPERS: &[&str] = &[
    "sudo", "doas", "env", "nohup", "time", "nice", "ionice", "command", "exec", "builtin",
    "stdbuf", "timeout", "xargs", "watch", "unbuffer", "chronic", "then", "do", "else", "!", "{",
    "if", "while", "until",
];
pub(super) const NETWORK_TOOLS: &[&str] = &[
    "curl", "wget", "ssh", "scp", "sftp", "nc", "ncat", "netcat", "telnet", "ftp", "ping", "socat",
    "aria2c", "http", "https", "xh", "dig", "nslookup", "mosh", "lftp",
];
pub(super) const MUTATING: &[&str] = &[
    "rm", "rmdir", "mv", "cp", "tee", "touch", "mkdir", "chmod", "chown", "chgrp", "ln",
    "truncate", "install", "unlink", "shred",
];
pub(super) const DISK_TOOLS: &[&str] = &[
    "mkfs", "wipefs", "fdisk", "sfdisk", "parted", "mkswap", "shred", "gdisk", "sgdisk",
];

pub(super) fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Where a path argument points.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Place {
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

pub(super) fn place(word: &str, ws: &Workspace) -> Place {
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

pub(super) fn looks_like_path(word: &str) -> bool {
    word.starts_with('/')
        || word.starts_with("~")
        || word.starts_with("..")
        || word.starts_with("$HOME")
}

/// Redirection operators as tokens after [`split_line`] spaced them out.
pub(super) fn redirect_op(word: &str) -> Option<bool> {
    let op = word.trim_start_matches(|c: char| c.is_ascii_digit());
    match op {
        ">" | ">>" | ">|" | "&>" | "&>>" | "<>" => Some(true),
        "<" | "<<<" | "<&" | ">&" => Some(false),
        _ => None,
    }
}

pub(super) fn analyze_simple(
    words: &[String],
    ws: &Workspace,
    f: &mut Findings,
    depth: usize,
) -> Stage {
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

pub(super) fn check_write_target(target: &str, ws: &Workspace, f: &mut Findings, what: &str) {
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

pub(super) fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

pub(super) fn is_remote_spec(arg: &str) -> bool {
    if arg.contains("://") {
        return true;
    }
    match arg.split_once(':') {
        Some((host, _)) => !host.is_empty() && !host.contains('/'),
        None => false,
    }
}

pub(super) fn analyze_git(args: &[&str], f: &mut Findings) {
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

pub(super) fn analyze_package_manager(program: &str, args: &[&str], f: &mut Findings) {
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

pub(super) fn analyze_rm(program: &str, args: &[&str], ws: &Workspace, f: &mut Findings) {
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
