//! The private temp dir of confined commands.

use std::path::Path;

/// A private temp dir (mode 0700, random name under the system temp dir) for confined
/// commands: writable inside the sandbox and exported as `$TMPDIR`, removed on drop.
#[derive(Debug)]
pub struct PrivateTmp {
    dir: tempfile::TempDir,
}

impl PrivateTmp {
    /// Creates one.
    pub fn new() -> std::io::Result<Self> {
        Ok(Self {
            dir: tempfile::Builder::new()
                .prefix("agent-sandbox-")
                .tempdir()?,
        })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}
