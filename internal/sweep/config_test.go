package sweep_test

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/sweep"
)

func TestConfigFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}
	t.Run("Defaults", func(t *testing.T) {
		cfg, err := sweep.ConfigFromEnv(env(nil))
		if err != nil {
			t.Fatalf("config: %v", err)
		}
		if got, want := cfg, (sweep.Config{}); got != want {
			t.Errorf("config = %+v, want the zero Config (defaults)", got)
		}
	})
	t.Run("OK", func(t *testing.T) {
		cfg, err := sweep.ConfigFromEnv(env(map[string]string{
			sweep.EnvConcurrency:     "8",
			sweep.EnvRate:            "2.5",
			sweep.EnvBurst:           "4",
			sweep.EnvPageSize:        "250",
			sweep.EnvDeadlineMargin:  "30s",
			sweep.EnvReconcileSample: "-1",
			sweep.EnvDormancyAge:     "720h",
		}))
		if err != nil {
			t.Fatalf("config: %v", err)
		}
		want := sweep.Config{Concurrency: 8, Rate: 2.5, Burst: 4, PageSize: 250, DeadlineMargin: 30 * time.Second,
			ReconcileSample: -1, DormancyAge: 720 * time.Hour}
		if got := cfg; got != want {
			t.Errorf("config = %+v, want %+v", got, want)
		}
	})
	t.Run("RateInf", func(t *testing.T) {
		cfg, err := sweep.ConfigFromEnv(env(map[string]string{sweep.EnvRate: "inf"}))
		if err != nil {
			t.Fatalf("config: %v", err)
		}
		if got, want := cfg.Rate, rate.Inf; got != want {
			t.Errorf("rate = %v, want %v", got, want)
		}
	})
	for name, kv := range map[string][2]string{
		"ErrConcurrency": {sweep.EnvConcurrency, "0"},
		"ErrRate":        {sweep.EnvRate, "-3"},
		"ErrPageSize":    {sweep.EnvPageSize, "5000"},
		"ErrMargin":      {sweep.EnvDeadlineMargin, "soon"},
		"ErrDormancy":    {sweep.EnvDormancyAge, "-1h"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := sweep.ConfigFromEnv(env(map[string]string{kv[0]: kv[1]}))
			if err == nil || !strings.Contains(err.Error(), kv[0]) {
				t.Errorf("error = %v, want one naming %s", err, kv[0])
			}
		})
	}
}
