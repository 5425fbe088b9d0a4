package ovsdbserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is a throw-away certificate authority with one server and one client
// certificate, written as PEM files for ovsdb-server's --ca-cert,
// --certificate and --private-key and for udnkit's --ovn-ca-cert,
// --ovn-client-cert and --ovn-client-key. Tests make it in a temporary
// directory; nothing here is meant to be kept.
type PKI struct {
	CACert                string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// ServerDNSName is the DNS name in the server certificate (besides the IP
// 127.0.0.1), for clients that check a name rather than the endpoint's host.
const ServerDNSName = "ovnnb.udnkit.test"

// NewPKI writes a fresh CA named name and, signed by it, a server certificate
// for 127.0.0.1 and ServerDNSName and a client certificate, into dir.
func NewPKI(dir, name string) (*PKI, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name + " CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	p := &PKI{
		CACert:     filepath.Join(dir, name+"-ca.pem"),
		ServerCert: filepath.Join(dir, name+"-server.pem"),
		ServerKey:  filepath.Join(dir, name+"-server-key.pem"),
		ClientCert: filepath.Join(dir, name+"-client.pem"),
		ClientKey:  filepath.Join(dir, name+"-client-key.pem"),
	}
	if err := writePEM(p.CACert, "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, certFile, keyFile string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		}
		if usage == x509.ExtKeyUsageServerAuth {
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
			tmpl.DNSNames = []string{ServerDNSName}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
			return err
		}
		return writePEM(keyFile, "PRIVATE KEY", keyDER)
	}
	if err := leaf(2, "ovnnb", x509.ExtKeyUsageServerAuth, p.ServerCert, p.ServerKey); err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
	}
	if err := leaf(3, "udnkit", x509.ExtKeyUsageClientAuth, p.ClientCert, p.ClientKey); err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	return p, nil
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}
