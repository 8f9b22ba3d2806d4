package apptest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"conduit/internal/codec"
	"conduit/worker"
	"conduit/workflows"
)

// CaptureEnv names the folder the harness writes workflow histories to
// after a package's tests, for the replay suite (workflows/testdata).
const CaptureEnv = "CONDUIT_CAPTURE_HISTORIES"

// CaptureKeyFile holds the codec key the captured histories are sealed with.
const CaptureKeyFile = "codec.key"

// captureKey reads the capture folder's codec key, making one if needed.
func captureKey(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, CaptureKeyFile)
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		b = []byte(codec.NewKey("replay"))
		err = os.WriteFile(path, b, 0o644)
	}
	return strings.TrimSpace(string(b)), err
}

// captureHistories writes one closed history per distinct shape — the
// workflow type, its RunStatus and the activities it scheduled — as the
// JSON the SDK's replayer reads. Real runs of every outcome the tests
// drive become the histories that later code must still replay.
func captureHistories(ctx context.Context, c client.Client, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: "ExecutionStatus = 'Completed' AND WorkflowType IN (" + capturedTypes() + ")", PageSize: 500, NextPageToken: token,
		})
		if err != nil {
			return err
		}
		for _, e := range resp.Executions {
			f := e.GetSearchAttributes().GetIndexedFields()
			if err := captureOne(ctx, c, dir, e.GetType().GetName(), e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), runStatus(f)+newChanges(f)); err != nil {
				return err
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			return nil
		}
	}
}

// capturedTypes lists every workflow the worker registers (worker.Workflows)
// but the system's probes, quoted for a visibility query: a new workflow's
// histories are captured without a change here.
func capturedTypes() string {
	var names []string
	for _, name := range slices.Sorted(maps.Keys(worker.Workflows())) {
		if name != workflows.WfPing && name != workflows.WfNop {
			names = append(names, "'"+name+"'")
		}
	}
	return strings.Join(names, ", ")
}

// shapedChanges are the change ids whose histories were captured before
// change ids became part of a shape: there a version marker counts only as
// "version". Every later change id names itself in the shape (newChanges),
// so the first runs of a new GetVersion branch are captured although the
// activities they schedule are the same.
var shapedChanges = []string{
	workflows.ChangeAdmissionInWorkflow, workflows.ChangeEnclaveResumableSteps, workflows.ChangeGitHubBuild,
	workflows.ChangeEnclaveSyncTasks, workflows.ChangeEnclaveAdmission, workflows.ChangeTopUpAdmission,
	workflows.ChangeRenderLocalSteps,
}

// newChanges names the versions a history recorded (from the server's
// TemporalChangeVersion attribute, "<change id>-<version>") of change ids
// newer than shapedChanges, as a suffix of its status ("" for none).
func newChanges(f map[string]*commonpb.Payload) string {
	var recorded, added []string
	_ = json.Unmarshal(f["TemporalChangeVersion"].GetData(), &recorded)
	for _, cv := range recorded {
		if !slices.ContainsFunc(shapedChanges, func(id string) bool { return strings.HasPrefix(cv, id+"-") }) {
			added = append(added, cv)
		}
	}
	if len(added) == 0 {
		return ""
	}
	slices.Sort(added)
	return "-" + strings.Join(added, "-")
}

// runStatus is a run's RunStatus, or an enclave's EnclaveStatus.
func runStatus(f map[string]*commonpb.Payload) string {
	if p, ok := f["EnclaveStatus"]; ok {
		return strings.ToLower(status(p.GetData()))
	}
	return status(f["RunStatus"].GetData())
}

func status(raw []byte) string {
	s := strings.Trim(string(raw), `"`)
	if s == "" {
		return "none"
	}
	return s
}

func captureOne(ctx context.Context, c client.Client, dir, typ, id, runID, runStatus string) error {
	it := c.GetWorkflowHistory(ctx, id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	var acts []string
	locals := 0
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return err
		}
		h.Events = append(h.Events, ev)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && !slices.Contains(acts, a.GetActivityType().GetName()) {
			acts = append(acts, a.GetActivityType().GetName())
		}
		// Local activities and versions leave markers, not scheduled
		// activities: they are part of the shape too.
		switch ev.GetMarkerRecordedEventAttributes().GetMarkerName() {
		case "LocalActivity":
			locals++
		case "Version":
			if !slices.Contains(acts, "version") {
				acts = append(acts, "version")
			}
		}
	}
	slices.Sort(acts)
	if in := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads(); len(in) > 0 &&
		string(in[0].GetMetadata()["encoding"]) == codec.Encoding {
		runStatus += "-sealed"
	}
	shape := typ + "/" + runStatus + "/" + strings.Join(acts, ",")
	if locals > 0 {
		shape += fmt.Sprintf("/local:%d", locals)
	}
	sum := sha256.Sum256([]byte(shape))
	path := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.json", strings.ToLower(typ), runStatus, hex.EncodeToString(sum[:4])))
	if _, err := os.Stat(path); err == nil {
		return nil // this shape is captured already
	}
	b, err := protojson.MarshalOptions{Indent: " "}.Marshal(h)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
