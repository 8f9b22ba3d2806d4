-- +goose Up
-- Human sign-in (internal/humans): an email and a password for an
-- account. The password is kept only as an argon2id hash (a PHC string
-- that names its parameters, so they can be raised later). permissions
-- bound what this human may grant an OAuth client.
CREATE TABLE logins (
    id            text PRIMARY KEY,
    account_id    text        NOT NULL REFERENCES accounts (id),
    email         text        NOT NULL UNIQUE CHECK (email = lower(email)),
    password_hash text        NOT NULL,
    permissions   text[]      NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX logins_account ON logins (account_id);

-- Signed-in browsers. The cookie carries 32 random bytes; only their
-- SHA-256 is kept, so a copy of this table signs nobody in.
CREATE TABLE login_sessions (
    token_hash bytea       PRIMARY KEY,
    login_id   text        NOT NULL REFERENCES logins (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX login_sessions_expires ON login_sessions (expires_at);

-- OAuth clients registered dynamically (RFC 7591): public clients only
-- (no secret), bound to their redirect URIs. metadata is what the client
-- registered, as the registration answer echoed it.
CREATE TABLE oauth_clients (
    id             text PRIMARY KEY,
    name           text        NOT NULL,
    redirect_uris  text[]      NOT NULL,
    grant_types    text[]      NOT NULL,
    response_types text[]      NOT NULL,
    scopes         text[]      NOT NULL,
    metadata       jsonb       NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);

-- What the authorization server (ory/fosite) keeps per authorization
-- code, PKCE challenge, access token and refresh token. A row is found by
-- the token's HMAC signature; the token itself is never stored. request_id
-- ties a grant's tokens together (one family through every refresh), so a
-- reused code or refresh token revokes the whole family. request holds the
-- grant (scopes, audience, the sanitized form, the session) as JSON.
CREATE TABLE oauth_tokens (
    kind         text        NOT NULL CHECK (kind IN ('code', 'pkce', 'access', 'refresh')),
    signature    text        NOT NULL,
    request_id   text        NOT NULL,
    client_id    text        NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    account_id   text        NOT NULL REFERENCES accounts (id),
    request      jsonb       NOT NULL,
    active       boolean     NOT NULL DEFAULT true,
    expires_at   timestamptz NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, signature)
);
CREATE INDEX oauth_tokens_request ON oauth_tokens (request_id);
CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at);

-- +goose Down
DROP TABLE oauth_tokens;
DROP TABLE oauth_clients;
DROP TABLE login_sessions;
DROP TABLE logins;
