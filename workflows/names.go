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
)
