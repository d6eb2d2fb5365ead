ALTER INDEX free_form_entries_search_idx RESET (fastupdate);
ALTER INDEX decisions_search_idx RESET (fastupdate);
