package authn

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/request"
)

// ReadTokenFile reads kube-apiserver's --token-auth-file: CSV lines of
// token,user,uid[,"group1,group2"]. A bad line is an error naming path:line.
func ReadTokenFile(path string) (map[string]*request.User, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseTokenCSV(path, f)
}

// ParseTokenCSV parses token-file CSV from r; name is the file name used in errors.
// Blank lines are skipped; a line with fewer than three columns, an empty token or user
// name, or a token given twice is an error "name:line: ...".
func ParseTokenCSV(name string, r io.Reader) (map[string]*request.User, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	tokens := map[string]*request.User{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return tokens, nil
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s:%d: %v", name, pe.StartLine, pe.Err)
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		switch {
		case len(rec) < 3:
			return nil, fmt.Errorf("%s:%d: want at least 3 columns (token, user name, user uid), found %d", name, line, len(rec))
		case rec[0] == "":
			return nil, fmt.Errorf("%s:%d: empty token", name, line)
		case rec[1] == "":
			return nil, fmt.Errorf("%s:%d: empty user name", name, line)
		case tokens[rec[0]] != nil:
			return nil, fmt.Errorf("%s:%d: token given twice", name, line)
		}
		u := &request.User{Name: rec[1], UID: rec[2]}
		if len(rec) >= 4 && rec[3] != "" {
			u.Groups = strings.Split(rec[3], ",")
		}
		tokens[rec[0]] = u
	}
}
