// Package worker builds the activity structs from their dependencies and
// registers every workflow and activity on its task queue, in one place.
package worker

import (
	"errors"
	"log/slog"
	"maps"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"conduit/activities"
	"conduit/internal/accounts"
	"conduit/internal/models"
	"conduit/internal/store"
	"conduit/internal/x402"
	"conduit/workflows"
)

// Deps are what the activities need.
type Deps struct {
	Store   *store.Store
	Catalog *models.Catalog
	Deltas  activities.DeltaSink
	// Facilitator settles x402 payments (nil when payments are off).
	Facilitator x402.Facilitator
	// Renders renders pay-per-call files (nil when pay-per-call is off).
	Renders *activities.Renders
	// Library renders generation nodes' files and runs the media
	// library's jobs (nil when media is off).
	Library *activities.Library
	// Enclaves runs the enclave lifecycle (nil when enclaves are off).
	Enclaves *activities.Enclaves
	// Mail delivers the outbox (a nil Sender: deliveries wait, retried).
	Mail *activities.Mail
	// Tasks runs scheduled tasks (with enclaves; nil in tests that only
	// list names).
	Tasks *activities.Tasks
	// Metering charges task firings and enclave uptime (with enclaves;
	// nil in tests that only list names).
	Metering *activities.Metering
	Log      *slog.Logger
	// Pollers, RenderConcurrency and StopTimeout come from temporal.*.
	Pollers           int
	RenderConcurrency int
	StopTimeout       time.Duration
	// ZKAgg runs proof aggregation (nil in tests that only list names).
	ZKAgg *activities.ZKAgg
	// ZKPassport runs zkPassport requests' lives (nil likewise).
	ZKPassport *activities.ZKPassport
	// LibraryConcurrency bounds the media library's jobs run at once, on
	// their own queue (media.library.concurrency).
	LibraryConcurrency int
	// ZKVerify runs proof jobs (nil in tests that only list names).
	ZKVerify *activities.ZKVerify
	// ZKEnqueue implements workflows.ActivityZKEnqueue on the proof
	// jobs' queue (nil: not registered here).
	ZKEnqueue any
	// KYC runs KYC proofs (nil in tests that only list names).
	KYC *activities.KYC
}

// Queue is what one task queue's worker runs, by registered name.
type Queue struct {
	Queue      string
	Workflows  map[string]any
	Activities map[string]any
	// MaxActivities bounds the activities run at once (0: the SDK's default).
	MaxActivities int
}

// Registry is every workflow and activity of the platform, by task queue,
// under the names spelled out in package workflows (never Go identifiers:
// renaming a method must not break a running workflow's history).
func Registry(d Deps) []Queue {
	system := &activities.System{Store: d.Store}
	runs := &activities.Runs{Store: d.Store}
	models := &activities.Models{Catalog: d.Catalog, Deltas: d.Deltas}
	pay := &activities.Payments{Store: d.Store, Facilitator: d.Facilitator}
	packs := &activities.Packs{Accounts: &accounts.Service{Store: d.Store}, Store: d.Store}
	payments := map[string]any{workflows.ActSettle: pay.Settle, workflows.ActGrant: pay.Grant}
	mailer := d.Mail
	if mailer == nil {
		mailer = &activities.Mail{Store: d.Store}
	}
	queues := []Queue{
		{Queue: workflows.SystemQueue,
			Workflows:  map[string]any{workflows.WfPing: workflows.Ping, workflows.WfNop: workflows.Nop},
			Activities: map[string]any{workflows.ActRecordPing: system.RecordPing}},
		{Queue: workflows.PipelineQueue,
			Workflows:  map[string]any{workflows.WfPipelineRun: workflows.PipelineRun},
			Activities: map[string]any{workflows.ActOpenRun: runs.Open, workflows.ActGenerate: models.Generate, workflows.ActFinishRun: runs.Finish, workflows.ActFailRun: runs.Fail}},
		{Queue: workflows.PaymentsQueue,
			Workflows:  map[string]any{workflows.WfTopUp: workflows.TopUp, workflows.WfPackPurchase: workflows.PackPurchase},
			Activities: map[string]any{workflows.ActClaimPayment: pay.Claim, workflows.ActSettle: pay.Settle, workflows.ActGrant: pay.Grant, workflows.ActRecordPack: packs.Record}},
		{Queue: workflows.MailQueue,
			Workflows:  map[string]any{workflows.WfMail: workflows.Mail},
			Activities: map[string]any{workflows.ActSendMail: mailer.Send}},
	}
	queues = append(queues, zkQueue(d))
	zk := d.ZKAgg
	if zk == nil {
		zk = &activities.ZKAgg{}
	}
	queues = append(queues, Queue{Queue: workflows.ZKAggregationQueue,
		Workflows: map[string]any{workflows.ZKAggregationWorkflowName: workflows.ZKAggregation},
		Activities: map[string]any{workflows.ActivityZKEnqueue: zk.Enqueue, workflows.ActZKRecordAggregation: zk.Record,
			workflows.ActZKPublishAggregation: zk.Publish}})
	zkp := d.ZKPassport
	if zkp == nil {
		zkp = &activities.ZKPassport{}
	}
	queues = append(queues, Queue{Queue: workflows.ZKPassportQueue,
		Workflows:  map[string]any{workflows.WfZKPassportRequest: workflows.ZKPassportRequest},
		Activities: map[string]any{workflows.ActZKPassportOpen: zkp.Open, workflows.ActZKPassportExpire: zkp.Expire}})
	if r := d.Renders; r != nil {
		// Renders settle payments too, so the settlement activity is on
		// their queue as well. The render activity itself is CPU-heavy
		// (ffmpeg, the synthesizer): its own queue, at most
		// RenderConcurrency at once, so settlements and bookkeeping never
		// wait behind renders.
		short := map[string]any{
			workflows.ActOpenPaid: r.OpenPaid, workflows.ActCreditPayment: r.CreditPayment, workflows.ActOpenRetry: r.OpenRetry,
			workflows.ActMarkLate: r.MarkLate, workflows.ActFinishRender: r.Finish,
		}
		for name, fn := range payments {
			short[name] = fn
		}
		wfs := map[string]any{workflows.WfRender: workflows.Render}
		work := map[string]any{workflows.ActRender: r.Render}
		// The media library's jobs' short steps run beside the renders';
		// generation nodes' renders within the same bound as pay-per-call
		// renders. The jobs' ffmpeg work has its own queue and slots, so
		// however many jobs are queued, no render waits behind them (it
		// stays registered on the render work queue for jobs admitted
		// before, which were scheduled there).
		var library map[string]any
		if l := d.Library; l != nil {
			wfs[workflows.WfMediaEdit] = workflows.MediaEdit
			short[workflows.ActOpenMediaJob], short[workflows.ActFinishMediaJob] = l.OpenMediaJob, l.FinishMediaJob
			work[workflows.ActGenerateMedia], work[workflows.ActRunMediaJob] = l.GenerateMedia, l.RunMediaJob
			library = map[string]any{workflows.ActRunMediaJob: l.RunMediaJob}
		}
		queues = append(queues,
			Queue{Queue: workflows.RenderQueue, Workflows: wfs, Activities: short},
			Queue{Queue: workflows.RenderWorkQueue, Activities: work, MaxActivities: max(1, d.RenderConcurrency)},
		)
		if library != nil {
			queues = append(queues, Queue{Queue: workflows.LibraryWorkQueue, Activities: library, MaxActivities: max(1, d.LibraryConcurrency)})
		}
	}
	if e := d.Enclaves; e != nil {
		queues = append(queues, Queue{Queue: workflows.EnclaveQueue,
			Workflows: map[string]any{workflows.WfEnclave: workflows.Enclave},
			Activities: map[string]any{
				workflows.ActEnclaveProject: e.Project, workflows.ActEnclavePrepare: e.Prepare, workflows.ActEnclaveDeploy: e.Deploy,
				workflows.ActEnclavePause: e.Pause, workflows.ActEnclaveResume: e.Resume, workflows.ActEnclaveTerminate: e.Terminate,
				workflows.ActEnclaveCopyLogs: e.CopyLogs, workflows.ActEnclaveWatch: e.Watch, workflows.ActEnclaveBuild: e.Build,
				workflows.ActEnclaveAttest: e.Attest, workflows.ActEnclaveSign: e.Sign, workflows.ActEnclaveOpen: e.Open,
			}})
		// Scheduled tasks run against enclaves: their runs on their own
		// queue, the sync with the enclave on the enclave's.
		t := d.Tasks
		if t == nil {
			t = &activities.Tasks{}
		}
		m := d.Metering
		if m == nil {
			m = &activities.Metering{}
		}
		queues[len(queues)-1].Activities[workflows.ActEnclaveSyncTasks] = t.SyncEnclave
		queues[len(queues)-1].Activities[workflows.ActEnclaveMeter] = m.MeterEnclave
		queues = append(queues, Queue{Queue: workflows.TaskQueue,
			Workflows: map[string]any{workflows.WfTaskRun: workflows.TaskRun, workflows.WfTaskAdmit: workflows.TaskAdmit},
			Activities: map[string]any{workflows.ActTaskCall: t.Call, workflows.ActTaskRecord: t.Record,
				workflows.ActTaskOpen: t.Open, workflows.ActTaskSchedule: t.Schedule, workflows.ActTaskWithdraw: t.Withdraw,
				workflows.ActTaskHold: m.HoldFiring, workflows.ActTaskSettle: m.SettleFiring}})
	}
	return queues
}

// zkQueue is the proof jobs' and KYC proofs' queue (docs/proofs.md).
func zkQueue(d Deps) Queue {
	z := d.ZKVerify
	if z == nil {
		z = &activities.ZKVerify{}
	}
	k := d.KYC
	if k == nil {
		k = &activities.KYC{}
	}
	q := Queue{Queue: workflows.ZKQueue,
		Workflows: map[string]any{workflows.ZKJobWorkflowName: workflows.ZKProofJob, workflows.WfKYCProof: workflows.KYCProof},
		Activities: map[string]any{
			workflows.ActZKOpenJob: z.OpenZKJob, workflows.ActZKVerifyGroth16: z.VerifyGroth16, workflows.ActZKSubmitRecord: z.SubmitRecord,
			workflows.ActZKAwaitInclusion: z.AwaitInclusion, workflows.ActZKConfirmFinal: z.ConfirmFinal, workflows.ActZKCloseJob: z.CloseZKJob, workflows.ActZKMarkJob: z.MarkZKJob,
			workflows.ActZKRelaySubmit: z.RelaySubmit, workflows.ActZKRelayStatus: z.RelayStatus,
			workflows.ActKYCOpen: k.OpenKYCProof, workflows.ActKYCRecord: k.RecordKYCProof, workflows.ActKYCConfirm: k.ConfirmKYCProof,
			workflows.ActKYCExpire: k.ExpireKYCProof,
		}}
	// A job schedules ActivityZKEnqueue on its own queue: the
	// aggregation's Enqueue runs it (a test may stand in for it).
	q.Activities[workflows.ActivityZKEnqueue] = d.ZKEnqueue
	if d.ZKEnqueue == nil {
		agg := d.ZKAgg
		if agg == nil {
			agg = &activities.ZKAgg{}
		}
		q.Activities[workflows.ActivityZKEnqueue] = agg.Enqueue
	}
	return q
}

// Workflows is every workflow of the platform by registered name, whatever
// the configuration turns on: the replay suite (workflows/replay_test.go)
// replays recorded histories with it and requires a history of each, so a
// new workflow cannot be left out.
func Workflows() map[string]any {
	all := map[string]any{}
	for _, q := range Registry(Deps{Renders: &activities.Renders{}, Library: &activities.Library{}, Enclaves: &activities.Enclaves{}}) {
		maps.Copy(all, q.Workflows)
	}
	return all
}

// Worker polls every task queue of the platform.
type Worker struct {
	workers []sdkworker.Worker
}

// New registers everything; call Start to begin polling.
func New(c client.Client, d Deps) *Worker {
	// Every worker sorts activity errors the same way and drains what it
	// runs on stop.
	opts := sdkworker.Options{
		Interceptors:                     []interceptor.WorkerInterceptor{activities.Interceptor()},
		WorkerStopTimeout:                d.StopTimeout,
		MaxConcurrentWorkflowTaskPollers: max(2, d.Pollers),
		MaxConcurrentActivityTaskPollers: max(1, d.Pollers),
	}

	reg := Registry(d)
	var workers []sdkworker.Worker
	for _, q := range reg {
		qo := opts
		if q.MaxActivities > 0 {
			qo.MaxConcurrentActivityExecutionSize = q.MaxActivities
		}
		qo.DisableWorkflowWorker = len(q.Workflows) == 0
		w := sdkworker.New(c, q.Queue, qo)
		for name, fn := range q.Workflows {
			w.RegisterWorkflowWithOptions(fn, workflow.RegisterOptions{Name: name})
		}
		for name, fn := range q.Activities {
			w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
		}
		workers = append(workers, w)
	}
	return &Worker{workers: workers}
}

// Start begins polling on every queue.
func (w *Worker) Start() error {
	for i, wk := range w.workers {
		if err := wk.Start(); err != nil {
			for _, started := range w.workers[:i] {
				started.Stop()
			}
			return errors.Join(errors.New("worker could not start"), err)
		}
	}
	return nil
}

// Stop drains in-flight tasks and stops polling.
func (w *Worker) Stop() {
	for _, wk := range w.workers {
		wk.Stop()
	}
}
