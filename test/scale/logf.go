package scale

import (
	"fmt"
	"os"
	"time"
)

// logf prints a line at once: a benchmark's own log only shows once it ends,
// and a run takes minutes. It lives outside the test files because the
// samplers beside it use it too, and the package must build without them.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}
