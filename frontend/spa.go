package frontend

import (
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/gin-gonic/gin"

	"conduit/internal/errs"
	"conduit/ui"
)

// DashboardPath is where the dashboard (the single-page app in ui/) is
// served. Every path under it that is not a file of the build answers its
// index.html, so the app's own routes (/dashboard/pipelines/…) load
// directly. The server-rendered pages under it keep their routes: the
// credits page (CreditsPagePath, every topUpUrl) among them.
const DashboardPath = "/dashboard/"

// spaPolicy lets the app load its own scripts and styles and call the API
// on this origin, and nothing else. React Flow positions nodes with inline
// style attributes, hence 'unsafe-inline' for styles only. Audio and video
// play only from the platform's own signed file URLs (mediaSource).
const spaPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// mediaSource is the media-src directive: the files path under the public
// URL, which every signed file URL (runs' outputs, the library's links)
// starts with, and nothing wider.
func mediaSource(baseURL string) string {
	return "media-src " + strings.TrimRight(baseURL, "/") + FilesPath
}

type spa struct {
	files  fs.FS
	index  []byte
	policy string
}

func newSPA(baseURL string) *spa {
	files := ui.Dist()
	index, err := fs.ReadFile(files, "index.html")
	if err != nil {
		panic("frontend: the embedded dashboard has no index.html: " + err.Error())
	}
	return &spa{files: files, index: index, policy: spaPolicy + "; " + mediaSource(baseURL)}
}

// mountDashboard serves the build's assets and the app's entry page.
func (s *Server) mountDashboard(r *gin.Engine) {
	app := newSPA(s.deps.Config.BaseURL())
	s.spa = app
	r.GET("/dashboard", func(c *gin.Context) { c.Redirect(http.StatusMovedPermanently, DashboardPath) })
	// The base URL is where people open the platform first: the dashboard.
	// (302: the base URL may have a page of its own one day.)
	r.GET("/", func(c *gin.Context) { c.Redirect(http.StatusFound, DashboardPath) })
	r.HEAD("/", func(c *gin.Context) { c.Redirect(http.StatusFound, DashboardPath) })
	r.GET(DashboardPath, app.serveIndex)
	r.HEAD(DashboardPath, app.serveIndex)
	r.GET(DashboardPath+"assets/*file", app.serveAsset)
	r.HEAD(DashboardPath+"assets/*file", app.serveAsset)
}

// fallback answers a GET or HEAD under /dashboard/ that no route took with
// the app's entry page; it says whether it did.
func (a *spa) fallback(c *gin.Context) bool {
	m := c.Request.Method
	if (m != http.MethodGet && m != http.MethodHead) || !strings.HasPrefix(c.Request.URL.Path, DashboardPath) {
		return false
	}
	a.serveIndex(c)
	return true
}

func (a *spa) serveIndex(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", a.policy)
	h.Set("Cache-Control", "no-cache")
	c.Data(http.StatusOK, "text/html; charset=utf-8", a.index)
}

// serveAsset serves a built file. Their names carry a hash of their
// content, so browsers may keep them for good.
func (a *spa) serveAsset(c *gin.Context) {
	name := path.Clean("assets/" + strings.TrimPrefix(c.Param("file"), "/"))
	if !strings.HasPrefix(name, "assets/") {
		writeError(c, errs.NotFoundf("no such file"))
		return
	}
	body, err := fs.ReadFile(a.files, name)
	if err != nil {
		writeError(c, errs.NotFoundf("no such file"))
		return
	}
	ct := "application/octet-stream"
	switch path.Ext(name) {
	case ".js":
		ct = "text/javascript; charset=utf-8"
	case ".css":
		ct = "text/css; charset=utf-8"
	case ".svg":
		ct = "image/svg+xml"
	case ".png":
		ct = "image/png"
	case ".woff2":
		ct = "font/woff2"
	}
	c.Header("Cache-Control", "public, max-age=31536000, immutable")
	c.Header("Content-Security-Policy", a.policy)
	c.Data(http.StatusOK, ct, body)
}
