package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TemporalTLS is how conduit reaches a Temporal frontend over TLS: a
// self-hosted cluster with mutual TLS (client certificate and key, the CA
// that signed the server's certificate) or Temporal Cloud (mTLS, or TLS
// with temporal.api_key). All empty and Enabled false: plaintext.
type TemporalTLS struct {
	// Enabled turns TLS on with the system's roots and no client
	// certificate; any other field set turns it on too.
	Enabled bool `mapstructure:"enabled"`
	// CertFile and KeyFile are the client certificate and its key (PEM),
	// presented for mutual TLS; both or neither.
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
	// CAFile holds the CA certificates (PEM) that verify the server;
	// empty: the system's roots.
	CAFile string `mapstructure:"ca_file"`
	// ServerName is the name the server's certificate must carry, when it
	// is not the host of temporal.address (an IP, a load balancer).
	ServerName string `mapstructure:"server_name"`
}

var temporalTLSDefaults = map[string]any{
	"temporal.tls.enabled":     false,
	"temporal.tls.cert_file":   "",
	"temporal.tls.key_file":    "",
	"temporal.tls.ca_file":     "",
	"temporal.tls.server_name": "",
	"temporal.api_key":         "",
}

// On is whether the connection to Temporal uses TLS.
func (t TemporalTLS) On() bool {
	return t.Enabled || t.CertFile != "" || t.KeyFile != "" || t.CAFile != "" || t.ServerName != ""
}

// Config loads the files into a client TLS configuration; nil when TLS is
// off. Each problem names the setting, so a wrong mount fails at start-up.
func (t TemporalTLS) Config() (*tls.Config, error) {
	if !t.On() {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, fmt.Errorf("temporal.tls.cert_file (%[1]s_TEMPORAL_TLS_CERT_FILE) and temporal.tls.key_file (%[1]s_TEMPORAL_TLS_KEY_FILE) go together: set both or neither", EnvPrefix)
	}
	if t.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("temporal.tls.cert_file/key_file (%s_TEMPORAL_TLS_CERT_FILE, _KEY_FILE) could not be loaded: %v", EnvPrefix, err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("temporal.tls.ca_file (%s_TEMPORAL_TLS_CA_FILE) could not be read: %v", EnvPrefix, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("temporal.tls.ca_file (%s_TEMPORAL_TLS_CA_FILE) %s holds no PEM certificate", EnvPrefix, t.CAFile)
		}
		c.RootCAs = pool
	}
	return c, nil
}

// checkTLS loads the TLS files once so Validate reports a wrong path or a
// mismatched pair before anything dials.
func (t Temporal) checkTLS() []error {
	var errs []error
	if _, err := t.TLS.Config(); err != nil {
		errs = append(errs, err)
	}
	if t.APIKey != "" && t.Address == "" {
		errs = append(errs, errors.New("temporal.api_key is set without temporal.address: the embedded dev server takes no API key"))
	}
	return errs
}
