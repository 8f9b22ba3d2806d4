package devstack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/temporal"
)

// ServerTLS makes the embedded server's frontend speak TLS, the way a
// secured cluster or Temporal Cloud does, so conduit's client options
// (temporal.tls.*, temporal.api_key) are tested against a real server.
type ServerTLS struct {
	// CertFile and KeyFile are the frontend's certificate and key (PEM).
	// The certificate must allow client authentication too: the server's
	// own system worker and readiness probe present it.
	CertFile, KeyFile string
	// CAFile signed the certificate above and, with RequireClientCert,
	// every client certificate the frontend accepts.
	CAFile string
	// ServerName is a DNS name in the certificate (the server listens on
	// 127.0.0.1).
	ServerName string
	// RequireClientCert turns on mutual TLS.
	RequireClientCert bool
	// APIKey, when set, is the bearer token every call in the server's
	// namespace must carry (Temporal Cloud's API keys, played): another
	// token, or none, is refused.
	APIKey string
}

// apply adds the TLS settings to cfg and returns the server options of an
// API key check and the way the server's own probe dials.
func (s *ServerTLS) apply(cfg *config.Config, namespace string) ([]temporal.ServerOption, func(*client.Options), error) {
	if s == nil {
		return nil, nil, nil
	}
	if s.CertFile == "" || s.KeyFile == "" || s.CAFile == "" || s.ServerName == "" {
		return nil, nil, errors.New("embedded Temporal TLS needs CertFile, KeyFile, CAFile and ServerName")
	}
	server := config.ServerTLS{CertFile: s.CertFile, KeyFile: s.KeyFile, RequireClientAuth: s.RequireClientCert}
	if s.RequireClientCert {
		server.ClientCAFiles = []string{s.CAFile}
	}
	cfg.Global.TLS.Frontend = config.GroupTLS{Server: server, Client: config.ClientTLS{ServerName: s.ServerName, RootCAFiles: []string{s.CAFile}}}
	cfg.Global.TLS.SystemWorker = config.WorkerTLS{CertFile: s.CertFile, KeyFile: s.KeyFile,
		Client: config.ClientTLS{ServerName: s.ServerName, RootCAFiles: []string{s.CAFile}}}

	pair, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("embedded Temporal TLS: %w", err)
	}
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		return nil, nil, fmt.Errorf("embedded Temporal TLS: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, nil, fmt.Errorf("embedded Temporal TLS: %s holds no PEM certificate", s.CAFile)
	}
	probe := func(o *client.Options) {
		o.ConnectionOptions.TLS = &tls.Config{ServerName: s.ServerName, RootCAs: roots, Certificates: []tls.Certificate{pair}}
		if s.APIKey != "" {
			o.Credentials = client.NewAPIKeyStaticCredentials(s.APIKey)
		}
	}
	var opts []temporal.ServerOption
	if s.APIKey != "" {
		opts = append(opts,
			temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return apiKeyClaims{key: s.APIKey} }),
			temporal.WithAuthorizer(apiKeyAuthorizer{namespace: namespace}))
	}
	return opts, probe, nil
}

// apiKeyClaims makes the right bearer token an administrator; any other
// token gets no claims.
type apiKeyClaims struct{ key string }

func (m apiKeyClaims) GetClaims(info *authorization.AuthInfo) (*authorization.Claims, error) {
	if tok, ok := strings.CutPrefix(info.AuthToken, "Bearer "); ok && tok == m.key {
		return &authorization.Claims{Subject: "api-key", System: authorization.RoleAdmin}, nil
	}
	return nil, nil
}

// apiKeyAuthorizer refuses calls in the served namespace without the key's
// claims. Calls outside it (the server's own system worker, cluster-level
// reads) pass, as on a cluster whose internal callers authenticate by
// other means.
type apiKeyAuthorizer struct{ namespace string }

func (a apiKeyAuthorizer) Authorize(_ context.Context, claims *authorization.Claims, target *authorization.CallTarget) (authorization.Result, error) {
	if target.Namespace != a.namespace || (claims != nil && claims.System >= authorization.RoleAdmin) {
		return authorization.Result{Decision: authorization.DecisionAllow}, nil
	}
	return authorization.Result{Decision: authorization.DecisionDeny, Reason: "API key required"}, nil
}
