//! Launching mail-api (shared by `main` and the tests).

use std::sync::Arc;

use actix_web::dev::ServiceRequest;
use actix_web::http::Method;
use auth::middleware::RateLimitPolicy;
use auth::{Caller, CredentialKind, Grade};
use http_kit::Flavor;
use queue::Broker;
use rate_limit::Quota;
use rate_limit::policy::{Plan, RouteClass, mail_key, mail_quota};
use service_kit::server::{ApiSpec, Launched};
use store::Pool;

use crate::db::credentials::PgCredentials;
use crate::{Settings, openapi, routes};

pub const SERVICE: &str = "mail-api";

/// What handlers reach through `web::Data<AppState>`.
#[derive(Clone)]
pub struct AppState {
    pub pool: Pool,
    pub broker: Broker,
    pub shared_domain: Arc<str>,
}

/// Per project and route class: one sliding five-minute window by plan.
struct MailPolicy {
    scale: f64,
}

/// Sending routes, reads (GET, HEAD) and every other write have separate budgets.
pub fn route_class(req: &ServiceRequest) -> RouteClass {
    if req.path().ends_with("/send") {
        RouteClass::Send
    } else if matches!(*req.method(), Method::GET | Method::HEAD) {
        RouteClass::Read
    } else {
        RouteClass::Write
    }
}

impl RateLimitPolicy for MailPolicy {
    fn quotas(&self, caller: &Caller, req: &ServiceRequest) -> (String, Vec<Quota>) {
        let plan = match caller.grade {
            Grade::Plan(plan) => plan,
            Grade::Tier(_) => Plan::Free,
        };
        let class = route_class(req);
        let quota = service_kit::scale_quota(mail_quota(plan, class), self.scale);
        (mail_key(&caller.owner_id.to_string(), class), vec![quota])
    }
}

pub async fn launch(settings: &Settings) -> anyhow::Result<Launched> {
    let shared_domain: Arc<str> = Arc::from(settings.sending.shared_domain.as_str());
    service_kit::server::launch(
        &settings.common,
        ApiSpec {
            service: SERVICE,
            flavor: Flavor::Mail,
            accepted: CredentialKind::MAIL,
            credentials: PgCredentials::new,
            policy: Arc::new(MailPolicy {
                scale: settings.common.rate_limit.scale,
            }),
            state: Arc::new(move |worker| AppState {
                pool: worker.pool,
                broker: worker.broker,
                shared_domain: Arc::clone(&shared_domain),
            }),
            public: openapi::configure,
            api: routes::configure,
        },
    )
    .await
}
