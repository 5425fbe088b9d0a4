package app_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/cmd/udnkit/app"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/envtest/manager"
	"github.com/udnkit/udnkit/internal/testenv"
)

// TestMetricsNeedAuthorizedToken runs the manager as the chart's manager
// ServiceAccount, with only the generated udnkit-manager ClusterRole (so the
// TokenReviews and SubjectAccessReviews the metrics filter makes need its
// +kubebuilder:rbac markers), and scrapes /metrics over HTTPS: no token gets
// 401, a forged token 500, a valid token without the chart's
// udnkit-metrics-reader role 403, a token bound to it the metrics; plain HTTP
// gets none.
func TestMetricsNeedAuthorizedToken(t *testing.T) {
	testenv.Real(t, "kube-apiserver")
	env, err := envtest.Start(envtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	for _, ns := range []string{"udnkit-system", "monitoring"} {
		must(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	must(t, envtest.InstallObjects(ctx, env.Client, filepath.Join(envtest.RepoRoot(), "charts", "udnkit", "files", "rbac")))
	must(t, envtest.InstallObjects(ctx, env.Client, envtest.AccessDir()))
	bindClusterRole(t, env.Client, "udnkit-manager", "udnkit-system", "udnkit")
	token := func(ns, sa string) string {
		must(t, env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}))
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	prometheus, stranger := token("monitoring", "prometheus"), token("monitoring", "stranger")
	bindClusterRole(t, env.Client, "udnkit-metrics-reader", "monitoring", "prometheus")

	addr := freeAddr(t)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:udnkit-system:udnkit",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:udnkit-system", "system:authenticated"}}
	manager.Start(ctx, t, cfg, []string{"--metrics-bind-address=" + addr}, func(o *app.Options) { o.Controllers = "" })

	httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the metrics server's certificate is self-signed
	scrape := func(scheme, token string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	// Authorized: served once the server is up and the binding is visible.
	var body string
	testenv.Eventually(t, "the metrics served to Prometheus", func() error {
		code, b, err := scrape("https", prometheus)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("status %d: %s", code, b)
		}
		body = b
		return nil
	})
	if !strings.Contains(body, "# TYPE rest_client_requests_total") {
		t.Errorf("the authorized scrape lacks controller-runtime's metrics:\n%.500s", body)
	}
	for _, c := range []struct {
		what, scheme, token string
		want                int
	}{
		{"no token", "https", "", http.StatusUnauthorized},
		// controller-runtime's filter answers 500 "Authentication failed"
		// when the TokenReview reports an error, as it does for a bad signature.
		{"a forged token (tampered signature)", "https", tamper(prometheus), http.StatusInternalServerError},
		{"a valid token without udnkit-metrics-reader", "https", stranger, http.StatusForbidden},
		{"plain HTTP", "http", prometheus, 0},
	} {
		code, b, err := scrape(c.scheme, c.token)
		if c.want == 0 {
			// The TLS server answers plain HTTP with an error or a reset, never metrics.
			if err == nil && (code == http.StatusOK || strings.Contains(b, "rest_client_requests_total")) {
				t.Errorf("%s: served metrics (status %d)", c.what, code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.what, err)
			continue
		}
		if code != c.want || strings.Contains(b, "rest_client_requests_total") {
			t.Errorf("%s: status %d, want %d without metrics; body %.200q", c.what, code, c.want, b)
		}
	}
}

func bindClusterRole(t *testing.T, c client.Client, role, ns, sa string) {
	t.Helper()
	must(t, c.Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role + "-" + sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
	}))
}

// tamper flips the last character of a JWT's signature.
func tamper(token string) string {
	// A character in the middle of the signature: the last base64url
	// character may carry only padding bits, so changing it may change nothing.
	i := strings.LastIndex(token, ".") + 10
	swap := byte('A')
	if token[i] == 'A' {
		swap = 'B'
	}
	return token[:i] + string(swap) + token[i+1:]
}

// freeAddr returns a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
