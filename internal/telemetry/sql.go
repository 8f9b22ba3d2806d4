package telemetry

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// TracePool puts a span around every query the pool runs inside a traced
// request or activity (a query with no recording span around it gets
// none). The statement is our own SQL with $n placeholders: it carries no
// argument values.
func (t *Telemetry) TracePool(cfg *pgxpool.Config) {
	if t.Tracing() {
		cfg.ConnConfig.Tracer = sqlTracer{}
	}
}

type sqlTracer struct{}

func (sqlTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx
	}
	ctx, _ = Tracer().Start(ctx, "db "+sqlVerb(data.SQL), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("db.system.name", "postgresql"), attribute.String("db.query.text", data.SQL)))
	return ctx
}

func (sqlTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	if data.Err != nil {
		span.RecordError(data.Err)
		span.SetStatus(codes.Error, "query failed")
	} else {
		span.SetAttributes(attribute.Int64("db.response.affected_rows", data.CommandTag.RowsAffected()))
	}
	span.End()
}

// sqlVerb is the statement's first word (SELECT, INSERT, WITH, …).
func sqlVerb(sql string) string {
	sql = strings.TrimSpace(sql)
	if i := strings.IndexAny(sql, " \n\t("); i > 0 {
		sql = sql[:i]
	}
	if len(sql) > 16 {
		sql = sql[:16]
	}
	return strings.ToUpper(sql)
}
