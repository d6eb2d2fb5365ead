INSERT INTO hygiene_configs (project_id, inactive_days, remove_bounced,
                             remove_complained, suppress_role_addresses)
VALUES ($1, coalesce($2, 0), coalesce($3, true), coalesce($4, true),
        coalesce($5, false))
ON CONFLICT (project_id) DO UPDATE SET
  inactive_days = coalesce($2, hygiene_configs.inactive_days),
  remove_bounced = coalesce($3, hygiene_configs.remove_bounced),
  remove_complained = coalesce($4, hygiene_configs.remove_complained),
  suppress_role_addresses = coalesce($5, hygiene_configs.suppress_role_addresses),
  updated_at = now()
RETURNING inactive_days, remove_bounced, remove_complained, suppress_role_addresses,
          updated_at
