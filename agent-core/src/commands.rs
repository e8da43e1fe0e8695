//! Slash commands: prompts kept in markdown files that a user runs as `/name args`.
//!
//! A command file is `<dir>/<name>.md`: optional frontmatter with `description`, `model`
//! and `argument-hint`, then the template. [`Commands::load`] reads the files of some
//! directories (earlier directories shadow later ones: a project's over the user's);
//! [`Commands::expand`] turns a prompt `/name args` into the command's template with the
//! arguments put in (`$ARGUMENTS` all of them, `$1` … `$9` one each, `$$` a `$`; a template
//! without placeholders gets the arguments appended after a blank line) — Zero's rules. A
//! prompt that names no command is left alone ([`Commands::expand`] returns `None`).
//!
//! ```
//! use agent_core::commands::{Command, Commands};
//!
//! let commands = Commands::new([Command::new("review", "Review a file", "Review $1 carefully.")]);
//! let expanded = commands.expand("/review src/lib.rs").expect("a command");
//! assert_eq!(expanded.prompt, "Review src/lib.rs carefully.");
//! assert!(commands.expand("/unknown x").is_none());
//! ```
//!
//! Other sources of commands (an MCP server's prompts) plug in through [`CommandSource`].

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use crate::frontmatter::{self, is_text, read_bounded, text_prefix, Split};

/// The most bytes of a command file that are read.
pub const MAX_COMMAND_BYTES: usize = 64 * 1024;

/// One command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Its name, without the `/`.
    pub name: String,
    /// What it does (a file without one: `User command: /<name>`, as Zero says).
    pub description: String,
    /// The model it asks for, if any.
    pub model: Option<String>,
    /// What its arguments are, for a client to show (frontmatter `argument-hint`).
    pub argument_hint: Option<String>,
    /// The template its prompt is made from.
    pub template: String,
    /// The file it was read from, if any.
    pub path: Option<PathBuf>,
}

impl Command {
    /// A command made in memory.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        template: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            model: None,
            argument_hint: None,
            template: template.into(),
            path: None,
        }
    }

    /// Whether it takes arguments: it has an `argument-hint`, or its template has a
    /// placeholder (`$ARGUMENTS`, `$1` … `$9`).
    pub fn takes_arguments(&self) -> bool {
        self.argument_hint.is_some() || has_placeholder(&self.template)
    }

    /// The hint a client shows for its arguments: the `argument-hint`, else `arguments`
    /// when it takes some; `None` when it takes none.
    pub fn input_hint(&self) -> Option<String> {
        match &self.argument_hint {
            Some(hint) => Some(hint.clone()),
            None => has_placeholder(&self.template).then(|| "arguments".to_string()),
        }
    }

    /// Its prompt for `args` (see [`expand_template`]).
    pub fn expand(&self, args: &str) -> String {
        expand_template(&self.template, args)
    }
}

fn has_placeholder(template: &str) -> bool {
    template.contains("$ARGUMENTS")
        || template
            .as_bytes()
            .windows(2)
            .any(|w| w[0] == b'$' && (b'1'..=b'9').contains(&w[1]))
}

/// Puts `args` into `template`, as Zero does: `$ARGUMENTS` is every argument (the whole
/// string, trimmed), `$1` … `$9` the Nth whitespace-separated one (empty when absent), `$$`
/// a literal `$`; any other `$` stays. A template without a `$` gets the arguments appended
/// after a blank line (when there are any).
pub fn expand_template(template: &str, args: &str) -> String {
    let args = args.trim();
    let positional: Vec<&str> = args.split_whitespace().collect();
    if !template.contains('$') {
        return match args.is_empty() {
            true => template.to_string(),
            false => format!("{template}\n\n{args}"),
        };
    }
    let mut out = String::with_capacity(template.len() + args.len());
    let mut rest = template;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let mut chars = after.chars();
        match chars.next() {
            Some('$') => {
                out.push('$');
                rest = &after[1..];
            }
            Some(d @ '1'..='9') => {
                let index = d as usize - '1' as usize;
                out.push_str(positional.get(index).copied().unwrap_or_default());
                rest = &after[1..];
            }
            _ if after.starts_with("ARGUMENTS") => {
                out.push_str(args);
                rest = &after["ARGUMENTS".len()..];
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A prompt of the form `/name args`: the name (without the `/`) and the arguments
/// (trimmed); `None` for any other prompt.
pub fn parse_invocation(prompt: &str) -> Option<(&str, &str)> {
    let prompt = prompt.trim();
    let rest = prompt.strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    (!name.is_empty()).then(|| (name, rest[end..].trim()))
}

/// A prompt made from a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    /// The command's name.
    pub name: String,
    /// The prompt to send.
    pub prompt: String,
    /// The model the command asks for, if any.
    pub model: Option<String>,
}

/// A set of commands, sorted by name, names unique.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Commands {
    list: Vec<Command>,
}

/// What [`Commands::load`] found.
#[derive(Debug, Default)]
#[must_use = "the warnings should be reported"]
pub struct LoadedCommands {
    /// The commands.
    pub commands: Commands,
    /// The files skipped, for the front end to report in its own way.
    pub warnings: Vec<CommandWarning>,
}

/// A command file that was skipped.
#[derive(Debug, thiserror::Error)]
pub enum CommandWarning {
    /// It could not be read.
    #[error("skipping command file {}: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not text, or its frontmatter is not closed.
    #[error("skipping command file {}: {reason}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: &'static str,
    },
    /// Its name is not a command's: lowercase letters, digits, `-` and `_`.
    #[error("skipping command file {}: {name:?} is not a command name (lowercase letters, digits, `-` and `_`)", path.display())]
    InvalidName {
        /// The file.
        path: PathBuf,
        /// The name.
        name: String,
    },
}

impl Commands {
    /// The commands given; of two with one name the first is kept.
    pub fn new(commands: impl IntoIterator<Item = Command>) -> Self {
        let mut seen = HashSet::new();
        let mut list: Vec<Command> = commands
            .into_iter()
            .filter(|c| seen.insert(c.name.clone()))
            .collect();
        list.sort_by(|a, b| a.name.cmp(&b.name));
        Self { list }
    }

    /// The `*.md` files of `dirs`, in order: a command of an earlier directory shadows one
    /// of the same name in a later one. The name is the file's name without `.md`,
    /// lowercased. Missing directories hold nothing; files that cannot be read, are not
    /// text, have frontmatter that never closes, or whose name is not a command's are
    /// skipped with a warning.
    pub fn load<P: AsRef<Path>>(dirs: impl IntoIterator<Item = P>) -> LoadedCommands {
        let mut found = Vec::new();
        let mut warnings = Vec::new();
        for dir in dirs {
            load_dir(dir.as_ref(), &mut found, &mut warnings);
        }
        LoadedCommands {
            commands: Commands::new(found),
            warnings,
        }
    }

    /// Adds `other`'s commands whose names this set does not have.
    #[must_use = "returns the merged set"]
    pub fn merged(self, other: Commands) -> Self {
        Commands::new(self.list.into_iter().chain(other.list))
    }

    /// The commands, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Command> {
        self.list.iter()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// The command called `name` (matched lowercased, as file names are).
    pub fn get(&self, name: &str) -> Option<&Command> {
        let name = name.to_lowercase();
        self.list.iter().find(|c| c.name == name)
    }

    /// The prompt `/name args` made from command `name`; `None` when the prompt is not of
    /// that form or names no command here (send it unchanged).
    pub fn expand(&self, prompt: &str) -> Option<Expansion> {
        let (name, args) = parse_invocation(prompt)?;
        let command = self.get(name)?;
        Some(Expansion {
            name: command.name.clone(),
            prompt: command.expand(args),
            model: command.model.clone(),
        })
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

fn load_dir(dir: &Path, found: &mut Vec<Command>, warnings: &mut Vec<CommandWarning>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("md")) && !p.is_dir())
        .collect();
    files.sort();
    for path in files {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        if !valid_name(&stem) {
            warnings.push(CommandWarning::InvalidName { path, name: stem });
            continue;
        }
        match read_command(stem, &path) {
            Ok(command) => found.push(command),
            Err(warning) => warnings.push(warning),
        }
    }
}

fn read_command(name: String, path: &Path) -> Result<Command, CommandWarning> {
    let (bytes, _) =
        read_bounded(path, MAX_COMMAND_BYTES).map_err(|source| CommandWarning::Unreadable {
            path: path.to_path_buf(),
            source,
        })?;
    if !is_text(&bytes) {
        return Err(CommandWarning::Malformed {
            path: path.to_path_buf(),
            reason: "not a text file",
        });
    }
    let text = text_prefix(&bytes).replace("\r\n", "\n");
    let mut command = Command::new(name, String::new(), String::new());
    command.path = Some(path.to_path_buf());
    let body = match frontmatter::split(&text) {
        Split::None(body) => body,
        Split::Closed { front, body } => {
            command.description = frontmatter::value(front, "description").unwrap_or_default();
            command.model = frontmatter::value(front, "model");
            command.argument_hint = frontmatter::value(front, "argument-hint");
            body
        }
        Split::Unclosed => {
            return Err(CommandWarning::Malformed {
                path: path.to_path_buf(),
                reason: "the frontmatter is not closed (no line `---` after the first)",
            })
        }
    };
    command.template = body.trim().to_string();
    if command.description.is_empty() {
        command.description = format!("User command: /{}", command.name);
    }
    Ok(command)
}

/// Another source of commands, such as an MCP server's prompts: listed beside the files'
/// commands, and expanded by the source itself (which may ask its server).
#[async_trait]
pub trait CommandSource: Send + Sync {
    /// The commands it offers now (their templates may be empty: the source expands them).
    async fn commands(&self) -> Vec<Command>;

    /// The prompt of its command `name` with `args`; `None` when `name` is not one of its
    /// commands, an error (in words for the user) when expanding failed.
    async fn expand(&self, name: &str, args: &str) -> Option<Result<String, String>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn templates_expand_like_zero() {
        assert_eq!(
            expand_template("Fix $1 in $2.", "a.rs  b"),
            "Fix a.rs in b."
        );
        assert_eq!(expand_template("All: $ARGUMENTS!", " x y "), "All: x y!");
        assert_eq!(expand_template("$3|$$|$x|$", "a"), "|$|$x|$");
        assert_eq!(
            expand_template("No placeholders.", "extra"),
            "No placeholders.\n\nextra"
        );
        assert_eq!(expand_template("No placeholders.", ""), "No placeholders.");
        assert_eq!(expand_template("é $1 ü", "ö"), "é ö ü");
    }

    #[test]
    fn invocations_parse_name_and_arguments() {
        assert_eq!(
            parse_invocation("/review src/lib.rs"),
            Some(("review", "src/lib.rs"))
        );
        assert_eq!(parse_invocation("  /plain  "), Some(("plain", "")));
        assert_eq!(parse_invocation("/ x"), None);
        assert_eq!(parse_invocation("review"), None);
    }

    #[test]
    fn project_shadows_user_and_files_without_frontmatter_are_commands() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (project, user) = (dir.path().join("p"), dir.path().join("u"));
        write(
            &project.join("review.md"),
            "---\ndescription: Review a file\nmodel: gpt-x\n---\nReview $ARGUMENTS now.\n",
        );
        write(
            &user.join("review.md"),
            "---\ndescription: Old\n---\nOld $1",
        );
        write(&user.join("Plain.md"), "Just do it.\n");
        write(&user.join("bad name.md"), "x");
        write(&user.join("open.md"), "---\ndescription: never closed\n");
        write(&user.join("notes.txt"), "not a command");
        let loaded = Commands::load([&project, &user, &dir.path().join("missing")]);
        let names: Vec<&str> = loaded.commands.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["plain", "review"]);
        let review = loaded.commands.get("review").expect("review");
        assert_eq!(review.description, "Review a file");
        assert_eq!(review.model.as_deref(), Some("gpt-x"));
        assert_eq!(review.input_hint().as_deref(), Some("arguments"));
        let plain = loaded.commands.get("plain").expect("plain");
        assert_eq!(plain.description, "User command: /plain");
        assert_eq!(plain.input_hint(), None);
        let warnings: Vec<String> = loaded.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("bad name.md"));
        assert!(warnings[1].contains("open.md") && warnings[1].contains("not closed"));
        let expanded = loaded
            .commands
            .expand("/review src/lib.rs")
            .expect("review");
        assert_eq!(expanded.prompt, "Review src/lib.rs now.");
        assert_eq!(expanded.model.as_deref(), Some("gpt-x"));
        assert_eq!(
            loaded.commands.expand("/PLAIN now").expect("plain").prompt,
            "Just do it.\n\nnow"
        );
        assert_eq!(loaded.commands.expand("/missing x"), None);
        assert_eq!(loaded.commands.expand("no slash"), None);
    }
}
