package app

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"conduit/internal/accounts"
	"conduit/internal/apikey"
	"conduit/internal/humans"
	"conduit/internal/money"
	"conduit/internal/store"
)

// accountCommand: `account create` and `account pack`, for operators and
// scripts. They need only the database.
func accountCommand() Command {
	return Command{
		Summary: "account create -name N [-permissions a,b] [-email E] [-verified] | account pack -account ID -paid 50 -reference REF",
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
			// No Temporal client here: the messages a sign-up writes are
			// delivered by the worker's outbox sweep.
			svc := &accounts.Service{Store: st, BaseURL: env.Config.BaseURL()}
			svc.VerifyLinks, svc.SignUpOff = verifyLinks(env.Config)
			switch args[0] {
			case "create":
				return createAccount(ctx, svc, &humans.Service{Store: st, Accounts: svc}, env, args[1:])
			case "pack":
				return recordPack(ctx, svc, env.Stdout, args[1:])
			default:
				return fmt.Errorf("unknown account subcommand %q (create, pack)", args[0])
			}
		},
	}
}

// PasswordEnv names the environment variable `account create -email`
// reads the new login's password from; without it the password is read
// from standard input. Never a flag: a flag's value stays in the shell's
// history and in every process listing.
const PasswordEnv = "CONDUIT_ACCOUNT_PASSWORD"

func createAccount(ctx context.Context, svc *accounts.Service, people *humans.Service, env *Env, args []string) error {
	fs := flag.NewFlagSet("account create", flag.ContinueOnError)
	name := fs.String("name", "", "account name (required)")
	perms := fs.String("permissions", strings.Join(apikey.AllScopes(), ","), "comma-separated scopes of the first key (and of what the login may grant)")
	email := fs.String("email", "", "also give the account an email sign-in; the password comes from "+PasswordEnv+" or standard input")
	verified := fs.Bool("verified", false, "the operator vouches for the account: its email counts as verified and the free credit is granted now "+
		"(without it, -email mails a verification link and the credit waits for it; without -email there is no credit)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Everything is checked before the account exists, so a bad email or
	// password leaves nothing behind; with -email the account and its login
	// are opened together (humans.OpenAccount, the dashboard's sign-up).
	var acct store.Account
	var login *store.Login
	if *email != "" {
		if _, err := humans.NormalizeEmail(*email); err != nil {
			return err
		}
		if !*verified && svc.VerifyLinks == nil {
			return fmt.Errorf("%v: set signup.secret and mail.sender so a verification link can be mailed to %s, or pass -verified to vouch for the email", svc.SignUpOff, *email)
		}
		password, err := readPassword(env)
		if err != nil {
			return err
		}
		if err := humans.CheckNewPassword(password); err != nil {
			return err
		}
		if strings.TrimSpace(*name) == "" {
			return fmt.Errorf("account name must be 1 to 100 characters")
		}
		// An operator is told an email is in use (no one to hide it from),
		// before anything is written or mailed.
		norm, _ := humans.NormalizeEmail(*email)
		if _, _, err := svc.Store.LoginByEmail(ctx, norm); err == nil {
			return fmt.Errorf("a login with email %s already exists", norm)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		out, err := people.OpenAccount(ctx, *name, *email, password, strings.Split(*perms, ","), *verified)
		if err != nil {
			return err
		}
		if out.Existing {
			return fmt.Errorf("a login with email %s already exists", norm)
		}
		acct, login = out.Account, &out.Login
	} else {
		var err error
		if acct, err = svc.CreateAccount(ctx, *name, *verified); err != nil {
			return err
		}
	}
	key, plain, err := svc.CreateKey(ctx, acct.ID, accounts.KeyRequest{Name: "created by CLI", Permissions: strings.Split(*perms, ",")})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "account %s (%s), balance %s USD\nkey %s: %s\n", acct.ID, acct.Name, acct.Balance, key.ID, plain)
	if login != nil {
		fmt.Fprintf(env.Stdout, "login %s: %s signs in at /signin\n", login.ID, login.Email)
		if !*verified {
			fmt.Fprintf(env.Stdout, "a verification link is mailed to %s (by the worker's outbox); the free credit is granted when it is followed\n", login.Email)
		}
	}
	return nil
}

// readPassword takes the password from PasswordEnv, else the first line
// of standard input (asked for without echo on a terminal).
func readPassword(env *Env) (string, error) {
	if pw, ok := os.LookupEnv(PasswordEnv); ok {
		return pw, nil
	}
	if env.Stdin == nil {
		return "", fmt.Errorf("a password is needed: set %s or pipe it to standard input", PasswordEnv)
	}
	if f, ok := env.Stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(os.Stderr, "password for the new login: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(os.Stderr)
		return string(b), err
	}
	line, err := bufio.NewReader(io.LimitReader(env.Stdin, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("a password is needed: set %s or pipe it to standard input", PasswordEnv)
	}
	return line, nil
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
