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
	WfEnclave     = "Enclave"

	ActRecordPing    = "RecordPing"
	ActOpenRun       = "OpenRun"
	ActGenerate      = "Generate"
	ActFinishRun     = "FinishRun"
	ActFailRun       = "FailRun"
	ActSettle        = "Settle"
	ActGrant         = "Grant"
	ActOpenPaid      = "OpenPaidRender"
	ActCreditPayment = "CreditPayment"
	ActOpenRetry     = "OpenRetry"
	ActMarkLate      = "MarkLate"
	ActFinishRender  = "FinishRender"
	ActRender        = "Render"

	ActEnclaveProject   = "EnclaveProject"
	ActEnclavePrepare   = "EnclavePrepare"
	ActEnclaveDeploy    = "EnclaveDeploy"
	ActEnclavePause     = "EnclavePause"
	ActEnclaveResume    = "EnclaveResume"
	ActEnclaveTerminate = "EnclaveTerminate"
	ActEnclaveCopyLogs  = "EnclaveCopyLogs"
)
