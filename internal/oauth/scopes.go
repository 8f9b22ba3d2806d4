package oauth

import "conduit/internal/apikey"

// scopeText says what each scope lets a client do, for the consent page.
var scopeText = map[string]string{
	apikey.PipelinesRead:  "list your pipelines and read their runs",
	apikey.PipelinesRun:   "run your pipelines (runs are charged to your credit)",
	apikey.PipelinesWrite: "create, edit, publish and roll back your pipelines",
	apikey.KeysManage:     "create and manage API keys for your account",
	apikey.MediaRead:      "list and read your media library",
	apikey.MediaWrite:     "import, assemble and edit media in your library (charged to your credit)",
	"redact:proxy":        "use the redacting chat proxy",
	"redact:run":          "redact text",
	"redact:log":          "read the redaction audit log",
	"pii:ingest":          "store personal data in the vault",
	"pii:read":            "read personal data in the vault",
	"pii:write":           "change personal data in the vault",
	"pii:delete":          "delete personal data in the vault",
	"pii:consent":         "record consent in the vault",
	"pii:audit":           "read the vault's audit log",
	"enclaves:read":       "read your enclaves",
	"enclaves:write":      "create and manage your enclaves",
	"tasks:read":          "read your scheduled tasks",
	"tasks:write":         "create and manage scheduled tasks",
	"logs:read":           "read your logs",
	"proofs:write":        "register verification keys and submit proofs",
	"proofs:read":         "read your proof jobs and your KYC proofs' private fields",
}

// ScopeText describes a scope for a human deciding whether to grant it.
func ScopeText(scope string) string {
	if t, ok := scopeText[scope]; ok {
		return t
	}
	return scope
}

// ToolServerScopes are the scopes the tool server's tools check
// (internal/tools; a test keeps the two in step), sorted. An access token
// works at the tool server only, so these are the only scopes it can
// usefully hold and the only ones granted.
func ToolServerScopes() []string {
	return []string{apikey.KeysManage, apikey.MediaRead, apikey.MediaWrite, apikey.PipelinesRead, apikey.PipelinesRun, apikey.PipelinesWrite}
}

// DefaultScopes are what the tool server asks for in its 401 challenge
// and what the consent page ticks: every tool server scope but
// keys:manage. A key minted with that scope outlives the grant and works
// on the whole API, so a human grants it only by ticking it.
func DefaultScopes() []string {
	return []string{apikey.MediaRead, apikey.MediaWrite, apikey.PipelinesRead, apikey.PipelinesRun, apikey.PipelinesWrite}
}
