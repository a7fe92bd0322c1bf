// Package flags reads a perflab workload's command line: --name=value or --name value, and every
// bad input is one line on stderr and exit status 2 (the workload contract; the C header
// workloads/common/c/perflab_workload.h and the other languages' helpers say it the same way).
// Standard library only, so workloads build offline.
package flags

import (
	"fmt"
	"os"
	"sort"
	"strconv"
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

// Values is a command line read whole (Read) whose flags the workload then takes one at a time
// with a default and a range (Int, Uint, String, Choice); Done refuses any flag left untaken.
type Values struct {
	Command
	vals map[string]string
}

// Read parses args (every name kept; Done names the unknown ones).
func (c Command) Read(args []string) *Values {
	return &Values{c, c.Parse(args, nil)}
}

func (v *Values) take(name string) (string, bool) {
	s, ok := v.vals[name]
	delete(v.vals, name)
	return s, ok
}

// Int is --name as a whole number (decimal, or 0x.. / 0o.. / 0b..) in [lo, hi]; def when absent.
func (v *Values) Int(name string, def, lo, hi int64) int64 {
	return number(v, name, def, lo, hi, strconv.ParseInt)
}

// Uint is Int for values up to 2^64-1 (seeds).
func (v *Values) Uint(name string, def, lo, hi uint64) uint64 {
	return number(v, name, def, lo, hi, strconv.ParseUint)
}

func number[T int64 | uint64](v *Values, name string, def, lo, hi T,
	parse func(string, int, int) (T, error)) T {
	s, ok := v.take(name)
	if !ok {
		return def
	}
	x, err := parse(strings.TrimSpace(s), 0, 64)
	if err != nil {
		v.Usage("--%s=%s is not a whole number; give one in [%d, %d]", name, s, lo, hi)
	}
	if x < lo || x > hi {
		v.Usage("--%s=%s is out of range; give a value in [%d, %d]", name, s, lo, hi)
	}
	return x
}

// String is --name as given; def when absent.
func (v *Values) String(name, def string) string {
	if s, ok := v.take(name); ok {
		return s
	}
	return def
}

// Choice is --name, one of choices; def when absent.
func (v *Values) Choice(name, def string, choices ...string) string {
	s := v.String(name, def)
	v.CheckChoice(name, s, choices...)
	return s
}

// Done exits 2 naming the first (alphabetically) flag no Int/Uint/String/Choice took; known
// lists the accepted ones for the message.
func (v *Values) Done(known string) {
	names := make([]string, 0, len(v.vals))
	for k := range v.vals {
		names = append(names, k)
	}
	if len(names) > 0 {
		sort.Strings(names)
		v.Usage("unknown parameter --%s; known: %s", names[0], known)
	}
}
