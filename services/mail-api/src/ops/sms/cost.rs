//! What a body costs: its segments as carriers count them, priced per country.

use super::*;

/// A body to price. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SmsCostRequest {
    /// 1..=1600 characters.
    #[schema(min_length = 1, max_length = 1600)]
    pub body: String,
    /// A destination number in international format (its country picks the price), at most
    /// 32 characters; null or absent: `country`, else the table's default price.
    #[schema(min_length = 3, max_length = 32)]
    pub to: Option<String>,
    /// An ISO 3166 alpha-2 country code (`US`); ignored when `to` is given.
    #[schema(min_length = 2, max_length = 2, pattern = "^[A-Z]{2}$")]
    pub country: Option<String>,
}

impl Validate for SmsCostRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        if self.body.chars().count() > BODY_MAX {
            return Err(ApiError::invalid_field(
                "body",
                "is longer than 1600 characters",
            ));
        }
        if let Some(to) = &mut self.to {
            let country = e164_field(to, "to")?;
            self.country = country;
        }
        Ok(())
    }
}

/// A body's segments and price.
#[derive(Debug, Serialize, ToSchema)]
pub struct SmsCostPreview {
    #[schema(inline)]
    pub encoding: SmsEncoding,
    /// Characters (Unicode scalar values).
    pub characters: usize,
    /// Septets (GSM-7: an extension character such as `€` or `{` counts 2) or UTF-16 units
    /// (UCS-2: an emoji outside the BMP counts 2).
    pub units: usize,
    /// Segments billed: 1 up to 160 septets or 70 units; beyond, parts of 153 septets or 67
    /// units (the concatenation header takes the rest), a character never split.
    pub segments: usize,
    /// Units per segment as this body is split (160, 153, 70 or 67).
    pub units_per_segment: usize,
    /// The country priced (alpha-2); null: the table's default.
    pub country: Option<String>,
    /// The price of a segment from the deployment's table; null when it has none.
    pub price_per_segment: Option<f64>,
    pub currency: String,
    /// `segments × price_per_segment`.
    pub estimated_cost: Option<f64>,
}

/// Counts a body's segments and prices them (`POST /sms/cost-preview`, `preview_sms_cost`).
pub fn preview_sms_cost(state: &AppState, req: &SmsCostRequest) -> SmsCostPreview {
    let count = count_segments(&req.body);
    let country = req.country.clone();
    let price = state
        .sms
        .prices
        .per_segment(country.as_deref().unwrap_or("*"));
    #[allow(clippy::cast_precision_loss)]
    let estimated_cost = price.map(|p| (p * count.segments as f64 * 1e6).round() / 1e6);
    SmsCostPreview {
        encoding: count.encoding.into(),
        characters: count.characters,
        units: count.units,
        segments: count.segments,
        units_per_segment: count.units_per_segment,
        country,
        price_per_segment: price,
        currency: state.sms.currency.clone(),
        estimated_cost,
    }
}
