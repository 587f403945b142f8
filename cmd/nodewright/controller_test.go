package main

import (
	"io"
	"strings"
	"testing"
)

// Flags the controller refuses before it touches a cluster.
func TestControllerRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nodeclaim-workers=0"}, "--nodeclaim-workers 0: give at least 1"},
		{[]string{"--log-level=loud"}, `--log-level "loud"`},
	} {
		cmd := controllerCommand()
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}
