//! Amazon SES end to end: an HTTP server in the test plays SES's API v2 (checking each
//! request's Signature Version 4 against the test credentials, answering 403 as SES does when
//! it does not match) and SNS (its signing certificate and the subscription confirmation);
//! SES's events reach `POST /api/webhooks/ses/{projectId}` as SNS delivers them, signed with a
//! test key whose certificate the server serves.

use base64::Engine as _;
use delivery::providers::ProviderUrls;
use delivery::sigv4::{self, Credentials, Scope};
use delivery::sns::signing::SnsKey;
use delivery::testing::{ApiStub, StubAnswer, StubRequest};

use super::provider_apis::{
    assert_bounce_and_complaint, count, post, refused_then_accepted, sent_to, tenant,
};
use super::*;

const ACCESS_KEY_ID: &str = "AKIAIOSFODNN7EXAMPLE";
const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const REGION: &str = "eu-west-1";
const TOPIC: &str = "arn:aws:sns:eu-west-1:123456789012:ses-events";
const CERT_PATH: &str = "/SimpleNotificationService-7ff5318490ec183fbaddaa2a969abfda.pem";

/// The `Authorization` SES expects for `r` under the test credentials.
fn expected_signature(r: &StubRequest) -> String {
    let (path, query) = r.path.split_once('?').unwrap_or((&r.path, ""));
    assert!(query.is_empty(), "SES calls carry no query: {}", r.path);
    let content_type = r.header("content-type").unwrap_or_default().to_owned();
    let headers: Vec<(&str, &str)> = if content_type.is_empty() {
        vec![]
    } else {
        vec![("content-type", content_type.as_str())]
    };
    sigv4::authorization(
        &Credentials {
            access_key_id: ACCESS_KEY_ID,
            secret_access_key: SECRET_KEY,
        },
        &Scope {
            region: REGION,
            service: "ses",
        },
        &sigv4::Request {
            method: &r.method,
            host: r.header("host").unwrap_or_default(),
            path,
            query: &[],
            headers: &headers,
            body: &r.body,
        },
        r.header("x-amz-date").unwrap_or_default(),
    )
}

fn ses_and_sns(r: &StubRequest, certificate: &str) -> StubAnswer {
    if r.method == "GET" && r.path == CERT_PATH {
        return (
            200,
            vec![("Content-Type".to_owned(), "text/plain".to_owned())],
            Value::String(certificate.to_owned()),
        );
    }
    if r.method == "GET" && r.path.starts_with("/?Action=ConfirmSubscription") {
        return (
            200,
            vec![("Content-Type".to_owned(), "text/xml".to_owned())],
            Value::String(
                "<ConfirmSubscriptionResponse><ConfirmSubscriptionResult><SubscriptionArn>\
                 arn:aws:sns:eu-west-1:123456789012:ses-events:1</SubscriptionArn>\
                 </ConfirmSubscriptionResult></ConfirmSubscriptionResponse>"
                    .to_owned(),
            ),
        );
    }
    if r.header("authorization") != Some(expected_signature(r).as_str()) {
        return (
            403,
            vec![],
            json!({"message": "The request signature we calculated does not match the signature you provided."}),
        );
    }
    match (r.method.as_str(), r.path.as_str()) {
        ("POST", "/v2/email/outbound-emails") => (
            200,
            vec![],
            json!({"MessageId": format!("0102018c{}-000000", Uuid::new_v4().simple())}),
        ),
        ("GET", "/v2/email/account") => (
            200,
            vec![],
            json!({"SendingEnabled": true, "ProductionAccessEnabled": true}),
        ),
        _ => (404, vec![], json!({"message": "not found"})),
    }
}

/// An SNS delivery of `event` (an SES event) or of a subscription confirmation, signed.
fn notification(key: &SnsKey, version: &str, cert_url: &str, topic: &str, event: &Value) -> String {
    let mut body = json!({"Type": "Notification", "MessageId": Uuid::new_v4().to_string(),
        "TopicArn": topic, "Message": event.to_string(),
        "Timestamp": "2026-12-03T10:00:00.000Z", "SigningCertURL": cert_url,
        "UnsubscribeURL": "https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe"});
    key.sign(&mut body, version);
    body.to_string()
}

fn ses_event(kind: &str, message_id: &str, to: &str) -> Value {
    let mail = json!({"timestamp": "2026-12-03T10:00:00.000Z", "source": "ses@example.com",
        "messageId": message_id, "destination": [to]});
    match kind {
        "Bounce" => json!({"eventType": "Bounce", "mail": mail, "bounce": {
            "bounceType": "Permanent", "bounceSubType": "General",
            "bouncedRecipients": [{"emailAddress": to, "action": "failed", "status": "5.1.1",
                "diagnosticCode": "smtp; 550 5.1.1 user unknown"}],
            "timestamp": "2026-12-03T10:00:01.000Z", "feedbackId": "0102-feedback"}}),
        _ => json!({"eventType": "Complaint", "mail": mail, "complaint": {
            "complainedRecipients": [{"emailAddress": to}], "complaintFeedbackType": "abuse",
            "timestamp": "2026-12-03T10:00:02.000Z", "feedbackId": "0102-complaint"}}),
    }
}

#[tokio::test]
async fn ses_sends_signed_requests_and_its_sns_deliveries_apply_events() {
    let key = SnsKey::generate();
    let certificate = key.certificate.clone();
    let api = ApiStub::start(move |r| ses_and_sns(r, &certificate)).await;
    let urls = ProviderUrls::all_at(&api.base_url);
    let api_urls = urls.clone();
    let s = Send::with_provider_urls(urls, move |s| {
        s.sending.reply_wait_ms = 5_000;
        s.delivery.provider_urls = api_urls;
    })
    .await;
    let (t, site) = tenant(&s, "ses").await;
    let good = json!({"kind": "ses", "access_key_id": ACCESS_KEY_ID, "secret_access_key": SECRET_KEY,
        "aws_region": REGION, "configuration_set": "events", "sns_topic_arn": TOPIC});
    // The region is required and named.
    let res = s
        .put_provider(
            &t.admin,
            &json!({"kind": "ses", "access_key_id": ACCESS_KEY_ID, "secret_access_key": SECRET_KEY}),
        )
        .await;
    let err = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "aws_region", "{err:?}");
    refused_then_accepted(
        &s,
        &t,
        &site,
        "ses",
        json!({"kind": "ses", "access_key_id": ACCESS_KEY_ID,
            "secret_access_key": "d3JvbmcK", "aws_region": REGION}),
        good,
        "GET /v2/email/account",
    )
    .await;

    let (ada, ada_message) = sent_to(&s, &t, &site, "ada@example.com").await;
    let request = api
        .requests()
        .into_iter()
        .rfind(|r| r.path == "/v2/email/outbound-emails")
        .unwrap();
    assert!(
        request.header("authorization").is_some_and(|a| a
            .starts_with(&format!("AWS4-HMAC-SHA256 Credential={ACCESS_KEY_ID}/"))
            && a.contains("/eu-west-1/ses/aws4_request")),
        "{:?}",
        request.headers
    );
    let body = request.json();
    assert_eq!(
        body["Destination"]["ToAddresses"],
        json!(["ada@example.com"])
    );
    assert_eq!(body["ConfigurationSetName"], "events");
    assert_eq!(
        body["EmailTags"][0],
        json!({"Name": "email_id", "Value": ada})
    );
    let raw = base64::engine::general_purpose::STANDARD
        .decode(body["Content"]["Raw"]["Data"].as_str().unwrap())
        .unwrap();
    let raw = String::from_utf8_lossy(&raw);
    assert!(raw.contains("Subject: Welcome aboard"), "{raw}");
    assert!(raw.contains(&format!("Message-ID: <{ada}@")), "{raw}");
    let (bob, bob_message) = sent_to(&s, &t, &site, "bob@example.com").await;

    let path = format!("/api/webhooks/ses/{}", t.project);
    let cert_url = format!("{}{CERT_PATH}", api.base_url);

    // The subscription is confirmed once its signature verifies.
    let subscribe = format!(
        "{}/?Action=ConfirmSubscription&TopicArn={TOPIC}&Token=2336412f37",
        api.base_url
    );
    let mut confirmation = json!({"Type": "SubscriptionConfirmation",
        "MessageId": Uuid::new_v4().to_string(), "Token": "2336412f37", "TopicArn": TOPIC,
        "Message": format!("You have chosen to subscribe to the topic {TOPIC}."),
        "SubscribeURL": subscribe, "Timestamp": "2026-12-03T09:59:00.000Z",
        "SigningCertURL": cert_url});
    key.sign(&mut confirmation, "1");
    assert_eq!(
        post(&s, &path, &[], &confirmation.to_string()).await["status"],
        "confirmed"
    );
    assert!(
        api.requests()
            .iter()
            .any(|r| r.path.starts_with("/?Action=ConfirmSubscription")),
        "the SubscribeURL was fetched"
    );

    // Forged (another key), another topic, a certificate elsewhere, unsigned: 401, nothing
    // recorded or changed.
    let bounce = ses_event("Bounce", &ada_message, "ada@example.com");
    let other = SnsKey::generate();
    let mut unsigned: Value =
        serde_json::from_str(&notification(&key, "2", &cert_url, TOPIC, &bounce)).unwrap();
    unsigned.as_object_mut().unwrap().remove("Signature");
    for forged in [
        notification(&other, "2", &cert_url, TOPIC, &bounce),
        notification(
            &key,
            "2",
            &cert_url,
            "arn:aws:sns:eu-west-1:123456789012:other",
            &bounce,
        ),
        notification(
            &key,
            "2",
            "http://169.254.169.254/latest/cert.pem",
            TOPIC,
            &bounce,
        ),
        unsigned.to_string(),
    ] {
        let res = post_webhook(&s.h, &path, &[], &forged).await;
        expect_error(res, 401, "INVALID_SIGNATURE").await;
    }
    assert_eq!(
        count(
            &s,
            "SELECT count(*) FROM webhook_receipts WHERE provider = 'ses'"
        )
        .await,
        "0"
    );
    assert_eq!(s.email(&t.read, &ada).await["status"], "sent");

    // A bounce (SignatureVersion 2), SNS's retry of it, a complaint (SignatureVersion 1).
    let delivery = notification(&key, "2", &cert_url, TOPIC, &bounce);
    assert_eq!(post(&s, &path, &[], &delivery).await["status"], "applied");
    assert_eq!(post(&s, &path, &[], &delivery).await["status"], "duplicate");
    let complaint = ses_event("Complaint", &bob_message, "bob@example.com");
    let delivery = notification(&key, "1", &cert_url, TOPIC, &complaint);
    assert_eq!(post(&s, &path, &[], &delivery).await["status"], "applied");
    assert_bounce_and_complaint(&s, &t, &ada, &bob).await;
    s.finish().await;
}
