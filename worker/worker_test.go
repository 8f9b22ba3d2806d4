package worker

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"conduit/activities"
)

// The names every history records. Changing one breaks every running
// workflow that uses it: add a new name instead, and keep the old one
// registered until no history needs it (docs/operations.md).
var pinned = map[string]string{
	"system":       "workflows Nop, Ping; activities RecordPing",
	"pipelines":    "workflows PipelineRun; activities FailRun, FinishRun, Generate, OpenRun",
	"mail":         "workflows Mail; activities SendMail",
	"payments":     "workflows PackPurchase, TopUp; activities ClaimPayment, Grant, RecordPack, Settle",
	"renders":      "workflows MediaEdit, Render; activities CreditPayment, FinishMediaJob, FinishRender, Grant, MarkLate, OpenMediaJob, OpenPaidRender, OpenRetry, Settle",
	"renders-work": "workflows ; activities GenerateMedia, Render, RunMediaJob",
	"library-work": "workflows ; activities RunMediaJob",
	"enclaves":     "workflows Enclave; activities EnclaveAttest, EnclaveBuild, EnclaveCopyLogs, EnclaveDeploy, EnclaveMeter, EnclaveOpen, EnclavePause, EnclavePrepare, EnclaveProject, EnclaveResume, EnclaveSign, EnclaveSyncTasks, EnclaveTerminate, EnclaveWatch",
	"tasks":        "workflows TaskAdmit, TaskRun; activities TaskCall, TaskHold, TaskOpen, TaskRecord, TaskSchedule, TaskSettle, TaskWithdraw",
	"proofs":       "workflows KYCProof, ZKProofJob; activities EnqueueZKStatement, KYCConfirmProof, KYCExpireProof, KYCOpenProof, KYCRecordProof, ZKAwaitInclusion, ZKCloseJob, ZKConfirmFinal, ZKMarkJob, ZKOpenJob, ZKRelayStatus, ZKRelaySubmit, ZKSubmitRecord, ZKVerifyGroth16",

	// Proof aggregation (workflows/zkaggregation.go).
	"zk-aggregation": "workflows ZKAggregation; activities EnqueueZKStatement, PublishZKAggregation, RecordZKAggregation",
	"zkpassport":     "workflows ZKPassportRequest; activities ExpireZKPassportRequest, OpenZKPassportRequest",
}

func TestRegisteredNamesArePinned(t *testing.T) {
	got := map[string]string{}
	for _, q := range Registry(Deps{Renders: &activities.Renders{}, Library: &activities.Library{}, Enclaves: &activities.Enclaves{}}) {
		got[q.Queue] = "workflows " + strings.Join(slices.Sorted(maps.Keys(q.Workflows)), ", ") +
			"; activities " + strings.Join(slices.Sorted(maps.Keys(q.Activities)), ", ")
	}
	if !maps.Equal(got, pinned) {
		t.Fatalf("registered names changed:\n got  %v\n want %v", got, pinned)
	}
}
