package nitro

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/johannesboyne/gofakes3"

	"conduit/internal/attest"
	"conduit/internal/enclaves/provider"
	"conduit/internal/enclaves/provider/nitro/awsfake"
	"conduit/internal/enclaves/provider/nitro/eif"
)

const id = "enc_test1"

func (w *world) eifObject(t *testing.T, key string) *eif.File {
	t.Helper()
	obj, err := w.s3.GetObject(testBucket, key, nil)
	if err != nil {
		t.Fatalf("EIF %s: %v", key, err)
	}
	defer obj.Contents.Close()
	data, _ := io.ReadAll(obj.Contents)
	f, err := eif.Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (w *world) objects(t *testing.T, prefix string) []string {
	t.Helper()
	res, err := w.s3.ListBucket(testBucket, &gofakes3.Prefix{HasPrefix: true, Prefix: prefix}, gofakes3.ListBucketPage{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range res.Contents {
		keys = append(keys, c.Key)
	}
	return keys
}

// TestNitroLifecycle: prepare → deploy → running → logs → attest verifies (test root) → sign
// recovers → pause/resume → terminate, all through the real SDK clients against the fakes.
func TestNitroLifecycle(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t)
	ctx := context.Background()

	if st, err := p.Status(ctx, id); err != nil || st.Phase != provider.PhaseAbsent {
		t.Fatalf("status before: %+v %v", st, err)
	}
	img, err := p.Prepare(ctx, id, provider.Source{Ref: w.ref})
	if err != nil {
		t.Fatal(err)
	}
	if img.ManifestDigest == "" || len(img.LayerDigests) != 2 || strings.Join(img.Argv, " ") != "/app/server --port 8080" || img.WorkDir != "/" {
		t.Fatalf("image %+v", img)
	}
	// The EIF in S3: its PCRs recomputed from its sections are the image's.
	rec, err := p.readRecord(ctx, "test", id)
	if err != nil || rec == nil {
		t.Fatalf("record %v %v", rec, err)
	}
	f := w.eifObject(t, rec.EIFKey)
	pcrs, _ := f.PCRs(nil)
	for i := 0; i < 3; i++ {
		if !bytes.Equal(pcrs[i], img.PCRs[i]) {
			t.Errorf("PCR%d of the EIF %x, Prepare said %x", i, pcrs[i], img.PCRs[i])
		}
	}
	checkEIFContents(t, f)
	if st, _ := p.Status(ctx, id); st.Phase != provider.PhasePrepared {
		t.Errorf("status after prepare: %+v", st)
	}
	// Preparing again reuses the EIF.
	again, err := p.Prepare(ctx, id, provider.Source{Ref: w.ref})
	if err != nil || again.ManifestDigest != img.ManifestDigest || !bytes.Equal(again.PCRs[2], img.PCRs[2]) {
		t.Fatalf("second prepare: %+v %v", again, err)
	}

	inst, err := p.Deploy(ctx, id, img, provider.Config{CPUCount: 2, MemoryMiB: 512, Port: 8080})
	if err != nil {
		t.Fatal(err)
	}
	if inst.EVMAddress == "" || inst.SolanaPublicKey == "" || inst.Addr != "127.0.0.1:8080" || !inst.NetworkIsolated {
		t.Fatalf("instance %+v", inst)
	}
	launched := w.ec2.Instances()
	if len(launched) != 1 {
		t.Fatalf("%d instances", len(launched))
	}
	li := launched[0]
	if !li.Enclave || li.ImageID != testAMI || li.InstanceType != "m5.xlarge" || li.SubnetID != "subnet-0123" || li.Profile != "conduit-enclave-parent" ||
		li.HTTPTokens != "required" || li.Tags[TagEnclaveID] != id || li.Tags[TagImageDigest] != img.ManifestDigest || li.ClientToken != ClientToken(id, img.ManifestDigest) {
		t.Errorf("launched %+v", li)
	}
	vars, err := ParseUserData(li.UserData)
	if err != nil {
		t.Fatal(err)
	}
	if vars["CONDUIT_EIF_S3_KEY"] != rec.EIFKey || vars["CONDUIT_ENCLAVE_CPU_COUNT"] != "2" || vars["CONDUIT_ENCLAVE_MEMORY_MIB"] != "512" ||
		vars["CONDUIT_EIF_PCR0"] != hex.EncodeToString(img.PCRs[0]) || vars["CONDUIT_LOG_STREAM"] != id || vars["CONDUIT_AGENT_TOKEN"] != p.AgentToken(id) {
		t.Errorf("user data %v", vars)
	}
	if st, err := p.Status(ctx, id); err != nil || st.Phase != provider.PhaseRunning {
		t.Errorf("status deployed: %+v %v", st, err)
	}

	// Logs: what the parent ships to the enclave's stream.
	base := time.Now().Add(-time.Minute).UnixMilli()
	w.putLogs(t, id,
		cwtypes.InputLogEvent{Timestamp: aws.Int64(base), Message: aws.String("listening on :8080")},
		cwtypes.InputLogEvent{Timestamp: aws.Int64(base), Message: aws.String(`{"stream":"stderr","text":"a warning"}`)},
		cwtypes.InputLogEvent{Timestamp: aws.Int64(base + 5), Message: aws.String("served /")},
	)
	lines, err := p.Logs(ctx, id, 0, 0)
	if err != nil || len(lines) != 3 {
		t.Fatalf("logs %+v %v", lines, err)
	}
	if lines[0].Text != "listening on :8080" || lines[1].Stream != provider.Stderr || lines[1].Text != "a warning" || lines[2].Stream != provider.Stdout ||
		lines[0].Seq != base*1000 || lines[1].Seq != base*1000+1 || lines[2].Seq != (base+5)*1000 || !lines[2].Time.Equal(time.UnixMilli(base+5)) {
		t.Errorf("lines %+v", lines)
	}
	if after, err := p.Logs(ctx, id, lines[0].Seq, 1); err != nil || len(after) != 1 || after[0] != lines[1] {
		t.Errorf("after the first, one line: %+v %v", after, err)
	}
	if after, _ := p.Logs(ctx, id, lines[2].Seq, 0); len(after) != 0 {
		t.Errorf("after the last: %+v", after)
	}
	if none, err := p.Logs(ctx, "enc_nostream", 0, 0); err != nil || len(none) != 0 {
		t.Errorf("a stream that does not exist: %v %v", none, err)
	}

	// Attestation: verifies against the test root with the EIF's PCRs and the nonce; never
	// against the pinned AWS root.
	nonce := []byte("nonce-0123456789")
	doc, err := p.Attest(ctx, id, nonce)
	if err != nil {
		t.Fatal(err)
	}
	rep := attest.Verify(doc, attest.VerifyOptions{Root: w.opts.AttestationRoot, PCRs: img.PCRs, Nonce: nonce})
	if !rep.Verified() || rep.IntegrityScore != 100 {
		t.Fatalf("report %+v", rep)
	}
	addr, err := rep.EVMAddress()
	if err != nil || addr.Hex() != inst.EVMAddress {
		t.Errorf("attested address %s, instance %s (%v)", addr.Hex(), inst.EVMAddress, err)
	}
	if aws := attest.Verify(doc, attest.VerifyOptions{PCRs: img.PCRs, Nonce: nonce}); aws.Verified() {
		t.Error("a test-CA document verified against the pinned AWS root")
	} else if c, _ := aws.Check(attest.CheckChain); !c.Failed() {
		t.Errorf("chain check against the AWS root: %+v", c)
	}

	hash := sha256.Sum256([]byte("a transaction"))
	sig, err := p.Sign(ctx, id, provider.SignRequest{Key: provider.KeyEVM, Payload: hash[:]})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := crypto.SigToPub(hash[:], sig)
	if err != nil || crypto.PubkeyToAddress(*pub).Hex() != inst.EVMAddress {
		t.Errorf("EVM signature recovers to %v, want %s", err, inst.EVMAddress)
	}
	sol, err := rep.SolanaPublicKey()
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("a solana message")
	ssig, err := p.Sign(ctx, id, provider.SignRequest{Key: provider.KeySolana, Payload: msg})
	if err != nil || !ed25519.Verify(ed25519.PublicKey(sol[:]), msg, ssig) || sol.String() != inst.SolanaPublicKey {
		t.Errorf("solana signature does not verify under the attested key (%v)", err)
	}
	if _, err := p.Sign(ctx, id, provider.SignRequest{Key: provider.KeyEVM, Payload: []byte("short")}); !provider.IsPermanent(err) {
		t.Errorf("a short hash: %v", err)
	}

	// Pause stops the parent; nothing answers while it is stopped.
	if err := p.Pause(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := p.Pause(ctx, id); err != nil {
		t.Fatalf("pausing a paused enclave: %v", err)
	}
	if st, _ := p.Status(ctx, id); st.Phase != provider.PhasePaused {
		t.Errorf("status paused: %+v", st)
	}
	if _, err := p.Sign(ctx, id, provider.SignRequest{Key: provider.KeyEVM, Payload: hash[:]}); !provider.IsPermanent(err) || !errors.Is(err, provider.ErrNotRunning) {
		t.Errorf("sign while paused: %v", err)
	}
	if in, _ := w.ec2.Instance(li.ID); in.State != "stopped" && in.State != "stopping" {
		t.Errorf("instance %s", in.State)
	}
	if err := p.Resume(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := p.Resume(ctx, id); err != nil {
		t.Fatalf("resuming a running enclave: %v", err)
	}
	if st, _ := p.Status(ctx, id); st.Phase != provider.PhaseRunning {
		t.Errorf("status resumed: %+v", st)
	}
	if _, err := p.Attest(ctx, id, nonce); err != nil {
		t.Errorf("attest after resume: %v", err)
	}
	if w.ec2.Calls("StartInstances") != 1 || w.ec2.Calls("StopInstances") != 1 {
		t.Errorf("stop %d start %d", w.ec2.Calls("StopInstances"), w.ec2.Calls("StartInstances"))
	}

	if err := p.Terminate(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := p.Terminate(ctx, id); err != nil {
		t.Fatalf("terminating again: %v", err)
	}
	if st, err := p.Status(ctx, id); err != nil || st.Phase != provider.PhaseAbsent {
		t.Errorf("status after terminate: %+v %v", st, err)
	}
	if in, _ := w.ec2.Instance(li.ID); in.State != "terminated" {
		t.Errorf("instance %s after terminate", in.State)
	}
	if keys := w.objects(t, w.opts.KeyPrefix+id+"/"); len(keys) != 0 {
		t.Errorf("objects left: %v", keys)
	}
	if _, err := p.Attest(ctx, id, nonce); !errors.Is(err, provider.ErrNotRunning) {
		t.Errorf("attest after terminate: %v", err)
	}
}

// checkEIFContents: the bootstrap ramdisk is nitro-cli's (dev, init, nsm.ko); the application
// ramdisk holds the image under rootfs/ with links, parent directories and whiteouts handled,
// and the cmd and env files.
func checkEIFContents(t *testing.T, f *eif.File) {
	t.Helper()
	var ramdisks [][]eif.CPIOEntry
	for _, s := range f.Sections {
		if s.Type != eif.SectionRamdisk {
			continue
		}
		b, _ := f.Bytes(s)
		entries, err := eif.ReadCPIO(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		ramdisks = append(ramdisks, entries)
	}
	if len(ramdisks) != 2 {
		t.Fatalf("%d ramdisks", len(ramdisks))
	}
	names := func(es []eif.CPIOEntry) map[string]eif.CPIOEntry {
		m := map[string]eif.CPIOEntry{}
		for _, e := range es {
			m[e.Name] = e
		}
		return m
	}
	boot := names(ramdisks[0])
	if string(boot["init"].Data) != "stand-in init" || string(boot["nsm.ko"].Data) != "stand-in nsm driver" || boot["dev"].Mode != eif.ModeDir|0o755 || len(boot) != 3 {
		t.Errorf("bootstrap ramdisk %v", boot)
	}
	app := names(ramdisks[1])
	want := map[string]struct {
		mode uint32
		data string
	}{
		"rootfs/app/server":        {eif.ModeRegular | 0o755, "#!/bin/sh\necho serving v1\n"},
		"rootfs/app/hard":          {eif.ModeSymlink | 0o777, "/app/server"},
		"rootfs/bin/run":           {eif.ModeSymlink | 0o777, "/app/server"},
		"rootfs/etc/conf/greeting": {eif.ModeRegular | 0o644, "hello"},
		"rootfs/etc":               {eif.ModeDir | 0o755, ""},
		"rootfs/etc/conf":          {eif.ModeDir | 0o755, ""},
		"rootfs/proc":              {eif.ModeDir | 0o755, ""},
		"cmd":                      {eif.ModeRegular | 0o644, "/app/server\n--port\n8080\n"},
		"env":                      {eif.ModeRegular | 0o644, "PATH=/app:/bin\nGREETING=hi\n"},
	}
	for n, wnt := range want {
		e, ok := app[n]
		if !ok || e.Mode != wnt.mode || string(e.Data) != wnt.data {
			t.Errorf("%s: %+v (present %v), want mode %o data %q", n, e, ok, wnt.mode, wnt.data)
		}
	}
	if _, ok := app["rootfs/app/junk"]; ok {
		t.Error("the whiteout was not applied")
	}
	// Parents come before children.
	seen := map[string]bool{}
	for _, e := range ramdisks[1] {
		if i := strings.LastIndex(e.Name, "/"); i > 0 && !seen[e.Name[:i]] {
			t.Errorf("%s comes before its directory", e.Name)
		}
		seen[e.Name] = true
	}
	meta, err := f.Metadata()
	if err != nil || meta.BuildMetadata.BuildTime != "2026-01-02T03:04:05Z" || meta.BuildMetadata.KernelVersion != "4.14" || !strings.HasSuffix(meta.ImageName, "apps/hello:1") {
		t.Errorf("metadata %+v %v", meta, err)
	}
}

// TestNitroDeployIdempotent: deploying twice, from two providers (two workers), and with the
// answer to RunInstances lost on the way (the SDK retries with the same client token) makes one
// instance.
func TestNitroDeployIdempotent(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	p := w.provider(t)
	img, err := p.Prepare(ctx, id, provider.Source{Ref: w.ref})
	if err != nil {
		t.Fatal(err)
	}
	// The first answer is lost after EC2 launched: the SDK's retry carries the same token.
	w.ec2.LoseResponse("RunInstances", 1, awsfake.Fault{Code: "InternalError", Message: "We encountered an internal error. Please try again.", Status: 500})
	first, err := p.Deploy(ctx, id, img, provider.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if n := w.ec2.Calls("RunInstances"); n != 2 {
		t.Errorf("RunInstances called %d times, want 2 (one lost answer, one retry)", n)
	}
	second, err := w.provider(t).Deploy(ctx, id, img, provider.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(w.ec2.Instances()); n != 1 {
		t.Fatalf("%d instances, want 1", n)
	}
	if w.ec2.Calls("RunInstances") != 2 || first.EVMAddress != second.EVMAddress || first.Addr != second.Addr {
		t.Errorf("second deploy: RunInstances %d, %+v vs %+v", w.ec2.Calls("RunInstances"), first, second)
	}

	// The client token at the API: the same token and parameters → the same instance; the same
	// token with other parameters → IdempotentParameterMismatch, permanent.
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion("us-east-1"),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")))
	if err != nil {
		t.Fatal(err)
	}
	c := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(w.ec2URL) })
	in := &ec2.RunInstancesInput{ImageId: aws.String(testAMI), InstanceType: ec2types.InstanceTypeM5Xlarge, MinCount: aws.Int32(1), MaxCount: aws.Int32(1), ClientToken: aws.String("token-1")}
	a, err := c.RunInstances(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.RunInstances(ctx, in)
	if err != nil || aws.ToString(a.Instances[0].InstanceId) != aws.ToString(b.Instances[0].InstanceId) {
		t.Fatalf("same token: %v %v", b, err)
	}
	in.InstanceType = ec2types.InstanceTypeM52xlarge
	_, err = c.RunInstances(ctx, in)
	if apiCode(err) != "IdempotentParameterMismatch" || !provider.IsPermanent(classify("deploy", id, err)) {
		t.Errorf("same token, other parameters: %v", err)
	}
}

// TestNitroErrors: throttling is retried by the SDK and, when it persists, transient; a bad AMI,
// missing permissions and a quota are permanent; a capacity shortage and an agent that does not
// answer are transient; a document whose PCRs are not the EIF's fails the deploy permanently.
func TestNitroErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("throttling retried", func(t *testing.T) {
		w := newWorld(t)
		p := w.provider(t)
		img, err := p.Prepare(ctx, id, provider.Source{Ref: w.ref})
		if err != nil {
			t.Fatal(err)
		}
		w.ec2.Fail("RunInstances", 2, awsfake.Fault{Code: "RequestLimitExceeded", Message: "Request limit exceeded.", Status: 503})
		if _, err := p.Deploy(ctx, id, img, provider.Config{}); err != nil {
			t.Fatalf("deploy after two throttled calls: %v", err)
		}
		if w.ec2.Calls("RunInstances") != 3 || len(w.ec2.Instances()) != 1 {
			t.Errorf("RunInstances %d, instances %d", w.ec2.Calls("RunInstances"), len(w.ec2.Instances()))
		}
		w.logs.Fail("GetLogEvents", 10, awsfake.Fault{Code: "ThrottlingException", Message: "Rate exceeded"})
		if _, err := p.Logs(ctx, id, 0, 0); err == nil || provider.IsPermanent(err) {
			t.Errorf("persistent logs throttling: %v", err)
		}
	})
	cases := []struct {
		name      string
		fault     awsfake.Fault
		permanent bool
	}{
		{"persistent throttling", awsfake.Fault{Code: "RequestLimitExceeded", Message: "Request limit exceeded.", Status: 503}, false},
		{"capacity", awsfake.Fault{Code: "InsufficientInstanceCapacity", Message: "We currently do not have sufficient m5.xlarge capacity.", Status: 500}, false},
		{"unauthorized", awsfake.Fault{Code: "UnauthorizedOperation", Message: "You are not authorized to perform this operation."}, true},
		{"quota", awsfake.Fault{Code: "VcpuLimitExceeded", Message: "You have requested more vCPU capacity than your current vCPU limit."}, true},
		{"unknown 4xx", awsfake.Fault{Code: "SomethingNew", Message: "?"}, true},
		{"unknown 5xx", awsfake.Fault{Code: "SomethingNew", Message: "?", Status: 502}, false},
	}
	w := newWorld(t)
	p := w.provider(t)
	img, err := p.Prepare(ctx, id, provider.Source{Ref: w.ref})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w.ec2.Fail("RunInstances", 10, c.fault)
			_, err := p.Deploy(ctx, id, img, provider.Config{})
			if err == nil || provider.IsPermanent(err) != c.permanent || !strings.Contains(err.Error(), c.fault.Code) {
				t.Errorf("%v (permanent %v, want %v)", err, provider.IsPermanent(err), c.permanent)
			}
			w.ec2.Reset("RunInstances")
		})
	}
	t.Run("bad AMI", func(t *testing.T) {
		opts := w.opts
		opts.AMI = "ami-0000000000000dead"
		bad, err := New(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = bad.Deploy(ctx, id, img, provider.Config{})
		if !provider.IsPermanent(err) || apiCode(err) != "InvalidAMIID.NotFound" {
			t.Errorf("bad AMI: %v", err)
		}
		if len(w.ec2.Instances()) != 0 {
			t.Error("an instance was launched")
		}
	})
	t.Run("PCR mismatch", func(t *testing.T) {
		w.agent.Tamper(true)
		_, err := p.Deploy(ctx, id, img, provider.Config{})
		if !provider.IsPermanent(err) || !strings.Contains(err.Error(), "pcrs") {
			t.Errorf("tampered PCRs: %v", err)
		}
		w.agent.Tamper(false)
	})
	t.Run("agent down", func(t *testing.T) {
		opts := w.opts
		opts.AgentPort = 1 // nothing listens there
		opts.BootTimeout = 50 * time.Millisecond
		down, err := New(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = down.Deploy(ctx, id, img, provider.Config{})
		if err == nil || provider.IsPermanent(err) {
			t.Errorf("agent down: %v", err)
		}
		if _, err := down.Attest(ctx, id, []byte("n")); err == nil || provider.IsPermanent(err) {
			t.Errorf("attest, agent down: %v", err)
		}
	})
	t.Run("deploy refuses extra environment and another image", func(t *testing.T) {
		if _, err := p.Deploy(ctx, id, img, provider.Config{Env: []string{"A=1"}}); !provider.IsPermanent(err) {
			t.Errorf("env: %v", err)
		}
		other := img
		other.ManifestDigest = "sha256:" + strings.Repeat("0", 64)
		if _, err := p.Deploy(ctx, id, other, provider.Config{}); !provider.IsPermanent(err) {
			t.Errorf("another image: %v", err)
		}
	})
	t.Run("missing image", func(t *testing.T) {
		_, err := p.Prepare(ctx, "enc_missing", provider.Source{Ref: strings.Replace(w.ref, "hello:1", "nothing:1", 1)})
		if !provider.IsPermanent(err) {
			t.Errorf("missing image: %v", err)
		}
	})
}

// TestNitroStatusOfAnEndedInstance: an instance terminated behind the provider's back shows as
// exited, with EC2's reason.
func TestNitroStatusOfAnEndedInstance(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t)
	ctx := context.Background()
	img, err := p.Prepare(ctx, id, provider.Source{Ref: w.ref})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Deploy(ctx, id, img, provider.Config{}); err != nil {
		t.Fatal(err)
	}
	w.ec2.SetState(w.ec2.Instances()[0].ID, "terminated", "User initiated shutdown")
	st, err := p.Status(ctx, id)
	if err != nil || st.Phase != provider.PhaseExited || !strings.Contains(st.Detail, "User initiated shutdown") {
		t.Errorf("status %+v %v", st, err)
	}
	// A destroyed enclave's client token is spent: deploying it again is refused, not relaunched.
	if _, err := p.Deploy(ctx, id, img, provider.Config{}); !provider.IsPermanent(err) || len(w.ec2.Instances()) != 1 {
		t.Errorf("redeploy after the instance ended: %v, %d instances", err, len(w.ec2.Instances()))
	}
}

func TestNitroNewValidates(t *testing.T) {
	_, err := New(context.Background(), Options{Region: "us-east-1"})
	if err == nil || !strings.Contains(err.Error(), "ami, eif_bucket, init_path, instance_type, kernel_path, log_group must be set") {
		t.Errorf("missing options: %v", err)
	}
	w := newWorld(t)
	opts := w.opts
	opts.KernelPath = "/nonexistent/bzImage"
	if _, err := New(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "kernel_path") {
		t.Errorf("missing kernel: %v", err)
	}
}

func TestUserDataRoundTrip(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t)
	rec := &record{Image: provider.Image{PCRs: map[int][]byte{0: {1}, 1: {2}, 2: {3}}}, EIFKey: "k/it's.eif", EIFSHA384: "ab"}
	ud, err := p.userData(id, rec, provider.Config{CPUCount: 4, MemoryMiB: 2048}, 9000)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(ud), UserDataHeader+"\n") || len(base64.StdEncoding.EncodeToString(ud)) > 16384 {
		t.Fatalf("user data %q", ud)
	}
	vars, err := ParseUserData(ud)
	if err != nil || vars["CONDUIT_EIF_S3_KEY"] != "k/it's.eif" || vars["CONDUIT_APP_PORT"] != "9000" || vars["CONDUIT_ENCLAVE_CPU_COUNT"] != "4" {
		t.Errorf("%v %v", vars, err)
	}
}
