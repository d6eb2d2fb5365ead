SELECT count(*) FILTER (WHERE status = 'subscribed') AS subscribed,
       count(*) FILTER (WHERE created_at >= $2 AND created_at < $3) AS new_subscribers,
       count(*) FILTER (WHERE status = 'unsubscribed'
                          AND updated_at >= $2 AND updated_at < $3) AS unsubscribed
FROM contact_sites WHERE site_id = $1
