//! AWS credentials and region, resolved as the AWS SDKs and CLI do: the environment, then
//! the profile of the shared config and credentials files (INI).

use std::path::{Path, PathBuf};

use secrecy::{ExposeSecret, SecretString};

use crate::config::ConfigError;

/// SigV4 credentials: an access key, its secret and, for temporary credentials, a session
/// token. Never shown in Debug output.
#[derive(Clone)]
pub struct AwsCredentials {
    /// The access key id (not secret: it names the key).
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: SecretString,
    /// The session token of temporary credentials.
    pub session_token: Option<SecretString>,
}

impl std::fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"[REDACTED]")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "[REDACTED]"),
            )
            .finish()
    }
}

impl AwsCredentials {
    /// Credentials from their parts.
    pub fn new(
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<SecretString>,
        session_token: Option<SecretString>,
    ) -> Self {
        Self {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token,
        }
    }

    /// The secrets, for scrubbing.
    pub(crate) fn secrets(&self) -> Vec<SecretString> {
        std::iter::once(self.secret_access_key.clone())
            .chain(self.session_token.clone())
            .collect()
    }

    /// Registers the secrets with [`agent_core::secrets`].
    pub(crate) fn register(&self) {
        for secret in self.secrets() {
            agent_core::secrets::register_secret(secret.expose_secret());
        }
    }
}

/// The keys of one section of an INI file (`[default]`, `[profile name]`).
fn section(text: &str, names: &[String]) -> Option<Vec<(String, String)>> {
    let mut found: Option<Vec<(String, String)>> = None;
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let header = header.split_whitespace().collect::<Vec<_>>().join(" ");
            inside = names.contains(&header);
            if inside && found.is_none() {
                found = Some(Vec::new());
            }
            continue;
        }
        if let (true, Some((key, value))) = (inside, line.split_once('=')) {
            if let Some(keys) = found.as_mut() {
                keys.push((key.trim().to_ascii_lowercase(), value.trim().to_string()));
            }
        }
    }
    found
}

fn get<'a>(keys: &'a [(String, String)], name: &str) -> Option<&'a str> {
    keys.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// What the environment and the profile give.
#[derive(Debug, Default)]
pub(crate) struct Resolved {
    pub(crate) credentials: Option<AwsCredentials>,
    pub(crate) region: Option<String>,
    pub(crate) profile: String,
}

/// Reads the credentials and region of the environment `env`, else of the profile. The
/// files are read only here, when a Bedrock provider is built.
pub(crate) fn resolve(env: &dyn Fn(&str) -> Option<String>) -> Result<Resolved, ConfigError> {
    let profile = env("AWS_PROFILE")
        .or_else(|| env("AWS_DEFAULT_PROFILE"))
        .unwrap_or_else(|| "default".to_string());
    let home = env("HOME").map(PathBuf::from);
    let file = |var: &str, name: &str| {
        env(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws").join(name)))
    };
    let read = |path: Option<PathBuf>| -> Result<Option<(PathBuf, String)>, ConfigError> {
        let Some(path) = path else { return Ok(None) };
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some((path, text))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ConfigError::Invalid(format!(
                "cannot read the AWS file {}: {e}",
                path.display()
            ))),
        }
    };
    let mut resolved = Resolved {
        profile: profile.clone(),
        region: env("AWS_REGION").or_else(|| env("AWS_DEFAULT_REGION")),
        ..Resolved::default()
    };
    if let Some(key) = env("AWS_ACCESS_KEY_ID") {
        let secret = env("AWS_SECRET_ACCESS_KEY").ok_or_else(|| {
            ConfigError::Missing(
                "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not".to_string(),
            )
        })?;
        resolved.credentials = Some(AwsCredentials::new(
            key,
            secret,
            env("AWS_SESSION_TOKEN").map(SecretString::from),
        ));
    }
    let config_names = vec![
        match profile.as_str() {
            "default" => "default".to_string(),
            _ => format!("profile {profile}"),
        },
        profile.clone(),
    ];
    let config = read(file("AWS_CONFIG_FILE", "config"))?;
    let config_keys = config
        .as_ref()
        .and_then(|(_, text)| section(text, &config_names));
    if resolved.region.is_none() {
        resolved.region = config_keys
            .as_deref()
            .and_then(|keys| get(keys, "region"))
            .map(str::to_string);
    }
    if resolved.credentials.is_none() {
        let credentials = read(file("AWS_SHARED_CREDENTIALS_FILE", "credentials"))?;
        let keys = credentials
            .as_ref()
            .and_then(|(_, text)| section(text, std::slice::from_ref(&profile)))
            .or(config_keys);
        if let Some(keys) = keys {
            if let Some(id) = get(&keys, "aws_access_key_id") {
                let secret = get(&keys, "aws_secret_access_key").ok_or_else(|| {
                    ConfigError::Invalid(format!(
                        "the AWS profile {profile} has aws_access_key_id but no aws_secret_access_key"
                    ))
                })?;
                resolved.credentials = Some(AwsCredentials::new(
                    id,
                    secret.to_string(),
                    get(&keys, "aws_session_token").map(|t| SecretString::from(t.to_string())),
                ));
            }
        }
    }
    Ok(resolved)
}

/// Where the shared files are looked for, for messages.
pub(crate) fn files_hint(env: &dyn Fn(&str) -> Option<String>) -> String {
    let shown = |var: &str, name: &str| {
        env(var).unwrap_or_else(|| Path::new("~/.aws").join(name).display().to_string())
    };
    format!(
        "{} or {}",
        shown("AWS_SHARED_CREDENTIALS_FILE", "credentials"),
        shown("AWS_CONFIG_FILE", "config")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_of_the_shared_files_give_keys_and_region() {
        let dir = std::env::temp_dir().join(format!("aws-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let credentials = dir.join("credentials");
        let config = dir.join("config");
        std::fs::write(
            &credentials,
            "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s1\n\n\
             [work]\naws_access_key_id=AKIDWORK\naws_secret_access_key=s2\naws_session_token=t2\n",
        )
        .expect("write");
        std::fs::write(
            &config,
            "[default]\nregion = us-east-1\n[profile work]\nregion = eu-west-3\n",
        )
        .expect("write");
        let (c, f) = (
            credentials.display().to_string(),
            config.display().to_string(),
        );
        let env = |profile: Option<&'static str>| {
            let (c, f) = (c.clone(), f.clone());
            move |name: &str| match name {
                "AWS_SHARED_CREDENTIALS_FILE" => Some(c.clone()),
                "AWS_CONFIG_FILE" => Some(f.clone()),
                "AWS_PROFILE" => profile.map(str::to_string),
                _ => None,
            }
        };
        let work = resolve(&env(Some("work"))).expect("resolves");
        let creds = work.credentials.expect("credentials");
        assert_eq!(creds.access_key_id, "AKIDWORK");
        assert_eq!(
            creds.session_token.map(|t| t.expose_secret().to_string()),
            Some("t2".into())
        );
        assert_eq!(work.region.as_deref(), Some("eu-west-3"));
        let default = resolve(&env(None)).expect("resolves");
        assert_eq!(
            default.credentials.expect("keys").access_key_id,
            "AKIDDEFAULT"
        );
        assert_eq!(default.region.as_deref(), Some("us-east-1"));
        assert!(!format!("{:?}", resolve(&env(None)).expect("again")).contains("s1"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
