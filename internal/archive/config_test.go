package archive

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/envnames"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigFromEnv(t *testing.T) {
	t.Run("Defaults", func(t *testing.T) {
		c, err := ConfigFromEnv(env(nil))
		if want := (Config{Dir: DefaultDir, SSE: SSES3, Access: AccessReadWrite}); err != nil || c != want {
			t.Errorf("ConfigFromEnv = %+v, %v; want %+v", c, err, want)
		}
	})
	t.Run("S3", func(t *testing.T) {
		c, err := ConfigFromEnv(env(map[string]string{
			envnames.ArchiveBucket: "b", envnames.ArchiveSSE: SSEKMS, envnames.ArchiveKMSKeyID: "alias/k",
			envnames.ArchiveS3Endpoint: "http://127.0.0.1:1", envnames.ArchiveAccess: AccessRead,
		}))
		want := Config{Bucket: "b", Dir: DefaultDir, SSE: SSEKMS, KMSKeyID: "alias/k", S3Endpoint: "http://127.0.0.1:1", S3PathStyle: true,
			Access: AccessRead}
		if err != nil || c != want {
			t.Errorf("ConfigFromEnv = %+v, %v; want %+v", c, err, want)
		}
	})
	t.Run("PathStyleOff", func(t *testing.T) {
		c, err := ConfigFromEnv(env(map[string]string{envnames.ArchiveS3Endpoint: "http://x", envnames.ArchiveS3PathStyle: "false"}))
		if err != nil || c.S3PathStyle {
			t.Errorf("ConfigFromEnv = %+v, %v; want path style off", c, err)
		}
	})
	for name, m := range map[string]map[string]string{
		"BadSSE":        {envnames.ArchiveSSE: "rot13"},
		"KeyWithoutKMS": {envnames.ArchiveKMSKeyID: "k"},
		"BadPathStyle":  {envnames.ArchiveS3PathStyle: "maybe"},
		"BadAccess":     {envnames.ArchiveAccess: "write"},
	} {
		t.Run(name, func(t *testing.T) {
			if c, err := ConfigFromEnv(env(m)); err == nil {
				t.Errorf("ConfigFromEnv = %+v, want an error", c)
			}
		})
	}
}
