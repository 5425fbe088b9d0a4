package network

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func readRepoFile(t *testing.T, rel string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(file))), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
