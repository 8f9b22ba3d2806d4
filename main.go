// The repository root is the newcomer's entry point: `go run . dev` brings
// the whole platform up on embedded defaults (PostgreSQL from the OS's
// binaries, an in-process Temporal server with its Web UI, the worker and the
// API). Every production subcommand works here too.
package main

import (
	"os"

	"conduit/app"
	"conduit/app/devcmd"
)

func main() {
	cmds := app.ProductionCommands()
	cmds["dev"] = devcmd.Command()
	os.Exit(app.Main("conduit", os.Args[1:], cmds))
}
