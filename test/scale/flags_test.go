package scale

import (
	"slices"
	"testing"
)

func TestMissingFlags(t *testing.T) {
	args := []string{"/bin/kube-apiserver", "--secure-port=6443", "--v=2", "--http2-max-streams-per-connection=1000", "--v=4", "positional=1"}
	for _, tc := range []struct {
		flags, want []string
	}{
		{flags: nil},
		{flags: []string{"http2-max-streams-per-connection=1000"}},
		{flags: []string{"--secure-port=6443", "v=4"}},
		{flags: []string{"v=2"}, want: []string{"v=2"}}, // the last one wins
		{flags: []string{"http2-max-streams-per-connection=100"}, want: []string{"http2-max-streams-per-connection=100"}},
		{flags: []string{"positional=1"}, want: []string{"positional=1"}},
		{flags: []string{"audit-log-path=-"}, want: []string{"audit-log-path=-"}},
	} {
		if got := missingFlags(args, tc.flags); !slices.Equal(got, tc.want) {
			t.Errorf("missingFlags(%q): %q, want %q", tc.flags, got, tc.want)
		}
	}
}

func TestSchedulerFlags(t *testing.T) {
	qps := []string{"kube-api-qps=400", "kube-api-burst=800"}
	for _, tc := range []struct {
		name string
		cfg  config
		want []string
	}{
		{name: "kwokctl's defaults", cfg: config{}},
		{name: "extra flags", cfg: config{extraSchedulerFlags: qps}, want: qps},
		{name: "profiles", cfg: config{schedPprofDir: "/tmp/p"}, want: []string{schedulerPprofPaths}},
		{name: "both", cfg: config{extraSchedulerFlags: qps, schedPprofDir: "/tmp/p"}, want: append(slices.Clone(qps), schedulerPprofPaths)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.cfg.schedulerFlags()
			if !slices.Equal(got, tc.want) {
				t.Errorf("schedulerFlags() = %q, want %q", got, tc.want)
			}
			if len(tc.cfg.extraSchedulerFlags) > 0 && &got[0] == &tc.cfg.extraSchedulerFlags[0] {
				t.Error("schedulerFlags() returned the config's own slice; appending to it would change the config")
			}
		})
	}
}
