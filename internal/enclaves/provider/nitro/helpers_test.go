package nitro

import (
	"archive/tar"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"conduit/internal/attest"
	"conduit/internal/enclaves/provider/local"
	"conduit/internal/enclaves/provider/nitro/awsfake"
	"conduit/internal/enclaves/provider/providertest"
)

const (
	testAMI      = "ami-0abcdef1234567890"
	testBucket   = "enclave-images"
	testLogGroup = "/conduit/enclaves"
)

// world is a test's AWS (awsfake.World: fake EC2 and CloudWatch Logs, an S3 server, one parent
// agent answering for every instance the fake EC2 runs) and a registry with the test image.
type world struct {
	ec2    *awsfake.EC2
	logs   *awsfake.Logs
	s3     *s3mem.Backend
	agent  *awsfake.Agent
	ref    string
	opts   Options
	ec2URL string
}

// testImage: a program, a symbolic and a hard link to it, a file whose directory has no entry of
// its own, and a file the second layer deletes.
func testImage(t *testing.T, version string) v1.Image {
	t.Helper()
	l1 := providertest.Layer(t,
		providertest.Entry{Name: "app/", Type: tar.TypeDir, Mode: 0o755},
		providertest.Entry{Name: "app/server", Type: tar.TypeReg, Mode: 0o755, Body: []byte("#!/bin/sh\necho serving " + version + "\n")},
		providertest.Entry{Name: "app/hard", Type: tar.TypeLink, Link: "app/server"},
		providertest.Entry{Name: "bin/run", Type: tar.TypeSymlink, Link: "/app/server"},
		providertest.Entry{Name: "etc/conf/greeting", Type: tar.TypeReg, Mode: 0o644, Body: []byte("hello")},
		providertest.Entry{Name: "app/junk", Type: tar.TypeReg, Mode: 0o644, Body: []byte("deleted")},
	)
	l2 := providertest.Layer(t, providertest.Entry{Name: "app/.wh.junk", Type: tar.TypeReg, Mode: 0o644})
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
	auth, err := attest.NewAuthority(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	aw, err := awsfake.Start(testAMI, testBucket, testLogGroup, auth)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(aw.Close)
	w := &world{ec2: aw.EC2, logs: aw.Logs, s3: aw.S3, agent: aw.Agent, ec2URL: aw.EC2URL}
	reg, err := local.StartRegistry(local.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	w.ref = pushImage(t, reg, "apps/hello:1", testImage(t, "v1"))
	blobs := t.TempDir()
	w.opts = Options{
		Region: "us-east-1", AMI: testAMI, InstanceType: "m5.xlarge", SubnetID: "subnet-0123", SecurityGroupIDs: []string{"sg-0123"},
		InstanceProfile: "conduit-enclave-parent", Bucket: testBucket, LogGroup: testLogGroup, AgentPort: aw.AgentPort,
		AgentSecret: []byte("agent secret for tests"),
		KernelPath:  writeFile(t, blobs, "bzImage", "stand-in kernel"), InitPath: writeFile(t, blobs, "init", "stand-in init"),
		NSMPath: writeFile(t, blobs, "nsm.ko", "stand-in nsm driver"), KernelVersion: "4.14",
		WorkDir:     t.TempDir(),
		EC2Endpoint: aw.EC2URL, S3Endpoint: aw.S3URL, LogsEndpoint: aw.LogsURL, S3PathStyle: true,
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
