-- A slug on the shared sending domain is an address: it belongs to one site in the whole
-- deployment, and the mailbox names receivers rely on (RFC 2142 and the like) belong to nobody.
--
-- Existing rows: among sites sharing a slug the oldest (created_at, then id) keeps it; every
-- other one, and every site holding a reserved slug, is renamed to
-- `<slug cut to 50>-<last 12 hex digits of its id>` (63 characters at most, like any slug),
-- or `<slug cut to 30>-<all 32 hex digits of its id>` should that be taken already.
DO $$
DECLARE
    site record;
    hex text;
    renamed text;
BEGIN
    FOR site IN
        SELECT id, slug
        FROM (
            SELECT id, slug,
                   row_number() OVER (PARTITION BY slug ORDER BY created_at, id) AS rank
            FROM sites
        ) ranked
        WHERE rank > 1
           OR slug IN ('postmaster', 'abuse', 'hostmaster', 'webmaster', 'admin', 'root',
                       'security', 'noreply', 'no-reply', 'mailer-daemon', 'billing', 'support')
        ORDER BY id
    LOOP
        hex := replace(site.id::text, '-', '');
        renamed := rtrim(left(site.slug, 50), '-') || '-' || right(hex, 12);
        IF EXISTS (SELECT 1 FROM sites WHERE slug = renamed) THEN
            renamed := rtrim(left(site.slug, 30), '-') || '-' || hex;
        END IF;
        UPDATE sites SET slug = renamed, updated_at = now() WHERE id = site.id;
    END LOOP;
END
$$;

ALTER TABLE sites DROP CONSTRAINT sites_project_id_slug_key;
ALTER TABLE sites ADD CONSTRAINT sites_slug_key UNIQUE (slug);
