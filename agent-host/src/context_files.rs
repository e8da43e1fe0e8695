//! Where each front end finds what the agent knows of the project: its instructions
//! (`AGENTS.md` and the like), its skills and its slash commands. A [`ProjectContext`] is
//! one front end's rule, as the program it stands in for has it; the loading itself is
//! agent-core's ([`Instructions::load`], [`Skills::discover`], [`Commands::load`]).
//!
//! | | instructions | skills | commands |
//! |---|---|---|---|
//! | [`ProjectContext::zero`] (`exec`) | the user's `ZERO.md` (`$XDG_CONFIG_HOME/zero/`), then from the git root down to the working directory the first of `AGENTS.md`, `ZERO.md`, `.zero/AGENTS.md` per directory; 8 KiB a file, 32 KiB in all; Zero's headings | `$ZERO_SKILLS_DIR` (else `$XDG_DATA_HOME/zero/skills`), `~/.agents/skills` | none (`/name` goes to the model unchanged) |
//! | [`ProjectContext::zut`] (`rpc`) | `$ZUT_HOME/AGENTS.md`, then `AGENTS.md` (or `AGENTS.MD`) from the filesystem root down; 64 KiB a file, 192 KiB in all; zut's heading | zut's roots: `.zut/skills`, `$ZUT_HOME/skills`, `.claude/skills`, `~/.claude/skills`, `.agents/skills`, `~/.agents/skills` | none (as `zut rpc`) |
//! | [`ProjectContext::editor`] (ACP, ZCode) | `AGENTS.md` and `CLAUDE.md` of each directory from the git root (or the workspace) down; 32 KiB a file, 96 KiB in all | `.claude/skills`, `.agents/skills`, `~/.claude/skills`, `~/.agents/skills` | `.zero/commands`, `.claude/commands`, then the user's `$XDG_CONFIG_HOME/zero/commands`, `~/.claude/commands` |
//!
//! Earlier roots win a name clash (a project's commands shadow the user's). Trust: Zero
//! asks for trust before it runs a project's executable configuration (hooks, plugins, MCP
//! servers; `exec`'s capabilities follow that), and reads a project's `AGENTS.md`/`ZERO.md`
//! without it; `exec` reads no project skills or commands. zut and the editors' agents ask
//! for no trust.

use std::path::{Path, PathBuf};

use agent_core::commands::{Commands, LoadedCommands};
use agent_core::instructions::{
    InstructionRules, Instructions, LoadedInstructions, PerDirectory, UserFile, Walk,
};
use agent_core::skills::{DiscoveredSkills, Skills, ZERO_TOOL_DESCRIPTION};

/// Looks up an environment variable (the process's, or a test's).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process's environment, as an [`Env`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A directory of skills or commands: in the workspace, or anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Root {
    /// Relative to the session's workspace.
    Workspace(PathBuf),
    /// An absolute directory (the user's own).
    Absolute(PathBuf),
}

impl Root {
    /// The directory for `workspace`.
    pub fn resolve(&self, workspace: &Path) -> PathBuf {
        match self {
            Root::Workspace(rel) => workspace.join(rel),
            Root::Absolute(dir) => dir.clone(),
        }
    }
}

/// One front end's rule for the project's instructions, skills and commands (see the
/// module docs). Nothing is read until one of its loaders is called.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectContext {
    /// Which instruction files are read; `None`: none (`--no-context-files`).
    pub instructions: Option<InstructionRules>,
    /// Where skills are looked for, in order (earlier roots win).
    pub skill_roots: Vec<Root>,
    /// Where command files are looked for, in order (earlier directories shadow later
    /// ones).
    pub command_dirs: Vec<Root>,
    /// The skill tool's description, when not agent-core's default.
    pub skill_tool_description: Option<String>,
}

fn nonempty(env: Env<'_>, name: &str) -> Option<String> {
    env(name)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The user's home: `$HOME`, else `%USERPROFILE%`.
fn home(env: Env<'_>) -> Option<PathBuf> {
    nonempty(env, "HOME")
        .or_else(|| nonempty(env, "USERPROFILE"))
        .map(PathBuf::from)
}

/// The user's config directory as Go's `os.UserConfigDir` finds it (Zero's): an absolute
/// `$XDG_CONFIG_HOME`, else `$HOME/.config`.
pub fn user_config_dir(env: Env<'_>) -> Option<PathBuf> {
    match nonempty(env, "XDG_CONFIG_HOME") {
        Some(dir) => Some(PathBuf::from(dir)).filter(|d| d.is_absolute()),
        None => nonempty(env, "HOME").map(|h| PathBuf::from(h).join(".config")),
    }
}

/// Zero's skills directory: `$ZERO_SKILLS_DIR`, else `$XDG_DATA_HOME/zero/skills`, else
/// `~/.local/share/zero/skills`.
pub fn zero_skills_dir(env: Env<'_>) -> Option<PathBuf> {
    if let Some(dir) = nonempty(env, "ZERO_SKILLS_DIR") {
        return Some(PathBuf::from(dir));
    }
    let data = nonempty(env, "XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| home(env).map(|h| h.join(".local").join("share")))?;
    Some(data.join("zero").join("skills"))
}

/// zut's home: `$ZUT_HOME`, else `$XDG_STATE_HOME/zut`, else (macOS) `~/Library/Application
/// Support/zut`, else `~/.local/state/zut`.
pub fn zut_home(env: Env<'_>) -> Option<PathBuf> {
    if let Some(dir) = env("ZUT_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = env("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(dir).join("zut"));
    }
    let home = home(env)?;
    Some(match cfg!(target_os = "macos") {
        true => home.join("Library").join("Application Support").join("zut"),
        false => home.join(".local").join("state").join("zut"),
    })
}

/// The heading of Zero's user instructions, and its precedence note.
const ZERO_USER_HEADING: &str = "## User guidelines ({name})";
const ZERO_USER_NOTE: &str = "These are the operator's personal preferences, not project \
policy. Where they conflict with a repository's project guidelines below (AGENTS.md/ZERO.md), \
the project guidelines take precedence.";

/// zut's paragraph before its `AGENTS.md` files.
const ZUT_PREAMBLE: &str = "Project context instructions loaded from AGENTS.md files. Follow \
them when working in this repository. Later files are more specific and may override earlier \
ones.";

/// The editors' agents' paragraph before the project's files.
const EDITOR_PREAMBLE: &str = "Project instructions loaded from the AGENTS.md and CLAUDE.md \
files of this repository, from its root down to the working directory. Follow them when \
working here; later files are more specific and take precedence over earlier ones.";

impl ProjectContext {
    /// Nothing: no instructions, skills or commands.
    pub fn none() -> Self {
        Self::default()
    }

    /// `zero exec`'s rule (see the module docs), with the texts Zero's prompt has.
    pub fn zero(env: Env<'_>) -> Self {
        let user_files = user_config_dir(env)
            .map(|dir| UserFile {
                path: dir.join("zero").join("ZERO.md"),
                case_insensitive: true,
                heading: ZERO_USER_HEADING.into(),
                note: Some(ZERO_USER_NOTE.into()),
            })
            .into_iter()
            .collect();
        let instructions = InstructionRules {
            user_files,
            names: vec![
                "AGENTS.md".into(),
                "ZERO.md".into(),
                ".zero/AGENTS.md".into(),
            ],
            case_insensitive: true,
            per_directory: PerDirectory::First,
            walk: Walk::GitRoot,
            heading: "## Project guidelines ({rel})".into(),
            preamble: None,
            max_file_bytes: 8 * 1024,
            max_total_bytes: 32 * 1024,
            truncation_note: "\n… (truncated)".into(),
        };
        let skill_roots = [
            zero_skills_dir(env),
            home(env).map(|h| h.join(".agents").join("skills")),
        ]
        .into_iter()
        .flatten()
        .map(Root::Absolute)
        .collect();
        Self {
            instructions: Some(instructions),
            skill_roots,
            command_dirs: Vec::new(),
            skill_tool_description: Some(ZERO_TOOL_DESCRIPTION.into()),
        }
    }

    /// `zut rpc`'s rule (see the module docs).
    pub fn zut(env: Env<'_>) -> Self {
        let zut_home = zut_home(env);
        let user_files = zut_home
            .iter()
            .map(|dir| UserFile {
                path: dir.join("AGENTS.md"),
                case_insensitive: false,
                heading: "## {path}".into(),
                note: None,
            })
            .collect();
        let instructions = InstructionRules {
            user_files,
            names: vec!["AGENTS.md".into(), "AGENTS.MD".into()],
            case_insensitive: false,
            per_directory: PerDirectory::First,
            walk: Walk::FilesystemRoot,
            heading: "## {path}".into(),
            preamble: Some(ZUT_PREAMBLE.into()),
            max_file_bytes: 64 * 1024,
            max_total_bytes: 192 * 1024,
            ..InstructionRules::default()
        };
        let home = home(env);
        let mut skill_roots: Vec<Root> = env("ZUT_AGENT_SKILLS")
            .map(|list| {
                std::env::split_paths(&list)
                    .filter(|p| !p.as_os_str().is_empty())
                    .map(Root::Absolute)
                    .collect()
            })
            .unwrap_or_default();
        skill_roots.push(Root::Workspace(PathBuf::from(".zut/skills")));
        skill_roots.extend(zut_home.map(|h| Root::Absolute(h.join("skills"))));
        skill_roots.push(Root::Workspace(PathBuf::from(".claude/skills")));
        skill_roots.extend(
            home.as_ref()
                .map(|h| Root::Absolute(h.join(".claude/skills"))),
        );
        skill_roots.push(Root::Workspace(PathBuf::from(".agents/skills")));
        skill_roots.extend(home.map(|h| Root::Absolute(h.join(".agents/skills"))));
        Self {
            instructions: Some(instructions),
            skill_roots,
            command_dirs: Vec::new(),
            skill_tool_description: None,
        }
    }

    /// The ACP agent's and the ZCode app-server's rule (see the module docs).
    pub fn editor(env: Env<'_>) -> Self {
        let instructions = InstructionRules {
            names: vec!["AGENTS.md".into(), "CLAUDE.md".into()],
            per_directory: PerDirectory::All,
            walk: Walk::GitRoot,
            heading: "## Instructions from {rel}".into(),
            preamble: Some(EDITOR_PREAMBLE.into()),
            ..InstructionRules::default()
        };
        let home = home(env);
        let mut skill_roots = vec![
            Root::Workspace(PathBuf::from(".claude/skills")),
            Root::Workspace(PathBuf::from(".agents/skills")),
        ];
        skill_roots.extend(
            home.as_ref()
                .map(|h| Root::Absolute(h.join(".claude/skills"))),
        );
        skill_roots.extend(
            home.as_ref()
                .map(|h| Root::Absolute(h.join(".agents/skills"))),
        );
        let mut command_dirs = vec![
            Root::Workspace(PathBuf::from(".zero/commands")),
            Root::Workspace(PathBuf::from(".claude/commands")),
        ];
        command_dirs.extend(user_config_dir(env).map(|d| Root::Absolute(d.join("zero/commands"))));
        command_dirs.extend(home.map(|h| Root::Absolute(h.join(".claude/commands"))));
        Self {
            instructions: Some(instructions),
            skill_roots,
            command_dirs,
            skill_tool_description: None,
        }
    }

    /// The same rule without instructions (`--no-context-files`).
    #[must_use = "returns the changed value"]
    pub fn without_instructions(mut self) -> Self {
        self.instructions = None;
        self
    }

    /// Reads the instructions for `workspace` (none when the rule has none).
    pub fn instructions(&self, workspace: &Path) -> LoadedInstructions {
        match &self.instructions {
            Some(rules) => Instructions::load(rules, workspace),
            None => LoadedInstructions::default(),
        }
    }

    /// Discovers the skills for `workspace` (their frontmatter only).
    pub fn skills(&self, workspace: &Path) -> DiscoveredSkills {
        let roots: Vec<PathBuf> = self
            .skill_roots
            .iter()
            .map(|r| r.resolve(workspace))
            .collect();
        let mut found = Skills::discover(roots);
        if let Some(text) = &self.skill_tool_description {
            found.skills = found.skills.with_tool_description(text.clone());
        }
        found
    }

    /// Reads the command files for `workspace`.
    pub fn commands(&self, workspace: &Path) -> LoadedCommands {
        if self.command_dirs.is_empty() {
            return LoadedCommands {
                commands: Commands::default(),
                warnings: Vec::new(),
            };
        }
        let dirs: Vec<PathBuf> = self
            .command_dirs
            .iter()
            .map(|r| r.resolve(workspace))
            .collect();
        Commands::load(dirs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(path, text).expect("write");
    }

    fn env_of(vars: &[(&str, &Path)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.display().to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    /// A repository `root/repo` (the git root) with `sub`, a home and a config directory.
    fn layout() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        write(&repo.join(".git/HEAD"), "ref: refs/heads/main\n");
        write(&repo.join("AGENTS.md"), "ROOT RULES");
        write(&repo.join("sub/AGENTS.md"), "SUB RULES");
        write(&repo.join("sub/CLAUDE.md"), "SUB CLAUDE");
        write(&dir.path().join("config/zero/zero.md"), "USER ZERO");
        write(&dir.path().join("zut/AGENTS.md"), "ZUT HOME");
        (dir, repo)
    }

    #[test]
    fn zero_reads_the_user_file_then_the_repository_down_to_the_cwd() {
        let (dir, repo) = layout();
        let config = dir.path().join("config");
        let env = env_of(&[("XDG_CONFIG_HOME", &config), ("HOME", dir.path())]);
        let loaded = ProjectContext::zero(&env).instructions(&repo.join("sub"));
        assert!(loaded.warnings.is_empty());
        let text = loaded.instructions.render().expect("instructions");
        assert_eq!(
            text,
            format!(
                "## User guidelines (zero.md)\n\n{ZERO_USER_NOTE}\n\nUSER ZERO\n\n\
                 ## Project guidelines (AGENTS.md)\n\nROOT RULES\n\n\
                 ## Project guidelines (sub/AGENTS.md)\n\nSUB RULES"
            )
        );
    }

    #[test]
    fn zut_reads_its_home_then_agents_md_from_the_filesystem_root() {
        let (dir, repo) = layout();
        let zut = dir.path().join("zut");
        let env = env_of(&[("ZUT_HOME", &zut), ("HOME", dir.path())]);
        let loaded = ProjectContext::zut(&env).instructions(&repo.join("sub"));
        let text = loaded.instructions.render().expect("instructions");
        assert!(text.starts_with(&format!(
            "{ZUT_PREAMBLE}\n\n## {}\n\nZUT HOME\n\n",
            zut.join("AGENTS.md").display()
        )));
        let root = text.find("ROOT RULES").expect("root");
        let sub = text.find("SUB RULES").expect("sub");
        assert!(root < sub);
        assert!(!text.contains("USER ZERO") && !text.contains("SUB CLAUDE"));
    }

    #[test]
    fn the_editors_read_agents_and_claude_md_and_none_without_instructions() {
        let (dir, repo) = layout();
        let env = env_of(&[("HOME", dir.path())]);
        let context = ProjectContext::editor(&env);
        let text = context
            .instructions(&repo.join("sub"))
            .instructions
            .render()
            .expect("instructions");
        let order: Vec<usize> = ["ROOT RULES", "SUB RULES", "SUB CLAUDE"]
            .iter()
            .map(|n| text.find(n).expect(n))
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert!(text.contains("## Instructions from sub/CLAUDE.md"));
        assert!(!text.contains("USER ZERO"));
        let off = context.without_instructions().instructions(&repo);
        assert!(off.instructions.is_empty());
    }

    #[test]
    fn skill_and_command_roots_resolve_per_front_end() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (home, data, config) = (
            dir.path().join("home"),
            dir.path().join("data"),
            dir.path().join("config"),
        );
        let env = env_of(&[
            ("HOME", &home),
            ("XDG_DATA_HOME", &data),
            ("XDG_CONFIG_HOME", &config),
        ]);
        let ws = dir.path().join("ws");
        write(
            &data.join("zero/skills/a/SKILL.md"),
            "---\ndescription: A\n---\nA body",
        );
        write(&home.join(".agents/skills/b/SKILL.md"), "B body");
        write(&ws.join(".claude/skills/c/SKILL.md"), "C body");
        let names = |ctx: &ProjectContext| -> Vec<String> {
            ctx.skills(&ws)
                .skills
                .iter()
                .map(|s| s.name().to_string())
                .collect()
        };
        assert_eq!(names(&ProjectContext::zero(&env)), ["a", "b"]);
        assert_eq!(names(&ProjectContext::editor(&env)), ["b", "c"]);
        assert_eq!(names(&ProjectContext::zut(&env)), ["b", "c"]);
        write(
            &ws.join(".claude/commands/review.md"),
            "---\ndescription: Project review\n---\nReview $1",
        );
        write(&home.join(".claude/commands/review.md"), "User review");
        write(&config.join("zero/commands/plain.md"), "Plain");
        let loaded = ProjectContext::editor(&env).commands(&ws);
        let review = loaded.commands.get("review").expect("review");
        assert_eq!(review.description, "Project review");
        assert!(loaded.commands.get("plain").is_some());
        assert!(ProjectContext::zero(&env).commands(&ws).commands.is_empty());
    }

    #[test]
    fn zero_skills_dir_and_zut_home_follow_their_variables() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_of(&[("ZERO_SKILLS_DIR", dir.path()), ("HOME", Path::new("/h"))]);
        assert_eq!(zero_skills_dir(&env), Some(dir.path().to_path_buf()));
        let env = env_of(&[("HOME", Path::new("/h"))]);
        assert_eq!(
            zero_skills_dir(&env),
            Some(PathBuf::from("/h/.local/share/zero/skills"))
        );
        let env = env_of(&[("XDG_STATE_HOME", Path::new("/s"))]);
        assert_eq!(zut_home(&env), Some(PathBuf::from("/s/zut")));
        let env = env_of(&[("XDG_CONFIG_HOME", Path::new("relative"))]);
        assert_eq!(user_config_dir(&env), None);
    }
}
