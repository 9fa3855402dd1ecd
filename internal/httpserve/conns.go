package httpserve

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The connection cap. Each open connection holds a descriptor; with none
// left, accept fails (EMFILE) and no scrape gets in, nor can a script open
// its BPF maps. So at most max connections are open, max being
// Limits.MaxConns and at most half the process's RLIMIT_NOFILE (the rest
// is the scripts'). At the cap, a new connection takes the place of the
// one that idles the longest (between two requests of a keep-alive
// client), else of the oldest that has not yet sent a whole request
// header: they cost a client a reconnection at most. A connection whose
// request is being answered is never closed for another: when all max are,
// the new connection is open (max+1) and the next one waits in the
// listen queue until one is done or idles (every answer is bounded: the
// handler's own bound, then Limits.Write). Clients that connect and idle,
// or trickle a header, thus cannot keep a scrape out. (Only a connection
// that came is made room for: waiting for the next one, the listener
// closes an idle connection only, never one that has just come and not
// yet sent its header.)

// conns is a server's open connections.
type conns struct {
	mu      sync.Mutex
	max     int
	open    map[net.Conn]*connState
	changed chan struct{} // a token when a connection closes or idles
}

type connState struct {
	state http.ConnState
	since time.Time
}

func newConns(limit int) *conns {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil && rl.Cur/2 < uint64(limit) {
		limit = int(rl.Cur / 2)
	}
	return &conns{max: max(limit, 1), open: map[net.Conn]*connState{}, changed: make(chan struct{}, 1)}
}

// track follows a connection's state (http.Server.ConnState).
func (cs *conns) track(c net.Conn, state http.ConnState) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	st := cs.open[c]
	if st == nil {
		return // evicted
	}
	switch state {
	case http.StateClosed, http.StateHijacked:
		delete(cs.open, c)
	default:
		st.state, st.since = state, time.Now()
	}
	if state != http.StateActive {
		select {
		case cs.changed <- struct{}{}:
		default:
		}
	}
}

// admit adds a new connection, making room for it if the cap is reached.
func (cs *conns) admit(c net.Conn) {
	cs.mu.Lock()
	cs.open[c] = &connState{state: http.StateNew, since: time.Now()}
	victim := cs.victim(c, true)
	cs.mu.Unlock()
	if victim != nil {
		victim.Close()
	}
}

// room waits until there is room for the next connection (at most max+1
// are open after an admit), or until closed.
func (cs *conns) room(closed <-chan struct{}) bool {
	for {
		cs.mu.Lock()
		full := len(cs.open) > cs.max
		victim := cs.victim(nil, false)
		cs.mu.Unlock()
		if victim != nil {
			victim.Close()
		}
		if !full || victim != nil {
			return true
		}
		select {
		case <-cs.changed:
		case <-closed:
			return false
		}
	}
}

// victim removes and returns the connection to close when more than max
// are open, but for spare: the one idle the longest, else (with orNew)
// the oldest new one; nil if there is no need, or no such connection.
func (cs *conns) victim(spare net.Conn, orNew bool) net.Conn {
	if len(cs.open) <= cs.max {
		return nil
	}
	var best net.Conn
	var bestState *connState
	for c, st := range cs.open {
		if c == spare || st.state == http.StateActive || (st.state == http.StateNew && !orNew) {
			continue
		}
		if best == nil || evictsBefore(st, bestState) {
			best, bestState = c, st
		}
	}
	if best != nil {
		delete(cs.open, best)
	}
	return best
}

// evictsBefore tells whether a connection in state a goes before one in b:
// idle before new, and the older first.
func evictsBefore(a, b *connState) bool {
	if (a.state == http.StateIdle) != (b.state == http.StateIdle) {
		return a.state == http.StateIdle
	}
	return a.since.Before(b.since)
}

// listener makes l accept within the cap.
func (cs *conns) listener(l net.Listener) net.Listener {
	return &cappedListener{Listener: l, conns: cs, closed: make(chan struct{})}
}

type cappedListener struct {
	net.Listener
	conns  *conns
	once   sync.Once
	closed chan struct{}
}

func (l *cappedListener) Accept() (net.Conn, error) {
	if !l.conns.room(l.closed) {
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.conns.admit(c)
	return c, nil
}

func (l *cappedListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}
