//! The models a provider's API lists (`GET /models`), for a model picker
//! ([`agent_core::Provider::list_models`]): OpenAI's (and every compatible server's)
//! `GET {base}/models` and Anthropic's `GET /v1/models`, which both answer
//! `{"data": [{"id": …}, …]}`.

use std::time::Duration;

use agent_core::provider::{ProviderError, ProviderErrorKind};
use reqwest::header::HeaderMap;
use secrecy::SecretString;
use serde::Deserialize;

use crate::http::{scrub, send_error, status_error, HttpClient};

/// Bound on one listing, connection and body included.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// The body of a listing.
#[derive(Deserialize)]
struct Listing {
    data: Vec<Listed>,
}

#[derive(Deserialize)]
struct Listed {
    id: String,
}

/// The model ids `GET url` lists, in the API's order, with `headers` (the provider's
/// credentials, which are scrubbed from any error).
pub(crate) async fn fetch(
    http: &HttpClient,
    url: String,
    headers: HeaderMap,
    secrets: &[SecretString],
) -> Result<Vec<String>, ProviderError> {
    let clean = |text: String| secrets.iter().fold(text, |t, s| scrub(t, Some(s)));
    let client = http.client()?;
    let request = async {
        let response = client
            .get(&url)
            .headers(headers)
            .send()
            .await
            .map_err(|e| send_error(&e))?;
        let status = response.status().as_u16();
        let answer_headers = response.headers().clone();
        let body = response.text().await.map_err(|e| send_error(&e))?;
        if !(200..300).contains(&status) {
            let mut err = status_error(status, &answer_headers, &body);
            err.message = clean(err.message);
            return Err(err);
        }
        let listing: Listing = serde_json::from_str(&body).map_err(|e| {
            ProviderError::new(
                ProviderErrorKind::Decode,
                format!("the model list of {url} is not {{\"data\": [{{\"id\": …}}]}}: {e}"),
            )
            .retryable(false)
        })?;
        Ok(listing.data.into_iter().map(|m| m.id).collect())
    };
    match tokio::time::timeout(LIST_TIMEOUT, request).await {
        Ok(result) => result,
        Err(_) => Err(ProviderError::new(
            ProviderErrorKind::Timeout,
            format!("listing the models at {url} took longer than {LIST_TIMEOUT:?}"),
        )),
    }
}

/// Whether `id`, listed by OpenAI's own API, names a model that chats (its list also has
/// embeddings, speech, image and moderation models).
pub(crate) fn openai_chat_model(id: &str) -> bool {
    const FAMILIES: [&str; 5] = ["gpt-", "o1", "o3", "o4", "chatgpt-"];
    const NOT_CHAT: [&str; 8] = [
        "audio",
        "realtime",
        "tts",
        "transcribe",
        "image",
        "search",
        "instruct",
        "embedding",
    ];
    FAMILIES.iter().any(|f| id.starts_with(f)) && !NOT_CHAT.iter().any(|n| id.contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_lists_only_its_chat_models() {
        for id in [
            "gpt-5.1",
            "gpt-4o-mini",
            "o3",
            "o4-mini",
            "chatgpt-4o-latest",
        ] {
            assert!(openai_chat_model(id), "{id}");
        }
        for id in [
            "text-embedding-3-small",
            "gpt-4o-audio-preview",
            "gpt-4o-realtime-preview",
            "tts-1",
            "whisper-1",
            "dall-e-3",
            "gpt-image-1",
            "gpt-3.5-turbo-instruct",
        ] {
            assert!(!openai_chat_model(id), "{id}");
        }
    }
}
