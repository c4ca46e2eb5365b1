package sweep

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/envnames"
)

// Environment variables read by ConfigFromEnv (named in internal/envnames);
// unset means the default. Provider calls are bounded by the services
// SANDMAN_PROVIDER_CALL_TIMEOUT.
// Durations are Go durations ("20s", "720h").
const (
	EnvConcurrency     = envnames.SweepConcurrency     // Config.Concurrency, default 16
	EnvRate            = envnames.SweepRate            // Config.Rate, provider calls per second, default 20; "inf" for none
	EnvBurst           = envnames.SweepBurst           // Config.Burst, default the concurrency
	EnvPageSize        = envnames.SweepPageSize        // Config.PageSize, default 100, at most lifecycle.MaxDuePageSize
	EnvDeadlineMargin  = envnames.SweepDeadlineMargin  // Config.DeadlineMargin, default 45s
	EnvReconcileSample = envnames.SweepReconcileSample // Config.ReconcileSample, default 500; negative: off
	EnvDormancyAge     = envnames.SweepDormancyAge     // Config.DormancyAge, default 0: off
)

// ConfigFromEnv reads a Config from getenv (os.Getenv in production), once
// per cold start. Errors name the variable and the value it wants.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	var c Config
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	for _, o := range []struct {
		name string
		dst  *int
		min  int
	}{
		{EnvConcurrency, &c.Concurrency, 1},
		{EnvBurst, &c.Burst, 1},
		{EnvPageSize, &c.PageSize, 1},
		{EnvReconcileSample, &c.ReconcileSample, math.MinInt},
	} {
		v := get(o.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < o.min || (o.name == EnvPageSize && n > maxPageSize) {
			return Config{}, fmt.Errorf("%s=%q: want a whole number%s", o.name, v, intRange(o.name, o.min))
		}
		*o.dst = n
	}
	if v := get(EnvRate); v != "" {
		if strings.EqualFold(v, "inf") {
			c.Rate = rate.Inf
		} else if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 && !math.IsInf(f, 0) {
			c.Rate = rate.Limit(f)
		} else {
			return Config{}, fmt.Errorf("%s=%q: want provider calls per second, a positive number, or inf", EnvRate, v)
		}
	}
	for _, o := range []struct {
		name string
		dst  *time.Duration
	}{
		{EnvDeadlineMargin, &c.DeadlineMargin},
		{EnvDormancyAge, &c.DormancyAge},
	} {
		v := get(o.name)
		if v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return Config{}, fmt.Errorf("%s=%q: want a duration such as 20s or 720h", o.name, v)
		}
		*o.dst = d
	}
	return c, nil
}

func intRange(name string, lo int) string {
	switch {
	case name == EnvPageSize:
		return fmt.Sprintf(" from 1 to %d", maxPageSize)
	case lo > math.MinInt:
		return fmt.Sprintf(" of at least %d", lo)
	}
	return ""
}
