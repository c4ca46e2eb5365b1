package fakekit

import (
	"encoding/json"
	"net/http"
	"sync"
)

// ControlPrefix is where a fake run on its own (`sandman fake <provider>`)
// serves Control.
const ControlPrefix = "/_fake"

// Control serves k's fault plan over HTTP, for a fake run on its own, where
// no test holds the Kit (the provider's own SDK, a local stack):
//
//	POST   /_fake/faults {"op": "<op>", "fault": {...}, "count": n}
//	       queues the fault for the next n requests of op (default 1), as
//	       Kit.Fail; with "standing": true it serves every request of op
//	       until stopped, as Kit.FailUntil (204)
//	DELETE /_fake/faults?op=<op>   stops op's standing fault (204)
//
// The fault is the fake's fault type in JSON, by its field names
// ({"status": 500, "message": "…"} for Fault). A bad body is a 400. It
// needs no key: fakes listen on loopback.
func Control[Op ~string, F Effector](k *Kit[Op, F]) http.Handler {
	var mu sync.Mutex
	stops := map[Op]func(){}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+ControlPrefix+"/faults", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Op       Op
			Fault    F
			Count    int
			Standing bool
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(&in); err != nil || in.Op == "" {
			http.Error(w, "want {\"op\", \"fault\", \"count\"?, \"standing\"?}", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if in.Standing {
			stops[in.Op] = k.FailUntil(in.Op, in.Fault)
		} else {
			for range max(in.Count, 1) {
				k.Fail(in.Op, in.Fault)
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE "+ControlPrefix+"/faults", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		op := Op(r.URL.Query().Get("op"))
		if stop, ok := stops[op]; ok {
			stop()
			delete(stops, op)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}
