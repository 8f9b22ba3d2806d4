package app

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"conduit/internal/enclaves/lifecycle"
	"conduit/internal/logging"
	"conduit/internal/temporalx"
	"conduit/workflows"
)

// enclaveCommand: the SRE's tools for enclave lifecycles (the runbook is
// docs/operations.md). They talk to Temporal only, through the enclave
// service the admin API uses (without its store).
func enclaveCommand() Command {
	return Command{
		Summary: "enclave stuck [-for 10m] [-json] | enclave resume <id> | enclave push <image.tar|dir> <ref>",
		Help: `stuck lists enclaves building or deploying for longer than -for, with the step each waits on,
its attempt, next attempt and last failure; resume runs an enclave's waiting step now.
Both talk to Temporal only (docs/operations.md, "Runbook: an enclave stuck building or deploying"):
  CONDUIT_TEMPORAL_ADDRESS      temporal.address, host:port of the Temporal frontend
  CONDUIT_TEMPORAL_NAMESPACE    temporal.namespace (default "default")
  CONDUIT_TEMPORAL_CODEC_KEYS   temporal.codec_keys, the platform's payload codec keys (resume
                                reads a sealed answer; without them it refuses before acting)
push uploads an image (a docker save tarball or an OCI layout directory) to a registry, e.g. the
dev command's: conduit enclave push app.tar 127.0.0.1:5050/app:1 (registry credentials from the
docker config, as docker and crane read them; loopback registries over plain HTTP).`,
		Run: func(ctx context.Context, env *Env, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("enclave needs a subcommand: stuck, resume or push")
			}
			if args[0] == "push" {
				// A registry client, not an operator tool: no Temporal.
				if len(args) != 3 {
					return fmt.Errorf("usage: enclave push <image.tar | oci-layout-dir> <registry/repository:tag>")
				}
				digest, err := pushImage(ctx, args[1], args[2])
				if err != nil {
					return err
				}
				fmt.Fprintf(env.Stdout, "pushed %s@%s\n", args[2], digest)
				return nil
			}
			if env.Config.Temporal.Address == "" {
				return fmt.Errorf("temporal.address (CONDUIT_TEMPORAL_ADDRESS or TEMPORAL_ADDRESS) is required: the dev command prints its Temporal address in its banner")
			}
			tc, err := temporalx.Connect(ctx, env.Config.Temporal, env.Log)
			if err != nil {
				return err
			}
			defer tc.Close()
			// The service logs a failure's detail (here to the CLI's log)
			// and answers with its sentence.
			if env.Log != nil {
				ctx = logging.With(ctx, env.Log)
			}
			svc := &lifecycle.Service{Temporal: tc, Namespace: env.Config.Temporal.Namespace}
			switch args[0] {
			case "stuck":
				fs := flag.NewFlagSet("enclave stuck", flag.ContinueOnError)
				d := fs.Duration("for", 10*time.Minute, "list enclaves building or deploying for longer than this")
				asJSON := fs.Bool("json", false, "print JSON")
				if err := fs.Parse(args[1:]); err != nil {
					return err
				}
				list, err := svc.Stuck(ctx, *d)
				if err != nil {
					return err
				}
				if *asJSON {
					return json.NewEncoder(env.Stdout).Encode(list)
				}
				return printStuck(env, list, *d)
			case "resume":
				if len(args) != 2 {
					return fmt.Errorf("usage: enclave resume <enclave id>")
				}
				// Its answer is a sealed payload: say what is missing before
				// retrying, not after (a retry that worked reported as failed).
				if err := temporalx.RequireCodec(ctx, tc, workflows.EnclaveWorkflowID(args[1]), env.Config.Temporal.CodecKeys); err != nil {
					return err
				}
				st, err := svc.RetryNow(ctx, args[1])
				if errors.Is(err, lifecycle.ErrEnded) {
					return fmt.Errorf("enclave %s has no running lifecycle (it ended or does not exist)", args[1])
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(env.Stdout, "%s: %s retried now (status %s); follow it with GET /api/enclaves/%s or the workflow enclave/%s in the Temporal UI\n",
					args[1], st.Waiting, st.Status, args[1], args[1])
				return nil
			default:
				return fmt.Errorf("unknown enclave subcommand %q (stuck, resume)", args[0])
			}
		},
	}
}

func printStuck(env *Env, list []lifecycle.Stuck, d time.Duration) error {
	if len(list) == 0 {
		fmt.Fprintf(env.Stdout, "no enclave has been building or deploying for more than %s\n", d)
		return nil
	}
	w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ENCLAVE\tACCOUNT\tSTATUS\tFOR\tSTEP\tATTEMPT\tNEXT ATTEMPT\tLAST FAILURE")
	for _, s := range list {
		next := "-"
		if !s.NextAttempt.IsZero() {
			next = time.Until(s.NextAttempt).Round(time.Second).String()
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", s.ID, s.Account, s.Status,
			time.Since(s.Since).Round(time.Second), s.Step, s.Attempt, next, s.LastFailure)
	}
	return w.Flush()
}
