// Package awsfake plays the parts of AWS the Nitro provider calls — the EC2 Query API and the
// CloudWatch Logs JSON 1.1 API — over HTTP, for tests that drive the real aws-sdk-go-v2 clients
// at it. It keeps state (instances move pending → running, stopping → stopped, shutting-down →
// terminated, one step per DescribeInstances), honours client tokens the way EC2 does, answers in
// the services' wire shapes (EC2 XML with its namespace and requestId, error XML
// <Response><Errors><Error><Code>…; Logs JSON with __type errors), and can be told to fail.
package awsfake

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// EC2Namespace is the namespace of EC2's 2016-11-15 API responses.
const EC2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"

// Instance is a fake instance.
type Instance struct {
	ID            string
	ImageID       string
	InstanceType  string
	State         string
	PrivateIP     string
	SubnetID      string
	SecurityGroup []string
	Profile       string
	Enclave       bool
	HTTPTokens    string
	UserData      []byte // decoded
	Tags          map[string]string
	ClientToken   string
	LaunchTime    time.Time
	StateReason   string
	reservationID string
}

// Fault is an error the fake answers with instead of doing the action.
type Fault struct {
	Code    string
	Message string
	Status  int
}

// EC2 is the fake EC2 Query API.
type EC2 struct {
	// AMIs are the image ids that exist; others are InvalidAMIID.NotFound.
	AMIs map[string]bool
	// PrivateIP is every instance's private address (the test's agent listens there).
	PrivateIP string

	mu        sync.Mutex
	instances map[string]*Instance
	order     []string
	tokens    map[string]tokenUse // client token → what it launched
	faults    map[string][]Fault
	lost      map[string][]Fault
	calls     map[string]int
	seq       int
}

type tokenUse struct {
	params     string
	instanceID string
}

// NewEC2 knows the given AMIs.
func NewEC2(amis ...string) *EC2 {
	e := &EC2{AMIs: map[string]bool{}, PrivateIP: "127.0.0.1", instances: map[string]*Instance{},
		tokens: map[string]tokenUse{}, faults: map[string][]Fault{}, lost: map[string][]Fault{}, calls: map[string]int{}}
	for _, a := range amis {
		e.AMIs[a] = true
	}
	return e
}

// Fail makes the next n calls of action answer f.
func (e *EC2) Fail(action string, n int, f Fault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := 0; i < n; i++ {
		e.faults[action] = append(e.faults[action], f)
	}
}

// LoseResponse makes the next n calls of action take effect but answer f, as when the answer is
// lost on the way back (a timeout, a dropped connection): the caller must retry safely.
func (e *EC2) LoseResponse(action string, n int, f Fault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := 0; i < n; i++ {
		e.lost[action] = append(e.lost[action], f)
	}
}

// Reset drops the faults still queued for action.
func (e *EC2) Reset(action string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.faults, action)
	delete(e.lost, action)
}

// Calls is how many requests of action arrived (failed ones included).
func (e *EC2) Calls(action string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[action]
}

// Instances returns copies of every instance ever launched, oldest first.
func (e *EC2) Instances() []Instance {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Instance, 0, len(e.order))
	for _, id := range e.order {
		out = append(out, *e.instances[id])
	}
	return out
}

// Instance returns a copy of instance id.
func (e *EC2) Instance(id string) (Instance, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	in, ok := e.instances[id]
	if !ok {
		return Instance{}, false
	}
	return *in, true
}

// SetState forces an instance's state (an instance that dies on its own, say).
func (e *EC2) SetState(id, state, reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if in, ok := e.instances[id]; ok {
		in.State, in.StateReason = state, reason
	}
}

func (e *EC2) nextID(prefix string) string {
	e.seq++
	return fmt.Sprintf("%s-%017x", prefix, e.seq)
}

func (e *EC2) requestID() string {
	e.seq++
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", e.seq, e.seq)
}

// ServeHTTP answers EC2 Query requests: POST, form-encoded, Action and Version.
func (e *EC2) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rid := e.requestID()
	if r.Method != http.MethodPost {
		e.fail(w, rid, Fault{Code: "InvalidAction", Message: "The action is not valid for this web service.", Status: 400})
		return
	}
	if err := checkSigV4(r, "ec2"); err != nil {
		e.fail(w, rid, Fault{Code: "AuthFailure", Message: err.Error(), Status: 401})
		return
	}
	if err := r.ParseForm(); err != nil {
		e.fail(w, rid, Fault{Code: "InvalidParameterValue", Message: err.Error(), Status: 400})
		return
	}
	f := r.PostForm
	action := f.Get("Action")
	e.calls[action]++
	if f.Get("Version") != "2016-11-15" {
		e.fail(w, rid, Fault{Code: "InvalidParameterValue", Message: "Version must be 2016-11-15", Status: 400})
		return
	}
	if q := e.faults[action]; len(q) > 0 {
		e.faults[action] = q[1:]
		e.fail(w, rid, q[0])
		return
	}
	if q := e.lost[action]; len(q) > 0 {
		e.lost[action] = q[1:]
		e.do(httptest.NewRecorder(), rid, action, f)
		e.fail(w, rid, q[0])
		return
	}
	e.do(w, rid, action, f)
}

func (e *EC2) do(w http.ResponseWriter, rid, action string, f url.Values) {
	switch action {
	case "RunInstances":
		e.runInstances(w, rid, f)
	case "DescribeInstances":
		e.describeInstances(w, rid, f)
	case "TerminateInstances":
		e.changeState(w, rid, f, "TerminateInstancesResponse", map[string]string{"pending": "shutting-down", "running": "shutting-down", "stopping": "shutting-down", "stopped": "shutting-down"}, nil)
	case "StopInstances":
		e.changeState(w, rid, f, "StopInstancesResponse", map[string]string{"pending": "stopping", "running": "stopping"},
			map[string]bool{"stopping": true, "stopped": true})
	case "StartInstances":
		e.changeState(w, rid, f, "StartInstancesResponse", map[string]string{"stopped": "pending"},
			map[string]bool{"pending": true, "running": true})
	default:
		e.fail(w, rid, Fault{Code: "InvalidAction", Message: fmt.Sprintf("The action %s is not valid for this web service.", action), Status: 400})
	}
}

func (e *EC2) fail(w http.ResponseWriter, rid string, f Fault) {
	if f.Status == 0 {
		f.Status = 400
	}
	type errXML struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	body := struct {
		XMLName   xml.Name `xml:"Response"`
		Errors    []errXML `xml:"Errors>Error"`
		RequestID string   `xml:"RequestID"`
	}{Errors: []errXML{{f.Code, f.Message}}, RequestID: rid}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(f.Status)
	w.Write([]byte(xml.Header))
	_ = xml.NewEncoder(w).Encode(body)
}

func writeXML(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Write([]byte(xml.Header))
	_ = xml.NewEncoder(w).Encode(v)
}

// list reads a Query list: prefix.1, prefix.2, …
func list(f url.Values, prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := f[prefix+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v[0])
	}
}

var stateCodes = map[string]int{"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48, "stopping": 64, "stopped": 80}

type stateXML struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

type tagXML struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

type instanceXML struct {
	InstanceID     string     `xml:"instanceId"`
	ImageID        string     `xml:"imageId"`
	State          stateXML   `xml:"instanceState"`
	PrivateIP      string     `xml:"privateIpAddress,omitempty"`
	InstanceType   string     `xml:"instanceType"`
	LaunchTime     string     `xml:"launchTime"`
	SubnetID       string     `xml:"subnetId,omitempty"`
	ClientToken    string     `xml:"clientToken,omitempty"`
	EnclaveEnabled bool       `xml:"enclaveOptions>enabled"`
	Tags           []tagXML   `xml:"tagSet>item"`
	StateReason    *reasonXML `xml:"stateReason,omitempty"`
}

type reasonXML struct {
	Code    string `xml:"code"`
	Message string `xml:"message"`
}

func (in *Instance) xml() instanceXML {
	x := instanceXML{InstanceID: in.ID, ImageID: in.ImageID, State: stateXML{stateCodes[in.State], in.State},
		InstanceType: in.InstanceType, LaunchTime: in.LaunchTime.UTC().Format("2006-01-02T15:04:05.000Z"),
		SubnetID: in.SubnetID, ClientToken: in.ClientToken, EnclaveEnabled: in.Enclave}
	// Like EC2: stopped and terminated instances have no address in a describe; a running one has.
	if in.State != "terminated" {
		x.PrivateIP = in.PrivateIP
	}
	keys := make([]string, 0, len(in.Tags))
	for k := range in.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		x.Tags = append(x.Tags, tagXML{k, in.Tags[k]})
	}
	if in.StateReason != "" {
		x.StateReason = &reasonXML{"Client.UserInitiatedShutdown", in.StateReason}
	}
	return x
}

func (e *EC2) runInstances(w http.ResponseWriter, rid string, f url.Values) {
	ami := f.Get("ImageId")
	switch {
	case !strings.HasPrefix(ami, "ami-"):
		e.fail(w, rid, Fault{Code: "InvalidAMIID.Malformed", Message: fmt.Sprintf("Invalid id: %q (expecting \"ami-...\")", ami)})
		return
	case !e.AMIs[ami]:
		e.fail(w, rid, Fault{Code: "InvalidAMIID.NotFound", Message: fmt.Sprintf("The image id '[%s]' does not exist", ami)})
		return
	}
	if f.Get("MinCount") != "1" || f.Get("MaxCount") != "1" {
		e.fail(w, rid, Fault{Code: "InvalidParameterValue", Message: "this fake launches exactly one instance (MinCount = MaxCount = 1)"})
		return
	}
	if f.Get("InstanceType") == "" {
		e.fail(w, rid, Fault{Code: "MissingParameter", Message: "The request must contain the parameter InstanceType"})
		return
	}
	token := f.Get("ClientToken")
	params := paramsDigest(f)
	if token != "" {
		if use, ok := e.tokens[token]; ok {
			if use.params != params {
				e.fail(w, rid, Fault{Code: "IdempotentParameterMismatch", Message: "The client token you have provided is associated with a resource that is already deleted or the request parameters differ."})
				return
			}
			in := e.instances[use.instanceID]
			e.writeReservation(w, rid, in)
			return
		}
	}
	ud, err := base64.StdEncoding.DecodeString(f.Get("UserData"))
	if err != nil {
		e.fail(w, rid, Fault{Code: "InvalidUserData.Malformed", Message: "User data is not valid base64"})
		return
	}
	in := &Instance{
		ID: e.nextID("i"), ImageID: ami, InstanceType: f.Get("InstanceType"), State: "pending", PrivateIP: e.PrivateIP,
		SubnetID: f.Get("SubnetId"), SecurityGroup: list(f, "SecurityGroupId"), Enclave: f.Get("EnclaveOptions.Enabled") == "true",
		Profile: f.Get("IamInstanceProfile.Name") + f.Get("IamInstanceProfile.Arn"), HTTPTokens: f.Get("MetadataOptions.HttpTokens"),
		UserData: ud, Tags: map[string]string{}, ClientToken: token, LaunchTime: time.Now().UTC(), reservationID: e.nextID("r"),
	}
	for i := 1; ; i++ {
		p := "TagSpecification." + strconv.Itoa(i)
		rt, ok := f[p+".ResourceType"]
		if !ok {
			break
		}
		if rt[0] != "instance" {
			continue
		}
		for j := 1; ; j++ {
			k, ok := f[p+".Tag."+strconv.Itoa(j)+".Key"]
			if !ok {
				break
			}
			in.Tags[k[0]] = f.Get(p + ".Tag." + strconv.Itoa(j) + ".Value")
		}
	}
	e.instances[in.ID] = in
	e.order = append(e.order, in.ID)
	if token != "" {
		e.tokens[token] = tokenUse{params: params, instanceID: in.ID}
	}
	e.writeReservation(w, rid, in)
}

// paramsDigest identifies a RunInstances request's parameters apart from the token.
func paramsDigest(f url.Values) string {
	keys := make([]string, 0, len(f))
	for k := range f {
		if k != "ClientToken" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%q\n", k, f[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (e *EC2) writeReservation(w http.ResponseWriter, rid string, in *Instance) {
	writeXML(w, struct {
		XMLName       xml.Name      `xml:"RunInstancesResponse"`
		Xmlns         string        `xml:"xmlns,attr"`
		RequestID     string        `xml:"requestId"`
		ReservationID string        `xml:"reservationId"`
		OwnerID       string        `xml:"ownerId"`
		Instances     []instanceXML `xml:"instancesSet>item"`
	}{Xmlns: EC2Namespace, RequestID: rid, ReservationID: in.reservationID, OwnerID: "123456789012", Instances: []instanceXML{in.xml()}})
}

// advance moves every instance one step towards where it is going, as time passes in EC2.
func (e *EC2) advance() {
	for _, in := range e.instances {
		switch in.State {
		case "pending":
			in.State = "running"
		case "stopping":
			in.State = "stopped"
		case "shutting-down":
			in.State = "terminated"
		}
	}
}

func (e *EC2) describeInstances(w http.ResponseWriter, rid string, f url.Values) {
	// The answer shows the state before this call's step, as a real describe shows a moment.
	snapshot := map[string]Instance{}
	for id, in := range e.instances {
		snapshot[id] = *in
	}
	defer e.advance()
	ids := list(f, "InstanceId")
	for _, id := range ids {
		if _, ok := e.instances[id]; !ok {
			e.fail(w, rid, Fault{Code: "InvalidInstanceID.NotFound", Message: fmt.Sprintf("The instance ID '%s' does not exist", id)})
			return
		}
	}
	type filter struct {
		name   string
		values []string
	}
	var filters []filter
	for i := 1; ; i++ {
		p := "Filter." + strconv.Itoa(i)
		n, ok := f[p+".Name"]
		if !ok {
			break
		}
		filters = append(filters, filter{n[0], list(f, p+".Value")})
	}
	match := func(in Instance) bool {
		if len(ids) > 0 && !contains(ids, in.ID) {
			return false
		}
		for _, fl := range filters {
			var v string
			switch {
			case fl.name == "instance-state-name":
				v = in.State
			case strings.HasPrefix(fl.name, "tag:"):
				t, ok := in.Tags[strings.TrimPrefix(fl.name, "tag:")]
				if !ok {
					return false
				}
				v = t
			case fl.name == "instance-id":
				v = in.ID
			default:
				return false // an unknown filter matches nothing here; say so loudly instead
			}
			if !contains(fl.values, v) {
				return false
			}
		}
		return true
	}
	for _, fl := range filters {
		if fl.name != "instance-state-name" && fl.name != "instance-id" && !strings.HasPrefix(fl.name, "tag:") {
			e.fail(w, rid, Fault{Code: "InvalidParameterValue", Message: "The filter '" + fl.name + "' is invalid"})
			return
		}
	}
	type reservationXML struct {
		ReservationID string        `xml:"reservationId"`
		OwnerID       string        `xml:"ownerId"`
		Instances     []instanceXML `xml:"instancesSet>item"`
	}
	var res []reservationXML
	for _, id := range e.order {
		in := snapshot[id]
		if match(in) {
			res = append(res, reservationXML{ReservationID: in.reservationID, OwnerID: "123456789012", Instances: []instanceXML{in.xml()}})
		}
	}
	writeXML(w, struct {
		XMLName      xml.Name         `xml:"DescribeInstancesResponse"`
		Xmlns        string           `xml:"xmlns,attr"`
		RequestID    string           `xml:"requestId"`
		Reservations []reservationXML `xml:"reservationSet>item"`
	}{Xmlns: EC2Namespace, RequestID: rid, Reservations: res})
}

// changeState applies moves (from → to) to the listed instances; states in stay are left as
// they are; any other state is IncorrectInstanceState, as EC2 answers.
func (e *EC2) changeState(w http.ResponseWriter, rid string, f url.Values, response string, moves map[string]string, stay map[string]bool) {
	ids := list(f, "InstanceId")
	if len(ids) == 0 {
		e.fail(w, rid, Fault{Code: "MissingParameter", Message: "The request must contain the parameter InstanceId"})
		return
	}
	for _, id := range ids {
		in, ok := e.instances[id]
		if !ok {
			e.fail(w, rid, Fault{Code: "InvalidInstanceID.NotFound", Message: fmt.Sprintf("The instance ID '%s' does not exist", id)})
			return
		}
		if _, ok := moves[in.State]; !ok && !stay[in.State] && !(response == "TerminateInstancesResponse" && (in.State == "shutting-down" || in.State == "terminated")) {
			verb := map[string]string{"StopInstancesResponse": "stopped", "StartInstancesResponse": "started"}[response]
			e.fail(w, rid, Fault{Code: "IncorrectInstanceState", Message: fmt.Sprintf("The instance '%s' is not in a state from which it can be %s.", id, verb)})
			return
		}
	}
	type changeXML struct {
		InstanceID string   `xml:"instanceId"`
		Current    stateXML `xml:"currentState"`
		Previous   stateXML `xml:"previousState"`
	}
	var out []changeXML
	for _, id := range ids {
		in := e.instances[id]
		prev := in.State
		if to, ok := moves[in.State]; ok {
			in.State = to
		}
		out = append(out, changeXML{InstanceID: id, Current: stateXML{stateCodes[in.State], in.State}, Previous: stateXML{stateCodes[prev], prev}})
	}
	writeXML(w, struct {
		XMLName   xml.Name
		Xmlns     string      `xml:"xmlns,attr"`
		RequestID string      `xml:"requestId"`
		Instances []changeXML `xml:"instancesSet>item"`
	}{XMLName: xml.Name{Local: response}, Xmlns: EC2Namespace, RequestID: rid, Instances: out})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkSigV4 requires a Signature Version 4 Authorization header for service: the SDK signs
// every request, and a request that was not signed would be refused by AWS.
func checkSigV4(r *http.Request, service string) error {
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") {
		return fmt.Errorf("AWS was not able to validate the provided access credentials (no SigV4 Authorization header)")
	}
	_, cred, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return fmt.Errorf("the Authorization header has no Credential")
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(cred, "/")
	if len(parts) != 5 || parts[3] != service || parts[4] != "aws4_request" {
		return fmt.Errorf("credential scope %q is not for service %s", cred, service)
	}
	if r.Header.Get("X-Amz-Date") == "" {
		return fmt.Errorf("the request has no X-Amz-Date")
	}
	return nil
}
