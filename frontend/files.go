package frontend

import (
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// serveFile: GET /files/<key>?c=<signature> serves a bought file to
// whoever holds its signed URL; ?t=<link> a media library file while its
// expiring link lasts.
func (s *Server) serveFile(c *gin.Context) {
	f, err := s.payPerCall.OpenFile(c.Request.Context(), strings.TrimPrefix(c.Param("key"), "/"), c.Query("c"), c.Query("t"))
	if err != nil {
		fail(c, err)
		return
	}
	if f.Redirect != "" {
		c.Redirect(http.StatusFound, f.Redirect)
		return
	}
	defer f.Body.Close()
	c.Header("Content-Type", f.Object.ContentType)
	c.Header("Cache-Control", "private, max-age=86400")
	if rs, ok := f.Body.(interface {
		Read([]byte) (int, error)
		Seek(int64, int) (int64, error)
	}); ok {
		http.ServeContent(c.Writer, c.Request, "", time.Time{}, rs)
	} else {
		c.DataFromReader(http.StatusOK, f.Object.Size, f.Object.ContentType, f.Body, nil)
	}
	if c.Writer.Status() < 300 && c.Request.Method == http.MethodGet {
		s.payPerCall.FileDelivered(c.Request.Context(), f)
	}
}
