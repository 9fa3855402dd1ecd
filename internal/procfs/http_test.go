package procfs

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/httpserve"
	"github.com/bpftap/bpftap/internal/interp"
)

// failing is a session whose read probes all fail.
type failing struct{ *session }

func (failing) ReadProcfs(context.Context, *interp.ProcfsFile) (string, error) {
	return "", interp.ErrProbeFailed
}

// TestHTTP sends requests to --http's handler over TCP, as a client could:
// a body cut short by the client or by the read timeout, and a body larger
// than MaxWrite, never reach the write probe; a read probe that fails is a
// 500; names with paths in them are 404.
func TestHTTP(t *testing.T) {
	s := newSession("value\n")
	addr := serveHTTP(t, Handler(files, s))
	fail := serveHTTP(t, Handler(files, failing{s}))
	big := strings.Repeat("x", MaxWrite+1)
	cases := []struct {
		name, addr, request string
		close               bool   // the client leaves once the request is sent
		want                string // the answer's status line, "" if none
		write               string // what the write probe gets, "" if it does not run
	}{
		{"write", addr, "PUT /set HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\non\n", false, "HTTP/1.1 200 OK", "on\n"},
		{"body timed out", addr, "PUT /set HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789", false, "HTTP/1.1 400 Bad Request", ""},
		{"client left", addr, "PUT /set HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789", true, "", ""},
		{"body too large", addr, "POST /set HTTP/1.1\r\nHost: x\r\nContent-Length: 65537\r\n\r\n" + big, false, "HTTP/1.1 413 Request Entity Too Large", ""},
		{"read fails", fail, "GET /state HTTP/1.1\r\nHost: x\r\n\r\n", false, "HTTP/1.1 500 Internal Server Error", ""},
		{"path", addr, "GET /state/../state HTTP/1.1\r\nHost: x\r\n\r\n", false, "HTTP/1.1 404 Not Found", ""},
		{"escaped path", addr, "GET /..%2fstate HTTP/1.1\r\nHost: x\r\n\r\n", false, "HTTP/1.1 404 Not Found", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", c.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			io.WriteString(conn, c.request)
			if c.close {
				conn.Close()
			} else {
				conn.SetReadDeadline(time.Now().Add(2 * time.Second))
				status, _ := bufio.NewReader(conn).ReadString('\n')
				if got := strings.TrimSpace(status); got != c.want {
					t.Errorf("answer %q, want %q", got, c.want)
				}
			}
			select {
			case data := <-s.writes:
				if data != c.write {
					t.Errorf("the write probe got %q, want %q", data, c.write)
				}
			case <-time.After(500 * time.Millisecond):
				if c.write != "" {
					t.Errorf("the write probe did not run, want it with %q", c.write)
				}
			}
		})
	}
}

// serveHTTP serves h as --http does, with a read timeout of 200 ms, until
// the test ends, and returns its address.
func serveHTTP(t *testing.T, h httpserve.Handler) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	limits := httpserve.DefaultLimits
	limits.Read = 200 * time.Millisecond
	srv := httpserve.New(h, limits, io.Discard, "")
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}
