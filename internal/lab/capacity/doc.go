// Package capacity is the capacity model (docs/CAPACITY.md): Run drives a
// synthetic workload through lifecycle.Service and the DynamoDB store on
// DynamoDB Local behind a proxy that records the capacity units DynamoDB
// reports (Log), per key family, and scales them to a target workload
// (Target) against DynamoDB's per-partition limits. `make capacity` runs it
// through internal/lab/cmd/capacity. It measures; nothing that ships
// imports it.
package capacity
