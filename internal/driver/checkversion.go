package driver

import (
	"fmt"
	"regexp"
	"strings"
)

// versionTest finds a preprocessor conditional on systemtap_v.
var versionTest = regexp.MustCompile(`%\(\s*systemtap_v\b`)

// checkVersion is --check-version. stap warns of each global, function,
// probe and alias whose declaration it parsed under a %( systemtap_v ... %)
// conditional. bpftap's embedded library has none, so a run whose scripts
// and -I files have none either has nothing to warn of, as stap would
// not; where one has, bpftap, which does not mark such declarations,
// refuses the option in one line rather than stay silent. A file it
// cannot read is left for pass 1 to report.
func (s *session) checkVersion() error {
	srcs, _ := s.readScripts()
	stp, stpm, _ := s.includedSources()
	for _, src := range append(append(srcs, stp...), stpm...) {
		if loc := versionTest.FindStringIndex(src.Text); loc != nil {
			return fmt.Errorf("bpftap: --check-version is not supported: %s:%d tests systemtap_v, "+
				"and bpftap does not mark the declarations that depend on it", src.Name, strings.Count(src.Text[:loc[0]], "\n")+1)
		}
	}
	return nil
}
