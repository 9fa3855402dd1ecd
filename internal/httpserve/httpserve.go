// Package httpserve is the HTTP server under bpftap's two listeners,
// `bpftap exporter` (package exporter) and --http (package procfs):
// net/http's server with what a server any network client reaches needs.
//
//   - Whole answers. A Handler returns its Answer (status, header, body),
//     which is written once it is complete: a handler that fails half-way
//     has sent nothing yet, and answers its failure instead (a Prometheus
//     scrape must never take a cut exposition for a whole one).
//   - Timeouts (Limits): a request's header must come within ReadHeader,
//     the whole request within Read; an answer must be taken within Write
//     from its first byte; a keep-alive connection idle for Idle is
//     closed. Waiting for the handler has no timeout here (the exporter
//     bounds its own; net/http lifts the read deadline while a handler
//     runs that has read its whole request).
//   - A cap on open connections (conns.go), so that clients that connect
//     and idle cannot take the descriptors a scrape needs.
//   - Error answers are one line of text (Text): what went wrong in detail
//     goes to the log, never to the client. A handler's panic is a 500
//     and one line in the log.
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"
)

// Limits are a server's timeouts and connection cap.
type Limits struct {
	ReadHeader time.Duration // to read a request's header
	Read       time.Duration // to read a whole request, header and body
	Write      time.Duration // to write an answer
	Idle       time.Duration // a keep-alive connection's wait for its next request
	MaxConns   int           // open connections (at most half of RLIMIT_NOFILE)
}

// DefaultLimits are the servers' limits. A Prometheus scrape times out
// after 10 s by default: an answer not taken in 30 s has no taker. A
// fleet's Prometheus holds one connection per script it scrapes.
var DefaultLimits = Limits{
	ReadHeader: 10 * time.Second,
	Read:       10 * time.Second,
	Write:      30 * time.Second,
	Idle:       60 * time.Second,
	MaxConns:   64,
}

// maxHeaderBytes bounds a request's header (net/http's default is 1 MiB,
// 64 MiB for the 64 connections).
const maxHeaderBytes = 16 << 10

// Answer is a whole response.
type Answer struct {
	Status int
	Header http.Header // nil: none
	Body   string
}

// Text is an answer of one line of plain text: an error's.
func Text(status int, line string) Answer {
	h := http.Header{}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	return Answer{Status: status, Header: h, Body: line + "\n"}
}

// Handler answers a request.
type Handler func(*http.Request) Answer

// Server serves a Handler.
type Server struct {
	srv     *http.Server
	conns   *conns
	handler Handler
	limits  Limits
	log     *log.Logger
}

// New makes the server of h; its own errors (a handler's panic, a failed
// accept) go to logw, each on a line after prefix.
func New(h Handler, limits Limits, logw io.Writer, prefix string) *Server {
	s := &Server{conns: newConns(limits.MaxConns), handler: h, limits: limits, log: log.New(logw, prefix, 0)}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serve),
		ReadHeaderTimeout: limits.ReadHeader,
		ReadTimeout:       limits.Read,
		IdleTimeout:       limits.Idle,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnState:         s.conns.track,
		ErrorLog:          s.log,
	}
	return s
}

// Serve serves the connections of l until Shutdown or Close.
func (s *Server) Serve(l net.Listener) error {
	err := s.srv.Serve(s.conns.listener(l))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops listening, closes the idle connections and waits for the
// answers under way, until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// Close closes the listener and every connection.
func (s *Server) Close() error { return s.srv.Close() }

// serve runs the handler and writes its answer.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	a := s.answer(r)
	for k, v := range a.Header {
		w.Header()[k] = v
	}
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.limits.Write))
	w.WriteHeader(a.Status)
	io.WriteString(w, a.Body)
}

// answer is the handler's answer to r, a 500 if it panics.
func (s *Server) answer(r *http.Request) (a Answer) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Printf("%s %q: internal error: %q", r.Method, r.URL.Path, fmt.Sprint(p))
			a = Text(http.StatusInternalServerError, "internal error")
		}
	}()
	return s.handler(r)
}
