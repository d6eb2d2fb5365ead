SELECT id, campaign_id, rule FROM (
  (SELECT id, campaign_id, 'click' AS rule, 1 AS rank FROM email_log
    WHERE project_id = $1 AND contact_id = $2
      AND last_clicked_at > $3::timestamptz - interval '72 hours' AND last_clicked_at <= $3
    ORDER BY last_clicked_at DESC, id DESC LIMIT 1)
  UNION ALL
  (SELECT id, campaign_id, 'open', 2 FROM email_log
    WHERE project_id = $1 AND contact_id = $2
      AND last_opened_at > $3 - interval '72 hours' AND last_opened_at <= $3
    ORDER BY last_opened_at DESC, id DESC LIMIT 1)
  UNION ALL
  (SELECT id, campaign_id, 'send', 3 FROM email_log
    WHERE project_id = $1 AND contact_id = $2
      AND sent_at > $3 - interval '7 days' AND sent_at <= $3
    ORDER BY sent_at DESC, id DESC LIMIT 1)
) AS touches ORDER BY rank LIMIT 1
