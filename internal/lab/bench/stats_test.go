package bench

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	t.Run("Empty", func(t *testing.T) {
		if got, want := Summarize(nil), (Latency{}); got != want {
			t.Errorf("Summarize(nil) = %+v, want %+v", got, want)
		}
	})
	t.Run("OneToHundred", func(t *testing.T) {
		var ds []time.Duration
		for i := 100; i >= 1; i-- { // unsorted on purpose
			ds = append(ds, time.Duration(i)*time.Millisecond)
		}
		got := Summarize(ds)
		want := Latency{N: 100, MeanMS: 50.5, P50MS: 50, P90MS: 90, P99MS: 99, MaxMS: 100}
		if got != want {
			t.Errorf("Summarize = %+v, want %+v", got, want)
		}
		if ds[0] != 100*time.Millisecond {
			t.Error("Summarize sorted its argument in place")
		}
	})
	t.Run("Microseconds", func(t *testing.T) {
		got := Summarize([]time.Duration{1234567 * time.Nanosecond})
		if got, want := got.P50MS, 1.235; got != want {
			t.Errorf("p50 = %v ms, want %v (rounded to the microsecond)", got, want)
		}
	})
}

func TestPercentile(t *testing.T) {
	sorted := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{1, 1}, {10, 1}, {11, 2}, {50, 5}, {99, 10}, {100, 10}} {
		if got := Percentile(sorted, c.p); got != c.want {
			t.Errorf("Percentile(1..10, %v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got, want := Percentile(nil, 50), time.Duration(0); got != want {
		t.Errorf("Percentile(nil) = %v, want %v", got, want)
	}
}

func TestMedian(t *testing.T) {
	if got, want := Median([]time.Duration{5, 1, 3}), time.Duration(3); got != want {
		t.Errorf("Median odd = %v, want %v", got, want)
	}
	if got, want := Median([]time.Duration{4, 1, 3, 2}), time.Duration(2); got != want {
		t.Errorf("Median even = %v, want %v (the lower middle, a measured value)", got, want)
	}
}

func TestIsIdle(t *testing.T) {
	for _, c := range []struct{ n, idle int }{{100_000, 10_000}, {10, 3}, {7, 7}, {5, 0}, {2000, 200}} {
		count := 0
		for i := range c.n {
			if isIdle(i, c.n, c.idle) {
				count++
			}
		}
		if count != c.idle {
			t.Errorf("isIdle over %d sessions picks %d, want %d", c.n, count, c.idle)
		}
	}
}

func TestOpCounter(t *testing.T) {
	c := NewOpCounter()
	client := c.Wrap(roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK}, nil
	}))
	send := func(target string) {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/", strings.NewReader("{}"))
		if target != "" {
			req.Header.Set("X-Amz-Target", target)
		}
		if _, err := client.Do(req); err != nil {
			t.Fatal(err)
		}
	}
	before := c.Snapshot()
	send("DynamoDB_20120810.Query")
	send("DynamoDB_20120810.Query")
	send("DynamoDB_20120810.PutItem")
	send("")
	if got, want := c.Count(OpQuery), int64(2); got != want {
		t.Errorf("Query = %d, want %d", got, want)
	}
	if got, want := c.Count(OpScan), int64(0); got != want {
		t.Errorf("Scan = %d, want %d", got, want)
	}
	diff := Since(before, c.Snapshot())
	if got, want := len(diff), 3; got != want {
		t.Errorf("Since = %v, want %d operations (Query, PutItem, unknown)", diff, want)
	}
	if got, want := diff["unknown"], int64(1); got != want {
		t.Errorf("requests without X-Amz-Target = %d, want %d", got, want)
	}
	c.Reset()
	if got, want := len(c.Snapshot()), 0; got != want {
		t.Errorf("after Reset %d operations counted, want %d", got, want)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }
