// Package tools holds the deploy checks run by the test command
// (chart_test.go, compose_test.go). Helm, the Kubernetes API types and the
// compose-spec library live in this module's go.mod, never in the main
// module's; `go tool helm` (from this folder) is the same Helm.
package tools

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
)

// commandNames reads the production binary's commands from the source of
// app/cli.go: the string keys of the map ProductionCommands returns.
func commandNames(src []byte) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "cli.go", src, 0)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "ProductionCommands" {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if _, isMap := lit.Type.(*ast.MapType); !isMap {
				return true
			}
			for _, e := range lit.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if key, ok := kv.Key.(*ast.BasicLit); ok && key.Kind == token.STRING {
						if s, err := strconv.Unquote(key.Value); err == nil {
							names = append(names, s)
						}
					}
				}
			}
			return false
		})
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no ProductionCommands map literal found")
	}
	return names, nil
}
