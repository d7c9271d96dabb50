-- The feed contract's schema (contenders/CONTRACT.md). Loaded first by the database's
-- init scripts; the index variant and the seed data follow.
CREATE TABLE profiles (
    id          bigint PRIMARY KEY,
    handle      text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL
);

CREATE TABLE follows (
    follower    bigint NOT NULL REFERENCES profiles (id),
    followee    bigint NOT NULL REFERENCES profiles (id),
    PRIMARY KEY (follower, followee)
);

CREATE TABLE posts (
    id              bigserial PRIMARY KEY,
    author          bigint NOT NULL REFERENCES profiles (id),
    body            text NOT NULL,
    -- who may see it: everyone, the author's followers, or the author alone
    audience        text NOT NULL CHECK (audience IN ('public', 'followers', 'private')),
    -- drafts are visible to their author only
    state           text NOT NULL DEFAULT 'ready' CHECK (state IN ('draft', 'ready')),
    -- a followers-only post the author has hidden from followers
    followers_hidden boolean NOT NULL DEFAULT false,
    archived_at     timestamptz,
    created_at      timestamptz NOT NULL
);

CREATE INDEX follows_followee ON follows (followee);
