package cmd

// spx doctor: Spinifex's door to spx-doctor, the node doctor, in the way
// kubectl and git run their plugins. This file drops into Spinifex's
// cmd/spinifex/cmd/ as it is; contrib/spinifex/install.md (in the
// spx-doctor repository) says how to build and install both.
//
// `spx doctor WORDS…` replaces this process with `spx-doctor WORDS…`
// (execve): stdout, stderr, signals and the exit code (0 ok, 1 a check
// failed, 2 inconclusive) are the doctor's own. The doctor is found at one
// fixed, reviewed path, never by a $PATH search. SPX_DOCTOR_VIA=spx tells it
// to name itself `spx doctor` in help, errors and remediation.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// doctorPath is where spx doctor finds the doctor. It is set at build time
// only, never from the environment or a flag:
//
//	go build -ldflags "-X github.com/mulgadc/spinifex/cmd/spinifex/cmd.doctorPath=/opt/spx-doctor/bin/spx-doctor"
var doctorPath = "/usr/local/bin/spx-doctor"

// How long `spx doctor <TAB>` waits for the doctor's completion candidates.
const doctorCompleteTimeout = 5 * time.Second

var doctorCmd = &cobra.Command{
	Use:   "doctor [flags] | doctor list | doctor explain ID",
	Short: "Check this node against what Spinifex needs (runs spx-doctor)",
	// Every word after `doctor` is the doctor's, flags included.
	DisableFlagParsing: true,
	RunE: func(cmd *cobra.Command, args []string) error {
		words, env := doctorInvocation(cmd, args, os.Args[1:])
		execDoctor(words, env)
		return nil // not reached: execDoctor runs the doctor or exits
	},
	ValidArgsFunction: completeDoctor,
}

func init() {
	doctorCmd.Long = "Check this node against what Spinifex needs: socket buffers, path MTU to every\n" +
		"peer, IPsec flags and SAs, NIC offloads and queues, guest QEMU tuning.\n\n" +
		"Runs " + doctorPath + "; every word after `doctor` is the doctor's\n" +
		"(see `spx doctor --help`)."
	rootCmd.AddCommand(doctorCmd)
	// The doctor has its own --help. A hidden flag of that name keeps cobra
	// from adding (and completing) a second one for this command.
	doctorCmd.Flags().BoolP("help", "h", false, "")
	_ = doctorCmd.Flags().MarkHidden("help")
	// `spx help doctor` is `spx doctor --help`.
	doctorCmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c != doctorCmd {
			c.Root().HelpFunc()(c, args)
			return
		}
		execDoctor([]string{"--help"}, doctorEnv(""))
	})
}

// doctorInvocation returns the words to pass to the doctor and its
// environment. With DisableFlagParsing, cobra hands this command every word
// of the command line but `doctor` itself, spx's own root flags included
// (`spx --config X doctor --check mtu` arrives as [--config X --check mtu]).
// line is the command line as typed; the words before `doctor` are spx's:
// its --config reaches the doctor as SPINIFEX_CONFIG_PATH, which is how spx
// itself reads that flag's value, and the doctor's own --config still wins.
// The rest of spx's flags (-v, --host, …) mean nothing to the doctor.
func doctorInvocation(cmd *cobra.Command, args, line []string) ([]string, []string) {
	for k, w := range line {
		if w != cmd.Name() || !sameWords(args, line[:k], line[k+1:]) {
			continue
		}
		spx := spxFlags(cmd)
		if err := spx.Parse(line[:k]); err != nil || spx.NArg() != 0 {
			continue // not the `doctor` cobra found: a value of a flag
		}
		config := ""
		if f := spx.Lookup("config"); f != nil && f.Changed {
			config = f.Value.String()
		}
		return line[k+1:], doctorEnv(config)
	}
	// The command line is not the one cobra parsed (a caller of
	// rootCmd.SetArgs): pass every word on.
	return args, doctorEnv("")
}

// sameWords reports whether args is before followed by after.
func sameWords(args, before, after []string) bool {
	if len(args) != len(before)+len(after) {
		return false
	}
	for i, w := range before {
		if args[i] != w {
			return false
		}
	}
	for i, w := range after {
		if args[len(before)+i] != w {
			return false
		}
	}
	return true
}

// spxFlags is a copy of the flags spx's parent commands give `doctor`, to
// parse the words before `doctor` as cobra would have, without touching
// spx's own flag values. Each takes a value unless cobra lets it stand
// alone (bools).
func spxFlags(cmd *cobra.Command) *pflag.FlagSet {
	fs := pflag.NewFlagSet("spx", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) {
		fs.StringP(f.Name, f.Shorthand, "", "")
		fs.Lookup(f.Name).NoOptDefVal = f.NoOptDefVal
	})
	return fs
}

// doctorEnv is this process's environment with SPX_DOCTOR_VIA=spx and, if
// spx was given --config, SPINIFEX_CONFIG_PATH set to it.
func doctorEnv(config string) []string {
	env := make([]string, 0, len(os.Environ())+2)
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SPX_DOCTOR_VIA=") ||
			(config != "" && strings.HasPrefix(kv, "SPINIFEX_CONFIG_PATH=")) {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "SPX_DOCTOR_VIA=spx")
	if config != "" {
		env = append(env, "SPINIFEX_CONFIG_PATH="+config)
	}
	return env
}

// execDoctor replaces this process with the doctor. It returns only by
// exiting 2 (inconclusive, as the doctor itself does for bad usage) with one
// line on stderr, when the doctor is missing or cannot be trusted.
func execDoctor(words, env []string) {
	if err := checkDoctor(); err != nil {
		doctorFatal(err)
	}
	argv := append([]string{doctorPath}, words...)
	doctorFatal(syscall.Exec(doctorPath, argv, env))
}

// checkDoctor refuses a doctor that is not a regular file, or that a user
// other than its owner may change: spx doctor is run as root.
func checkDoctor() error {
	info, err := os.Stat(doctorPath)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", doctorPath)
	}
	if info.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by group or others (mode %04o); refusing to run it (chmod go-w %s)",
			doctorPath, info.Mode().Perm(), doctorPath)
	}
	return nil
}

func doctorFatal(err error) {
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "spx doctor: error: %s is not installed: install spx-doctor there (install -m 0755 spx-doctor %s)\n",
			doctorPath, doctorPath)
	} else {
		fmt.Fprintf(os.Stderr, "spx doctor: error: cannot run %s: %v\n", doctorPath, err)
	}
	os.Exit(2)
}

// completeDoctor completes `spx doctor <TAB>` by asking the doctor:
// `spx-doctor __complete WORDS…` prints candidates as `value<TAB>help`, one
// a line, then cobra's directive as `:N` (cobra's own __complete format).
func completeDoctor(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if checkDoctor() != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	// The line as typed: os.Args is [spx __complete WORDS… TO_COMPLETE].
	var line []string
	if len(os.Args) >= 3 {
		line = os.Args[2 : len(os.Args)-1]
	}
	words, env := doctorInvocation(cmd, args, line)
	ctx, cancel := context.WithTimeout(context.Background(), doctorCompleteTimeout)
	defer cancel()
	c := exec.CommandContext(ctx, doctorPath, append(append([]string{"__complete"}, words...), toComplete)...)
	c.Env = env
	out, err := c.Output()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	// For a word that starts a flag, cobra itself offers spx's own flags:
	// skip ours of the same name rather than list them twice.
	offered := map[string]bool{}
	if strings.HasPrefix(toComplete, "-") && !strings.Contains(toComplete, "=") {
		cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && f.Deprecated == "" {
				offered["--"+f.Name] = true
				if f.Shorthand != "" && toComplete == "-" {
					offered["-"+f.Shorthand] = true
				}
			}
		})
	}
	directive := cobra.ShellCompDirectiveNoFileComp
	var candidates []string
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, ":") {
			var n int
			if _, err := fmt.Sscanf(l, ":%d", &n); err == nil {
				directive = cobra.ShellCompDirective(n)
			}
			continue
		}
		if offered[strings.SplitN(l, "\t", 2)[0]] {
			continue
		}
		candidates = append(candidates, l)
	}
	return candidates, directive
}
