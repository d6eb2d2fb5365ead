//! Which card each scene is drawn as: the first a title card, the last an end card with the
//! call to action, the others by the request's `template` and the scene's shape in the brief.

use super::scenes::{Scene, Shape};

/// The template a request names (an unknown name is `Auto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Template {
    /// Each middle scene by its shape; the first plain one a product shot given a picture.
    Auto,
    Text,
    Bullets,
    Quote,
    Product,
}

impl Template {
    pub fn parse(name: Option<&str>) -> Self {
        match name.map(|n| n.trim().to_ascii_lowercase()).as_deref() {
            Some("text") => Self::Text,
            Some("bullets" | "bullet_list" | "list") => Self::Bullets,
            Some("quote") => Self::Quote,
            Some("product" | "product_shot") => Self::Product,
            _ => Self::Auto,
        }
    }
}

/// A scene's card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Card {
    Title {
        text: String,
    },
    Text {
        text: String,
    },
    Bullets {
        items: Vec<String>,
    },
    Quote {
        text: String,
        by: Option<String>,
    },
    /// The product picture with the scene's text under it.
    Product {
        text: String,
    },
    /// The scene's text (the call to action taken out of it) and the call to action.
    End {
        text: String,
        cta: String,
    },
}

/// The cards of `scenes`, in order.
pub fn cards(
    scenes: &[Scene],
    template: Template,
    has_picture: bool,
    cta: Option<&str>,
) -> Vec<Card> {
    let last = scenes.len().saturating_sub(1);
    let mut product_shown = false;
    scenes
        .iter()
        .enumerate()
        .map(|(i, scene)| {
            if i == 0 {
                return Card::Title {
                    text: scene.text.clone(),
                };
            }
            if i == last {
                return end_card(&scene.text, cta);
            }
            let card = middle_card(scene, template, has_picture && !product_shown);
            product_shown |= matches!(card, Card::Product { .. }) && template == Template::Auto;
            card
        })
        .collect()
}

fn middle_card(scene: &Scene, template: Template, picture: bool) -> Card {
    let text = scene.text.clone();
    match (&scene.shape, template) {
        (_, Template::Text) => Card::Text { text },
        (Shape::Bullets(items), _) => Card::Bullets {
            items: items.clone(),
        },
        (Shape::Quote { text, by }, _) => Card::Quote {
            text: text.clone(),
            by: by.clone(),
        },
        (Shape::Text, Template::Bullets) => {
            let items = super::captions::chunks(&text);
            if items.len() >= 2 {
                Card::Bullets { items }
            } else {
                Card::Text { text }
            }
        }
        (Shape::Text, Template::Quote) => Card::Quote { text, by: None },
        (Shape::Text, Template::Product | Template::Auto) if picture => Card::Product { text },
        (Shape::Text, _) => Card::Text { text },
    }
}

/// The end card: the brand's call to action, else the scene's last sentence.
fn end_card(text: &str, cta: Option<&str>) -> Card {
    if let Some(cta) = cta {
        return Card::End {
            text: text.to_owned(),
            cta: cta.to_owned(),
        };
    }
    let sentences = super::captions::chunks(text);
    match sentences.split_last() {
        Some((last, rest)) if !rest.is_empty() => Card::End {
            text: rest.join(" "),
            cta: last.clone(),
        },
        _ => Card::End {
            text: String::new(),
            cta: text.to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scene(text: &str, shape: Shape) -> Scene {
        Scene {
            text: text.into(),
            shape,
            seconds: 3,
        }
    }

    #[test]
    fn title_first_end_last_and_the_middle_by_shape_and_template() {
        let scenes = [
            scene("Meet Acme.", Shape::Text),
            scene("It is fast.", Shape::Text),
            scene("A. B.", Shape::Bullets(vec!["A".into(), "B".into()])),
            scene("It is kind.", Shape::Text),
            scene("Loved by teams. Start free today!", Shape::Text),
        ];
        let auto = cards(&scenes, Template::Auto, true, None);
        assert!(matches!(auto[0], Card::Title { .. }));
        assert!(matches!(auto[1], Card::Product { .. }));
        assert!(matches!(auto[2], Card::Bullets { .. }));
        assert!(matches!(auto[3], Card::Text { .. }), "one product shot");
        assert_eq!(
            auto[4],
            Card::End {
                text: "Loved by teams.".into(),
                cta: "Start free today!".into()
            }
        );
        let plain = cards(&scenes, Template::parse(Some("text")), true, Some("Go"));
        assert!(matches!(plain[2], Card::Text { .. }));
        assert!(matches!(&plain[4], Card::End { cta, .. } if cta == "Go"));
        assert!(matches!(
            cards(&scenes, Template::Auto, false, None)[1],
            Card::Text { .. }
        ));
    }
}
