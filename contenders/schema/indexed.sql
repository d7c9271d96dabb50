-- The `indexed` schema variant: the production indexes plus the two that the feed
-- query's predicate (archived_at IS NULL AND ...) can use.
CREATE INDEX posts_ready_author ON posts (author, created_at DESC) WHERE state = 'ready';
CREATE INDEX posts_public_recent ON posts (created_at DESC) WHERE audience = 'public';
CREATE INDEX posts_live_author ON posts (author, created_at DESC) WHERE archived_at IS NULL;
CREATE INDEX posts_live_recent ON posts (created_at DESC) WHERE archived_at IS NULL;
