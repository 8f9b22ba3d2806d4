package frontend_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"

	"conduit/app/apptest"
	"conduit/internal/attest"
	"conduit/internal/enclaves/provider/nitro"
	"conduit/internal/enclaves/provider/nitro/awsfake"
)

// TestEnclaveProviderNotConfigured: the harness runs the local provider only, so providerId
// "aws-nitro" (and a region the local provider does not serve) is a 400 naming the field, and
// nothing is written.
func TestEnclaveProviderNotConfigured(t *testing.T) {
	env.RequireEnclaves(t)
	_, key := env.NewAccount(t)
	for field, extra := range map[string]map[string]any{
		"providerId": {"providerId": "aws-nitro"},
		"region":     {"region": "us-east-1"},
	} {
		body := enclaveBody(env.Registry + "/a:1")
		for k, v := range extra {
			body[k] = v
		}
		b := wantStatus(t, do(t, "POST", "/api/enclaves", key, body), http.StatusBadRequest)
		if !strings.Contains(fmt.Sprint(b["problems"]), "field:"+field) {
			t.Errorf("%s: %v", field, b)
		}
	}
	if b := wantStatus(t, do(t, "POST", "/api/enclaves", key, map[string]any{"name": "x", "providerId": "aws-nitro",
		"providerConfig": map[string]any{"dockerImage": env.Registry + "/a:1"}}), http.StatusBadRequest); !strings.Contains(fmt.Sprint(b["error"]), `"aws-nitro" is not configured here`) {
		t.Errorf("message: %v", b)
	}
	if l := wantStatus(t, do(t, "GET", "/api/enclaves", key, nil), http.StatusOK); len(l["enclaves"].([]any)) != 0 {
		t.Fatalf("bad input wrote %v", l)
	}
}

// TestEnclaveOnAWSNitro runs an enclave's whole lifecycle through the API, the Enclave workflow
// and its activities on the AWS Nitro provider, against fake EC2, CloudWatch Logs and S3 servers
// and a fake parent agent (awsfake; the harness's own configuration has no AWS). The provider is
// registered the way app wiring registers it: in the platform's Providers (the worker's
// activities) and Offered (the API).
func TestEnclaveOnAWSNitro(t *testing.T) {
	env.RequireEnclaves(t)
	ctx := context.Background()
	auth, err := attest.NewAuthority(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const ami, bucket, group = "ami-0123456789abcdef0", "eifs", "/conduit/enclaves"
	aw, err := awsfake.Start(ami, bucket, group, auth)
	if err != nil {
		t.Fatal(err)
	}
	defer aw.Close()
	blobs := t.TempDir()
	for _, f := range []string{"bzImage", "init"} {
		if err := os.WriteFile(filepath.Join(blobs, f), []byte("stand-in "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	creds := credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")
	np, err := nitro.New(ctx, nitro.Options{
		Region: "us-east-1", AMI: ami, InstanceType: "m5.xlarge", Bucket: bucket, LogGroup: group, AgentPort: aw.AgentPort,
		KernelPath: filepath.Join(blobs, "bzImage"), InitPath: filepath.Join(blobs, "init"), WorkDir: t.TempDir(),
		EC2Endpoint: aw.EC2URL, S3Endpoint: aw.S3URL, LogsEndpoint: aw.LogsURL, S3PathStyle: true, Credentials: creds,
		RetryMaxBackoff: 10 * time.Millisecond, PollEvery: 20 * time.Millisecond, BootTimeout: 30 * time.Second,
		AttestationRoot: auth.Root(),
	})
	if err != nil {
		t.Fatal(err)
	}
	encl := env.Platform.Enclaves
	encl.Providers[nitro.ProviderID] = np
	encl.Offered[nitro.ProviderID] = []string{"us-east-1"}
	defer func() {
		delete(encl.Providers, nitro.ProviderID)
		delete(encl.Offered, nitro.ProviderID)
	}()

	ref := env.PushEnclaveApp(t, "nitro/echo", "v1")
	_, key := env.NewAccount(t)
	body := enclaveBody(ref)
	body["providerId"] = "aws-nitro"
	body["providerConfig"] = map[string]any{"dockerImage": ref, "cpuCount": 2, "memoryMiB": 512}
	created := wantStatus(t, do(t, "POST", "/api/enclaves", key, body), http.StatusAccepted)
	id := created["id"].(string)
	if created["providerId"] != "aws-nitro" || created["region"] != "us-east-1" {
		t.Fatalf("created: %v", created)
	}
	e := waitEnclave(t, key, id, "DEPLOYED", 2*time.Minute)
	insts := aw.EC2.Instances()
	if len(insts) != 1 || insts[0].Tags["conduit:enclave-id"] != id || insts[0].State != "running" || !insts[0].Enclave {
		t.Fatalf("instances: %+v", insts)
	}
	ud, err := nitro.ParseUserData(insts[0].UserData)
	if err != nil {
		t.Fatal(err)
	}
	pcrs := e["pcrs"].(map[string]any)
	if e["walletAddress"] != aw.Agent.EVMAddress(id) || e["endpoint"] != "127.0.0.1:8080" || pcrs["0"] != ud["CONDUIT_EIF_PCR0"] ||
		ud["CONDUIT_ENCLAVE_CPU_COUNT"] != "2" || ud["CONDUIT_ENCLAVE_MEMORY_MIB"] != "512" {
		t.Fatalf("deployed: %v; user data %v", e, ud)
	}

	// What the parent ships to CloudWatch Logs reaches the enclave's log.
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion("us-east-1"), awsconfig.WithCredentialsProvider(creds))
	if err != nil {
		t.Fatal(err)
	}
	cw := cloudwatchlogs.NewFromConfig(cfg, func(o *cloudwatchlogs.Options) { o.BaseEndpoint = aws.String(aw.LogsURL) })
	if _, err := cw.CreateLogStream(ctx, &cloudwatchlogs.CreateLogStreamInput{LogGroupName: aws.String(group), LogStreamName: aws.String(id)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cw.PutLogEvents(ctx, &cloudwatchlogs.PutLogEventsInput{LogGroupName: aws.String(group), LogStreamName: aws.String(id),
		LogEvents: []cwtypes.InputLogEvent{{Timestamp: aws.Int64(time.Now().UnixMilli()), Message: aws.String("hello from the nitro enclave")}}}); err != nil {
		t.Fatal(err)
	}
	apptest.Eventually(t, 30*time.Second, "the enclave's application log", func() error {
		logs := wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/logs?logType=application", key, nil), http.StatusOK)
		if !strings.Contains(fmt.Sprint(logs["logs"]), "hello from the nitro enclave") {
			return fmt.Errorf("application logs: %v", logs["logs"])
		}
		return nil
	})

	if r := wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/pause", key, nil), http.StatusOK); r["status"] != "PAUSED" {
		t.Fatalf("pause: %v", r)
	}
	if in, _ := aw.EC2.Instance(insts[0].ID); in.State != "stopping" && in.State != "stopped" {
		t.Fatalf("paused instance is %s", in.State)
	}
	if r := wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/resume", key, nil), http.StatusOK); r["status"] != "DEPLOYED" {
		t.Fatalf("resume: %v", r)
	}
	if r := wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil), http.StatusOK); r["status"] != "DESTROYED" {
		t.Fatalf("terminate: %v", r)
	}
	if in, _ := aw.EC2.Instance(insts[0].ID); in.State != "shutting-down" && in.State != "terminated" {
		t.Fatalf("terminated instance is %s", in.State)
	}
	if n := len(aw.EC2.Instances()); n != 1 || aw.EC2.Calls("RunInstances") != 1 {
		t.Fatalf("%d instances, %d launches", n, aw.EC2.Calls("RunInstances"))
	}
	wantStatus(t, do(t, "DELETE", "/api/enclaves/"+id, key, nil), http.StatusNoContent)
}
