package frontend

import (
	"crypto/subtle"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/internal/errs"
)

// The operator routes (docs/operations.md): what `conduit enclave stuck`
// and `conduit enclave resume` do, over HTTP, for any account's enclave.
// They exist only when admin.token is set, and take it as a bearer token.

func (s *Server) mountAdmin(r gin.IRoutes) {
	token := s.deps.Config.Admin.Token
	if token == "" {
		return
	}
	admin := func(c *gin.Context) {
		got, ok := bearerToken(c.GetHeader("Authorization"))
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			c.Header("WWW-Authenticate", `Bearer realm="conduit-admin"`)
			fail(c, errs.Unauthorizedf("the operator routes need the admin token (admin.token) as a bearer token"))
			return
		}
		c.Next()
	}
	r.GET("/admin/enclaves/stuck", admin, s.stuckEnclaves)
	r.POST("/admin/enclaves/:id/retry", admin, s.adminRetryEnclave)
}

// stuckEnclaves: GET /admin/enclaves/stuck?for=10m — enclaves building or
// deploying for longer than that (default 10 minutes), with the step each
// waits on and its last failure.
func (s *Server) stuckEnclaves(c *gin.Context) {
	d := 10 * time.Minute
	if v := c.Query("for"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < 0 {
			fail(c, errs.Invalidf("for must be a duration such as 10m or 1h"))
			return
		}
	}
	list, err := s.enclaveService().Stuck(c.Request.Context(), d)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"for": d.String(), "enclaves": list})
}

// adminRetryEnclave: POST /admin/enclaves/{id}/retry — the step waiting to
// be retried runs now; the answer is the lifecycle's state.
func (s *Server) adminRetryEnclave(c *gin.Context) {
	id := c.Param("id")
	st, err := s.enclaveService().RetryNow(c.Request.Context(), id)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"id": id, "status": st.Status, "retried": st.Waiting})
}
