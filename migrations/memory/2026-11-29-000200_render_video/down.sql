DROP TABLE render_video_scenes;
DROP TABLE render_video_jobs;
