package telemetry

import (
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// pools reports the process's PostgreSQL pools (pgxpool.Stat), summed: a
// process normally has one (the harness can run two platforms).
var pools = &poolCollector{stats: map[*int]func() *pgxpool.Stat{}}

type poolCollector struct {
	mu    sync.Mutex
	stats map[*int]func() *pgxpool.Stat
}

// WatchPool reports a pool's statistics until the returned func is called.
func WatchPool(stat func() *pgxpool.Stat) (stop func()) {
	key := new(int)
	pools.mu.Lock()
	pools.stats[key] = stat
	pools.mu.Unlock()
	return func() {
		pools.mu.Lock()
		delete(pools.stats, key)
		pools.mu.Unlock()
	}
}

var (
	poolConns = prometheus.NewDesc("conduit_db_pool_connections", "PostgreSQL pool connections, by state (acquired, idle, constructing).", []string{"state"}, nil)
	poolMax   = prometheus.NewDesc("conduit_db_pool_max_connections", "The PostgreSQL pool's maximum size (database.max_conns).", nil, nil)
	poolAcq   = prometheus.NewDesc("conduit_db_pool_acquires_total", "Connections acquired from the pool.", nil, nil)
	poolEmpty = prometheus.NewDesc("conduit_db_pool_empty_acquires_total", "Acquisitions that waited because the pool was empty.", nil, nil)
	poolCanc  = prometheus.NewDesc("conduit_db_pool_canceled_acquires_total", "Acquisitions given up by their caller while waiting.", nil, nil)
	poolWait  = prometheus.NewDesc("conduit_db_pool_acquire_wait_seconds_total", "Time spent waiting for a connection.", nil, nil)
)

func (p *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolConns, poolMax, poolAcq, poolEmpty, poolCanc, poolWait} {
		ch <- d
	}
}

func (p *poolCollector) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	var acquired, idle, constructing, max int32
	var acq, empty, canc int64
	var wait float64
	for _, stat := range p.stats {
		s := stat()
		acquired += s.AcquiredConns()
		idle += s.IdleConns()
		constructing += s.ConstructingConns()
		max += s.MaxConns()
		acq += s.AcquireCount()
		empty += s.EmptyAcquireCount()
		canc += s.CanceledAcquireCount()
		wait += s.EmptyAcquireWaitTime().Seconds()
	}
	p.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(poolConns, prometheus.GaugeValue, float64(acquired), "acquired")
	ch <- prometheus.MustNewConstMetric(poolConns, prometheus.GaugeValue, float64(idle), "idle")
	ch <- prometheus.MustNewConstMetric(poolConns, prometheus.GaugeValue, float64(constructing), "constructing")
	ch <- prometheus.MustNewConstMetric(poolMax, prometheus.GaugeValue, float64(max))
	ch <- prometheus.MustNewConstMetric(poolAcq, prometheus.CounterValue, float64(acq))
	ch <- prometheus.MustNewConstMetric(poolEmpty, prometheus.CounterValue, float64(empty))
	ch <- prometheus.MustNewConstMetric(poolCanc, prometheus.CounterValue, float64(canc))
	ch <- prometheus.MustNewConstMetric(poolWait, prometheus.CounterValue, wait)
}
