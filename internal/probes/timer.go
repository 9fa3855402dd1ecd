package probes

import "fmt"

// Interval timers: timer.s/sec/ms/msec/us/usec/ns/nsec(N), timer.hz(N) and
// timer.jiffies(N), the unit timers and jiffies optionally randomized by
// .randomize(M). They run in user space. Limits follow stap: a period between
// 100 microseconds and one day, jiffies between 1 and 1000000, and a
// randomization between 0 and the period.

const (
	minPeriodNs = 100_000
	maxPeriodNs = 86400 * 1_000_000_000
)

// timerUnits maps each unit name to its length in nanoseconds.
var timerUnits = map[string]int64{
	"s": 1_000_000_000, "sec": 1_000_000_000,
	"ms": 1_000_000, "msec": 1_000_000,
	"us": 1_000, "usec": 1_000,
	"ns": 1, "nsec": 1,
}

func timerFamilies() []*Family {
	f := &Family{Name: "timer", Check: checkTimer}
	for unit := range timerUnits {
		f.Paths = append(f.Paths, "timer."+unit+"(number)", "timer."+unit+"(number).randomize(number)")
	}
	f.Paths = append(f.Paths, "timer.hz(number)", "timer.jiffies(number)", "timer.jiffies(number).randomize(number)")
	return []*Family{f}
}

// TimerPeriod returns the period of a timer point in nanoseconds, its
// randomization in nanoseconds, and for jiffies timers the jiffies count
// (period and randomization are then 0).
func TimerPeriod(p *Point) (periodNs, randNs, jiffies int64) {
	unit := p.Components[1].Name
	n, _ := p.Number(unit)
	r, _ := p.Number("randomize")
	switch unit {
	case "jiffies":
		return 0, 0, n
	case "hz":
		return 1_000_000_000 / n, 0, 0
	}
	return n * timerUnits[unit], r * timerUnits[unit], 0
}

func checkTimer(p *Point) error {
	unit := p.Components[1].Name
	n, _ := p.Number(unit)
	r, hasRand := p.Number("randomize")
	switch unit {
	case "jiffies":
		if n <= 0 || n > 1_000_000 {
			return errorf("invalid interval for jiffies timer")
		}
	case "hz":
		if n <= 0 {
			return errorf("frequency must be greater than 0")
		}
		return checkPeriod(1_000_000_000/n, 1)
	default:
		if err := checkPeriod(n, timerUnits[unit]); err != nil {
			return err
		}
	}
	if hasRand && (r < 0 || r > n) {
		return errorf("randomization value out of range")
	}
	return nil
}

// checkPeriod checks n units of scale nanoseconds against stap's limits, which
// it reports in the user's unit.
func checkPeriod(n, scale int64) error {
	if n < (minPeriodNs+scale-1)/scale || n > maxPeriodNs/scale {
		return &Error{Msg: fmt.Sprintf("interval value out of range (%d, %d)",
			max(1, minPeriodNs/scale), maxPeriodNs/scale)}
	}
	return nil
}
