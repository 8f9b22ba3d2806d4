package local

import (
	"crypto/subtle"
	"errors"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry is an OCI registry on loopback for development and tests: go-containerregistry's
// reference implementation, blobs in memory or in a directory, optionally behind basic auth (to
// play a private registry). Loopback registries are spoken to over plain HTTP.
type Registry struct {
	// Host is "127.0.0.1:port": prefix repository names with it ("127.0.0.1:5000/app:1").
	Host   string
	server *http.Server
	ln     net.Listener
}

// RegistryOptions configure StartRegistry.
type RegistryOptions struct {
	// Addr to listen on; empty means a free loopback port. Must be a loopback address.
	Addr string
	// BlobDir keeps blobs on disk; empty keeps them in memory. Manifests stay in memory either way
	// (the reference registry keeps them there), so a restart forgets the tags.
	BlobDir string
	// Username and Password, when set, are required for every request (HTTP basic auth).
	Username, Password string
}

// StartRegistry serves a registry until Close.
func StartRegistry(opts RegistryOptions) (*Registry, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, errors.New("the embedded registry listens on loopback only")
	}
	regOpts := []registry.Option{registry.Logger(log.New(discard{}, "", 0))}
	if opts.BlobDir != "" {
		if err := os.MkdirAll(opts.BlobDir, 0o700); err != nil {
			return nil, err
		}
		regOpts = append(regOpts, registry.WithBlobHandler(registry.NewDiskBlobHandler(opts.BlobDir)))
	}
	var h http.Handler = registry.New(regOpts...)
	if opts.Username != "" || opts.Password != "" {
		h = basicAuth(h, opts.Username, opts.Password)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return &Registry{Host: ln.Addr().String(), server: srv, ln: ln}, nil
}

// Close stops the registry.
func (r *Registry) Close() error { return r.server.Close() }

func basicAuth(next http.Handler, user, pass string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		u, p, ok := req.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(pass)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="conduit"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, req)
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
