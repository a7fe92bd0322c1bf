// Package flags reads a perflab workload's command line: --name=value or --name value, and every
// bad input is one line on stderr and exit status 2 (the workload contract; the C header
// workloads/common/c/perflab_workload.h and the other languages' helpers say it the same way).
// Standard library only, so workloads build offline.
package flags

import (
	"fmt"
	"os"
	"strings"
)

// Command is a workload's name in messages and the words of its scan errors.  An empty word is
// the C header's: each is a fmt format whose %[1]s is the argument (Unexpected) or the flag's
// name (NoValue, Unknown).
type Command struct {
	Prog       string
	Unexpected string // default "unexpected argument '%[1]s'; flags are --name=value"
	NoValue    string // default "--%[1]s needs a value (--%[1]s=VALUE)"
	Unknown    string // default "unknown flag --%[1]s"
}

// Usage prints "<Prog>: <message>" on stderr and exits 2.
func (c Command) Usage(format string, a ...any) {
	fmt.Fprintf(os.Stderr, c.Prog+": "+format+"\n", a...)
	os.Exit(2)
}

func word(w, def string) string {
	if w == "" {
		return def
	}
	return w
}

// Parse reads args in order into name -> value (a later flag wins).  With known, a name it
// refuses is an error as soon as it is read; without, every name is kept (the caller checks
// them) and a bare "--" is an unexpected argument.
func (c Command) Parse(args []string, known func(name string) bool) map[string]string {
	vals := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") || (known == nil && len(a) < 3) {
			c.Usage(word(c.Unexpected, "unexpected argument '%[1]s'; flags are --name=value"), a)
		}
		name, val, ok := strings.Cut(a[2:], "=")
		if known != nil && !known(name) {
			c.Usage(word(c.Unknown, "unknown flag --%[1]s"), name)
		}
		if !ok {
			if i+1 >= len(args) {
				c.Usage(word(c.NoValue, "--%[1]s needs a value (--%[1]s=VALUE)"), name)
			}
			i++
			val = args[i]
		}
		vals[name] = val
	}
	return vals
}

// CheckRange exits 2 unless lo <= v <= hi.
func (c Command) CheckRange(name string, v, lo, hi int64) {
	if v < lo || v > hi {
		c.Usage("--%s=%d is out of range; allowed: %d..%d", name, v, lo, hi)
	}
}

// CheckChoice exits 2 unless v is one of choices.
func (c Command) CheckChoice(name, v string, choices ...string) {
	for _, ch := range choices {
		if v == ch {
			return
		}
	}
	c.Usage("--%s=%s is not allowed; choose one of %s", name, v, strings.Join(choices, "|"))
}
