//! The [`SocialClient`]'s calls by [`Platform`]: each one handed to that platform's adapter,
//! after checking that the deployment has an OAuth client for it where one is needed.

use uuid::Uuid;

use super::{
    Account, Adapter, AuthorizeRequest, Credentials, Draft, Platform, PlatformError, Published,
    SocialClient, Tokens, bluesky, facebook, instagram, linkedin, mastodon, pinterest, reddit,
    telegram, threads, tiktok, x, youtube,
};

/// Calls `$call` on `$platform`'s adapter.
macro_rules! on {
    ($client:expr, $platform:expr, |$a:ident| $call:expr) => {
        match $platform {
            Platform::Mastodon => {
                let $a = mastodon::Mastodon($client);
                $call
            }
            Platform::Bluesky => {
                let $a = bluesky::Bluesky($client);
                $call
            }
            Platform::X => {
                let $a = x::X($client);
                $call
            }
            Platform::Telegram => {
                let $a = telegram::Telegram($client);
                $call
            }
            Platform::Linkedin => {
                let $a = linkedin::Linkedin($client);
                $call
            }
            Platform::Facebook => {
                let $a = facebook::Facebook($client);
                $call
            }
            Platform::Instagram => {
                let $a = instagram::Instagram($client);
                $call
            }
            Platform::Threads => {
                let $a = threads::Threads($client);
                $call
            }
            Platform::Reddit => {
                let $a = reddit::Reddit($client);
                $call
            }
            Platform::Pinterest => {
                let $a = pinterest::Pinterest($client);
                $call
            }
            Platform::Tiktok => {
                let $a = tiktok::Tiktok($client);
                $call
            }
            Platform::Youtube => {
                let $a = youtube::Youtube($client);
                $call
            }
        }
    };
}

impl SocialClient {
    /// Whether the deployment has an OAuth client for `platform`.
    pub fn has_client(&self, platform: Platform) -> bool {
        !self.settings.platform(platform).client_id.is_empty()
    }

    pub fn authorize_url(
        &self,
        platform: Platform,
        req: &AuthorizeRequest<'_>,
    ) -> Result<String, PlatformError> {
        if platform.uses_oauth() && !self.has_client(platform) {
            return Err(PlatformError::NotConfigured(format!(
                "the deployment has no {} client",
                platform.as_str()
            )));
        }
        on!(self, platform, |a| a.authorize_url(req))
    }

    /// The origin of `platform`'s authorization page (`https://mastodon.social`), where a
    /// person is sent to connect an account; `None` when the deployment has no client for it.
    pub fn authorize_origin(&self, platform: Platform) -> Option<String> {
        let any = AuthorizeRequest {
            state: "s",
            code_challenge: "c",
            code_verifier: "v",
            redirect_uri: "https://invalid.example/",
        };
        let address = self.authorize_url(platform, &any).ok()?;
        let url = reqwest::Url::parse(&address).ok()?;
        Some(url.origin().ascii_serialization())
    }

    pub async fn exchange(
        &self,
        platform: Platform,
        code: &str,
        verifier: &str,
        redirect_uri: &str,
    ) -> Result<Tokens, PlatformError> {
        on!(self, platform, |a| a
            .exchange(code, verifier, redirect_uri)
            .await)
    }

    pub async fn refresh(
        &self,
        platform: Platform,
        account: &Account,
    ) -> Result<Tokens, PlatformError> {
        on!(self, platform, |a| a.refresh(account).await)
    }

    pub async fn connect(
        &self,
        platform: Platform,
        credentials: &Credentials,
    ) -> Result<Tokens, PlatformError> {
        on!(self, platform, |a| a.connect(credentials).await)
    }

    pub async fn publish(
        &self,
        platform: Platform,
        account: &Account,
        draft: &Draft<'_>,
        key: Uuid,
    ) -> Result<Published, PlatformError> {
        on!(self, platform, |a| a.publish(account, draft, key).await)
    }
}
