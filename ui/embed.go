// Package ui holds the dashboard, a TypeScript single-page app (Vite +
// React) whose source is in this folder. Its build, dist/, is committed and
// embedded here, so the Go binary serves the dashboard without Node
// (docs/dashboard.md says how the build is kept in step with the source).
package ui

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Dist is the built dashboard: index.html and assets/.
func Dist() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the folder is embedded above
	}
	return sub
}
