SELECT (SELECT count(*) FROM sites WHERE project_id = $1) AS sites,
       (SELECT count(*) FROM contacts WHERE project_id = $1) AS contacts,
       (SELECT count(*) FROM contact_sites cs
          JOIN sites s ON s.id = cs.site_id AND s.project_id = $1
         WHERE cs.status = 'subscribed') AS subscriptions,
       (SELECT count(*) FROM suppressions WHERE project_id = $1) AS suppressions,
       (SELECT count(*) FROM campaigns WHERE project_id = $1) AS campaigns,
       (SELECT count(*) FROM campaigns WHERE project_id = $1 AND status = 'active')
           AS active_campaigns,
       (SELECT count(*) FROM templates WHERE project_id = $1) AS templates
