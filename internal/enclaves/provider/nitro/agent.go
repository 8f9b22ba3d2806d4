package nitro

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"

	"conduit/internal/attest"
	"conduit/internal/enclaves/provider"
)

// UserDataHeader opens the user data of every enclave instance. The user data is not a script
// (cloud-init ignores it): the AMI's boot service reads it from the instance metadata service at
// every boot, so a stopped and started instance runs its enclave again.
const UserDataHeader = "# conduit-enclave v1"

// userData is the contract with the parent's boot service (docs/enclaves.md): one KEY='value'
// per line, values single-quoted for sh.
func (p *Provider) userData(id string, rec *record, cfg provider.Config, port int) ([]byte, error) {
	cpus, mem := cfg.CPUCount, cfg.MemoryMiB
	if cpus == 0 {
		cpus = 2
	}
	if mem == 0 {
		mem = 1024
	}
	vars := map[string]string{
		"CONDUIT_ENCLAVE_ID":         id,
		"CONDUIT_REGION":             p.opts.Region,
		"CONDUIT_EIF_S3_BUCKET":      p.opts.Bucket,
		"CONDUIT_EIF_S3_KEY":         rec.EIFKey,
		"CONDUIT_EIF_SHA384":         rec.EIFSHA384,
		"CONDUIT_EIF_PCR0":           hex.EncodeToString(rec.Image.PCRs[0]),
		"CONDUIT_EIF_PCR1":           hex.EncodeToString(rec.Image.PCRs[1]),
		"CONDUIT_EIF_PCR2":           hex.EncodeToString(rec.Image.PCRs[2]),
		"CONDUIT_ENCLAVE_CPU_COUNT":  strconv.Itoa(cpus),
		"CONDUIT_ENCLAVE_MEMORY_MIB": strconv.Itoa(mem),
		"CONDUIT_APP_PORT":           strconv.Itoa(port),
		"CONDUIT_AGENT_PORT":         strconv.Itoa(p.opts.AgentPort),
		"CONDUIT_LOG_GROUP":          p.opts.LogGroup,
		"CONDUIT_LOG_STREAM":         id,
	}
	if tok := p.AgentToken(id); tok != "" {
		vars["CONDUIT_AGENT_TOKEN"] = tok
	}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString(UserDataHeader + "\n")
	for _, k := range keys {
		v := vars[k]
		if strings.ContainsAny(v, "\n\x00") {
			return nil, provider.Errorf(provider.Permanent, "deploy", id, "user data %s contains a newline", k)
		}
		fmt.Fprintf(&b, "%s='%s'\n", k, strings.ReplaceAll(v, "'", `'\''`))
	}
	return b.Bytes(), nil
}

// ParseUserData reads the user data an enclave instance was launched with (for the parent's
// tooling and tests).
func ParseUserData(data []byte) (map[string]string, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	if !sc.Scan() || sc.Text() != UserDataHeader {
		return nil, errors.New("not conduit enclave user data")
	}
	out := map[string]string{}
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || len(v) < 2 || v[0] != '\'' || v[len(v)-1] != '\'' {
			return nil, fmt.Errorf("user data line %q: want KEY='value'", line)
		}
		out[k] = strings.ReplaceAll(v[1:len(v)-1], `'\''`, "'")
	}
	return out, sc.Err()
}

// agentURL is the agent's address on the instance's private network.
func (p *Provider) agentURL(inst *ec2types.Instance, path string) string {
	u := url.URL{Scheme: p.opts.AgentScheme, Host: net.JoinHostPort(aws.ToString(inst.PrivateIpAddress), strconv.Itoa(p.opts.AgentPort)), Path: path}
	return u.String()
}

// callAgent POSTs a JSON request to the agent and decodes its JSON answer. The agent refuses
// (409) a request whose enclaveId is not its own: private addresses are reused after an instance
// ends. Unreachable agents, timeouts and 5xx are transient; other refusals permanent.
func (p *Provider) callAgent(ctx context.Context, op, id string, inst *ec2types.Instance, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return provider.Wrap(provider.Permanent, op, id, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.agentURL(inst, path), bytes.NewReader(data))
	if err != nil {
		return provider.Wrap(provider.Permanent, op, id, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Conduit-Enclave-Id", id)
	if tok := p.AgentToken(id); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := p.agent.Do(req)
	if err != nil {
		return provider.Errorf(provider.Transient, op, id, "the agent on %s: %v", aws.ToString(inst.InstanceId), err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return provider.Errorf(provider.Transient, op, id, "the agent on %s: %v", aws.ToString(inst.InstanceId), err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		kind := provider.Permanent
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			kind = provider.Transient
		}
		return provider.Errorf(kind, op, id, "the agent on %s answered %d: %s", aws.ToString(inst.InstanceId), resp.StatusCode, msg)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return provider.Errorf(provider.Transient, op, id, "the agent on %s answered unreadably: %v", aws.ToString(inst.InstanceId), err)
	}
	return nil
}

// callAttest asks for an NSM document bound to nonce.
func (p *Provider) callAttest(ctx context.Context, op, id string, inst *ec2types.Instance, nonce []byte) ([]byte, error) {
	var out struct {
		Document []byte `json:"document"`
	}
	if err := p.callAgent(ctx, op, id, inst, "/attest", map[string]any{"enclaveId": id, "nonce": nonce}, &out); err != nil {
		return nil, err
	}
	if len(out.Document) == 0 {
		return nil, provider.Errorf(provider.Transient, op, id, "the agent answered no document")
	}
	return out.Document, nil
}

func evmAddress(k *attest.SigningKeys) string { return crypto.PubkeyToAddress(*k.EVM).Hex() }

func solanaAddress(k *attest.SigningKeys) string { return base58.Encode(ed25519.PublicKey(k.Solana)) }
