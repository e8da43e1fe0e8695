//! The one-shot loopback callback: a listener on 127.0.0.1 (a free port) that takes the
//! browser's redirect to `/callback`, checks its `state`, and answers with a short page. It
//! lives only while one authorization waits for its code.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::OAuthError;

/// Longest request head read from the browser.
const MAX_HEAD: usize = 16 * 1024;
/// Bound on reading one request head.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A bound listener waiting for one callback.
pub(crate) struct Callback {
    listener: TcpListener,
    redirect_uri: String,
}

/// What the callback carried.
enum Outcome {
    /// Another path (a favicon): answered 404, the wait goes on.
    Other,
    Code(String),
    Failed(String),
}

impl Callback {
    /// Binds 127.0.0.1 on a free port.
    pub(crate) async fn bind(server: &str) -> Result<Self, OAuthError> {
        let listener =
            TcpListener::bind(("127.0.0.1", 0))
                .await
                .map_err(|e| OAuthError::Callback {
                    server: server.to_string(),
                    message: format!("cannot listen on 127.0.0.1 for the callback: {e}"),
                })?;
        let port = listener
            .local_addr()
            .map_err(|e| OAuthError::Internal(e.to_string()))?
            .port();
        Ok(Self {
            listener,
            redirect_uri: format!("http://127.0.0.1:{port}/callback"),
        })
    }

    /// `http://127.0.0.1:PORT/callback`.
    pub(crate) fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// Waits (at most `timeout`) for the redirect carrying `state`; the authorization code.
    /// A callback with another state, or with an `error`, ends the wait with that error.
    pub(crate) async fn code(
        self,
        server: String,
        state: String,
        timeout: Duration,
    ) -> Result<String, OAuthError> {
        let failed = |message: String| OAuthError::Callback {
            server: server.clone(),
            message,
        };
        let wait = async {
            loop {
                let (stream, _) = self
                    .listener
                    .accept()
                    .await
                    .map_err(|e| failed(format!("accepting the callback: {e}")))?;
                match answer(stream, &state).await {
                    Outcome::Other => continue,
                    Outcome::Code(code) => return Ok(code),
                    Outcome::Failed(message) => return Err(failed(message)),
                }
            }
        };
        match tokio::time::timeout(timeout, wait).await {
            Ok(result) => result,
            Err(_) => Err(failed(format!(
                "no authorization callback within {} s",
                timeout.as_secs()
            ))),
        }
    }
}

/// Reads one request and answers it.
async fn answer(mut stream: TcpStream, state: &str) -> Outcome {
    let head = match tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await {
        Ok(Some(head)) => head,
        _ => return Outcome::Other,
    };
    let target = head
        .lines()
        .next()
        .and_then(|line| {
            let mut parts = line.split(' ');
            match (parts.next(), parts.next()) {
                (Some("GET"), Some(target)) => Some(target.to_string()),
                _ => None,
            }
        })
        .unwrap_or_default();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    if path != "/callback" {
        respond(&mut stream, "404 Not Found", "Not found.").await;
        return Outcome::Other;
    }
    let mut code = None;
    let mut got_state = None;
    let mut error = None;
    let mut description = None;
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match name.as_ref() {
            "code" => code = Some(value.into_owned()),
            "state" => got_state = Some(value.into_owned()),
            "error" => error = Some(value.into_owned()),
            "error_description" => description = Some(value.into_owned()),
            _ => {}
        }
    }
    let outcome = if got_state.as_deref() != Some(state) {
        Outcome::Failed(
            "the authorization callback's state does not match this login (possible CSRF); \
             the login was aborted"
                .into(),
        )
    } else if let Some(error) = error {
        let error: String = error.chars().take(200).collect();
        Outcome::Failed(match description {
            Some(d) => format!(
                "the authorization server refused: {error}: {}",
                d.chars().take(300).collect::<String>()
            ),
            None => format!("the authorization server refused: {error}"),
        })
    } else {
        match code.filter(|c| !c.is_empty()) {
            Some(code) => Outcome::Code(code),
            None => Outcome::Failed("the authorization callback carries no code".into()),
        }
    };
    match &outcome {
        Outcome::Code(_) => {
            respond(
                &mut stream,
                "200 OK",
                "Authorization complete. You may close this window.",
            )
            .await
        }
        _ => {
            respond(
                &mut stream,
                "400 Bad Request",
                "Authorization failed. You may close this window.",
            )
            .await
        }
    }
    outcome
}

async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 2048];
    loop {
        let n = stream.read(&mut buffer).await.ok()?;
        if n == 0 {
            return None;
        }
        bytes.extend_from_slice(&buffer[..n]);
        if bytes.windows(4).any(|w| w == b"\r\n\r\n") {
            return Some(String::from_utf8_lossy(&bytes).into_owned());
        }
        if bytes.len() > MAX_HEAD {
            return None;
        }
    }
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(url: &str) -> (u16, String) {
        let url = url::Url::parse(url).unwrap();
        let mut stream = TcpStream::connect(("127.0.0.1", url.port().unwrap()))
            .await
            .unwrap();
        let target = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        stream
            .write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).await.unwrap();
        let status = text[9..12].parse().unwrap();
        (status, text)
    }

    #[tokio::test]
    async fn the_code_with_the_right_state_ends_the_wait() {
        let callback = Callback::bind("s").await.unwrap();
        let base = callback.redirect_uri().to_string();
        let wait = tokio::spawn(callback.code("s".into(), "st8".into(), Duration::from_secs(10)));
        let (status, _) = get(&base.replace("/callback", "/favicon.ico")).await;
        assert_eq!(status, 404);
        let (status, text) = get(&format!("{base}?code=abc&state=st8")).await;
        assert_eq!(status, 200);
        assert!(text.contains("Authorization complete"));
        assert_eq!(wait.await.unwrap().unwrap(), "abc");
    }

    #[tokio::test]
    async fn a_wrong_state_or_an_error_aborts_and_silence_times_out() {
        let callback = Callback::bind("docs").await.unwrap();
        let base = callback.redirect_uri().to_string();
        let wait =
            tokio::spawn(callback.code("docs".into(), "right".into(), Duration::from_secs(10)));
        let (status, _) = get(&format!("{base}?code=abc&state=wrong")).await;
        assert_eq!(status, 400);
        let err = wait.await.unwrap().unwrap_err().to_string();
        assert!(
            err.contains("docs") && err.contains("state does not match"),
            "{err}"
        );

        let callback = Callback::bind("docs").await.unwrap();
        let base = callback.redirect_uri().to_string();
        let wait = tokio::spawn(callback.code("docs".into(), "s".into(), Duration::from_secs(10)));
        get(&format!(
            "{base}?error=access_denied&error_description=no&state=s"
        ))
        .await;
        let err = wait.await.unwrap().unwrap_err().to_string();
        assert!(err.contains("access_denied: no"), "{err}");

        let callback = Callback::bind("docs").await.unwrap();
        let err = callback
            .code("docs".into(), "s".into(), Duration::from_millis(50))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("no authorization callback within"), "{err}");
    }
}
