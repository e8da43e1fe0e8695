//! Zero's workspace trust: project hooks run only in a workspace whose exact root the user
//! trusted with `zero trust` (a subdirectory of a trusted root is not trusted).

use std::path::{Path, PathBuf};

use super::wire::TrustStore;

/// The canonical form of a workspace root: absolute, symlinks resolved (the absolute path
/// when it cannot be resolved).
fn normalize(root: &Path) -> PathBuf {
    let absolute = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    std::fs::canonicalize(&absolute).unwrap_or(absolute)
}

/// Whether `workspace` is in the trust store at `store`. A missing store trusts nothing;
/// a store that cannot be read or parsed is an error (the caller treats it as untrusted).
pub fn is_trusted(store: &Path, workspace: &Path) -> Result<bool, String> {
    if workspace.as_os_str().is_empty() {
        return Ok(false);
    }
    let text = match std::fs::read_to_string(store) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(format!("read trust store {}: {err}", store.display())),
    };
    let parsed: TrustStore = serde_json::from_str(&text)
        .map_err(|err| format!("parse trust store {}: {err}", store.display()))?;
    let query = normalize(workspace);
    // Stored entries are canonical already; they are compared as written, never
    // re-resolved (a root later replaced by a symlink must not match).
    Ok(parsed.trusted.iter().any(|entry| Path::new(entry) == query))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_roots_only_and_errors_fail_closed() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        let store = dir.path().join("trust.json");
        assert_eq!(is_trusted(&store, &ws), Ok(false));
        let root = std::fs::canonicalize(&ws).unwrap();
        std::fs::write(
            &store,
            serde_json::to_string(&serde_json::json!({"trusted": [root]})).unwrap(),
        )
        .unwrap();
        assert_eq!(is_trusted(&store, &ws), Ok(true));
        assert_eq!(is_trusted(&store, &ws.join("sub")), Ok(false));
        assert_eq!(is_trusted(&store, Path::new("")), Ok(false));
        std::fs::write(&store, "{not json").unwrap();
        assert!(is_trusted(&store, &ws).is_err());
    }
}
