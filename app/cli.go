package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"conduit/internal/config"
	"conduit/internal/logging"
	"conduit/internal/store"
)

// Command is one subcommand of a binary.
type Command struct {
	Summary string
	Run     func(ctx context.Context, env *Env, args []string) error
	// Defaults replace built-in configuration defaults for this command
	// (the dev command's play networks); the file and the environment
	// still override them.
	Defaults map[string]any
	// Help, when set, is printed after the summary by "<command> --help":
	// what the command needs (settings, variables) and does.
	Help string
}

// Env is what every command gets: the loaded configuration and a logger.
type Env struct {
	Config *config.Config
	Log    *slog.Logger
	Stdout io.Writer
	// Stdin is where a command reads what must not be a flag (a password).
	Stdin io.Reader
}

// ProductionCommands are the subcommands of the production binary. They
// never start servers of their own: database and Temporal are configured.
func ProductionCommands() map[string]Command {
	return map[string]Command{
		"frontend":  {Summary: "serve the HTTP API", Run: runRoles(Roles{Frontend: true})},
		"worker":    {Summary: "run the Temporal worker", Run: runRoles(Roles{Worker: true})},
		"all":       {Summary: "serve the API and run the worker in one process", Run: runRoles(Roles{Frontend: true, Worker: true})},
		"migrate":   {Summary: "apply database migrations and exit", Run: migrate},
		"health":    healthCommand(),
		"account":   accountCommand(),
		"x402":      x402Command(),
		"enclave":   enclaveCommand(),
		"task":      taskCommand(),
		"redaction": redactionCommand(),
	}
}

// Main parses the global flags, loads and validates the configuration and
// runs the named command; it returns the process exit code. Errors are
// printed as sentences, never as stack traces.
func Main(name string, args []string, cmds map[string]Command) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	cfgPath := fs.String("config", "", "YAML config file (or "+config.EnvPrefix+"_CONFIG)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s [-config file] <command> [args]\n\ncommands:\n", name)
		names := make([]string, 0, len(cmds))
		for n := range cmds {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(fs.Output(), "  %-16s %s\n", n, cmds[n].Summary)
		}
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0 // -h/--help: usage on stderr, as flag prints it, and success
	} else if err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	// "help", "help <command>" and "<command> -h|--help|help" print usage on
	// stdout and succeed, before any configuration is needed.
	if fs.Arg(0) == "help" {
		if fs.NArg() == 1 {
			fs.SetOutput(os.Stdout)
			fs.Usage()
			return 0
		}
		return commandHelp(name, fs.Arg(1), cmds, fs)
	}
	if fs.NArg() > 1 && isHelp(fs.Arg(1)) {
		return commandHelp(name, fs.Arg(0), cmds, fs)
	}
	cmd, ok := cmds[fs.Arg(0)]
	if !ok {
		fmt.Fprintf(os.Stderr, "%s: unknown command %q\n", name, fs.Arg(0))
		fs.Usage()
		return 2
	}
	cfg, err := config.Load(*cfgPath, cmd.Defaults)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: configuration error:\n%v\n", name, err)
		return 1
	}
	log := logging.New(os.Stderr, cfg.Log.Level, cfg.Log.Format)
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.Run(ctx, &Env{Config: cfg, Log: log, Stdout: os.Stdout, Stdin: os.Stdin}, fs.Args()[1:]); errors.Is(err, flag.ErrHelp) {
		return 0 // a subcommand's -h: its flags were printed
	} else if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// commandHelp prints one command's usage on stdout.
func commandHelp(name, command string, cmds map[string]Command, fs *flag.FlagSet) int {
	cmd, ok := cmds[command]
	if !ok {
		fmt.Fprintf(os.Stderr, "%s: unknown command %q\n", name, command)
		fs.Usage()
		return 2
	}
	fmt.Fprintf(os.Stdout, "usage: %s [-config file] %s\n\n%s\n", name, command, cmd.Summary)
	if cmd.Help != "" {
		fmt.Fprintf(os.Stdout, "\n%s\n", cmd.Help)
	}
	return 0
}

func runRoles(roles Roles) func(context.Context, *Env, []string) error {
	return func(ctx context.Context, env *Env, _ []string) error {
		if err := env.Config.ValidateProduction(); err != nil {
			return err
		}
		if err := env.Config.RefuseDevOnly(); err != nil {
			return err
		}
		var ln net.Listener
		if roles.Frontend {
			l, err := Listen(env.Config)
			if err != nil {
				return err
			}
			ln = l
		}
		p, err := Open(ctx, env.Config, env.Log)
		if err != nil {
			return err
		}
		defer p.Close()
		if roles.Frontend {
			env.Log.Info("API listening", "addr", ln.Addr().String())
		}
		return p.Run(ctx, roles, ln)
	}
}

func migrate(ctx context.Context, env *Env, _ []string) error {
	if env.Config.Database.URL == "" {
		return fmt.Errorf("database.url (%s_DATABASE_URL or DATABASE_URL) is required", config.EnvPrefix)
	}
	st, err := store.Open(ctx, env.Config.Database.URL, 2, env.Log)
	if err != nil {
		return err
	}
	st.Close()
	fmt.Fprintln(env.Stdout, "database is up to date")
	return nil
}
