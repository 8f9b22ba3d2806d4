package workflows

// Workflow and activity names are written into every workflow history, so
// they are spelled out here instead of derived from Go identifiers:
// renaming a function or method cannot break a running workflow. The
// worker registers everything under these names, and a test in package
// worker pins the list; the replay suite (testdata/histories) checks that
// recorded histories still replay.
const (
	WfPing        = "Ping"
	WfNop         = "Nop"
	WfPipelineRun = "PipelineRun"
	WfTopUp       = "TopUp"
	WfRender      = "Render"
	WfMediaEdit   = "MediaEdit"
	WfEnclave     = "Enclave"
	// WfPackPurchase grants a credit pack bought by card (pack/<session>).
	WfPackPurchase = "PackPurchase"
	WfTaskRun      = "TaskRun"
	// WfTaskAdmit creates a task: its record, then its schedule
	// (task_admit.go).
	WfTaskAdmit = "TaskAdmit"
	// WfMail delivers one outbox message (mail/<id>, mail.go).
	WfMail = "Mail"

	ActRecordPing = "RecordPing"
	ActOpenRun    = "OpenRun"
	ActGenerate   = "Generate"
	ActFinishRun  = "FinishRun"
	ActFailRun    = "FailRun"
	ActSettle     = "Settle"
	// ActClaimPayment records a top-up's payment intent (Payments.Claim).
	ActClaimPayment  = "ClaimPayment"
	ActGrant         = "Grant"
	ActOpenPaid      = "OpenPaidRender"
	ActCreditPayment = "CreditPayment"
	ActOpenRetry     = "OpenRetry"
	ActMarkLate      = "MarkLate"
	ActFinishRender  = "FinishRender"
	ActRender        = "Render"

	// The media library: generation nodes' renders (on the render work
	// queue, beside pay-per-call renders), and the steps of media-edit jobs.
	ActGenerateMedia  = "GenerateMedia"
	ActOpenMediaJob   = "OpenMediaJob"
	ActRunMediaJob    = "RunMediaJob"
	ActFinishMediaJob = "FinishMediaJob"
	ActEnclaveProject = "EnclaveProject"
	// ActEnclaveOpen writes the record: the lifecycle's admission step
	// (activities.Enclaves.Open).
	ActEnclaveOpen      = "EnclaveOpen"
	ActEnclavePrepare   = "EnclavePrepare"
	ActEnclaveDeploy    = "EnclaveDeploy"
	ActEnclavePause     = "EnclavePause"
	ActEnclaveResume    = "EnclaveResume"
	ActEnclaveTerminate = "EnclaveTerminate"
	ActEnclaveCopyLogs  = "EnclaveCopyLogs"
	ActEnclaveWatch     = "EnclaveWatch"
	ActEnclaveBuild     = "EnclaveBuild"

	// ActRecordPack grants a card-bought pack once per checkout.
	ActRecordPack       = "RecordPack"
	ActEnclaveSyncTasks = "EnclaveSyncTasks"

	// Scheduled tasks: the call into the enclave and the run's record.
	ActTaskCall   = "TaskCall"
	ActTaskRecord = "TaskRecord"
	// A task's admission: its record (activities.Tasks.Open), its schedule
	// (Tasks.Schedule), and the record's removal when the schedule cannot
	// be made (Tasks.Withdraw).
	ActTaskOpen      = "TaskOpen"
	ActTaskSchedule  = "TaskSchedule"
	ActTaskWithdraw  = "TaskWithdraw"
	ActEnclaveAttest = "EnclaveAttest"
	ActEnclaveSign   = "EnclaveSign"

	// Metering (activities.Metering): a firing's hold and its settlement,
	// and a period of an enclave's uptime.
	ActTaskHold     = "TaskHold"
	ActTaskSettle   = "TaskSettle"
	ActEnclaveMeter = "EnclaveMeter"
	// ActSendMail delivers an outbox message (activities.Mail.Send).
	ActSendMail = "SendMail"
)

// Change ids of workflow.GetVersion (docs/operations.md: changing a
// workflow). Like the names above they are written into histories, so they
// live here, each beside the workflow it versions, and a test pins them
// with their current versions. A new change adds a constant here and a row
// to that test; an old one is never renamed or reused.
const (
	// ChangeAdmissionInWorkflow (PipelineRun): version 1, the run admits
	// itself (Update-with-Start, OpenRun writes the row and its hold);
	// version 2, an unkeyed run is admitted only within AnswerWithin.
	ChangeAdmissionInWorkflow = "admission-in-workflow"
	// ChangeEnclaveResumableSteps (Enclave): provisioning steps retry with
	// backoff until they succeed, fail permanently or give up, can be
	// retried now, and the running instance is watched (an exited
	// application fails the enclave, a lost one is started again).
	ChangeEnclaveResumableSteps = "enclave-resumable-steps"
	// ChangeGitHubBuild (Enclave): github sources are built before
	// deployment (registry sources never reach it).
	ChangeGitHubBuild = "enclave-github-build"
	// ChangeEnclaveSyncTasks (Enclave): the enclave tells its
	// tasks' schedules when it pauses, resumes or ends.
	ChangeEnclaveSyncTasks = "enclave-sync-tasks"
	// ChangeEnclaveAdmission (Enclave): the lifecycle admits itself
	// (Update-with-Start); its first step, a local activity, writes the
	// record, so no record exists without its workflow.
	ChangeEnclaveAdmission = "enclave-admission"
	// ChangeTopUpAdmission (TopUp): answered from its admission update
	// (Update-with-Start); the payment's intent is recorded first and the
	// grant made by local activities, only the settlement an activity.
	ChangeTopUpAdmission = "topup-admission"
	// ChangeRenderLocalSteps (Render): the short database steps (open the
	// run or the retry, credit a payment back, mark late, record the
	// outcome) are local activities.
	ChangeRenderLocalSteps = "render-local-steps"
	// ChangeDataflow (PipelineRun): each node starts as soon as its inputs
	// are ready instead of layer by layer.
	ChangeDataflow = "pipeline-dataflow"
	// ChangeMeteredMediaJobs (MediaEdit): the work runs on the library's
	// own queue (LibraryWorkQueue) and the job is charged by the seconds
	// of media it made (its Rate), or, when it reached its timeout, by
	// the seconds its heartbeats reported encoded; a job that carries no
	// Rate keeps its flat price.
	ChangeMeteredMediaJobs = "metered-media-jobs"
	// ChangeRedactGuardrail (PipelineRun): a guardrail's pii rule uses
	// internal/redact (names, addresses, validated numbers, …); runs
	// recorded before keep the first patterns (graph.EvalOptions).
	ChangeRedactGuardrail = "redact-guardrail"
	// ChangeRedactNames (PipelineRun): the pii rule uses the detector's
	// rule set 2 (redact.Rules2: the NAME context rules, mailto:
	// addresses); runs recorded before keep rule set 1.
	ChangeRedactNames = "redact-names"
	// ChangeTaskMetering (TaskRun): a firing's price is held before its
	// call (a balance that cannot cover it skips the call) and captured
	// after it, released when the call was skipped.
	ChangeTaskMetering = "task-metering"
	// ChangeEnclaveMetering (Enclave): each started period of a DEPLOYED
	// enclave's uptime is charged; a balance that cannot cover it pauses
	// the enclave with the reason in its log.
	ChangeEnclaveMetering = "enclave-metering"
	// ChangeTopUpLocalSettle (TopUp): the settlement is a local activity
	// too (it records the intent itself, so no separate claim step): the
	// top-up is one workflow task, with no round trip through matching.
	ChangeTopUpLocalSettle = "topup-local-settle"
	// ChangeZKStatusInRow: a proof job writes its state into its row at
	// each transition, so a status read is a row read, not a query. Each
	// query is a task for the queue's workflow pollers: 16 callers reading
	// every 5 ms held a new job's first workflow task back by a second.
	ChangeZKStatusInRow = "zk-status-in-row"
)
