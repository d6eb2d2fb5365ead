//! The model-backed advice and compound tools against the chat-completions test server:
//! subject lines and topics checked against the subject limit, a template and a draft
//! campaign written from a brief; without a model 422 `LLM_NOT_CONFIGURED` and nothing
//! stored. And `onboard_new_site`: one call, twice the same site.

use rate_limit::policy::Plan;
use serde_json::json;

use crate::common::*;
use crate::generate::{chat_endpoint, harness_with_model};

#[tokio::test]
async fn subject_lines_over_the_limit_are_dropped_and_counted() {
    let answer = json!({"suggestions": [
        {"subject": "Your seeds are waiting", "rationale": "Short and personal."},
        {"subject": "A much longer subject line that runs past the limit", "rationale": "Long."},
        {"subject": "Two\nlines"},
        "Spring is here"
    ]});
    let stub = chat_endpoint(200, &answer.to_string(), 1).await;
    let h = harness_with_model(&stub.base_url).await;
    let t = h.tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "seeds").await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/campaigns",
            &json!({"name": "Spring", "site_id": site,
                    "steps": [{"subject": "Spring catalogue", "html": "<p>Hi</p>"}]}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let campaign = json(res).await["id"].as_str().unwrap().to_owned();
    let advice = h
        .api(&t.write)
        .post(
            "/api/v1/advisor/subject-lines",
            &json!({"campaign_id": campaign, "site_id": site, "count": 4, "max_length": 30}),
        )
        .expect(200)
        .await;
    let subjects: Vec<&str> = advice["suggestions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["subject"].as_str().unwrap())
        .collect();
    assert_eq!(
        subjects,
        ["Your seeds are waiting", "Spring is here"],
        "{advice}"
    );
    assert_eq!(advice["dropped"], 2, "{advice}");
    assert_eq!(advice["suggestions"][0]["length"], 22);
    assert_eq!(advice["current"][0]["subject"], "Spring catalogue");
    assert_eq!(advice["model"], "stub-model");
    let user = stub.requests()[0].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(user.contains("Spring catalogue"), "{user}");

    let topics_answer = json!({"topics": [
        {"title": "Planting calendar", "angle": "Readers plan ahead.", "subject": "When to sow what"},
        {"title": "No subject"}
    ]});
    stub.reply(topics_answer.to_string());
    let topics = h
        .tool_ok(
            &t.write,
            "suggest_content_topics",
            json!({"site_id": site, "count": 2, "focus": "spring"}),
        )
        .await;
    assert_eq!(
        topics["topics"][0]["title"], "Planting calendar",
        "{topics}"
    );
    assert_eq!(topics["topics"].as_array().unwrap().len(), 1, "{topics}");
    assert_eq!(topics["dropped"], 1, "{topics}");
    assert_eq!(topics["based_on"][0]["name"], "Spring", "{topics}");

    // Another project's site and campaign: 404 before the model is asked.
    let asked = stub.requests().len();
    let stranger = h.tenant(Plan::Enterprise).await;
    let res = h
        .post_json(
            &stranger.write,
            "/api/v1/advisor/subject-lines",
            &json!({"campaign_id": campaign, "site_id": site}),
        )
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    let theirs = h.site(&stranger.write, "strange").await;
    let res = h
        .post_json(
            &stranger.write,
            "/api/v1/advisor/subject-lines",
            &json!({"campaign_id": campaign, "site_id": theirs}),
        )
        .await;
    expect_error(res, 404, "CAMPAIGN_NOT_FOUND").await;
    let res = h
        .post_json(
            &stranger.write,
            "/api/v1/advisor/content-topics",
            &json!({"site_id": site}),
        )
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    assert_eq!(stub.requests().len(), asked);
    let res = h
        .post_json(
            &t.write,
            "/api/v1/advisor/subject-lines",
            &json!({"campaign_id": campaign, "site_id": site, "max_length": 999}),
        )
        .await;
    expect_invalid(res, "max_length").await;
    h.stop().await;
}

#[tokio::test]
async fn a_brief_becomes_a_template_and_a_draft_campaign() {
    let email = json!({"subject": "Autumn bulbs", "html": "<p>Hello {{ first_name }}</p>",
                       "text": "Hello"});
    let stub = chat_endpoint(200, &email.to_string(), 2).await;
    let h = harness_with_model(&stub.base_url).await;
    let t = h.tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "bulbs").await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/briefs/template",
            &json!({"site_id": site, "name": "Bulbs", "brief": "Autumn bulbs offer"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let written = json(res).await;
    let template = &written["template"];
    assert_eq!(template["name"], "Bulbs", "{written}");
    assert_eq!(template["subject_hint"], "Autumn bulbs");
    assert_eq!(template["brief"], "Autumn bulbs offer");
    let stored = h
        .api(&t.read)
        .get(&format!(
            "/api/v1/templates/{}",
            template["id"].as_str().unwrap()
        ))
        .expect(200)
        .await;
    assert_eq!(stored["html"], "<p>Hello {{ first_name }}</p>");

    let set_up = h
        .tool_ok(
            &t.write,
            "setup_campaign_from_brief",
            json!({"site_id": site, "campaign_name": "Bulbs drip", "brief": "Autumn bulbs"}),
        )
        .await;
    let campaign = &set_up["campaign"];
    assert_eq!(campaign["status"], "draft", "{set_up}");
    assert_eq!(campaign["name"], "Bulbs drip");
    assert_eq!(campaign["steps"][0]["subject"], "Autumn bulbs");
    assert!(
        set_up["next_step"]
            .as_str()
            .unwrap()
            .contains("approval policy"),
        "{set_up}"
    );
    let id = campaign["id"].as_str().unwrap();
    let stored = h
        .api(&t.read)
        .get(&format!("/api/v1/campaigns/{id}"))
        .expect(200)
        .await;
    assert_eq!(stored["status"], "draft");
    h.stop().await;
}

#[tokio::test]
async fn without_a_model_the_model_backed_tools_answer_llm_not_configured() {
    let h = Harness::new().await;
    let t = h.tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "quiet").await;
    let campaign = h.campaign(&t, &site, "Quiet", None, false).await;
    for (path, body) in [
        (
            "/api/v1/advisor/subject-lines",
            json!({"campaign_id": campaign, "site_id": site}),
        ),
        ("/api/v1/advisor/content-topics", json!({"site_id": site})),
        (
            "/api/v1/briefs/template",
            json!({"site_id": site, "name": "T", "brief": "b"}),
        ),
        (
            "/api/v1/briefs/campaign",
            json!({"site_id": site, "campaign_name": "C", "brief": "b"}),
        ),
    ] {
        let res = h.post_json(&t.write, path, &body).await;
        expect_error(res, 422, "LLM_NOT_CONFIGURED").await;
    }
    let templates = h
        .query(&format!(
            "SELECT count(*) FROM templates WHERE project_id = '{}'",
            t.project
        ))
        .await;
    assert_eq!(templates, ["0"]);
    let campaigns = h
        .query(&format!(
            "SELECT count(*) FROM campaigns WHERE project_id = '{}'",
            t.project
        ))
        .await;
    assert_eq!(campaigns, ["1"]);
    let res = h
        .tool(
            &t.write,
            "create_template_from_brief",
            json!({"site_id": site, "name": "T", "brief": "b"}),
        )
        .await;
    expect_error(res, 422, "LLM_NOT_CONFIGURED").await;
    h.stop().await;
}

#[tokio::test]
async fn onboarding_twice_answers_the_same_site() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let body = json!({"name": "Garden News", "domain": "News.Garden.example"});
    let res = h.post_json(&t.write, "/api/v1/onboarding", &body).await;
    assert_eq!(res.status(), 201);
    let first = json(res).await;
    assert_eq!(first["created"], true, "{first}");
    assert_eq!(first["site"]["name"], "Garden News");
    assert_eq!(first["site"]["slug"], "garden-news", "{first}");
    assert_eq!(first["domain"]["domain"], "news.garden.example");
    assert_eq!(first["domain"]["status"], "pending");
    assert!(
        first["domain"]["records"].as_array().unwrap().len() >= 3,
        "{first}"
    );
    assert_eq!(first["warmup"]["state"], "warming", "{first}");
    assert_eq!(first["warmup"]["cap_today"], 50, "{first}");

    let again = h
        .tool_ok(
            &t.write,
            "onboard_new_site",
            json!({"name": "Garden News", "domain": "news.garden.example"}),
        )
        .await;
    assert_eq!(again["created"], false, "{again}");
    assert_eq!(again["site"]["id"], first["site"]["id"]);
    assert_eq!(again["domain"]["id"], first["domain"]["id"]);
    let sites = h
        .query(&format!(
            "SELECT count(*) FROM sites WHERE project_id = '{}'",
            t.project
        ))
        .await;
    assert_eq!(sites, ["1"]);

    // Another domain under the same name: a new site under the next free slug.
    let res = h
        .post_json(
            &t.write,
            "/api/v1/onboarding",
            &json!({"name": "Garden News", "domain": "letters.garden.example"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    assert_eq!(json(res).await["site"]["slug"], "garden-news-2");
    let res = h
        .post_json(
            &t.write,
            "/api/v1/onboarding",
            &json!({"name": "Shared", "domain": SHARED_DOMAIN}),
        )
        .await;
    expect_invalid(res, "domain").await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/onboarding",
            &json!({"name": "Bad\u{7}name", "domain": "bad.garden.example"}),
        )
        .await;
    expect_invalid(res, "name").await;
    let res = h.post_json(&t.read, "/api/v1/onboarding", &body).await;
    expect_error(res, 403, "FORBIDDEN").await;
}
