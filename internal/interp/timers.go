package interp

import (
	"context"
	"time"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/sema"
)

// Timer probes keep stap's schedules. timer.s, .ms, .us, .ns and .hz are
// hrtimers in stap: each expiry is the previous one plus the period, so a
// handler that runs late (a busy machine) moves no later expiry, and the
// periods it fell behind fire at once, one after another, until it has
// caught up: such a timer fires once per period over the run, however
// loaded the machine. timer.jiffies is a kernel timer that stap re-arms,
// before its handler runs, one period after it fired: it drifts by its
// lateness, as stap's does.

// timer is one timer probe and when it fires next.
type timer struct {
	probe  *sema.Probe
	period time.Duration
	jitter time.Duration // .randomize: each period varies by up to ±jitter
	next   time.Time
	// rearm: the next expiry counts from when the timer fired (jiffies),
	// not from the previous expiry
	rearm bool
}

func newTimer(p *sema.Probe, now time.Time) *timer {
	point := &probes.Point{Components: p.Point.Components}
	periodNs, randNs, jiffies := probes.TimerPeriod(point)
	if jiffies > 0 {
		tick := int64(time.Second) / int64(kernel.HZ())
		periodNs = jiffies * tick
		r, _ := point.Number("randomize")
		randNs = r * tick
	}
	t := &timer{probe: p, period: time.Duration(max(periodNs, 1)), jitter: time.Duration(randNs), rearm: jiffies > 0}
	t.next = now.Add(t.interval(nil))
	return t
}

// interval is the time to the next expiry.
func (t *timer) interval(in *Interp) time.Duration {
	if t.jitter <= 0 || in == nil {
		return t.period
	}
	return t.period - t.jitter + time.Duration(in.rng.Int64N(int64(2*t.jitter)+1))
}

// runTimers fires the timers in deadline order until the session stops.
func (in *Interp) runTimers(ctx context.Context, probes []*sema.Probe) {
	start := time.Now()
	in.scheduled = start
	timers := make([]*timer, len(probes))
	for i, p := range probes {
		timers[i] = newTimer(p, start)
	}
	for {
		due := earliest(timers)
		if !in.wait(ctx, due) {
			in.catchUp(ctx, timers)
			return
		}
		in.expire(due)
	}
}

// earliest is the timer that expires first, nil for none.
func earliest(timers []*timer) *timer {
	var due *timer
	for _, t := range timers {
		if due == nil || t.next.Before(due.next) {
			due = t
		}
	}
	return due
}

// expire schedules due's next expiry and runs its probe, unless paused.
func (in *Interp) expire(due *timer) {
	if due.rearm {
		due.next = time.Now()
	}
	due.next = due.next.Add(due.interval(in))
	in.mu.Lock()
	paused := in.paused
	in.mu.Unlock()
	if !paused {
		in.fire(due.probe, stateRunning)
	}
}

// catchUp fires, when the run's time limit (-T) has passed, the periods
// that fell due before it and that a process starved of CPU had not fired
// yet: stap's hrtimers fire in the kernel however busy the machine, up to
// the end. A stop asked by the script (exit()) ends the run at once.
func (in *Interp) catchUp(ctx context.Context, timers []*timer) {
	end, ok := ctx.Deadline()
	if !ok || ctx.Err() != context.DeadlineExceeded {
		return
	}
	for due := earliest(timers); due != nil && !due.next.After(end); due = earliest(timers) {
		select {
		case <-in.done:
			return
		default:
		}
		in.expire(due)
	}
}

// wait sleeps until due expires (forever when there is no timer); it reports
// false when the session stops first.
func (in *Interp) wait(ctx context.Context, due *timer) bool {
	select { // a timer fallen behind is due at once: the stop comes first
	case <-ctx.Done():
		return false
	case <-in.done:
		return false
	default:
	}
	var wake <-chan time.Time
	if due != nil {
		w := time.NewTimer(time.Until(due.next))
		defer w.Stop()
		wake = w.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-in.done:
		return false
	case <-wake:
		return true
	}
}
