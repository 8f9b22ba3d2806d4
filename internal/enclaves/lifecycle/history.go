package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"conduit/internal/enclaves"
	"conduit/workflows"
)

// bookkeeping are the lifecycle's own activities (the record's projection,
// copying output, watching the instance): they run every few seconds and
// say nothing about the enclave, so the history log leaves them out, as it
// leaves out workflow tasks and timers.
var bookkeeping = map[string]bool{
	workflows.ActEnclaveProject: true, workflows.ActEnclaveCopyLogs: true, workflows.ActEnclaveWatch: true,
}

// History is the stepfunctions log of an enclave: the events of its
// lifecycle workflow's current run, read from Temporal, as log entries
// (oldest first) — steps scheduled, started, succeeded, failed or
// retried, updates asked and answered, state changes. A lifecycle that no
// longer exists in Temporal (past the namespace's retention) has none.
func History(ctx context.Context, c client.Client, id string) ([]enclaves.LogEntry, error) {
	wid := workflows.EnclaveWorkflowID(id)
	iter := c.GetWorkflowHistory(ctx, wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]string{}
	updates := map[string]string{}
	var out []enclaves.LogEntry
	for iter.HasNext() {
		ev, err := iter.Next()
		var missing *serviceerror.NotFound
		if errors.As(err, &missing) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the history of %s: %w", wid, err)
		}
		msg := describe(ev, scheduled, updates)
		if msg == "" {
			continue
		}
		out = append(out, enclaves.LogEntry{
			Timestamp: ev.GetEventTime().AsTime(), Message: msg,
			Source: fmt.Sprintf("temporal:%s#%d", wid, ev.GetEventId()),
			Stream: strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_"),
			Type:   "stepfunctions", LogGroup: enclaves.LogGroup(id, "stepfunctions"),
		})
	}
	return out, nil
}

// describe says what an event means for the enclave ("" for noise).
func describe(ev *historypb.HistoryEvent, scheduled map[int64]string, updates map[string]string) string {
	step := func(scheduledID int64) (string, bool) {
		name := scheduled[scheduledID]
		return name, name != "" && !bookkeeping[name]
	}
	switch a := ev.GetAttributes().(type) {
	case *historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes:
		if a.WorkflowExecutionStartedEventAttributes.GetContinuedExecutionRunId() != "" {
			return "lifecycle continued in a new run"
		}
		return "lifecycle started"
	case *historypb.HistoryEvent_ActivityTaskScheduledEventAttributes:
		name := a.ActivityTaskScheduledEventAttributes.GetActivityType().GetName()
		scheduled[ev.GetEventId()] = name
		if bookkeeping[name] {
			return ""
		}
		return "step " + name + " scheduled"
	case *historypb.HistoryEvent_ActivityTaskStartedEventAttributes:
		at := a.ActivityTaskStartedEventAttributes
		if name, ok := step(at.GetScheduledEventId()); ok {
			if f := at.GetLastFailure(); f != nil && at.GetAttempt() > 1 {
				return fmt.Sprintf("step %s started (attempt %d, after: %s)", name, at.GetAttempt(), f.GetMessage())
			}
			return fmt.Sprintf("step %s started (attempt %d)", name, at.GetAttempt())
		}
	case *historypb.HistoryEvent_ActivityTaskCompletedEventAttributes:
		if name, ok := step(a.ActivityTaskCompletedEventAttributes.GetScheduledEventId()); ok {
			return "step " + name + " succeeded"
		}
	case *historypb.HistoryEvent_ActivityTaskFailedEventAttributes:
		if name, ok := step(a.ActivityTaskFailedEventAttributes.GetScheduledEventId()); ok {
			return "step " + name + " failed: " + a.ActivityTaskFailedEventAttributes.GetFailure().GetMessage()
		}
	case *historypb.HistoryEvent_ActivityTaskTimedOutEventAttributes:
		if name, ok := step(a.ActivityTaskTimedOutEventAttributes.GetScheduledEventId()); ok {
			return "step " + name + " timed out: " + a.ActivityTaskTimedOutEventAttributes.GetFailure().GetMessage()
		}
	case *historypb.HistoryEvent_ActivityTaskCanceledEventAttributes:
		if name, ok := step(a.ActivityTaskCanceledEventAttributes.GetScheduledEventId()); ok {
			return "step " + name + " cancelled"
		}
	case *historypb.HistoryEvent_WorkflowExecutionUpdateAcceptedEventAttributes:
		at := a.WorkflowExecutionUpdateAcceptedEventAttributes
		name := at.GetAcceptedRequest().GetInput().GetName()
		updates[at.GetProtocolInstanceId()] = name
		return "request " + name + " accepted"
	case *historypb.HistoryEvent_WorkflowExecutionUpdateCompletedEventAttributes:
		at := a.WorkflowExecutionUpdateCompletedEventAttributes
		name := updates[at.GetMeta().GetUpdateId()]
		if name == "" {
			name = "update"
		}
		if f := at.GetOutcome().GetFailure(); f != nil {
			return "request " + name + " failed: " + f.GetMessage()
		}
		return "request " + name + " done"
	case *historypb.HistoryEvent_UpsertWorkflowSearchAttributesEventAttributes:
		var st string
		attr(a.UpsertWorkflowSearchAttributesEventAttributes.GetSearchAttributes().GetIndexedFields(), workflows.AttrEnclaveStatus.GetName(), &st)
		if st != "" {
			return "state " + st
		}
	case *historypb.HistoryEvent_WorkflowExecutionCompletedEventAttributes:
		return "lifecycle ended"
	case *historypb.HistoryEvent_WorkflowExecutionFailedEventAttributes:
		return "lifecycle failed: " + a.WorkflowExecutionFailedEventAttributes.GetFailure().GetMessage()
	case *historypb.HistoryEvent_WorkflowExecutionTerminatedEventAttributes:
		return "lifecycle terminated by an operator: " + a.WorkflowExecutionTerminatedEventAttributes.GetReason()
	case *historypb.HistoryEvent_WorkflowExecutionContinuedAsNewEventAttributes:
		return "lifecycle continues in a new run"
	}
	return ""
}
