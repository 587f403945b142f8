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
		{[]string{"--kwok-repair-toleration=0s"}, "--kwok-repair-toleration 0s: give a positive duration"},
		{[]string{"--kwok-repair-toleration=-1m"}, "--kwok-repair-toleration -1m0s: give a positive duration"},
		{[]string{"--nodeclaim-workers=0"}, "--nodeclaim-workers 0: give at least 1"},
		{[]string{"--early-launch-interval=-1s"}, "--early-launch-interval -1s: give a positive duration, or 0"},
		{[]string{"--early-launch-fill=0"}, "--early-launch-fill 0: give a share of a node above 0 and at most 1"},
		{[]string{"--early-launch-fill=1.5"}, "--early-launch-fill 1.5: give a share of a node above 0 and at most 1"},
		{[]string{"--log-level=loud"}, `--log-level "loud"`},
		{[]string{"--kwok-launch-error-percent=101"}, "--kwok-launch-error-percent 101: give a percentage from 0 to 100"},
		{[]string{"--kwok-delete-error-percent=-1"}, "--kwok-delete-error-percent -1: give a percentage from 0 to 100"},
		{[]string{"--kwok-throttled-percent=200"}, "--kwok-throttled-percent 200: give a percentage from 0 to 100"},
		{[]string{"--kwok-lost-response-percent=101"}, "--kwok-lost-response-percent 101: give a percentage from 0 to 100"},
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
