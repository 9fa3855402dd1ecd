package httpserve

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests serve on loopback with short limits and play the clients over
// real TCP connections.

var testLimits = Limits{
	ReadHeader: 200 * time.Millisecond,
	Read:       200 * time.Millisecond,
	Write:      200 * time.Millisecond,
	Idle:       200 * time.Millisecond,
	MaxConns:   8,
}

// testHandler answers /slow after a second (503 if the request is
// cancelled first), /big with 64 MiB, /panic by panicking, /block once
// release is closed, and anything else at once, with the length of the
// request's body.
type testHandler struct{ release chan struct{} }

func (h *testHandler) answer(r *http.Request) Answer {
	switch r.URL.Path {
	case "/slow":
		select {
		case <-time.After(time.Second):
		case <-r.Context().Done():
			return Text(http.StatusServiceUnavailable, "cancelled")
		}
	case "/big":
		return Answer{Status: http.StatusOK, Body: strings.Repeat("x", 64<<20)}
	case "/panic":
		panic("the handler's bug\nsecond line")
	case "/block":
		<-h.release
	}
	n, err := io.Copy(io.Discard, r.Body)
	if err != nil {
		return Text(http.StatusBadRequest, "body cut")
	}
	return Text(http.StatusOK, fmt.Sprint(n))
}

// serve serves a testHandler with limits until the test ends and returns
// the server, its handler, address and the path of its log.
func serve(t *testing.T, limits Limits) (*Server, *testHandler, string, string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &testHandler{release: make(chan struct{})}
	logPath := filepath.Join(t.TempDir(), "log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	s := New(h.answer, limits, log, "test: ")
	go s.Serve(l)
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
		s.Close()
		log.Close()
	})
	return s, h, l.Addr().String(), logPath
}

// open is the number of connections s holds.
func (s *Server) open() int {
	s.conns.mu.Lock()
	defer s.conns.mu.Unlock()
	return len(s.conns.open)
}

// TestTimeouts plays a client that stops half-way through a header, one
// that stops half-way through a body, one that idles after its answer and
// one that does not read a 64 MiB answer: the server closes each
// connection once its limit passed, not before, having sent what it had
// to. A handler slower than all the limits is still answered: waiting for
// the handler has no timeout.
func TestTimeouts(t *testing.T) {
	s, _, addr, _ := serve(t, testLimits)
	cases := []struct {
		name, send string
		want       string // what the client reads starts with
	}{
		{"header", "GET / HTTP/1.1\r\nHost:", ""},
		{"body", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789", "HTTP/1.1 400"},
		{"idle", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200"},
		{"write", "GET /big HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.DialTCP("tcp", nil, resolve(t, addr))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetReadBuffer(4096)
			start := time.Now()
			io.WriteString(conn, c.send)
			waitFor(t, "the connection to be taken", func() bool { return s.open() > 0 })
			waitFor(t, "the connection to be closed", func() bool { return s.open() == 0 })
			if d := time.Since(start); d < 150*time.Millisecond {
				t.Errorf("closed after %v, before its limit (200 ms)", d)
			}
			got := make([]byte, len(c.want))
			conn.SetReadDeadline(time.Now().Add(time.Second))
			io.ReadFull(conn, got)
			if string(got) != c.want {
				t.Errorf("the client read %q, want %q first", got, c.want)
			}
		})
	}
	t.Run("slow handler", func(t *testing.T) {
		resp, err := http.Get("http://" + addr + "/slow")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("status %d, want 200", resp.StatusCode)
		}
	})
}

// waitFor waits until cond holds, at most 2 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 2 s for %s", what)
		}
	}
}

func resolve(t *testing.T, addr string) *net.TCPAddr {
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestCapIdleClients fills the cap 4 times over with connections that
// idle after a request and with connections that never send a byte: new
// clients are answered at once, and the server never holds more than the
// cap and one.
func TestCapIdleClients(t *testing.T) {
	s, _, addr, _ := serve(t, Limits{ReadHeader: time.Minute, Read: time.Minute, Write: time.Minute, Idle: time.Minute, MaxConns: 8})
	var hogs []net.Conn
	defer func() {
		for _, c := range hogs {
			c.Close()
		}
	}()
	for i := range 64 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		hogs = append(hogs, c)
		if i%2 == 0 {
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			http.ReadResponse(bufio.NewReader(c), nil) // an error: evicted already
		}
		if n := s.open(); n > 9 {
			t.Fatalf("%d connections open, the cap is 8", n)
		}
	}
	client := &http.Client{Timeout: time.Second}
	for i := range 10 {
		resp, err := client.Get("http://" + addr + "/")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
	}
}

// TestCapAnswering fills the cap with requests being answered, one after
// the other: one more connection is taken and answered in turn, and the
// next waits until an answer is done; none is closed for another.
func TestCapAnswering(t *testing.T) {
	s, h, addr, _ := serve(t, Limits{ReadHeader: time.Minute, Read: time.Minute, Write: time.Minute, Idle: time.Minute, MaxConns: 8})
	var blocked sync.WaitGroup
	statuses := make(chan int, 9)
	for i := range 9 {
		blocked.Add(1)
		go func() {
			defer blocked.Done()
			resp, err := http.Get("http://" + addr + "/block")
			if err != nil {
				statuses <- 0
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
		waitFor(t, fmt.Sprintf("request %d to be taken", i), func() bool { return s.answering() > i })
	}
	answered := make(chan error, 1)
	go func() {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	select {
	case err := <-answered:
		t.Fatalf("answered with 9 requests being answered (%v), want a wait", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(h.release)
	if err := <-answered; err != nil {
		t.Errorf("the waiting request: %v", err)
	}
	blocked.Wait()
	close(statuses)
	for status := range statuses {
		if status != http.StatusOK {
			t.Errorf("a blocked request ended %d, want 200", status)
		}
	}
}

// answering is the number of connections whose request s is answering.
func (s *Server) answering() int {
	s.conns.mu.Lock()
	defer s.conns.mu.Unlock()
	n := 0
	for _, st := range s.conns.open {
		if st.state == http.StateActive {
			n++
		}
	}
	return n
}

// TestPanic: a handler's panic is a 500 of one line; the log has one line
// with the panic's value, no stack.
func TestPanic(t *testing.T) {
	_, _, addr, log := serve(t, testLimits)
	resp, err := http.Get("http://" + addr + "/panic")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || string(body) != "internal error\n" {
		t.Errorf("%d %q, want 500 %q", resp.StatusCode, body, "internal error\n")
	}
	want := "test: GET \"/panic\": internal error: \"the handler's bug\\nsecond line\"\n"
	if got, _ := os.ReadFile(log); string(got) != want {
		t.Errorf("log %q, want %q", got, want)
	}
}
