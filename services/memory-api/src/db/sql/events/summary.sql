SELECT CASE WHEN GROUPING(model) = 0 THEN 'model'
            WHEN GROUPING(day) = 0 THEN 'day' ELSE 'total' END AS kind,
       COALESCE(model, day::text) AS key,
       trim_scale(COALESCE(sum(cost_usd), 0))::text AS cost_usd,
       COALESCE(sum(input_tokens), 0)::bigint AS input_tokens,
       COALESCE(sum(output_tokens), 0)::bigint AS output_tokens,
       count(*) AS event_count
FROM (SELECT model, (occurred_at AT TIME ZONE 'UTC')::date AS day, cost_usd,
             input_tokens, output_tokens
      FROM ai_cost_events
      WHERE user_id = $1 AND environment = $2
        AND occurred_at >= $3 AND occurred_at < $4
        AND ($5::text IS NULL OR product = $5)) AS c
GROUP BY GROUPING SETS ((), (model), (day))
ORDER BY CASE WHEN GROUPING(model) = 0 THEN 1 WHEN GROUPING(day) = 0 THEN 2 ELSE 0 END,
         day, sum(cost_usd) DESC, model
