package eval

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/test/kit"
)

// Tool names the eval's agent offers.
const (
	ToolList  = "list_files"
	ToolRead  = "read_file"
	ToolWrite = "write_file"
	ToolTests = "run_tests"
)

// Tools are the tools the agent declares. read_file, list_files and
// write_file have the names and path arguments of common agents', so
// intents knows them by default (read_file and list_files are always
// allowed; write_file's file_path is scope-checked); run_tests is added to
// intents.always_allowed by the eval.
var Tools = []kit.Tool{
	{Name: ToolList, Description: "List the files under a directory of the workspace, one path a line.",
		Schema: `{"type":"object","properties":{"path":{"type":"string","description":"directory relative to the workspace root; empty for the root"}}}`},
	{Name: ToolRead, Description: "Read a file of the workspace.",
		Schema: `{"type":"object","properties":{"path":{"type":"string","description":"file path relative to the workspace root"}},"required":["path"]}`},
	{Name: ToolWrite, Description: "Create or overwrite a file of the workspace with the given content.",
		Schema: `{"type":"object","properties":{"file_path":{"type":"string","description":"file path relative to the workspace root"},` +
			`"content":{"type":"string","description":"the whole new content of the file"}},"required":["file_path","content"]}`},
	{Name: ToolTests, Description: "Run the project's tests and return their output.",
		Schema: `{"type":"object","properties":{"package":{"type":"string","description":"package to test; empty for all"}}}`},
}

// Workspace is a task's files in a temporary directory, where the agent's
// tool calls run.
type Workspace struct {
	Root string
	task *Task
}

// NewWorkspace writes task's files and policy under a fresh directory in
// dir (os.TempDir when empty).
func NewWorkspace(dir string, task *Task) (*Workspace, error) {
	root, err := os.MkdirTemp(dir, "shepherd-eval-"+task.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("eval: workspace: %w", err)
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, fmt.Errorf("eval: workspace: %w", err)
	}
	ws := &Workspace{Root: root, task: task}
	files := map[string]string{PolicyPath: task.Policy}
	for p, c := range task.Files {
		files[p] = c
	}
	for p, c := range files {
		if err := ws.Write(p, c); err != nil {
			_ = ws.Remove()
			return nil, err
		}
	}
	return ws, nil
}

// Remove deletes the workspace.
func (ws *Workspace) Remove() error { return os.RemoveAll(ws.Root) }

// resolve maps a path the model gave to a file under Root; a path that
// leaves the workspace is an error.
func (ws *Workspace) resolve(p string) (string, error) {
	clean := filepath.Clean(filepath.Join(ws.Root, filepath.FromSlash(p)))
	if filepath.IsAbs(p) {
		clean = filepath.Clean(p)
	}
	if clean != ws.Root && !strings.HasPrefix(clean, ws.Root+string(filepath.Separator)) {
		return "", fmt.Errorf("%q is outside the workspace", p)
	}
	return clean, nil
}

// Read returns the content of the file at p.
func (ws *Workspace) Read(p string) (string, error) {
	f, err := ws.resolve(p)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	return string(b), nil
}

// Write creates or replaces the file at p.
func (ws *Workspace) Write(p, content string) error {
	f, err := ws.resolve(p)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// List returns the files under directory p, relative to the root, sorted.
func (ws *Workspace) List(p string) ([]string, error) {
	dir, err := ws.resolve(p)
	if err != nil {
		return nil, err
	}
	var out []string
	err = filepath.WalkDir(dir, func(f string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			rel, _ := filepath.Rel(ws.Root, f)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p, err)
	}
	slices.Sort(out)
	return out, nil
}

// Run executes one tool call and returns the text the agent sends back as
// its result. A failing call is answered with an error text, as agents do.
func (ws *Workspace) Run(name, args string) string {
	out, err := ws.run(name, args)
	if err != nil {
		return "error: " + err.Error()
	}
	return out
}

func (ws *Workspace) run(name, args string) (string, error) {
	a := gjson.Parse(args)
	switch name {
	case ToolList:
		files, err := ws.List(a.Get("path").String())
		if err != nil {
			return "", err
		}
		return strings.Join(files, "\n"), nil
	case ToolRead:
		return ws.Read(a.Get("path").String())
	case ToolWrite:
		p := a.Get("file_path").String()
		if p == "" {
			return "", errors.New("file_path is required")
		}
		content := a.Get("content").String()
		if err := ws.Write(p, content); err != nil {
			return "", err
		}
		return fmt.Sprintf("wrote %d bytes to %s", len(content), p), nil
	case ToolTests:
		if ws.task.Check == nil {
			return "no tests", nil
		}
		_, out := ws.task.Check(ws)
		return out, nil
	}
	return "", fmt.Errorf("unknown tool %q", name)
}
