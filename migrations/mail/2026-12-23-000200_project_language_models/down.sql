DROP TABLE project_language_models;
