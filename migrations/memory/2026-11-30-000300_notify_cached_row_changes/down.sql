DROP TRIGGER products_truncated ON products;
DROP TRIGGER products_changed ON products;
DROP TRIGGER identity_kernels_truncated ON identity_kernels;
DROP TRIGGER identity_kernels_changed ON identity_kernels;
DROP FUNCTION notify_owner_rows_truncated();
DROP FUNCTION notify_owner_row_change();
