package fakekit

import (
	"cmp"
	"net/http"
)

// Fault is the fault type of a fake whose error body carries a status, a
// message and, for some providers, a code (E2B's and Vercel's fakes): it
// replaces the answer to one request. The zero Fault is no fault; Hang
// comes before Drop, Drop before Lose, Lose before Status.
type Fault struct {
	// Status is answered with the fake's error body.
	Status int
	// Code is the error body's code, for a provider whose body has one
	// (Vercel's; default: the one the fake derives from Status). Others
	// ignore it.
	Code string
	// Message is the error body's message (default: the status text).
	Message string
	// RetryAfter, when set, is sent as the Retry-After header (seconds).
	RetryAfter string
	// Hang holds the request until the client gives up or the fake closes
	// (Kit.Hanging reports that it arrived).
	Hang bool
	// Drop closes the connection without an answer.
	Drop bool
	// Lose serves the request (its effect happens) and then closes the
	// connection without the answer: a commit whose answer was lost.
	Lose bool
}

// Effect says what f does (Kit.Handle).
func (f Fault) Effect() Effect {
	switch {
	case f.Hang:
		return Hang
	case f.Drop:
		return Drop
	case f.Lose:
		return Lose
	case f.Status != 0:
		return Answer
	}
	return Serve
}

// Prepare sets f's Retry-After header on w, when it has one, and returns
// the message its error body carries: Message, else the status text.
func (f Fault) Prepare(w http.ResponseWriter) (msg string) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	return cmp.Or(f.Message, http.StatusText(f.Status))
}
