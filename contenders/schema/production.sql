-- The `production` schema variant: partial indexes that the feed query cannot use,
-- because its predicate implies neither `state = 'ready'` nor `audience = 'public'`.
-- The suggested section then scans the posts table.
CREATE INDEX posts_ready_author ON posts (author, created_at DESC) WHERE state = 'ready';
CREATE INDEX posts_public_recent ON posts (created_at DESC) WHERE audience = 'public';
