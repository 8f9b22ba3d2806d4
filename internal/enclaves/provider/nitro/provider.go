package nitro

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"conduit/internal/attest"
	"conduit/internal/enclaves/provider"
	"conduit/internal/enclaves/provider/oci"
)

// Tags every instance carries.
const (
	TagEnclaveID   = "conduit:enclave-id"
	TagImageDigest = "conduit:image-digest"
)

// record is what Prepare keeps in S3 beside the EIF (KeyPrefix/<id>/image.json).
type record struct {
	Image provider.Image `json:"image"`
	// Boot is the digest of the kernel, init, NSM driver and cmdline the EIF was built with.
	Boot      string `json:"boot"`
	EIFKey    string `json:"eifKey"`
	EIFSize   int64  `json:"eifSize"`
	EIFSHA384 string `json:"eifSha384"`
}

func (p *Provider) recordKey(id string) string { return p.opts.KeyPrefix + id + "/image.json" }

func (p *Provider) eifKey(id, manifestDigest string) string {
	return p.opts.KeyPrefix + id + "/" + strings.ReplaceAll(manifestDigest, ":", "-") + ".eif"
}

func (p *Provider) readRecord(ctx context.Context, op, id string) (*record, error) {
	out, err := p.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(p.opts.Bucket), Key: aws.String(p.recordKey(id))})
	if err != nil {
		var nsk *s3types.NoSuchKey
		if errors.As(err, &nsk) || apiCode(err) == "NotFound" {
			return nil, nil
		}
		return nil, classify(op, id, err)
	}
	defer out.Body.Close()
	var r record
	if err := json.NewDecoder(out.Body).Decode(&r); err != nil {
		return nil, provider.Wrap(provider.Transient, op, id, fmt.Errorf("reading %s: %w", p.recordKey(id), err))
	}
	return &r, nil
}

// Prepare pulls the image, builds its EIF and stores both in S3. When the id already has an EIF
// of the same image built with the same boot blobs, it is returned without rebuilding.
func (p *Provider) Prepare(ctx context.Context, id string, src provider.Source) (provider.Image, error) {
	unlock, err := p.lock("prepare", id)
	if err != nil {
		return provider.Image{}, err
	}
	defer unlock()
	img, err := oci.Pull(ctx, id, src)
	if err != nil {
		return provider.Image{}, err
	}
	desc, cf, err := describe(img, src.Ref)
	if err != nil {
		return provider.Image{}, classifyRegistry(id, src.Ref, err)
	}
	prev, err := p.readRecord(ctx, "prepare", id)
	if err != nil {
		return provider.Image{}, err
	}
	if prev != nil && prev.Image.ManifestDigest == desc.ManifestDigest && prev.Boot == p.boot.digest {
		if _, err := p.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(p.opts.Bucket), Key: aws.String(prev.EIFKey)}); err == nil {
			return prev.Image, nil
		}
	}
	if inst, err := p.find(ctx, "prepare", id); err != nil {
		return provider.Image{}, err
	} else if inst != nil && tag(inst, TagImageDigest) != desc.ManifestDigest {
		return provider.Image{}, provider.Errorf(provider.Permanent, "prepare", id, "instance %s runs another image; terminate it first", aws.ToString(inst.InstanceId))
	}
	built, err := p.buildEIF(img, desc, cf)
	if err != nil {
		return provider.Image{}, classifyRegistry(id, src.Ref, err)
	}
	defer os.Remove(built.path)
	desc.PCRs = map[int][]byte{attest.PCRImage: built.pcrs[0], attest.PCRRuntime: built.pcrs[1], attest.PCRApplication: built.pcrs[2]}
	f, err := os.Open(built.path)
	if err != nil {
		return provider.Image{}, provider.Wrap(provider.Transient, "prepare", id, err)
	}
	defer f.Close()
	key := p.eifKey(id, desc.ManifestDigest)
	if _, err := p.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(p.opts.Bucket), Key: aws.String(key), Body: f,
		ContentLength: aws.Int64(built.size), ContentType: aws.String("application/octet-stream"),
		Metadata: map[string]string{"sha384": built.sha384, "pcr0": hex.EncodeToString(built.pcrs[0])}}); err != nil {
		return provider.Image{}, classify("prepare", id, err)
	}
	rec, err := json.Marshal(record{Image: desc, Boot: p.boot.digest, EIFKey: key, EIFSize: built.size, EIFSHA384: built.sha384})
	if err != nil {
		return provider.Image{}, provider.Wrap(provider.Permanent, "prepare", id, err)
	}
	if _, err := p.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(p.opts.Bucket), Key: aws.String(p.recordKey(id)),
		Body: bytes.NewReader(rec), ContentType: aws.String("application/json")}); err != nil {
		return provider.Image{}, classify("prepare", id, err)
	}
	return desc, nil
}

func tag(inst *ec2types.Instance, key string) string {
	for _, t := range inst.Tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// liveStates are the states of an instance that is, or may again be, the enclave's.
var liveStates = []string{"pending", "running", "stopping", "stopped"}

// find returns the enclave's live instance (nil when there is none). More than one would be a
// bug somewhere else; the oldest is the enclave's and is reported.
func (p *Provider) find(ctx context.Context, op, id string) (*ec2types.Instance, error) {
	all, err := p.instances(ctx, op, id, liveStates)
	if err != nil || len(all) == 0 {
		return nil, err
	}
	oldest := all[0]
	for _, in := range all[1:] {
		if aws.ToTime(in.LaunchTime).Before(aws.ToTime(oldest.LaunchTime)) {
			oldest = in
		}
	}
	return oldest, nil
}

// instances lists the enclave's instances in the given states (nil: any state).
func (p *Provider) instances(ctx context.Context, op, id string, states []string) ([]*ec2types.Instance, error) {
	filters := []ec2types.Filter{{Name: aws.String("tag:" + TagEnclaveID), Values: []string{id}}}
	if states != nil {
		filters = append(filters, ec2types.Filter{Name: aws.String("instance-state-name"), Values: states})
	}
	var out []*ec2types.Instance
	pages := ec2.NewDescribeInstancesPaginator(p.ec2, &ec2.DescribeInstancesInput{Filters: filters})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, classify(op, id, err)
		}
		for _, r := range page.Reservations {
			for i := range r.Instances {
				out = append(out, &r.Instances[i])
			}
		}
	}
	return out, nil
}

// ClientToken is the RunInstances idempotency token of an enclave's image: a retried launch with
// the same token returns the instance the first one made, never a second.
func ClientToken(id, manifestDigest string) string {
	sum := sha256.Sum256([]byte("conduit enclave\x00" + id + "\x00" + manifestDigest))
	return hex.EncodeToString(sum[:]) // 64 characters, EC2's maximum
}

// Deploy launches the instance (or finds the one already launched for id), waits until it runs
// and its agent answers, and checks the agent's attestation against the pinned root and the
// EIF's PCRs before returning the instance with its attested keys.
func (p *Provider) Deploy(ctx context.Context, id string, img provider.Image, cfg provider.Config) (provider.Instance, error) {
	unlock, err := p.lock("deploy", id)
	if err != nil {
		return provider.Instance{}, err
	}
	defer unlock()
	if len(cfg.Env) > 0 {
		return provider.Instance{}, provider.Errorf(provider.Permanent, "deploy", id, "the environment is measured into the EIF when it is built; extra environment at deploy is not supported by the aws-nitro provider")
	}
	rec, err := p.readRecord(ctx, "deploy", id)
	if err != nil {
		return provider.Instance{}, err
	}
	if rec == nil {
		return provider.Instance{}, provider.Errorf(provider.Permanent, "deploy", id, "the image was not prepared")
	}
	if rec.Image.ManifestDigest != img.ManifestDigest || rec.Image.ConfigDigest != img.ConfigDigest {
		return provider.Instance{}, provider.Errorf(provider.Permanent, "deploy", id, "the image to deploy (%s) is not the one prepared (%s); prepare it again", img.ManifestDigest, rec.Image.ManifestDigest)
	}
	port := cfg.Port
	if port == 0 {
		port = 8080
	}
	if port < 1 || port > 65535 || port == p.opts.AgentPort {
		return provider.Instance{}, provider.Errorf(provider.Permanent, "deploy", id, "port %d is not a TCP port the application can have (the agent has %d)", port, p.opts.AgentPort)
	}
	inst, err := p.find(ctx, "deploy", id)
	if err != nil {
		return provider.Instance{}, err
	}
	if inst != nil && tag(inst, TagImageDigest) != rec.Image.ManifestDigest {
		return provider.Instance{}, provider.Errorf(provider.Permanent, "deploy", id, "instance %s runs image %s, not %s; terminate it first", aws.ToString(inst.InstanceId), tag(inst, TagImageDigest), rec.Image.ManifestDigest)
	}
	if inst == nil {
		if inst, err = p.launch(ctx, id, rec, cfg, port); err != nil {
			return provider.Instance{}, err
		}
	}
	instanceID := aws.ToString(inst.InstanceId)
	// A paused (stopped) enclave is returned as it is; its agent answers once resumed.
	if s := inst.State.Name; s == ec2types.InstanceStateNameStopped || s == ec2types.InstanceStateNameStopping {
		return p.instanceInfo(id, inst, rec, port, nil), nil
	}
	if err := p.wait(ctx, "deploy", id, "instance "+instanceID+" running", func() (bool, error) {
		cur, err := p.find(ctx, "deploy", id)
		if err != nil {
			return false, err
		}
		if cur == nil {
			return false, provider.Errorf(provider.Permanent, "deploy", id, "instance %s ended while starting", instanceID)
		}
		inst = cur
		return cur.State.Name == ec2types.InstanceStateNameRunning && aws.ToString(cur.PrivateIpAddress) != "", nil
	}); err != nil {
		return provider.Instance{}, err
	}
	var keys attest.SigningKeys
	if err := p.wait(ctx, "deploy", id, "the enclave's agent on "+instanceID, func() (bool, error) {
		k, err := p.attestedKeys(ctx, id, inst, rec)
		if err != nil {
			return false, err
		}
		keys = k
		return true, nil
	}); err != nil {
		return provider.Instance{}, err
	}
	return p.instanceInfo(id, inst, rec, port, &keys), nil
}

// launch runs the instance. The client token makes a retried call (after a timeout, a crashed
// worker) return the instance the first call made.
func (p *Provider) launch(ctx context.Context, id string, rec *record, cfg provider.Config, port int) (*ec2types.Instance, error) {
	ud, err := p.userData(id, rec, cfg, port)
	if err != nil {
		return nil, err
	}
	tags := []ec2types.Tag{
		{Key: aws.String(TagEnclaveID), Value: aws.String(id)},
		{Key: aws.String(TagImageDigest), Value: aws.String(rec.Image.ManifestDigest)},
		{Key: aws.String("Name"), Value: aws.String("conduit-enclave-" + id)},
	}
	in := &ec2.RunInstancesInput{
		ImageId:           aws.String(p.opts.AMI),
		InstanceType:      ec2types.InstanceType(p.opts.InstanceType),
		MinCount:          aws.Int32(1),
		MaxCount:          aws.Int32(1),
		ClientToken:       aws.String(ClientToken(id, rec.Image.ManifestDigest)),
		EnclaveOptions:    &ec2types.EnclaveOptionsRequest{Enabled: aws.Bool(true)},
		UserData:          aws.String(base64.StdEncoding.EncodeToString(ud)),
		MetadataOptions:   &ec2types.InstanceMetadataOptionsRequest{HttpTokens: ec2types.HttpTokensStateRequired},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: tags}, {ResourceType: ec2types.ResourceTypeVolume, Tags: tags}},
	}
	if p.opts.SubnetID != "" {
		in.SubnetId = aws.String(p.opts.SubnetID)
	}
	if len(p.opts.SecurityGroupIDs) > 0 {
		in.SecurityGroupIds = p.opts.SecurityGroupIDs
	}
	if ip := p.opts.InstanceProfile; ip != "" {
		if strings.HasPrefix(ip, "arn:") {
			in.IamInstanceProfile = &ec2types.IamInstanceProfileSpecification{Arn: aws.String(ip)}
		} else {
			in.IamInstanceProfile = &ec2types.IamInstanceProfileSpecification{Name: aws.String(ip)}
		}
	}
	out, err := p.ec2.RunInstances(ctx, in)
	if err != nil {
		return nil, classify("deploy", id, err)
	}
	if len(out.Instances) != 1 {
		return nil, provider.Errorf(provider.Transient, "deploy", id, "RunInstances returned %d instances", len(out.Instances))
	}
	inst := out.Instances[0]
	if s := inst.State.Name; s == ec2types.InstanceStateNameShuttingDown || s == ec2types.InstanceStateNameTerminated {
		// EC2 keeps a client token for a while after its instance ended: this id and image were
		// launched and terminated before. A destroyed enclave is not deployed again.
		return nil, provider.Errorf(provider.Permanent, "deploy", id, "instance %s of this enclave and image was already terminated", aws.ToString(inst.InstanceId))
	}
	return &inst, nil
}

func (p *Provider) instanceInfo(id string, inst *ec2types.Instance, rec *record, port int, keys *attest.SigningKeys) provider.Instance {
	out := provider.Instance{ID: id, NetworkIsolated: true, PCRs: rec.Image.PCRs, StartedAt: aws.ToTime(inst.LaunchTime).UTC()}
	if ip := aws.ToString(inst.PrivateIpAddress); ip != "" {
		out.Addr = net.JoinHostPort(ip, strconv.Itoa(port))
	}
	if keys != nil {
		if keys.EVM != nil {
			out.EVMAddress = evmAddress(keys)
		}
		if len(keys.Solana) > 0 {
			out.SolanaPublicKey = solanaAddress(keys)
		}
	}
	return out
}

// attestedKeys asks the agent for a document over a fresh nonce, verifies it against the pinned
// root and the EIF's PCRs, and returns the signing keys it binds. A document that does not
// verify is permanent: the instance does not run what was measured.
func (p *Provider) attestedKeys(ctx context.Context, id string, inst *ec2types.Instance, rec *record) (attest.SigningKeys, error) {
	nonce := make([]byte, 32)
	if _, err := rand.Read(nonce); err != nil {
		return attest.SigningKeys{}, provider.Wrap(provider.Transient, "deploy", id, err)
	}
	doc, err := p.callAttest(ctx, "deploy", id, inst, nonce)
	if err != nil {
		return attest.SigningKeys{}, err
	}
	report := attest.Verify(doc, attest.VerifyOptions{Root: p.opts.AttestationRoot, PCRs: rec.Image.PCRs, Nonce: nonce, Now: p.opts.Now})
	if !report.Verified() {
		var failed []string
		for _, c := range report.Checks {
			if c.Failed() {
				failed = append(failed, c.Name+": "+c.Detail)
			}
		}
		return attest.SigningKeys{}, provider.Errorf(provider.Permanent, "deploy", id, "the agent's attestation does not verify: %s", strings.Join(failed, "; "))
	}
	keys, err := report.SigningKeys()
	if err != nil {
		return attest.SigningKeys{}, provider.Errorf(provider.Permanent, "deploy", id, "the attestation binds no signing keys: %v", err)
	}
	return keys, nil
}

// Pause stops the parent instance. Nitro has no freezer: stopping the parent ends its enclave,
// whose memory is gone; Resume starts the instance, whose boot service runs the EIF again.
func (p *Provider) Pause(ctx context.Context, id string) error {
	unlock, err := p.lock("pause", id)
	if err != nil {
		return err
	}
	defer unlock()
	inst, err := p.find(ctx, "pause", id)
	if err != nil {
		return err
	}
	if inst == nil {
		return provider.Wrap(provider.Permanent, "pause", id, provider.ErrNotRunning)
	}
	switch inst.State.Name {
	case ec2types.InstanceStateNameStopping, ec2types.InstanceStateNameStopped:
		return nil
	}
	if _, err := p.ec2.StopInstances(ctx, &ec2.StopInstancesInput{InstanceIds: []string{aws.ToString(inst.InstanceId)}}); err != nil {
		return classify("pause", id, err)
	}
	return nil
}

// Resume starts the stopped parent instance and waits until it runs.
func (p *Provider) Resume(ctx context.Context, id string) error {
	unlock, err := p.lock("resume", id)
	if err != nil {
		return err
	}
	defer unlock()
	inst, err := p.find(ctx, "resume", id)
	if err != nil {
		return err
	}
	if inst == nil {
		return provider.Wrap(provider.Permanent, "resume", id, provider.ErrNotRunning)
	}
	instanceID := aws.ToString(inst.InstanceId)
	if inst.State.Name == ec2types.InstanceStateNameStopping {
		// StartInstances refuses a stopping instance (IncorrectInstanceState): wait for stopped.
		if err := p.wait(ctx, "resume", id, "instance "+instanceID+" stopped", func() (bool, error) {
			cur, err := p.find(ctx, "resume", id)
			if err != nil || cur == nil {
				return false, err
			}
			inst = cur
			return cur.State.Name != ec2types.InstanceStateNameStopping, nil
		}); err != nil {
			return err
		}
	}
	if inst.State.Name == ec2types.InstanceStateNameStopped {
		if _, err := p.ec2.StartInstances(ctx, &ec2.StartInstancesInput{InstanceIds: []string{instanceID}}); err != nil {
			return classify("resume", id, err)
		}
	}
	return p.wait(ctx, "resume", id, "instance "+instanceID+" running", func() (bool, error) {
		cur, err := p.find(ctx, "resume", id)
		if err != nil || cur == nil {
			return false, err
		}
		return cur.State.Name == ec2types.InstanceStateNameRunning, nil
	})
}

// Terminate terminates every instance tagged with id and deletes its EIFs and record. Its
// CloudWatch log stream is kept (the log group's retention applies).
func (p *Provider) Terminate(ctx context.Context, id string) error {
	unlock, err := p.lock("terminate", id)
	if err != nil {
		return err
	}
	defer unlock()
	all, err := p.instances(ctx, "terminate", id, liveStates)
	if err != nil {
		return err
	}
	var ids []string
	for _, in := range all {
		ids = append(ids, aws.ToString(in.InstanceId))
	}
	if len(ids) > 0 {
		if _, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids}); err != nil && apiCode(err) != "InvalidInstanceID.NotFound" {
			return classify("terminate", id, err)
		}
	}
	prefix := p.opts.KeyPrefix + id + "/"
	pages := s3.NewListObjectsV2Paginator(p.s3, &s3.ListObjectsV2Input{Bucket: aws.String(p.opts.Bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return classify("terminate", id, err)
		}
		for _, o := range page.Contents {
			if _, err := p.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(p.opts.Bucket), Key: o.Key}); err != nil {
				return classify("terminate", id, err)
			}
		}
	}
	return nil
}

// Status maps the instance's EC2 state: pending and running → running, stopping and stopped →
// paused, an instance that ended without Terminate → exited; no instance → prepared (an EIF is
// kept) or absent.
func (p *Provider) Status(ctx context.Context, id string) (provider.Status, error) {
	if err := checkID("status", id); err != nil {
		return provider.Status{}, err
	}
	all, err := p.instances(ctx, "status", id, nil)
	if err != nil {
		return provider.Status{}, err
	}
	var live, ended *ec2types.Instance
	for _, in := range all {
		switch in.State.Name {
		case ec2types.InstanceStateNameShuttingDown, ec2types.InstanceStateNameTerminated:
			ended = in
		default:
			if live == nil || aws.ToTime(in.LaunchTime).Before(aws.ToTime(live.LaunchTime)) {
				live = in
			}
		}
	}
	if live != nil {
		st := provider.Status{Detail: "instance " + aws.ToString(live.InstanceId) + " is " + string(live.State.Name)}
		switch live.State.Name {
		case ec2types.InstanceStateNameStopping, ec2types.InstanceStateNameStopped:
			st.Phase = provider.PhasePaused
		default:
			st.Phase = provider.PhaseRunning
		}
		if ip := aws.ToString(live.PrivateIpAddress); ip != "" {
			st.Addr = ip
		}
		return st, nil
	}
	rec, err := p.readRecord(ctx, "status", id)
	if err != nil {
		return provider.Status{}, err
	}
	if rec == nil {
		return provider.Status{Phase: provider.PhaseAbsent}, nil
	}
	if ended != nil {
		detail := "instance " + aws.ToString(ended.InstanceId) + " is " + string(ended.State.Name)
		if ended.StateReason != nil {
			detail += ": " + aws.ToString(ended.StateReason.Message)
		}
		return provider.Status{Phase: provider.PhaseExited, Detail: detail}, nil
	}
	return provider.Status{Phase: provider.PhasePrepared}, nil
}

// running returns the enclave's instance when it runs, else a permanent ErrNotRunning.
func (p *Provider) running(ctx context.Context, op, id string) (*ec2types.Instance, error) {
	if err := checkID(op, id); err != nil {
		return nil, err
	}
	inst, err := p.find(ctx, op, id)
	if err != nil {
		return nil, err
	}
	if inst == nil || inst.State.Name != ec2types.InstanceStateNameRunning || aws.ToString(inst.PrivateIpAddress) == "" {
		return nil, provider.Wrap(provider.Permanent, op, id, provider.ErrNotRunning)
	}
	return inst, nil
}

// Attest returns a fresh NSM document from the enclave, through its parent's agent.
func (p *Provider) Attest(ctx context.Context, id string, nonce []byte) ([]byte, error) {
	inst, err := p.running(ctx, "attest", id)
	if err != nil {
		return nil, err
	}
	return p.callAttest(ctx, "attest", id, inst, nonce)
}

// Sign has the enclave sign with its key, through its parent's agent.
func (p *Provider) Sign(ctx context.Context, id string, req provider.SignRequest) ([]byte, error) {
	switch req.Key {
	case provider.KeyEVM:
		if len(req.Payload) != 32 {
			return nil, provider.Errorf(provider.Permanent, "sign", id, "an EVM signature is over a 32-byte hash, got %d bytes", len(req.Payload))
		}
	case provider.KeySolana:
		if len(req.Payload) == 0 {
			return nil, provider.Errorf(provider.Permanent, "sign", id, "nothing to sign")
		}
	default:
		return nil, provider.Errorf(provider.Permanent, "sign", id, "unknown key %q (want %q or %q)", req.Key, provider.KeyEVM, provider.KeySolana)
	}
	inst, err := p.running(ctx, "sign", id)
	if err != nil {
		return nil, err
	}
	var out struct {
		Signature []byte `json:"signature"`
	}
	if err := p.callAgent(ctx, "sign", id, inst, "/sign", map[string]any{"enclaveId": id, "key": req.Key, "payload": req.Payload}, &out); err != nil {
		return nil, err
	}
	return out.Signature, nil
}
