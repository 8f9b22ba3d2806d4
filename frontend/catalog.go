package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"conduit/internal/pipelines"
)

// nodeCatalog: GET /api/catalog, what a pipeline's model and generation
// nodes may use, with prices (the editor's pickers read it).
func (s *Server) nodeCatalog(c *gin.Context) {
	base := s.deps.Config.BaseURL()
	paths := map[string]string{}
	for _, k := range s.payPerCall.Kinds() {
		paths[k.Name] = base + k.Path
	}
	c.JSON(http.StatusOK, pipelines.Catalog(s.deps.Catalog, s.deps.Media.Generation(),
		func(kind string) string { return paths[kind] }, base+PurchasesPath))
}
