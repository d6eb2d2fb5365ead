SELECT p.name AS product, s.id, s.state FROM products p
JOIN LATERAL (
    SELECT id, state FROM product_states WHERE product_id = p.id
    ORDER BY version DESC LIMIT 1
) s ON true
WHERE p.user_id = $1 AND p.environment = $2
ORDER BY p.name
