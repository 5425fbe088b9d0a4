package ovsconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// Config says where the OVN databases are and how to reach them.
type Config struct {
	// NBAddress and SBAddress are the --ovn-nb-address and --ovn-sb-address
	// flags: one OVSDB endpoint, or the comma-separated endpoints of a RAFT
	// cluster ("ssl:a:6641,ssl:b:6641,ssl:c:6641"), each "unix:/abs/path",
	// "tcp:host:port" or "ssl:host:port". With several endpoints the client
	// talks to the cluster's leader only, and follows leadership changes.
	NBAddress, SBAddress string
	// TLS is what ssl: endpoints use; required when any endpoint is ssl:.
	TLS TLS
	// ConnectTimeout bounds one connection attempt, from the dial to the
	// monitor's initial copy of the tables (0: DefaultConnectTimeout). That
	// copy grows with the database: it must fit the zone's largest.
	ConnectTimeout time.Duration
}

// DefaultConnectTimeout is Config.ConnectTimeout's default
// (--ovn-connect-timeout). The monitor's initial copy of a zone's Northbound
// grows with its rows (tens of microseconds each; a full-size `make scale`
// zone holds about a million), and a connect that times out is retried from
// the start, so the default leaves room for the largest zone on a slow
// machine.
const DefaultConnectTimeout = 5 * time.Minute

// TLS holds the PEM files of the client side of ssl: connections (OVN's
// ovsdb-server requires a client certificate signed by a CA it trusts).
type TLS struct {
	// CertFile and KeyFile are the client certificate and its private key.
	// They are read again at every connection, so a rotated Secret is picked
	// up at the next reconnect.
	CertFile, KeyFile string
	// CAFile holds the CA certificates the servers' certificates must chain
	// to; read once, when the client is created.
	CAFile string
	// NBServerName and SBServerName, when set, are the names the servers'
	// certificates are checked against (a DNS name in their subjectAltName)
	// instead of each endpoint's host.
	NBServerName, SBServerName string
}

// ParseEndpoints splits an --ovn-*-address value into its endpoints and
// checks each one's syntax; flag names the flag in errors.
func ParseEndpoints(flag, address string) ([]string, error) {
	if strings.TrimSpace(address) == "" {
		return nil, fmt.Errorf("%s is empty", flag)
	}
	var out []string
	for _, ep := range strings.Split(address, ",") {
		ep = strings.TrimSpace(ep)
		scheme, rest, _ := strings.Cut(ep, ":")
		switch scheme {
		case "unix":
			if !strings.HasPrefix(rest, "/") {
				return nil, fmt.Errorf("%s %q: endpoint %q: the socket path must be absolute", flag, address, ep)
			}
		case "tcp", "ssl":
			host, port, err := net.SplitHostPort(rest)
			if err != nil || host == "" || port == "" {
				return nil, fmt.Errorf("%s %q: endpoint %q: want %s:HOST:PORT (IPv6 in brackets)", flag, address, ep, scheme)
			}
		default:
			return nil, fmt.Errorf("%s %q: must start with unix:, tcp: or ssl: (comma-separated for a RAFT cluster)", flag, address)
		}
		out = append(out, ep)
	}
	return out, nil
}

// config builds the client TLS configuration: the CA pool now, the client
// key pair at every handshake.
func (t TLS) config() (*tls.Config, error) {
	if t.CertFile == "" || t.KeyFile == "" || t.CAFile == "" {
		return nil, errors.New("OVN TLS needs all of --ovn-client-cert, --ovn-client-key and --ovn-ca-cert")
	}
	pem, err := os.ReadFile(t.CAFile)
	if err != nil {
		return nil, fmt.Errorf("--ovn-ca-cert: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ovn-ca-cert %s: no PEM certificate found", t.CAFile)
	}
	// Fail now on a missing or mismatched key pair rather than at each dial.
	if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
		return nil, fmt.Errorf("--ovn-client-cert/--ovn-client-key: %w", err)
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		RootCAs:    pool,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("OVN client certificate: %w", err)
			}
			return &pair, nil
		},
	}, nil
}

// TLSConfigs builds the TLS configurations of the Northbound and Southbound
// connections from cfg (nil, nil without TLS files).
func TLSConfigs(cfg Config) (nb, sb *tls.Config, err error) {
	if cfg.TLS == (TLS{}) {
		return nil, nil, nil
	}
	base, err := cfg.TLS.config()
	if err != nil {
		return nil, nil, err
	}
	nb, sb = base.Clone(), base.Clone()
	nb.ServerName, sb.ServerName = cfg.TLS.NBServerName, cfg.TLS.SBServerName
	return nb, sb, nil
}
