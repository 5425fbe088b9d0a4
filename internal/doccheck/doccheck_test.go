package doccheck

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// maxReadmeLines bounds README.md: it is for users; the rest is in docs/.
const maxReadmeLines = 250

func TestReadmeIsShort(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, at most %d: move contributor and maintainer material to docs/", n, maxReadmeLines)
	}
}

// TestDocumentPathsExist reads README.md and docs/*.md: every relative
// link must name an existing file or directory, and every backticked span
// that reads as a repository path (no spaces, a '/', and a first element
// that is a top-level directory of the repository) must exist.
func TestDocumentPathsExist(t *testing.T) {
	root := repoRoot(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	tops := topDirs(t, root)
	module := modulePath(t, root)
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		text := unfenced(string(data))
		for _, l := range links(text) {
			target := doc
			if l.target != "" {
				target = filepath.Join(filepath.Dir(doc), l.target)
			}
			if !exists(target) {
				t.Errorf("%s:%d: link (%s) names no file", rel, l.line, l.target)
			} else if l.fragment != "" && strings.HasSuffix(target, ".md") && !hasHeading(t, target, l.fragment) {
				t.Errorf("%s:%d: link (%s#%s): no heading of that anchor", rel, l.line, l.target, l.fragment)
			}
		}
		for _, p := range codePaths(text, tops, module) {
			if !pathExists(root, p.target) {
				t.Errorf("%s:%d: `%s` names no file or directory of the repository", rel, p.line, p.target)
			}
		}
	}
}

// ref is a path a document names (with its #fragment, for a link), and
// the line it is on.
type ref struct {
	target   string
	line     int
	fragment string
}

var (
	linkRe = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeRe = regexp.MustCompile("`([^`]+)`")
	// braceRe is a shell brace list, as in dataplane/controllers/{layer2,layer3}.
	braceRe = regexp.MustCompile(`\{([^{}]*,[^{}]*)\}`)
	// placeholderRe is a placeholder such as <node> in a path.
	placeholderRe = regexp.MustCompile(`<[^<>/]+>`)
)

// unfenced blanks the lines of fenced code blocks (commands and their
// output, not paths of the repository), keeping line numbers.
func unfenced(s string) string {
	lines := strings.Split(s, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

func lineOf(s string, offset int) int { return strings.Count(s[:offset], "\n") + 1 }

// links are the relative link targets of s and their fragments; a link
// within the document ("#anchor") has the target "".
func links(s string) []ref {
	var out []ref
	for _, m := range linkRe.FindAllStringSubmatchIndex(s, -1) {
		target := s[m[2]:m[3]]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		target, fragment, _ := strings.Cut(target, "#")
		out = append(out, ref{target: target, line: lineOf(s, m[0]), fragment: fragment})
	}
	return out
}

// hasHeading reports whether the Markdown file doc has a heading whose
// anchor (GitHub's: lower case, punctuation dropped, spaces to '-') is
// anchor.
func hasHeading(t *testing.T, doc, anchor string) bool {
	t.Helper()
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(unfenced(string(data)), "\n") {
		title, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " ")
		if !ok || !strings.HasPrefix(l, "#") {
			continue
		}
		slug := strings.Map(func(r rune) rune {
			switch {
			case r == ' ':
				return '-'
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				return unicode.ToLower(r)
			}
			return -1
		}, strings.TrimSpace(title))
		if slug == anchor {
			return true
		}
	}
	return false
}

// codePaths are the backticked spans of s that read as repository paths:
// no white space, a '/', and a first element in tops (after the module
// path and a leading "./").
func codePaths(s string, tops map[string]bool, module string) []ref {
	var out []ref
	for _, m := range codeRe.FindAllStringSubmatchIndex(s, -1) {
		span := s[m[2]:m[3]]
		if strings.IndexFunc(span, unicode.IsSpace) >= 0 || !strings.Contains(span, "/") {
			continue
		}
		p := strings.TrimPrefix(strings.TrimPrefix(span, module+"/"), "./")
		first, _, _ := strings.Cut(p, "/")
		if tops[first] {
			out = append(out, ref{target: p, line: lineOf(s, m[0])})
		}
	}
	return out
}

// pathExists reports whether p, relative to root, names something: a
// Go package pattern's "/..." is dropped, a brace list must exist in every
// alternative, a placeholder (<node>) or '*' matches any name, and
// dir.Name (a Go identifier of the package in dir) stands for dir.
func pathExists(root, p string) bool {
	p = strings.TrimSuffix(p, "/...")
	if m := braceRe.FindStringSubmatchIndex(p); m != nil {
		for _, alt := range strings.Split(p[m[2]:m[3]], ",") {
			if !pathExists(root, p[:m[0]]+alt+p[m[1]:]) {
				return false
			}
		}
		return true
	}
	p = placeholderRe.ReplaceAllString(p, "*")
	full := filepath.Join(root, filepath.FromSlash(p))
	if strings.ContainsAny(p, "*?[") {
		matches, err := filepath.Glob(full)
		return err == nil && len(matches) > 0
	}
	if exists(full) {
		return true
	}
	dir, ident := p, ""
	if i := strings.LastIndex(p, "/"); i >= 0 {
		if j := strings.LastIndex(p[i:], "."); j > 0 {
			dir, ident = p[:i+j], p[i+j+1:]
		}
	}
	return ident != "" && unicode.IsUpper([]rune(ident)[0]) && exists(filepath.Join(root, filepath.FromSlash(dir)))
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// repoRoot is the directory of go.mod above the test's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for !exists(filepath.Join(dir, "go.mod")) {
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	return dir
}

// topDirs are the repository's top-level directories: not hidden, and not
// ignored by a "/name/" line of .gitignore (build output such as bin/).
func topDirs(t *testing.T, root string) map[string]bool {
	t.Helper()
	ignored := map[string]bool{}
	if f, err := os.Open(filepath.Join(root, ".gitignore")); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "/") {
				ignored[strings.Trim(l, "/")] = true
			}
		}
		f.Close()
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	tops := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !ignored[e.Name()] {
			tops[e.Name()] = true
		}
	}
	return tops
}

func modulePath(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if m, ok := strings.CutPrefix(l, "module "); ok {
			return strings.TrimSpace(m)
		}
	}
	t.Fatal(fmt.Errorf("go.mod names no module"))
	return ""
}

// The checks themselves, on a tree of their own.
func TestPathRules(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"cmd/a", "pkg/x/l2", "pkg/x/l3"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "pkg/x/l2/a_test.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		"cmd/a": true, "cmd/a/...": true, "cmd/b": false,
		"pkg/x/{l2,l3}": true, "pkg/x/{l2,l4}": false,
		"pkg/x/<name>/a_test.go": true, "pkg/x/*_test.go": false, "pkg/x/l2/*_test.go": true,
		"pkg/x/l2.Setup": true, "pkg/x/l2.setup": false, "pkg/x/l9.Setup": false,
	} {
		if got := pathExists(root, p); got != want {
			t.Errorf("pathExists(%q) = %v, want %v", p, got, want)
		}
	}
	text := unfenced("see `cmd/a` and `pkg/x`,\n```\n`cmd/in-a-fence`\n```\n`k8s.ovn.org/network` `make run` `example.com/m/cmd/b` [l](docs/x.md#y) [u](https://e/x)\n[a](#here)\n")
	tops := map[string]bool{"cmd": true, "pkg": true}
	var got []string
	for _, r := range codePaths(text, tops, "example.com/m") {
		got = append(got, fmt.Sprintf("%s:%d", r.target, r.line))
	}
	for _, r := range links(text) {
		got = append(got, fmt.Sprintf("link %s:%d", r.target, r.line))
	}
	doc := filepath.Join(root, "doc.md")
	if err := os.WriteFile(doc, []byte("# Title\n\n## Install with Helm, for users\n```\n# not a heading\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for anchor, want := range map[string]bool{"title": true, "install-with-helm-for-users": true, "not-a-heading": false, "install": false} {
		if got := hasHeading(t, doc, anchor); got != want {
			t.Errorf("hasHeading(%q) = %v, want %v", anchor, got, want)
		}
	}
	if want := "cmd/a:1 pkg/x:1 cmd/b:5 link docs/x.md:5 link :6"; strings.Join(got, " ") != want {
		t.Errorf("found %q, want %q", strings.Join(got, " "), want)
	}
}
