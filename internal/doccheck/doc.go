// Package doccheck holds only a test: README.md stays short, and every
// relative link and every repository path written in backticks in README.md
// and docs/*.md names a file or directory that exists, so the documents
// cannot name code that moved or went away.
package doccheck
