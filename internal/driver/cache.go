package driver

import (
	"errors"
	"fmt"
	"slices"

	"github.com/bpftap/bpftap/internal/kernel"
)

// The cache of the system calls' trace events (kernel.EventCache): pass 2
// reads the events from it, and what it lacked from tracefs, which
// saveEvents then adds to it. The cache of programs: programcache.go.

// saveEvents saves the events pass 2 read from tracefs, and tells what
// the cache did: at -vv how many events it served; why it was not read
// or written (cacheNotUsed).
func (s *session) saveEvents() {
	served, read, why := s.events.Report()
	s.cacheNotUsed(why)
	s.cacheNotUsed(s.events.Save())
	if s.verbose(2) > 1 && served+read > 0 {
		fmt.Fprintf(s.stderr, "Pass 2: the formats of %d trace events came from the cache in %s, %d from tracefs\n", served, s.opts.CacheDir, read)
	}
}

// cacheNotUsed tells why the cache (of the events, of the programs) was
// not read or written: at -vv, or in a warning at any verbosity when
// another user could have written it; once each.
func (s *session) cacheNotUsed(err error) {
	if err == nil || slices.Contains(s.cacheSaid, err.Error()) {
		return
	}
	s.cacheSaid = append(s.cacheSaid, err.Error())
	switch {
	case errors.Is(err, kernel.ErrUntrusted):
		s.warn(fmt.Sprintf("the cache is ignored: %v", err))
	case s.verbose(2) > 1:
		fmt.Fprintf(s.stderr, "Pass 2: the cache is not used: %v\n", err)
	}
}
