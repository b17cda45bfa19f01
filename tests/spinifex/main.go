// Spinifex's cmd/spinifex/main.go, for tests/spinifex_hook.rs.

package main

import "github.com/mulgadc/spinifex/cmd/spinifex/cmd"

func main() {
	cmd.Execute()
}
