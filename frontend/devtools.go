package frontend

import (
	"net"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"
	"go.temporal.io/sdk/converter"

	"conduit/internal/codec"
	"conduit/internal/errs"
	"conduit/internal/money"
)

// DevMintPath credits play tokens; it is a dev tool (Deps.DevTools).
const DevMintPath = "/dev/x402/mint"

// devMint: POST /dev/x402/mint {address, usd} credits play tokens on the
// embedded networks. The route exists only among the dev tools and with the
// local facilitator: its tokens are worth nothing outside this process, and
// a production deployment must never hand them out.
func (s *Server) devMint(c *gin.Context) {
	var body struct {
		Address string       `json:"address"`
		USD     money.Micros `json:"usd"`
	}
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	if body.USD <= 0 || body.USD > 1_000_000*money.USD {
		fail(c, errs.Invalidf("usd must be more than 0 and at most 1000000"))
		return
	}
	m, err := s.deps.Payments.Mint(c.Request.Context(), body.Address, body.USD)
	if err != nil {
		fail(c, errs.Invalidf("%v", err))
		return
	}
	out := gin.H{"address": body.Address, "mintedUsd": body.USD, "network": m.Network, "asset": m.Asset}
	if m.Transaction != "" {
		out["transaction"] = m.Transaction
	}
	c.JSON(http.StatusOK, out)
}

// CodecPath is where the dev command's Temporal UI decodes the payloads the
// codec sealed (POST <CodecPath>/decode, the UI's codec protocol).
const CodecPath = "/dev/temporal-codec"

// mountCodec serves the codec endpoint to the Temporal UI in the browser:
// dev tools only, and only to pages on this machine (the UI is on
// loopback), since whoever reaches it reads every sealed payload. A
// request must come over the loopback interface (the TCP peer, whatever
// a proxy header says) and name a page on this machine as its Origin,
// which a browser always sends on the UI's cross-origin calls: a caller
// with no Origin (a script, another process) or a page elsewhere is
// refused.
func (s *Server) mountCodec(r *gin.Engine) {
	cd, err := codec.Parse(s.deps.Config.Temporal.CodecKeys)
	if err != nil {
		panic(err) // config.Validate refuses malformed keys
	}
	h := http.StripPrefix(CodecPath, converter.NewPayloadCodecHTTPHandler(cd))
	r.Any(CodecPath+"/*op", func(c *gin.Context) {
		origin := c.GetHeader("Origin")
		peer, _, _ := net.SplitHostPort(c.Request.RemoteAddr)
		if u, err := url.Parse(origin); origin == "" || err != nil || !loopback(u.Hostname()) || !loopback(peer) {
			fail(c, errs.Forbiddenf("the codec answers the Temporal UI in a browser on this machine only (a loopback Origin over the loopback interface)"))
			return
		}
		c.Header("Access-Control-Allow-Origin", origin)
		c.Header("Access-Control-Allow-Methods", "POST, OPTIONS")
		c.Header("Access-Control-Allow-Headers", "Content-Type, X-Namespace")
		c.Header("Vary", "Origin")
		if c.Request.Method == http.MethodOptions {
			c.Status(http.StatusNoContent)
			return
		}
		h.ServeHTTP(c.Writer, c.Request)
	})
}

func loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}
