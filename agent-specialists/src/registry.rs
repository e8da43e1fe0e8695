//! [`SpecialistRegistry`]: the built-in specialists overridden by the user's, overridden by
//! the project's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::builtin::builtins;
use crate::manifest::{parse_manifest, Location, ManifestError, ManifestErrorKind, Specialist};

/// Largest manifest file read, in bytes.
const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

/// Where specialist manifests live.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpecialistPaths {
    /// `$XDG_CONFIG_HOME/zero/specialists` (default `~/.config/zero/specialists`); `None`
    /// without a home directory.
    pub user: Option<PathBuf>,
    /// `<workspace>/.zero/specialists`.
    pub project: Option<PathBuf>,
}

impl SpecialistPaths {
    /// Zero's places for `workspace`, from this process's environment.
    pub fn from_env(workspace: &Path) -> Self {
        Self::resolve(workspace, |name| std::env::var(name).ok())
    }

    /// Zero's places for `workspace`, reading `XDG_CONFIG_HOME` and `HOME` through `env`.
    /// As Go's `os.UserConfigDir` (which Zero uses), a relative `XDG_CONFIG_HOME` is not a
    /// config directory.
    pub fn resolve(workspace: &Path, env: impl Fn(&str) -> Option<String>) -> Self {
        let nonempty = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let config = match nonempty("XDG_CONFIG_HOME") {
            Some(dir) => Some(PathBuf::from(dir.trim())).filter(|d| d.is_absolute()),
            None => nonempty("HOME").map(|home| PathBuf::from(home.trim()).join(".config")),
        };
        Self {
            user: config.map(|dir| dir.join("zero").join("specialists")),
            project: Some(workspace.join(".zero").join("specialists")),
        }
    }
}

/// The specialists a `Task` tool can start, by name.
///
/// [`SpecialistRegistry::load`] reads Zero's layers: built-ins, then the user's manifests,
/// then the project's, a later layer replacing a specialist of the same name; `extends`
/// is resolved after that (against the winning manifests). A bad manifest never stops the
/// load: it is left out and reported in [`SpecialistRegistry::errors`] with its file and
/// line, for the host to print (or refuse to start).
#[derive(Debug, Clone, Default)]
pub struct SpecialistRegistry {
    specialists: BTreeMap<String, Specialist>,
    errors: Vec<ManifestError>,
    warnings: Vec<String>,
}

impl SpecialistRegistry {
    /// No specialists (a `Task` tool is then not offered).
    pub fn empty() -> Self {
        Self::default()
    }

    /// The built-in specialists only.
    pub fn builtin() -> Self {
        let mut registry = Self::empty();
        for spec in builtins() {
            registry.specialists.insert(spec.name.clone(), spec);
        }
        registry
    }

    /// The built-ins, overridden by the manifests in `paths` (user, then project).
    pub fn load(paths: &SpecialistPaths) -> Self {
        let mut registry = Self::builtin();
        let layers = [
            (Location::User, paths.user.as_deref()),
            (Location::Project, paths.project.as_deref()),
        ];
        for (location, dir) in layers {
            if let Some(dir) = dir {
                for spec in registry.read_dir(dir, location) {
                    registry.specialists.insert(spec.name.clone(), spec);
                }
            }
        }
        registry.resolve_extends();
        registry
    }

    /// Zero's layers for `workspace`, from this process's environment.
    pub fn load_for_workspace(workspace: &Path) -> Self {
        Self::load(&SpecialistPaths::from_env(workspace))
    }

    /// Adds (or replaces) a specialist, its `extends` already applied.
    pub fn insert(&mut self, specialist: Specialist) {
        self.specialists.insert(specialist.name.clone(), specialist);
    }

    /// The specialist called `name`.
    pub fn get(&self, name: &str) -> Option<&Specialist> {
        self.specialists.get(name)
    }

    /// Every specialist, in name order.
    pub fn iter(&self) -> impl Iterator<Item = &Specialist> {
        self.specialists.values()
    }

    /// Every name, in order.
    pub fn names(&self) -> Vec<&str> {
        self.specialists.keys().map(String::as_str).collect()
    }

    /// Number of specialists.
    pub fn len(&self) -> usize {
        self.specialists.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.specialists.is_empty()
    }

    /// The manifests left out, each with its file and line.
    pub fn errors(&self) -> &[ManifestError] {
        &self.errors
    }

    /// The first error Zero would refuse to run with (an unreadable specialist directory,
    /// a broken `extends`); Zero's exec reports it as `error{code:"specialist_error"}`,
    /// exit 3. Other errors are only warnings to Zero.
    pub fn fatal_error(&self) -> Option<&ManifestError> {
        self.errors
            .iter()
            .find(|e| e.kind != ManifestErrorKind::Manifest)
    }

    /// Everything worth a warning: skipped files, shadowed duplicates, and each loaded
    /// manifest's own warnings (prefixed with its file).
    pub fn warnings(&self) -> Vec<String> {
        let mut all = self.warnings.clone();
        for spec in self.specialists.values() {
            let origin = spec
                .path
                .as_ref()
                .map_or_else(|| spec.name.clone(), |p| p.display().to_string());
            all.extend(spec.warnings.iter().map(|w| format!("{origin}: {w}")));
        }
        all
    }

    /// Parses the `*.md` manifests of `dir` in file-name order; a missing directory has
    /// none.
    fn read_dir(&mut self, dir: &Path, location: Location) -> Vec<Specialist> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            Err(err) => {
                self.errors.push(ManifestError {
                    path: dir.to_path_buf(),
                    line: None,
                    message: format!("cannot read the specialist directory: {err}"),
                    kind: ManifestErrorKind::Directory,
                });
                return Vec::new();
            }
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.extension()
                    .is_some_and(|ext| ext.eq_ignore_ascii_case("md"))
            })
            .collect();
        files.sort();
        let mut found: Vec<Specialist> = Vec::new();
        for path in files {
            let meta = match std::fs::symlink_metadata(&path) {
                Ok(meta) => meta,
                Err(err) => {
                    self.fail(&path, format!("cannot read the manifest: {err}"));
                    continue;
                }
            };
            if meta.file_type().is_symlink() {
                self.warnings.push(format!(
                    "{}: skipped: a specialist manifest may not be a symlink",
                    path.display()
                ));
                continue;
            }
            if !meta.is_file() {
                continue;
            }
            if meta.len() > MAX_MANIFEST_BYTES {
                self.fail(
                    &path,
                    format!("the manifest is larger than {MAX_MANIFEST_BYTES} bytes"),
                );
                continue;
            }
            let text = match std::fs::read(&path).map(String::from_utf8) {
                Ok(Ok(text)) => text,
                Ok(Err(_)) => {
                    self.fail(&path, "the manifest is not valid UTF-8".into());
                    continue;
                }
                Err(err) => {
                    self.fail(&path, format!("cannot read the manifest: {err}"));
                    continue;
                }
            };
            match parse_manifest(&text, &path, location) {
                Ok(spec) => {
                    if let Some(earlier) = found.iter().position(|s| s.name == spec.name) {
                        let shadowed = found.remove(earlier);
                        self.warnings.push(format!(
                            "{}: specialist {:?} is also defined in {}; this one wins",
                            path.display(),
                            spec.name,
                            shadowed.path.as_deref().unwrap_or(Path::new("?")).display()
                        ));
                    }
                    found.push(spec);
                }
                Err(err) => self.errors.push(err),
            }
        }
        found
    }

    fn fail(&mut self, path: &Path, message: String) {
        self.errors.push(ManifestError {
            path: path.to_path_buf(),
            line: None,
            message,
            kind: ManifestErrorKind::Manifest,
        });
    }

    /// Applies every `extends`; a specialist whose base is missing or which is part of a
    /// cycle is left out with an error.
    fn resolve_extends(&mut self) {
        let names: Vec<String> = self.specialists.keys().cloned().collect();
        let mut resolved: BTreeMap<String, Specialist> = BTreeMap::new();
        for name in names {
            let mut stack = Vec::new();
            match self.resolve_one(&name, &mut resolved, &mut stack) {
                Ok(_) => {}
                Err(err) => self.errors.push(err),
            }
        }
        self.specialists = resolved;
    }

    fn resolve_one(
        &self,
        name: &str,
        resolved: &mut BTreeMap<String, Specialist>,
        stack: &mut Vec<String>,
    ) -> Result<Specialist, ManifestError> {
        if let Some(done) = resolved.get(name) {
            return Ok(done.clone());
        }
        // Callers only ask for names in the map (checked below for bases).
        let spec = self
            .specialists
            .get(name)
            .cloned()
            .ok_or_else(|| ManifestError {
                path: PathBuf::from("(registry)"),
                line: None,
                message: format!("specialist {name:?} not found"),
                kind: ManifestErrorKind::Extends,
            })?;
        let Some(base_name) = spec.extends.clone() else {
            resolved.insert(name.to_string(), spec.clone());
            return Ok(spec);
        };
        let here = |message: String| ManifestError {
            path: spec
                .path
                .clone()
                .unwrap_or_else(|| PathBuf::from("(builtin)")),
            line: spec.extends_line,
            message,
            kind: ManifestErrorKind::Extends,
        };
        if stack.iter().any(|s| s == name) || base_name == name {
            return Err(here(format!("`extends` makes a cycle through {name:?}")));
        }
        if !self.specialists.contains_key(&base_name) {
            return Err(here(format!(
                "base specialist {base_name:?} of {name:?} not found"
            )));
        }
        stack.push(name.to_string());
        let base = self.resolve_one(&base_name, resolved, stack);
        stack.pop();
        let base =
            base.map_err(|e| here(format!("its base {base_name:?} is unusable: {}", e.message)))?;
        let merged = merge(base, spec);
        resolved.insert(name.to_string(), merged.clone());
        Ok(merged)
    }
}

/// `child` on top of `base`: empty fields are inherited, the prompts are joined.
fn merge(base: Specialist, mut child: Specialist) -> Specialist {
    if child.description.is_empty() {
        child.description = base.description;
    }
    if child.model.is_none() {
        child.model = base.model;
    }
    if child.reasoning.is_none() {
        child.reasoning = base.reasoning;
    }
    if child.tools.is_empty() {
        child.tools = base.tools;
    }
    child.system_prompt = match (base.system_prompt.trim(), child.system_prompt.trim()) {
        ("", own) => own.to_string(),
        (inherited, "") => inherited.to_string(),
        (inherited, own) => format!("{inherited}\n\n{own}"),
    };
    let mut warnings = base.warnings;
    warnings.append(&mut child.warnings);
    child.warnings = warnings;
    child
}
