SELECT t.campaign_id, c.name, t.conversions, t.revenue FROM (
    SELECT campaign_id, sum(n)::int8 AS conversions,
           jsonb_object_agg(currency, amount) AS revenue
    FROM (SELECT v.campaign_id, v.currency, count(*) AS n,
                 sum(v.revenue)::float8 AS amount
            FROM conversions v
           WHERE {CONVERSION_SCOPE} AND v.campaign_id IS NOT NULL
           GROUP BY v.campaign_id, v.currency) per_currency
    GROUP BY campaign_id
    ORDER BY conversions DESC, campaign_id LIMIT $6) t
LEFT JOIN campaigns c ON c.project_id = $1 AND c.id = t.campaign_id
ORDER BY t.conversions DESC, t.campaign_id
