package procfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/bpftap/bpftap/internal/httpserve"
	"github.com/bpftap/bpftap/internal/interp"
)

// HTTP serving (--http ADDR): GET /NAME answers with what the read probe
// of NAME leaves in $value, PUT or POST /NAME runs its write probes with
// the request's body. A name no probe serves is 404, another method 405,
// a body cut short (the client left, or took longer than the read
// timeout) 400 and a body of more than MaxWrite bytes 413, without running
// the probes (what they would get is not what the client wrote), a probe
// that fails 500 (the error is on the script's output, as every
// handler's), and a session that no longer runs 503: one line each. An address without a host listens on the loopback
// interface only. The server's timeouts and connection cap are package
// httpserve's.

// Handler answers the requests for files.
func Handler(files []*interp.ProcfsFile, s Session) httpserve.Handler {
	byName := map[string]*interp.ProcfsFile{}
	for _, f := range files {
		byName[f.Name] = f
	}
	return func(r *http.Request) httpserve.Answer {
		f := byName[strings.TrimPrefix(r.URL.Path, "/")]
		switch {
		case f == nil:
			return httpserve.Text(http.StatusNotFound, "no such file")
		case r.Method == http.MethodGet && f.Reads:
			value, err := s.ReadProcfs(r.Context(), f)
			if err != nil {
				return failure(f, err)
			}
			h := http.Header{}
			h.Set("Content-Type", "text/plain; charset=utf-8")
			return httpserve.Answer{Status: http.StatusOK, Header: h, Body: value}
		case (r.Method == http.MethodPut || r.Method == http.MethodPost) && f.Writes:
			data, err := io.ReadAll(io.LimitReader(r.Body, MaxWrite+1))
			switch {
			case err != nil:
				return httpserve.Text(http.StatusBadRequest, "the request's body was cut short")
			case len(data) > MaxWrite:
				return httpserve.Text(http.StatusRequestEntityTooLarge, fmt.Sprintf("a body of more than %d bytes", MaxWrite))
			}
			if err := s.WriteProcfs(r.Context(), f, string(data)); err != nil {
				return failure(f, err)
			}
			return httpserve.Answer{Status: http.StatusOK}
		}
		a := httpserve.Text(http.StatusMethodNotAllowed, "method not allowed")
		a.Header.Set("Allow", allowed(f))
		return a
	}
}

// allowed is the methods f answers.
func allowed(f *interp.ProcfsFile) string {
	var methods []string
	if f.Reads {
		methods = append(methods, "GET")
	}
	if f.Writes {
		methods = append(methods, "PUT", "POST")
	}
	return strings.Join(methods, ", ")
}

// failure is the answer for a probe of f that could not serve.
func failure(f *interp.ProcfsFile, err error) httpserve.Answer {
	if errors.Is(err, interp.ErrProbeFailed) {
		return httpserve.Text(http.StatusInternalServerError, "the probe of "+f.Name+" failed")
	}
	return httpserve.Text(http.StatusServiceUnavailable, "the script is not running")
}

// LoopbackDefault gives an address without a host the loopback's:
// ":8080" and "8080" are "127.0.0.1:8080".
func LoopbackDefault(addr string) string {
	if !strings.Contains(addr, ":") {
		addr = ":" + addr
	}
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}

// ServeHTTP listens on addr (LoopbackDefault) and serves h until the
// returned stop is called; the server's own errors go to log.
func ServeHTTP(addr string, h httpserve.Handler, log io.Writer) (stop func(), err error) {
	l, err := net.Listen("tcp", LoopbackDefault(addr))
	if err != nil {
		return nil, err
	}
	srv := httpserve.New(h, httpserve.DefaultLimits, log, "bpftap: --http: ")
	done := make(chan struct{})
	go func() {
		srv.Serve(l) // until Shutdown
		close(done)
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		<-done
	}, nil
}
