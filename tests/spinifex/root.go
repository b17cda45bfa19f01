// A stand-in for Spinifex's cmd/spinifex/cmd/root.go, for tests/spinifex_hook.rs:
// the root command `spx` with the same persistent flags (--config bound to
// SPINIFEX_CONFIG_PATH, -v/--verbose, --host, …) and the same Execute, so
// contrib/spinifex/doctor.go builds and runs here as it would in Spinifex.

package cmd

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

var rootCmd = &cobra.Command{
	Use:   "spx",
	Short: "Spinifex - Open source AWS-compatible platform for secure edge deployments",
}

// Execute is Spinifex's: an error is printed and exits 1.
func Execute() {
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func init() {
	rootCmd.PersistentFlags().BoolP("verbose", "v", false, "log at info level (default: errors only)")
	rootCmd.PersistentFlags().String("config", "", "config file (required)")
	rootCmd.PersistentFlags().String("access-key", "", "AWS access key (overrides config file and env)")
	rootCmd.PersistentFlags().String("host", "", "AWS Endpoint (overrides config file and env)")
	rootCmd.PersistentFlags().String("nats-token", "", "NATS authentication token (overrides config file and env)")
}
