// Command conduit is the production binary: `conduit frontend`,
// `conduit worker`, `conduit migrate`. It talks to a configured PostgreSQL
// and Temporal cluster and does not link the Temporal server.
package main

import (
	"os"

	"conduit/app"
)

func main() {
	os.Exit(app.Main("conduit", os.Args[1:], app.ProductionCommands()))
}
