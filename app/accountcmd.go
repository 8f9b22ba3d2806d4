package app

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"conduit/internal/accounts"
	"conduit/internal/apikey"
	"conduit/internal/money"
	"conduit/internal/store"
)

// accountCommand: `account create` and `account pack`, for operators and
// scripts. They need only the database.
func accountCommand() Command {
	return Command{
		Summary: "account create -name N [-permissions a,b] | account pack -account ID -paid 50 -reference REF",
		Run: func(ctx context.Context, env *Env, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("account needs a subcommand: create or pack")
			}
			if env.Config.Database.URL == "" {
				return fmt.Errorf("database.url (CONDUIT_DATABASE_URL or DATABASE_URL) is required")
			}
			st, err := store.Open(ctx, env.Config.Database.URL, 2, env.Log)
			if err != nil {
				return err
			}
			defer st.Close()
			svc := &accounts.Service{Store: st}
			switch args[0] {
			case "create":
				return createAccount(ctx, svc, env.Stdout, args[1:])
			case "pack":
				return recordPack(ctx, svc, env.Stdout, args[1:])
			default:
				return fmt.Errorf("unknown account subcommand %q (create, pack)", args[0])
			}
		},
	}
}

func createAccount(ctx context.Context, svc *accounts.Service, out io.Writer, args []string) error {
	fs := flag.NewFlagSet("account create", flag.ContinueOnError)
	name := fs.String("name", "", "account name (required)")
	perms := fs.String("permissions", strings.Join(apikey.AllScopes(), ","), "comma-separated scopes of the first key")
	if err := fs.Parse(args); err != nil {
		return err
	}
	acct, err := svc.CreateAccount(ctx, *name)
	if err != nil {
		return err
	}
	key, plain, err := svc.CreateKey(ctx, acct.ID, accounts.KeyRequest{Name: "created by CLI", Permissions: strings.Split(*perms, ",")})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "account %s (%s), balance %s USD\nkey %s: %s\n", acct.ID, acct.Name, acct.Balance, key.ID, plain)
	return nil
}

func recordPack(ctx context.Context, svc *accounts.Service, out io.Writer, args []string) error {
	fs := flag.NewFlagSet("account pack", flag.ContinueOnError)
	account := fs.String("account", "", "account id (required)")
	paid := fs.String("paid", "", "pack price paid in USD: 10, 25 or 50 (required)")
	ref := fs.String("reference", "", "payment reference; recording it again grants nothing (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	amount, err := money.ParseUSD(*paid)
	if err != nil {
		return err
	}
	res, err := svc.RecordPack(ctx, *account, amount, *ref)
	if err != nil {
		return err
	}
	dup := ""
	if res.Duplicate {
		dup = " (already recorded; nothing granted)"
	}
	fmt.Fprintf(out, "pack recorded%s; balance %s USD\n", dup, res.Balance)
	return nil
}
