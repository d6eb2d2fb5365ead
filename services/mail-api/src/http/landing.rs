//! What mail-api's landing page (`/`, for browsers) links to besides the API reference; the
//! pages themselves are the shared ones ([`http_kit::pages`]).

use http_kit::pages::{Landing, Link, Section};

pub static LANDING: Landing = Landing {
    service: "mail-api",
    about: "Email operations: contacts, events, transactional send, campaigns, tracking, \
            conversions and analytics, with an MCP tool server for AI agents.",
    openapi: "/api/v1/openapi.json",
    sections: &[
        Section {
            title: "For agents",
            links: &[
                Link {
                    href: "/llms.txt",
                    label: "/llms.txt",
                    note: "the MCP tools and the API, in brief (llmstxt.org)",
                },
                Link {
                    href: "/llms-full.txt",
                    label: "/llms-full.txt",
                    note: "the same with every tool's input schema",
                },
            ],
        },
        Section {
            title: "Operations",
            links: &[
                Link {
                    href: "/healthz",
                    label: "/healthz",
                    note: "the process is up",
                },
                Link {
                    href: "/readyz",
                    label: "/readyz",
                    note: "it can serve (its database answers)",
                },
            ],
        },
    ],
};

/// Mounts `/`, `/docs` and the reference page's files.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    http_kit::pages::configure(cfg, &LANDING);
}
