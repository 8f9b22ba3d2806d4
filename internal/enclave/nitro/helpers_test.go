package nitro

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"conduit/internal/attest"
	"conduit/internal/enclave"
	"conduit/internal/enclave/local"
	"conduit/internal/enclave/nitro/awsfake"
	"conduit/internal/enclave/nitro/eif"
)

const (
	testAMI      = "ami-0abcdef1234567890"
	testBucket   = "enclave-images"
	testLogGroup = "/conduit/enclaves"
)

// world is a test's AWS: fake EC2 and CloudWatch Logs, an S3 server, a registry with the test
// image, and one parent agent answering for every instance the fake EC2 runs.
type world struct {
	ec2    *awsfake.EC2
	logs   *awsfake.Logs
	s3     *s3mem.Backend
	agent  *agent
	ref    string
	opts   Options
	ec2URL string
}

type tarEntry struct {
	name, link string
	typ        byte
	mode       int64
	body       []byte
}

func layer(t *testing.T, entries ...tarEntry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Size: int64(len(e.body)), Linkname: e.link, ModTime: time.Unix(1700000000, 0)}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// testImage: a program, a symbolic and a hard link to it, a file whose directory has no entry of
// its own, and a file the second layer deletes.
func testImage(t *testing.T, version string) v1.Image {
	t.Helper()
	l1 := layer(t,
		tarEntry{name: "app/", typ: tar.TypeDir, mode: 0o755},
		tarEntry{name: "app/server", typ: tar.TypeReg, mode: 0o755, body: []byte("#!/bin/sh\necho serving " + version + "\n")},
		tarEntry{name: "app/hard", typ: tar.TypeLink, link: "app/server"},
		tarEntry{name: "bin/run", typ: tar.TypeSymlink, link: "/app/server"},
		tarEntry{name: "etc/conf/greeting", typ: tar.TypeReg, mode: 0o644, body: []byte("hello")},
		tarEntry{name: "app/junk", typ: tar.TypeReg, mode: 0o644, body: []byte("deleted")},
	)
	l2 := layer(t, tarEntry{name: "app/.wh.junk", typ: tar.TypeReg, mode: 0o644})
	img, err := mutate.AppendLayers(empty.Image, l1, l2)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Created = v1.Time{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	cf.Config = v1.Config{Entrypoint: []string{"/app/server"}, Cmd: []string{"--port", "8080"}, Env: []string{"PATH=/app:/bin", "GREETING=hi"}, WorkingDir: "/app"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

func pushImage(t *testing.T, reg *local.Registry, repo string, img v1.Image) string {
	t.Helper()
	ref := reg.Host + "/" + repo
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	return ref
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{ec2: awsfake.NewEC2(testAMI), logs: awsfake.NewLogs(testLogGroup), s3: s3mem.New()}
	if err := w.s3.CreateBucket(testBucket); err != nil {
		t.Fatal(err)
	}
	ec2Srv := httptest.NewServer(w.ec2)
	logsSrv := httptest.NewServer(w.logs)
	s3Srv := httptest.NewServer(gofakes3.New(w.s3).Server())
	t.Cleanup(func() { ec2Srv.Close(); logsSrv.Close(); s3Srv.Close() })
	w.ec2URL = ec2Srv.URL

	reg, err := local.StartRegistry(local.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	w.ref = pushImage(t, reg, "apps/hello:1", testImage(t, "v1"))

	auth, err := attest.NewAuthority(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w.agent = &agent{t: t, ec2: w.ec2, s3: w.s3, auth: auth, keys: map[string]*agentKeys{}}
	agentSrv := httptest.NewServer(w.agent)
	t.Cleanup(agentSrv.Close)
	_, port, _ := net.SplitHostPort(agentSrv.Listener.Addr().String())
	agentPort, _ := strconv.Atoi(port)

	blobs := t.TempDir()
	w.opts = Options{
		Region: "us-east-1", AMI: testAMI, InstanceType: "m5.xlarge", SubnetID: "subnet-0123", SecurityGroupIDs: []string{"sg-0123"},
		InstanceProfile: "conduit-enclave-parent", Bucket: testBucket, LogGroup: testLogGroup, AgentPort: agentPort,
		AgentSecret: []byte("agent secret for tests"),
		KernelPath:  writeFile(t, blobs, "bzImage", "stand-in kernel"), InitPath: writeFile(t, blobs, "init", "stand-in init"),
		NSMPath: writeFile(t, blobs, "nsm.ko", "stand-in nsm driver"), KernelVersion: "4.14",
		WorkDir:     t.TempDir(),
		EC2Endpoint: ec2Srv.URL, S3Endpoint: s3Srv.URL, LogsEndpoint: logsSrv.URL, S3PathStyle: true,
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		RetryMaxAttempts: 3, RetryMaxBackoff: 5 * time.Millisecond,
		BootTimeout: 30 * time.Second, PollEvery: time.Millisecond,
		AttestationRoot: auth.Root(),
	}
	return w
}

func (w *world) provider(t *testing.T) *Provider {
	t.Helper()
	p, err := New(context.Background(), w.opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// logsClient is what the parent's log shipper would use.
func (w *world) putLogs(t *testing.T, stream string, events ...cwtypes.InputLogEvent) {
	t.Helper()
	cfg, err := awsconfig.LoadDefaultConfig(context.Background(), awsconfig.WithRegion("us-east-1"),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDPARENT", "secret", "")))
	if err != nil {
		t.Fatal(err)
	}
	c := cloudwatchlogs.NewFromConfig(cfg, func(o *cloudwatchlogs.Options) { o.BaseEndpoint = aws.String(w.opts.LogsEndpoint) })
	ctx := context.Background()
	if _, err := c.CreateLogStream(ctx, &cloudwatchlogs.CreateLogStreamInput{LogGroupName: aws.String(testLogGroup), LogStreamName: aws.String(stream)}); err != nil {
		var exists *cwtypes.ResourceAlreadyExistsException
		if !errors.As(err, &exists) {
			t.Fatal(err)
		}
	}
	if _, err := c.PutLogEvents(ctx, &cloudwatchlogs.PutLogEventsInput{LogGroupName: aws.String(testLogGroup), LogStreamName: aws.String(stream), LogEvents: events}); err != nil {
		t.Fatal(err)
	}
}

// agent plays the parent instance's agent of the contract in docs/enclaves.md. It answers only
// for an enclave whose instance the fake EC2 runs, reads the instance's user data, fetches the
// EIF it names from S3 and measures it — what the Nitro hypervisor would put in PCR0–2 — and
// signs documents with a leaf of a test CA (where an NSM's chain ends at AWS's root). Its keys
// live in its memory, one pair per enclave.
type agent struct {
	t    *testing.T
	ec2  *awsfake.EC2
	s3   *s3mem.Backend
	auth *attest.Authority

	mu   sync.Mutex
	keys map[string]*agentKeys
	// tamper, when set, changes the PCRs the agent reports (an enclave running something else).
	tamper bool
	calls  int
}

type agentKeys struct {
	evm    *ecdsa.PrivateKey
	solana ed25519.PrivateKey
}

func (a *agent) fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func (a *agent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	var body struct {
		EnclaveID string          `json:"enclaveId"`
		Nonce     []byte          `json:"nonce"`
		Key       enclave.KeyKind `json:"key"`
		Payload   []byte          `json:"payload"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	var inst *awsfake.Instance
	for _, in := range a.ec2.Instances() {
		if in.Tags[TagEnclaveID] == body.EnclaveID && in.State == "running" {
			in := in
			inst = &in
		}
	}
	if inst == nil || r.Header.Get("X-Conduit-Enclave-Id") != body.EnclaveID {
		a.fail(w, http.StatusConflict, "this instance does not run enclave "+body.EnclaveID)
		return
	}
	vars, err := ParseUserData(inst.UserData)
	if err != nil {
		a.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+vars["CONDUIT_AGENT_TOKEN"] {
		a.fail(w, http.StatusUnauthorized, "bad agent token")
		return
	}
	k := a.keys[body.EnclaveID]
	if k == nil {
		evm, err := crypto.GenerateKey()
		if err != nil {
			a.fail(w, 500, err.Error())
			return
		}
		_, sol, _ := ed25519.GenerateKey(rand.Reader)
		k = &agentKeys{evm: evm, solana: sol}
		a.keys[body.EnclaveID] = k
	}
	switch r.URL.Path {
	case "/attest":
		obj, err := a.s3.GetObject(vars["CONDUIT_EIF_S3_BUCKET"], vars["CONDUIT_EIF_S3_KEY"], nil)
		if err != nil {
			a.fail(w, http.StatusServiceUnavailable, "the EIF is not in S3: "+err.Error())
			return
		}
		data, _ := io.ReadAll(obj.Contents)
		obj.Contents.Close()
		f, err := eif.Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			a.fail(w, http.StatusInternalServerError, err.Error())
			return
		}
		pcrs, _ := f.PCRs(nil)
		if a.tamper {
			pcrs[2] = eif.Extend(pcrs[2])
		}
		ud, _ := attest.SigningKeys{EVM: &k.evm.PublicKey, Solana: k.solana.Public().(ed25519.PublicKey)}.UserData()
		signer, err := a.auth.IssueLeaf(inst.ID + "-enc0123456789abcdef")
		if err != nil {
			a.fail(w, 500, err.Error())
			return
		}
		doc, err := signer.Sign(attest.Document{PCRs: map[int][]byte{0: pcrs[0], 1: pcrs[1], 2: pcrs[2]}, UserData: ud, Nonce: body.Nonce})
		if err != nil {
			a.fail(w, http.StatusBadRequest, err.Error())
			return
		}
		_ = json.NewEncoder(w).Encode(map[string][]byte{"document": doc})
	case "/sign":
		var sig []byte
		switch body.Key {
		case enclave.KeyEVM:
			sig, err = crypto.Sign(body.Payload, k.evm)
		case enclave.KeySolana:
			sig = ed25519.Sign(k.solana, body.Payload)
		default:
			err = fmt.Errorf("unknown key %q", body.Key)
		}
		if err != nil {
			a.fail(w, http.StatusBadRequest, err.Error())
			return
		}
		_ = json.NewEncoder(w).Encode(map[string][]byte{"signature": sig})
	default:
		a.fail(w, http.StatusNotFound, "no such route")
	}
}
