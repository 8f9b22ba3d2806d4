package app

import (
	"context"
	"fmt"

	"conduit/internal/redactlog"
	"conduit/internal/store"
	"conduit/internal/vault"
)

// redactionCommand: the auditor's and the operator's tools for the
// redaction audit log and the vault (docs/redaction-proxies.md).
func redactionCommand() Command {
	return Command{
		Summary: "redaction verify <account id> | redaction rewrap",
		Run: func(ctx context.Context, env *Env, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("redaction needs a subcommand: verify or rewrap")
			}
			st, err := store.Open(ctx, env.Config.Database.URL, 2, env.Log)
			if err != nil {
				return err
			}
			defer st.Close()
			switch args[0] {
			case "verify":
				if len(args) != 2 {
					return fmt.Errorf("usage: redaction verify <account id>")
				}
				v, err := (&redactlog.Service{Store: st}).Verify(ctx, args[1])
				if err != nil {
					return err
				}
				if !v.Valid {
					return fmt.Errorf("the audit chain of %s is broken at entry %d: %s", args[1], v.BrokenAt, v.Reason)
				}
				fmt.Fprintf(env.Stdout, "the audit chain of %s verifies: %d entries, head %s\n", args[1], v.Entries, v.Head)
				return nil
			case "rewrap":
				m, err := vault.NewMaster(env.Config.VaultKeys())
				if err != nil {
					return fmt.Errorf("redaction.keys (CONDUIT_REDACTION_KEYS): %w", err)
				}
				n, err := (&vault.Service{Store: st, Master: m}).Rewrap(ctx)
				if err != nil {
					return fmt.Errorf("rewrapping stopped after %d keys (run it again): %w", n, err)
				}
				fmt.Fprintf(env.Stdout, "%d keys rewrapped under the primary vault key\n", n)
				return nil
			}
			return fmt.Errorf("unknown subcommand %q: verify or rewrap", args[0])
		},
	}
}
