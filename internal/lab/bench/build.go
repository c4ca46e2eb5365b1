package bench

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// BuildFunctions builds functions/<fn> for linux/goarch with BuildFlags and
// CGO_ENABLED=0 into outDir/<fn>/bootstrap, all in one go build. Errors:
// the build's output.
func BuildFunctions(ctx context.Context, goCmd, repoDir, goarch, outDir string, functions []string) error {
	tmp, err := os.MkdirTemp(outDir+"-tmp", "")
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(outDir+"-tmp", 0o755); err == nil {
			tmp, err = os.MkdirTemp(outDir+"-tmp", "")
		}
	}
	if err != nil {
		return fmt.Errorf("build dir: %w", err)
	}
	defer os.RemoveAll(outDir + "-tmp")
	args := append([]string{"build"}, BuildFlags...)
	args = append(args, "-o", tmp+string(filepath.Separator))
	for _, fn := range functions {
		args = append(args, "./functions/"+fn)
	}
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = repoDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for linux/%s: %w\n%s", goarch, err, out.String())
	}
	for _, fn := range functions {
		dir := filepath.Join(outDir, fn)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(tmp, fn), filepath.Join(dir, "bootstrap")); err != nil {
			return fmt.Errorf("place %s bootstrap: %w", fn, err)
		}
	}
	return nil
}

// ZipBootstrap writes a zip holding bin as "bootstrap" (executable,
// deflate), as the CDK packages a function directory, and returns the zip's
// size in bytes.
func ZipBootstrap(bin, zipPath string) (int64, error) {
	src, err := os.Open(bin)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	dst, err := os.Create(zipPath)
	if err != nil {
		return 0, err
	}
	defer dst.Close()
	zw := zip.NewWriter(dst)
	hdr := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate, Modified: time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)}
	hdr.SetMode(0o755)
	w, err := zw.CreateHeader(hdr)
	if err != nil {
		return 0, err
	}
	if _, err := io.Copy(w, src); err != nil {
		return 0, fmt.Errorf("zip %s: %w", bin, err)
	}
	if err := zw.Close(); err != nil {
		return 0, fmt.Errorf("zip %s: %w", bin, err)
	}
	if err := dst.Close(); err != nil {
		return 0, err
	}
	return fileSize(zipPath)
}

func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
