package temporalx_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"conduit/internal/config"
	"conduit/internal/devstack"
	"conduit/internal/temporalx"
)

// serverName is the only name in the server's certificate: it has no IP
// address, so a client must send temporal.tls.server_name to 127.0.0.1.
const serverName = "temporal.conduit.test"

// pki is a CA and certificates it signed, written as PEM files.
type pki struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caFile string
	serial int64
	t      *testing.T
}

func newPKI(t *testing.T, name string) *pki {
	p := &pki{dir: t.TempDir(), t: t, serial: 1}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if p.ca, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	p.caKey = key
	p.caFile = p.write("ca.pem", "CERTIFICATE", der)
	return p
}

func (p *pki) write(name, typ string, der []byte) string {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// issue signs a leaf certificate for both server and client use (the
// embedded server's system worker presents its own certificate).
func (p *pki) issue(name string, dns ...string) (certFile, keyFile string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: name}, DNSNames: dns,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		p.t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.write(name+".pem", "CERTIFICATE", der), p.write(name+"-key.pem", "PRIVATE KEY", kder)
}

func startTLSServer(t *testing.T, s *devstack.ServerTLS) *devstack.Temporal {
	t.Helper()
	srv, err := devstack.StartTemporal(context.Background(), devstack.TemporalOptions{TLS: s})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func greet(_ workflow.Context, name string) (string, error) { return "hello " + name, nil }

// runWorkflow starts a worker on c and runs one workflow to its result.
func runWorkflow(t *testing.T, c client.Client) error {
	t.Helper()
	queue := "tls-" + t.Name()
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflow(greet)
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, greet, "tls")
	if err != nil {
		return err
	}
	var out string
	if err := run.Get(ctx, &out); err != nil {
		return err
	}
	if out != "hello tls" {
		t.Fatalf("workflow answered %q", out)
	}
	return nil
}

// temporal.tls.*: with the right CA, client certificate and server name
// the client connects and runs a workflow; a wrong CA, a missing or
// foreign client certificate, a missing server name or plaintext are
// refused at start-up.
func TestMutualTLS(t *testing.T) {
	ca, other := newPKI(t, "conduit test CA"), newPKI(t, "another CA")
	serverCert, serverKey := ca.issue("server", serverName)
	clientCert, clientKey := ca.issue("conduit-worker")
	foreignCert, foreignKey := other.issue("intruder")
	srv := startTLSServer(t, &devstack.ServerTLS{CertFile: serverCert, KeyFile: serverKey, CAFile: ca.caFile, ServerName: serverName, RequireClientCert: true})

	good := config.TemporalTLS{CertFile: clientCert, KeyFile: clientKey, CAFile: ca.caFile, ServerName: serverName}
	c, err := temporalx.Connect(context.Background(), config.Temporal{Address: srv.Address, Namespace: srv.Namespace, TLS: good}, quiet)
	if err != nil {
		t.Fatalf("the right CA, certificate and server name: %v", err)
	}
	defer c.Close()
	if err := runWorkflow(t, c); err != nil {
		t.Fatalf("a workflow over mutual TLS: %v", err)
	}

	for name, tl := range map[string]config.TemporalTLS{
		"a wrong CA":               {CertFile: clientCert, KeyFile: clientKey, CAFile: other.caFile, ServerName: serverName},
		"no client certificate":    {CAFile: ca.caFile, ServerName: serverName},
		"a foreign client cert":    {CertFile: foreignCert, KeyFile: foreignKey, CAFile: ca.caFile, ServerName: serverName},
		"no server name":           {CertFile: clientCert, KeyFile: clientKey, CAFile: ca.caFile},
		"the system roots":         {Enabled: true, CertFile: clientCert, KeyFile: clientKey, ServerName: serverName},
		"plaintext (TLS disabled)": {},
	} {
		c, err := temporalx.Connect(context.Background(), config.Temporal{Address: srv.Address, Namespace: srv.Namespace, TLS: tl}, quiet)
		if err == nil {
			c.Close()
			t.Errorf("%s: connected, want refused", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// temporal.api_key: over TLS (server verified, no client certificate) the
// right key runs a workflow; a wrong key or none is refused by the server.
func TestAPIKey(t *testing.T) {
	ca := newPKI(t, "conduit test CA")
	serverCert, serverKey := ca.issue("server", serverName)
	srv := startTLSServer(t, &devstack.ServerTLS{CertFile: serverCert, KeyFile: serverKey, CAFile: ca.caFile, ServerName: serverName, APIKey: "key-right"})
	tl := config.TemporalTLS{CAFile: ca.caFile, ServerName: serverName}

	c, err := temporalx.Connect(context.Background(), config.Temporal{Address: srv.Address, Namespace: srv.Namespace, TLS: tl, APIKey: "key-right"}, quiet)
	if err != nil {
		t.Fatalf("the right key: %v", err)
	}
	defer c.Close()
	if err := runWorkflow(t, c); err != nil {
		t.Fatalf("a workflow with the API key: %v", err)
	}

	for name, key := range map[string]string{"a wrong key": "key-wrong", "no key": ""} {
		c, err := temporalx.Connect(context.Background(), config.Temporal{Address: srv.Address, Namespace: srv.Namespace, TLS: tl, APIKey: key}, quiet)
		if err != nil {
			t.Logf("%s: refused at the door: %v", name, err)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "tls-refused"}, greet, "x")
		cancel()
		c.Close()
		var denied *serviceerror.PermissionDenied
		if !errors.As(err, &denied) {
			t.Errorf("%s: starting a workflow gave %v, want permission denied", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// A half-configured client pair is a configuration error naming the setting.
func TestTLSConfigErrors(t *testing.T) {
	ca := newPKI(t, "conduit test CA")
	cert, _ := ca.issue("x")
	for name, tl := range map[string]config.TemporalTLS{
		"a cert without its key": {CertFile: cert},
		"a missing CA file":      {CAFile: filepath.Join(t.TempDir(), "nope.pem")},
		"a CA file without PEM":  {CAFile: writeFile(t, "junk")},
	} {
		if _, err := tl.Config(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if c, err := (config.TemporalTLS{}).Config(); c != nil || err != nil {
		t.Errorf("TLS off: %v %v", c, err)
	}
}

func writeFile(t *testing.T, s string) string {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
