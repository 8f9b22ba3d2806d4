package app

import (
	"context"
	"flag"
	"fmt"
	"time"

	"conduit/activities"
	"conduit/internal/pricing"
	"conduit/internal/store"
	"conduit/internal/tasks"
	"conduit/internal/tasks/schedules"
	"conduit/internal/temporalx"
	"conduit/workflows"
)

// Schedules is the task schedules' service on this platform.
func (p *Platform) Schedules() *schedules.Service {
	return &schedules.Service{Store: p.Store, Temporal: p.Temporal, Workflow: workflows.WfTaskRun, Queue: workflows.TaskQueue}
}

// taskActivities are the scheduled tasks' activities; tasks run on
// enclaves, so they exist while enclaves are on.
func (p *Platform) taskActivities(encl *activities.Enclaves) *activities.Tasks {
	if encl == nil {
		return nil
	}
	return &activities.Tasks{Store: p.Store, Schedules: p.Schedules()}
}

// metering charges task firings and enclave uptime at the configured
// prices (checked by Validate at start-up); with enclaves only.
func (p *Platform) metering(encl *activities.Enclaves) *activities.Metering {
	if encl == nil {
		return nil
	}
	enclaveMinute, firing, _ := p.Config.Metering.Prices()
	return &activities.Metering{Store: p.Store, Schedules: p.Schedules(), Prices: pricing.Metering{EnclaveMinute: enclaveMinute, TaskFiring: firing}}
}

// taskCommand: `task trigger <id>` and `task backfill <id> -from -to`,
// for operators (docs/tasks.md). They need the database and Temporal.
func taskCommand() Command {
	return Command{
		Summary: "task trigger <id> | task backfill <id> -from RFC3339 -to RFC3339 [-overlap buffer_all]",
		Run: func(ctx context.Context, env *Env, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("task needs a subcommand: trigger or backfill")
			}
			if env.Config.Database.URL == "" {
				return fmt.Errorf("database.url (CONDUIT_DATABASE_URL or DATABASE_URL) is required")
			}
			st, err := store.Open(ctx, env.Config.Database.URL, 2, env.Log)
			if err != nil {
				return err
			}
			defer st.Close()
			t := env.Config.Temporal
			tc, err := temporalx.Connect(ctx, t, env.Log)
			if err != nil {
				return err
			}
			defer tc.Close()
			svc := &schedules.Service{Store: st, Temporal: tc, Workflow: workflows.WfTaskRun, Queue: workflows.TaskQueue}
			return RunTaskCommand(ctx, svc, env, args)
		},
	}
}

// RunTaskCommand runs a task subcommand on svc (the tests call it on
// their platform's).
func RunTaskCommand(ctx context.Context, svc *schedules.Service, env *Env, args []string) error {
	sub, rest := args[0], args[1:]
	fs := flag.NewFlagSet("task "+sub, flag.ContinueOnError)
	var from, to, overlap *string
	switch sub {
	case "trigger":
		overlap = fs.String("overlap", "", "overlap policy for this run (default: the task's)")
	case "backfill":
		from = fs.String("from", "", "start of the range, RFC 3339 (required)")
		to = fs.String("to", "", "end of the range, RFC 3339, exclusive (required)")
		overlap = fs.String("overlap", "buffer_all", "overlap policy of the backfilled runs")
	default:
		return fmt.Errorf("unknown task subcommand %q (trigger, backfill)", sub)
	}
	// The id comes first, the flags after it.
	if len(rest) == 0 || rest[0] == "" || rest[0][0] == '-' {
		return fmt.Errorf("task %s needs the task id first: task %s <id> …", sub, sub)
	}
	id := rest[0]
	if err := fs.Parse(rest[1:]); err != nil {
		return err
	}
	t, err := svc.Store.Task(ctx, id)
	if err != nil || t.Deleted {
		return fmt.Errorf("task %q does not exist", id)
	}
	if sub == "trigger" {
		if err := svc.Trigger(ctx, t, *overlap); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "task %s triggered; its run is listed at /api/tasks/%s/runs\n", id, id)
		return nil
	}
	f, err := time.Parse(time.RFC3339, *from)
	if err != nil {
		return fmt.Errorf("-from must be an RFC 3339 time (2026-11-23T00:00:00Z): %q", *from)
	}
	u, err := time.Parse(time.RFC3339, *to)
	if err != nil {
		return fmt.Errorf("-to must be an RFC 3339 time (2026-11-23T06:00:00Z): %q", *to)
	}
	if _, err := tasks.ParseSchedule(t.Schedule); err != nil {
		return err
	}
	if err := svc.Backfill(ctx, id, f, u, *overlap); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "task %s: the firings of %q in [%s, %s) are started (overlap %s); they run once each\n", id, t.Schedule, f.Format(time.RFC3339), u.Format(time.RFC3339), *overlap)
	return nil
}
