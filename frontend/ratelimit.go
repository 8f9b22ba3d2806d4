package frontend

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/ulule/limiter/v3"
	mgin "github.com/ulule/limiter/v3/drivers/middleware/gin"
	"github.com/ulule/limiter/v3/drivers/store/memory"

	"conduit/internal/errs"
)

// paidRateLimit is the one per-address budget (x402.rate_limit) shared by
// every paid route: top-up, each pay-per-call POST and retry, and the
// purchases listing (whose challenges store a nonce). A caller spreading
// calls over routes spends the same budget. Beyond it: 429 in the plain
// error shape with Retry-After; nothing is settled, no nonce is stored.
func (s *Server) paidRateLimit() gin.HandlerFunc { return s.addresses }

// addressLimiter builds the shared per-address middleware, once per Server.
func (s *Server) addressLimiter() gin.HandlerFunc {
	return perAddress(s.deps.Config.X402.RateLimit, "rate limit exceeded: at most %d calls per %s from one address; retry after %d s")
}

// perAddress limits requests per client address (addressKey) to the
// formatted rate; beyond it, a 429 with Retry-After whose message is
// format(limit, period, retry seconds), in the route's error shape.
func perAddress(formatted, format string) gin.HandlerFunc {
	rate, err := limiter.NewRateFromFormatted(formatted)
	if err != nil {
		panic(err) // config.Validate refuses a malformed rate
	}
	l := limiter.New(memory.NewStore(), rate)
	return mgin.NewMiddleware(l, mgin.WithKeyGetter(addressKey), mgin.WithLimitReachedHandler(func(c *gin.Context) {
		retry := int64(1)
		if reset, err := strconv.ParseInt(c.Writer.Header().Get("X-RateLimit-Reset"), 10, 64); err == nil {
			retry = max(1, reset-time.Now().Unix())
		}
		e := errs.TooManyf(format, rate.Limit, rate.Period, retry)
		e.RetryAfter = time.Duration(retry) * time.Second
		writeError(c, e)
	}), mgin.WithErrorHandler(func(c *gin.Context, err error) { fail(c, err) }))
}

// addressKey is the client address a budget belongs to (gin's ClientIP:
// the TCP peer, or what a trusted proxy names). An IPv6 client counts by
// its /64, the block one subscriber gets, so it cannot mint a fresh budget
// per address.
func addressKey(c *gin.Context) string {
	ip, err := netip.ParseAddr(c.ClientIP())
	if err != nil {
		return c.ClientIP()
	}
	ip = ip.Unmap()
	if ip.Is6() {
		return netip.PrefixFrom(ip, 64).Masked().String()
	}
	return ip.String()
}

// walletLimiter bounds paid calls per paying wallet, whatever address they
// come from (an agent fleet behind many addresses is still one payer). A
// call counts only once its payment's signature verified, so nobody can
// spend another wallet's budget by naming it in forged headers.
func (s *Server) walletLimiter() *limiter.Limiter {
	rate, err := limiter.NewRateFromFormatted(s.deps.Config.X402.WalletRate())
	if err != nil {
		panic(err) // config.Validate refuses a malformed rate
	}
	return limiter.New(memory.NewStore(), rate)
}

// walletLimit counts a paid call against its wallet's budget: a 429 with
// Retry-After when it is spent.
func (s *Server) walletLimit(c *gin.Context, network, payer string) error {
	return spend(context.WithoutCancel(c.Request.Context()), s.wallets, network+"/"+payer, func(lc limiter.Context, retry int64) string {
		return fmt.Sprintf("rate limit exceeded: at most %d paid calls per %s from one wallet; retry after %d s", lc.Limit, s.wallets.Rate.Period, retry)
	})
}

// spend counts one call against key's budget in l: nil while it lasts,
// else a TooManyRequests error whose Retry-After is when it refills and
// whose message is refusal's.
func spend(ctx context.Context, l *limiter.Limiter, key string, refusal func(lc limiter.Context, retry int64) string) error {
	lc, err := l.Get(ctx, key)
	if err != nil {
		return err
	}
	if !lc.Reached {
		return nil
	}
	retry := max(1, lc.Reset-time.Now().Unix())
	e := errs.TooManyf("%s", refusal(lc, retry))
	e.RetryAfter = time.Duration(retry) * time.Second
	return e
}

// registrationLimiter bounds dynamic client registrations per address
// (oauth.register_rate_limit): registering needs no credential, so this
// is what keeps one caller from filling the clients table. Beyond it: 429
// in OAuth's error shape with Retry-After.
func (s *Server) registrationLimiter() gin.HandlerFunc {
	return perAddress(s.deps.Config.OAuth.RegisterRateLimit, "too many client registrations: at most %d per %s from one address; retry after %d s")
}

// unpaidImageLimiter bounds the image fetches a client address can cause
// with video requests that carry no payment (media.images.unpaid_rate_limit),
// apart from the paid budget: the spec checks image_url before the payment,
// so without this anyone could make the server download images for free.
// Only fetches count; an answer from a remembered verdict does not.
func (s *Server) unpaidImageLimiter() *limiter.Limiter {
	rate, err := limiter.NewRateFromFormatted(s.deps.Config.Media.Images.UnpaidRateLimit)
	if err != nil {
		panic(err) // config.Validate refuses a malformed rate
	}
	return limiter.New(memory.NewStore(), rate)
}

// unpaidFetch spends one unpaid image fetch of the caller's address: a 429
// with Retry-After when the budget is spent.
func (s *Server) unpaidFetch(c *gin.Context) error {
	return spend(context.WithoutCancel(c.Request.Context()), s.unpaidImages, addressKey(c), func(lc limiter.Context, retry int64) string {
		return fmt.Sprintf("too many image_url fetches without a payment: at most %d per %s from one address; send the payment-signature with the request, or retry after %d s",
			lc.Limit, s.unpaidImages.Rate.Period, retry)
	})
}
