package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestBuildWritesALoadableImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "udnkit")
	if err := os.WriteFile(bin, []byte("#!/bin/false\nnot really the manager"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.tar")
	if err := build(bin, "ghcr.io/udnkit/udnkit:0.1.0", out); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("ghcr.io/udnkit/udnkit:0.1.0")
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatalf("the tarball does not hold the tagged image: %v", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/udnkit" || cf.OS != "linux" {
		t.Errorf("config = %+v", cf.Config)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(rc)
	found := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "udnkit" {
			data, _ := io.ReadAll(tr)
			found = string(data) == "#!/bin/false\nnot really the manager" && h.Mode == 0o755
		}
	}
	if !found {
		t.Error("the layer lacks /udnkit with the binary's bytes")
	}
	// The same binary gives the same digest.
	again := filepath.Join(dir, "again.tar")
	if err := build(bin, "ghcr.io/udnkit/udnkit:0.1.0", again); err != nil {
		t.Fatal(err)
	}
	img2, _ := tarball.ImageFromPath(again, &tag)
	d1, _ := img.Digest()
	d2, _ := img2.Digest()
	if d1 != d2 {
		t.Errorf("digests differ: %s, %s", d1, d2)
	}
	for _, bad := range [][3]string{{"", "r:1", out}, {bin, "UPPER CASE:x", out}, {filepath.Join(dir, "missing"), "ghcr.io/a/b:1", out}} {
		if err := build(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("build%q succeeded", bad)
		}
	}
}
