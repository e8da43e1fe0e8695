//! The token store: one JSON file per server (name and URL) in a directory of the front end's
//! data directory, written `0600` in a `0700` directory, atomically (a temporary file renamed
//! over the old one), so a failed write leaves the previous file whole.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use super::flow::{AuthMethod, ClientIdentity, Credentials};

/// Version of the file layout.
const VERSION: u32 = 1;

/// Why the store could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("OAuth token store {}: {message}", path.display())]
pub struct StoreError {
    /// The file or directory.
    pub path: PathBuf,
    /// What failed.
    pub message: String,
}

/// What the store holds for one server, without the tokens (Zero's `TokenStatus`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenStatus {
    /// The server's configured name.
    pub server_name: String,
    /// The identity the token is bound to (a hash of the name and URL).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub server_identity: String,
    /// The server's URL (not in the JSON: Zero's shape).
    #[serde(skip)]
    pub url: String,
    /// Whether an access token is stored.
    pub has_token: bool,
    /// Whether a refresh token is stored.
    pub has_refresh_token: bool,
    /// The token type (`Bearer`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub token_type: String,
    /// The scopes granted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// When the access token expires (RFC 3339, UTC), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Whether it has expired.
    pub expired: bool,
}

/// Formats statuses as Zero's `zero mcp oauth status` prints them, one line per server,
/// never a token.
pub fn format_statuses(statuses: &[TokenStatus]) -> String {
    if statuses.is_empty() {
        return "No MCP OAuth tokens are stored.".to_string();
    }
    let mut lines = Vec::with_capacity(statuses.len());
    for status in statuses {
        let mut line = status.server_name.clone();
        if !status.server_identity.is_empty() {
            line.push_str(&format!(" [{}]", status.server_identity));
        }
        line.push_str(": ");
        if !status.has_token {
            line.push_str("no token");
            lines.push(line);
            continue;
        }
        line.push_str("token present");
        if status.has_refresh_token {
            line.push_str(" (refreshable)");
        }
        if let Some(at) = &status.expires_at {
            line.push_str(match status.expired {
                true => ", expired at ",
                false => ", expires ",
            });
            line.push_str(at);
        }
        lines.push(line);
    }
    lines.join("\n")
}

/// The file as written (tokens in the clear: the file is `0600`).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    version: u32,
    server: String,
    url: String,
    access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
    #[serde(default)]
    token_type: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    scopes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
    client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    token_endpoint_auth_method: String,
    token_endpoint: String,
    resource: String,
}

impl fmt::Debug for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Record")
            .field("server", &self.server)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// The tokens of MCP servers, one file per server in a directory.
#[derive(Debug, Clone)]
pub struct TokenStore {
    dir: PathBuf,
}

/// Seconds since the epoch.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `2026-01-02T03:04:05Z` for a Unix time.
pub(crate) fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rest = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The identity a token is bound to: the first 32 hex digits of SHA-256 of the server's
/// name and URL (a project configuration reusing the name for another URL gets no token).
pub(crate) fn identity(server: &str, url: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, format!("{server}\n{url}").as_bytes());
    digest
        .as_ref()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn file_name(server: &str, url: &str) -> String {
    let mut safe: String = server
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || matches!(c, '-' | '_') {
                true => c,
                false => '_',
            },
        )
        .collect();
    safe.truncate(64);
    format!("{safe}.{}.json", identity(server, url))
}

impl TokenStore {
    /// The store in `dir` (nothing is read or created until used).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn error(path: &Path, message: impl fmt::Display) -> StoreError {
        StoreError {
            path: path.to_path_buf(),
            message: message.to_string(),
        }
    }

    /// The records in the directory (unreadable files skipped), with their paths.
    fn records(&self) -> Result<Vec<(PathBuf, Record)>, StoreError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(Self::error(&self.dir, err)),
        };
        let mut records = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let Ok(text) = std::fs::read(&path) else {
                continue;
            };
            if let Ok(record) = serde_json::from_slice::<Record>(&text) {
                records.push((path, record));
            }
        }
        records.sort_by(|a, b| (&a.1.server, &a.1.url).cmp(&(&b.1.server, &b.1.url)));
        Ok(records)
    }

    /// The credentials stored for server `server` at `url`.
    pub(crate) fn load(&self, server: &str, url: &str) -> Result<Option<Credentials>, StoreError> {
        let path = self.dir.join(file_name(server, url));
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(Self::error(&path, err)),
        };
        let record: Record = serde_json::from_slice(&bytes)
            .map_err(|e| Self::error(&path, format!("not a token file ({e})")))?;
        if record.server != server || record.url != url || record.version != VERSION {
            return Ok(None);
        }
        Ok(Some(Credentials {
            access_token: SecretString::from(record.access_token),
            refresh_token: record.refresh_token.map(SecretString::from),
            token_type: record.token_type,
            scopes: record.scopes,
            expires_at: record.expires_at,
            client: ClientIdentity {
                client_id: record.client_id,
                client_secret: record.client_secret.map(SecretString::from),
                auth_method: AuthMethod::parse(&record.token_endpoint_auth_method),
            },
            token_endpoint: record.token_endpoint,
            resource: record.resource,
        }))
    }

    /// Stores `credentials` for server `server` at `url`, replacing what was there.
    pub(crate) fn save(
        &self,
        server: &str,
        url: &str,
        credentials: &Credentials,
    ) -> Result<(), StoreError> {
        let record = Record {
            version: VERSION,
            server: server.to_string(),
            url: url.to_string(),
            access_token: credentials.access_token.expose_secret().to_string(),
            refresh_token: credentials
                .refresh_token
                .as_ref()
                .map(|t| t.expose_secret().to_string()),
            token_type: credentials.token_type.clone(),
            scopes: credentials.scopes.clone(),
            expires_at: credentials.expires_at,
            client_id: credentials.client.client_id.clone(),
            client_secret: credentials
                .client
                .client_secret
                .as_ref()
                .map(|s| s.expose_secret().to_string()),
            token_endpoint_auth_method: credentials.client.auth_method.as_str().to_string(),
            token_endpoint: credentials.token_endpoint.clone(),
            resource: credentials.resource.clone(),
        };
        let text = SecretString::from(
            serde_json::to_string_pretty(&record).map_err(|e| Self::error(&self.dir, e))?,
        );
        drop(record);
        self.create_dir()?;
        let path = self.dir.join(file_name(server, url));
        let temp = self.dir.join(format!(
            ".{}.{}.tmp",
            file_name(server, url),
            std::process::id()
        ));
        let written = write_private(&temp, text.expose_secret().as_bytes())
            .and_then(|()| std::fs::rename(&temp, &path));
        if let Err(err) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(Self::error(&path, err));
        }
        Ok(())
    }

    fn create_dir(&self) -> Result<(), StoreError> {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder
            .create(&self.dir)
            .map_err(|e| Self::error(&self.dir, e))
    }

    /// Removes the token of server `server` at `url`; whether there was one.
    pub(crate) fn remove_exact(&self, server: &str, url: &str) -> Result<bool, StoreError> {
        let path = self.dir.join(file_name(server, url));
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(err) => Err(Self::error(&path, err)),
        }
    }

    /// Removes every token stored for a server named `server` (whatever its URL); whether
    /// there was one.
    pub fn remove(&self, server: &str) -> Result<bool, StoreError> {
        let mut removed = false;
        for (path, record) in self.records()? {
            if record.server == server {
                std::fs::remove_file(&path).map_err(|e| Self::error(&path, e))?;
                removed = true;
            }
        }
        Ok(removed)
    }

    /// What is stored, by server name, never a token.
    pub fn status(&self) -> Result<Vec<TokenStatus>, StoreError> {
        let now = now();
        Ok(self
            .records()?
            .into_iter()
            .map(|(_, record)| TokenStatus {
                server_identity: identity(&record.server, &record.url),
                has_token: !record.access_token.is_empty(),
                has_refresh_token: record.refresh_token.as_ref().is_some_and(|t| !t.is_empty()),
                token_type: record.token_type.clone(),
                scopes: record.scopes.clone(),
                expires_at: record.expires_at.map(rfc3339),
                expired: record.expires_at.is_some_and(|at| at <= now),
                server_name: record.server,
                url: record.url,
            })
            .collect())
    }
}

/// Writes `bytes` to a new file readable by its owner only, and syncs it.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    #[cfg(unix)]
    {
        // A file left by an earlier failed write keeps its mode: set it again.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(access: &str) -> Credentials {
        Credentials {
            access_token: SecretString::from(access.to_string()),
            refresh_token: Some(SecretString::from("refresh-secret-1".to_string())),
            token_type: "Bearer".into(),
            scopes: vec!["read".into()],
            expires_at: Some(4_102_444_800),
            client: ClientIdentity {
                client_id: "client-1".into(),
                client_secret: None,
                auth_method: AuthMethod::None,
            },
            token_endpoint: "https://as.example/token".into(),
            resource: "https://mcp.example/mcp".into(),
        }
    }

    #[test]
    fn tokens_round_trip_in_private_files_bound_to_the_url() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path().join("mcp-oauth"));
        assert!(store.status().unwrap().is_empty());
        let url = "https://mcp.example/mcp";
        store
            .save("docs", url, &credentials("access-secret-1"))
            .unwrap();
        let loaded = store.load("docs", url).unwrap().expect("stored");
        assert_eq!(loaded.access_token.expose_secret(), "access-secret-1");
        assert_eq!(loaded.client.client_id, "client-1");
        assert!(store
            .load("docs", "https://other.example/mcp")
            .unwrap()
            .is_none());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let files: Vec<_> = std::fs::read_dir(store.dir()).unwrap().flatten().collect();
            assert_eq!(files.len(), 1, "no temporary file is left");
            let mode = files[0].metadata().unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let dir_mode = std::fs::metadata(store.dir()).unwrap().permissions().mode();
            assert_eq!(dir_mode & 0o777, 0o700);
        }
        let status = store.status().unwrap();
        assert_eq!(status.len(), 1);
        assert!(status[0].has_token && status[0].has_refresh_token && !status[0].expired);
        assert_eq!(
            status[0].expires_at.as_deref(),
            Some("2100-01-01T00:00:00Z")
        );
        let text = format_statuses(&status);
        assert!(text.starts_with("docs ["), "{text}");
        assert!(text.ends_with(": token present (refreshable), expires 2100-01-01T00:00:00Z"));
        assert!(
            !text.contains("secret") && !serde_json::to_string(&status).unwrap().contains("secret")
        );
        assert!(store.remove("docs").unwrap());
        assert!(!store.remove("docs").unwrap());
        assert!(store.load("docs", url).unwrap().is_none());
        assert_eq!(format_statuses(&[]), "No MCP OAuth tokens are stored.");
    }

    #[test]
    fn dates_are_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_767_225_599), "2025-12-31T23:59:59Z");
    }
}
