// Command image builds nodewright's container image as a tarball, with no
// container runtime: it builds the binary static for linux and puts it in a
// one-layer image (internal/image). `make image` runs it; load the result
// with `docker load -i bin/nodewright-image.tar`.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nodewright/nodewright/internal/image"
)

func main() {
	out := flag.String("o", "bin/nodewright-image.tar", "tarball to write")
	tag := flag.String("tag", image.DefaultTag, "the image's name and tag, as the Deployment manifest refers to it")
	arch := flag.String("arch", "amd64", "the image's CPU architecture (amd64 or arm64)")
	flag.Parse()
	if err := run(*out, *tag, *arch); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(out, tag, arch string) error {
	dir, err := os.MkdirTemp("", "nodewright-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "nodewright")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./cmd/nodewright")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the binary for linux/%s: %w", arch, err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	img, err := image.Build(image.Spec{Binary: data, OS: "linux", Architecture: arch, Created: created()})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := image.WriteTarball(out, tag, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s: %s, %s\n", out, tag, digest)
	return nil
}

// created is SOURCE_DATE_EPOCH when set (reproducible builds' convention),
// else the Unix epoch, so the same binary gives the same image digest.
func created() time.Time {
	if s, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
		return time.Unix(s, 0).UTC()
	}
	return time.Unix(0, 0).UTC()
}
