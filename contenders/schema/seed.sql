-- Deterministic seed data. The scale is set by the session variables feed.profiles and
-- feed.posts (defaults 10000 and 200000); every value is a pure function of the row
-- number, so two databases seeded with the same scale are identical.
DO $$
DECLARE
    n_profiles bigint := coalesce(nullif(current_setting('feed.profiles', true), ''), '10000')::bigint;
    n_posts    bigint := coalesce(nullif(current_setting('feed.posts', true), ''), '200000')::bigint;
BEGIN
    INSERT INTO profiles (id, handle, created_at)
    SELECT i, 'user' || i, timestamptz '2026-01-01 00:00:00+00' + i * interval '1 minute'
    FROM generate_series(1, n_profiles) AS i;

    -- each profile follows 20 others, spread by a multiplicative hash
    INSERT INTO follows (follower, followee)
    SELECT DISTINCT f, 1 + ((f * 7919 + k * 104729) % n_profiles)
    FROM generate_series(1, n_profiles) AS f, generate_series(1, 20) AS k
    WHERE 1 + ((f * 7919 + k * 104729) % n_profiles) <> f;

    INSERT INTO posts (id, author, body, audience, state, followers_hidden, archived_at, created_at)
    SELECT i,
           1 + ((i * 2654435761) % n_profiles),
           'post ' || i,
           (ARRAY['public', 'public', 'followers', 'followers', 'private'])[1 + (i * 31 % 5)],
           CASE WHEN i % 17 = 0 THEN 'draft' ELSE 'ready' END,
           (i % 13 = 0),
           CASE WHEN i % 11 = 0 THEN timestamptz '2026-06-01 00:00:00+00' END,
           timestamptz '2026-01-01 00:00:00+00' + i * interval '10 seconds'
    FROM generate_series(1, n_posts) AS i;
    PERFORM setval('posts_id_seq', n_posts);
END
$$;
ANALYZE;
