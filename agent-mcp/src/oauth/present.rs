//! How an authorization URL reaches the user: [`AuthorizationPrompt`], and the default,
//! [`BrowserPrompt`] (`$BROWSER`, else `xdg-open` / `open`).

use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;

/// How long an opener may run before it counts as a browser that opened the URL (a browser
/// started in the foreground keeps running; a failing opener exits at once).
const OPENER_GRACE: Duration = Duration::from_secs(2);

/// What became of an authorization URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presented {
    /// The user can act on it (a browser opened it, a client shows it): the client waits
    /// for the callback.
    Shown,
    /// It could not be shown (why, in words): the attempt ends and the server is skipped
    /// until the user logs in.
    NotShown(String),
}

/// Shows the user an authorization URL to open. A front end with a way to show a URL to its
/// user (ACP's `elicitation/create` in URL mode) implements it; [`BrowserPrompt`] is the
/// default.
#[async_trait]
pub trait AuthorizationPrompt: Send + Sync {
    /// Shows `url`, which authorizes MCP server `server`.
    async fn present(&self, server: &str, url: &str) -> Presented;

    /// The attempt that showed `url` for `server` is over: its callback came and the tokens
    /// were had (`authorized`), or it failed or ran out of time. A prompt that keeps the URL
    /// on show (an editor's dialog) takes it down; the default does nothing.
    async fn finished(&self, server: &str, url: &str, authorized: bool) {
        let _ = (server, url, authorized);
    }
}

/// Opens the URL in a browser: each entry of `$BROWSER` (`:`-separated commands, `%s` standing
/// for the URL, else appended), then `xdg-open` where a display is set (`open` on macOS).
#[derive(Debug, Clone, Copy, Default)]
pub struct BrowserPrompt;

#[async_trait]
impl AuthorizationPrompt for BrowserPrompt {
    async fn present(&self, _server: &str, url: &str) -> Presented {
        open_browser(url, &|name| std::env::var(name).ok()).await
    }
}

/// The commands that may open a URL, in order, each as program and arguments.
pub(crate) fn openers(
    url: &str,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    if let Some(browser) = env("BROWSER").filter(|b| !b.trim().is_empty()) {
        for entry in browser.split(':').filter(|e| !e.trim().is_empty()) {
            let mut words: Vec<String> = entry.split_whitespace().map(str::to_string).collect();
            let mut substituted = false;
            for word in &mut words {
                if word.contains("%s") {
                    *word = word.replace("%s", url);
                    substituted = true;
                }
            }
            if !substituted {
                words.push(url.to_string());
            }
            commands.push(words);
        }
    }
    if cfg!(target_os = "macos") {
        commands.push(vec!["open".into(), url.into()]);
    } else if env("DISPLAY").is_some_and(|d| !d.is_empty())
        || env("WAYLAND_DISPLAY").is_some_and(|d| !d.is_empty())
    {
        commands.push(vec!["xdg-open".into(), url.into()]);
    }
    commands
}

/// Tries each opener: one that exits successfully, or still runs after a moment, opened it.
pub(crate) async fn open_browser(
    url: &str,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Presented {
    let commands = openers(url, env);
    if commands.is_empty() {
        return Presented::NotShown(
            "no browser to open it ($BROWSER is not set and there is no display)".into(),
        );
    }
    let mut failures = Vec::new();
    for words in commands {
        let Some((program, args)) = words.split_first() else {
            continue;
        };
        let spawned = tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(err) => {
                failures.push(format!("{program}: {err}"));
                continue;
            }
        };
        match tokio::time::timeout(OPENER_GRACE, child.wait()).await {
            Ok(Ok(status)) if status.success() => return Presented::Shown,
            Ok(Ok(status)) => failures.push(format!("{program} exited with {status}")),
            Ok(Err(err)) => failures.push(format!("{program}: {err}")),
            // Still running: a browser in the foreground. It is left to run (tokio reaps it).
            Err(_) => return Presented::Shown,
        }
    }
    Presented::NotShown(format!(
        "no browser could open it ({})",
        failures.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + Sync + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn browser_entries_come_first_with_the_url_substituted_or_appended() {
        let url = "https://as.example/authorize?x=1";
        let commands = openers(
            url,
            &env(&[("BROWSER", "firefox --new-tab:w3m %s"), ("DISPLAY", ":0")]),
        );
        assert_eq!(commands[0], ["firefox", "--new-tab", url]);
        assert_eq!(commands[1], ["w3m", url]);
        if !cfg!(target_os = "macos") {
            assert_eq!(commands[2], ["xdg-open", url]);
        }
    }

    #[test]
    fn without_browser_or_display_nothing_is_tried() {
        if cfg!(target_os = "macos") {
            return;
        }
        assert!(openers("u", &env(&[])).is_empty());
    }

    #[tokio::test]
    async fn a_failing_opener_is_not_shown_and_says_why() {
        let presented = open_browser("http://x", &env(&[("BROWSER", "false")])).await;
        match presented {
            Presented::NotShown(why) => assert!(why.contains("false exited"), "{why}"),
            Presented::Shown => panic!("`false` opened nothing"),
        }
        let shown = open_browser("http://x", &env(&[("BROWSER", "true")])).await;
        assert_eq!(shown, Presented::Shown);
    }
}
