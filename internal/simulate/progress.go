package simulate

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// ProgressBar returns an Options.Progress that draws a bar on w (a
// terminal) once the run has taken a second of wall time, so short runs
// print nothing, and clears it at the end.
func ProgressBar(w io.Writer) func(done, total time.Duration) {
	return progressBar(w, time.Now)
}

func progressBar(w io.Writer, now func() time.Time) func(done, total time.Duration) {
	began := now()
	drawn := false
	return func(done, total time.Duration) {
		if done >= total {
			if drawn {
				fmt.Fprint(w, "\r\033[K")
			}
			return
		}
		if now().Sub(began) < time.Second || total <= 0 {
			return
		}
		const width = 40
		n := int(float64(width) * float64(done) / float64(total))
		fmt.Fprintf(w, "\rsimulating [%s%s] %s of %s", strings.Repeat("#", n), strings.Repeat(".", width-n),
			done.Truncate(time.Minute), total)
		drawn = true
	}
}
