package procfs

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/bpftap/bpftap/internal/interp"
)

// HTTP serving (--http ADDR): GET /NAME answers with what the read probe
// of NAME leaves in $value, PUT or POST /NAME runs its write probes with
// the request's body (at most MaxWrite bytes). A name no probe serves is
// 404, another method 405, a probe that fails 500 (the error is on the
// script's output, as every handler's), and a session that no longer runs
// 503. An address without a host listens on the loopback interface only.

// Handler serves files over HTTP.
func Handler(files []*interp.ProcfsFile, s Session) http.Handler {
	byName := map[string]*interp.ProcfsFile{}
	for _, f := range files {
		byName[f.Name] = f
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := byName[strings.TrimPrefix(r.URL.Path, "/")]
		if f == nil {
			http.NotFound(w, r)
			return
		}
		switch {
		case r.Method == http.MethodGet && f.Reads:
			value, err := s.ReadProcfs(f)
			if err != nil {
				failure(w, f, err)
				return
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, value)
		case (r.Method == http.MethodPut || r.Method == http.MethodPost) && !f.Reads:
			data, _ := io.ReadAll(io.LimitReader(r.Body, MaxWrite))
			if err := s.WriteProcfs(f, string(data)); err != nil {
				failure(w, f, err)
			}
		default:
			w.Header().Set("Allow", map[bool]string{true: "GET", false: "PUT, POST"}[f.Reads])
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
}

// failure answers a request for f whose probe could not serve.
func failure(w http.ResponseWriter, f *interp.ProcfsFile, err error) {
	if errors.Is(err, interp.ErrProbeFailed) {
		http.Error(w, "the probe of "+f.Name+" failed", http.StatusInternalServerError)
		return
	}
	http.Error(w, "the script is not running", http.StatusServiceUnavailable)
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
// returned stop is called.
func ServeHTTP(addr string, h http.Handler) (stop func(), err error) {
	l, err := net.Listen("tcp", LoopbackDefault(addr))
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		srv.Serve(l) // until Shutdown
		close(done)
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}, nil
}
