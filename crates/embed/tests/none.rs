use embed::{EmbedConfig, EmbedError, Embedder, NoEmbedder};

#[tokio::test]
async fn none_is_disabled() {
    let texts = vec!["anything".to_string()];
    assert!(matches!(
        NoEmbedder.embed(&texts).await,
        Err(EmbedError::Disabled)
    ));
    assert_eq!(NoEmbedder.dimensions(), 0);

    // The default configuration is provider "none".
    let embedder = embed::build(&EmbedConfig::default()).unwrap();
    assert_eq!(embedder.name(), "none");
    assert!(matches!(
        embedder.embed(&texts).await,
        Err(EmbedError::Disabled)
    ));

    let config: EmbedConfig = serde_json::from_str(r#"{"provider":"none"}"#).unwrap();
    let embedder = embed::build(&config).unwrap();
    assert!(matches!(
        embedder.embed(&texts).await,
        Err(EmbedError::Disabled)
    ));
}
