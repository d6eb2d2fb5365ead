//! `LLM__BASE_URL=https://…`: the chat-completions client over TLS to a local endpoint whose
//! certificate a test CA issued. With that CA (`LLM__CA_FILE`) the call goes through; with
//! another CA, or none (the system's roots), the certificate does not verify and the call
//! fails without reaching the endpoint.

use llm::{ChatModel, LlmSettings, Message};
use test_support::chat_stub::ChatStub;
use tls_kit::testing::{TempDir, TestCa};

fn settings(base_url: &str, ca_file: &str) -> LlmSettings {
    LlmSettings {
        base_url: base_url.to_owned(),
        model: "gpt-test".into(),
        api_key: "sk-test".into(),
        timeout_secs: 10,
        ca_file: ca_file.to_owned(),
    }
}

#[tokio::test]
async fn an_https_endpoint_with_the_test_ca_answers_and_other_cas_are_refused() {
    tls_kit::install();
    let dir = TempDir::new("llm-tls");
    let ca = TestCa::new("llm test CA");
    let other = TestCa::new("another CA");
    let ca_file = ca.write(dir.path(), "ca.pem");
    let other_file = other.write(dir.path(), "other.pem");
    let stub = ChatStub::start_tls(&ca.issue(&["localhost"])).await;
    assert!(
        stub.base_url.starts_with("https://localhost:"),
        "{}",
        stub.base_url
    );

    stub.reply("hello over TLS");
    let model = ChatModel::from_settings(&settings(&stub.base_url, ca_file.to_str().unwrap()))
        .unwrap()
        .expect("a model");
    let answer = model.complete(&[Message::user("hi")]).await;
    assert_eq!(answer.as_deref().ok(), Some("hello over TLS"), "{answer:?}");
    let requests = stub.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].authorization.as_deref(), Some("Bearer sk-test"));

    // another CA: the handshake fails, the endpoint never sees a request
    let refused = ChatModel::from_settings(&settings(&stub.base_url, other_file.to_str().unwrap()))
        .unwrap()
        .expect("a model")
        .complete(&[Message::user("hi")])
        .await;
    assert!(
        refused.is_err(),
        "a certificate of another CA was accepted: {refused:?}"
    );
    // no CA file: the system's roots do not know the test CA either
    let refused = ChatModel::from_settings(&settings(&stub.base_url, ""))
        .unwrap()
        .expect("a model")
        .complete(&[Message::user("hi")])
        .await;
    assert!(refused.is_err(), "an unknown CA was accepted: {refused:?}");
    assert_eq!(
        stub.requests().len(),
        1,
        "a refused connection reached the endpoint"
    );
}

#[tokio::test]
async fn a_certificate_for_another_name_is_refused() {
    tls_kit::install();
    let dir = TempDir::new("llm-tls-name");
    let ca = TestCa::new("llm test CA");
    let ca_file = ca.write(dir.path(), "ca.pem");
    let stub = ChatStub::start_tls(&ca.issue(&["not-this-host.test"])).await;
    stub.reply("never");
    let refused = ChatModel::from_settings(&settings(&stub.base_url, ca_file.to_str().unwrap()))
        .unwrap()
        .expect("a model")
        .complete(&[Message::user("hi")])
        .await;
    assert!(
        refused.is_err(),
        "a certificate for another name was accepted: {refused:?}"
    );
    assert!(stub.requests().is_empty());
}
