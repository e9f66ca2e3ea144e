package main

// Argo CD: a health check from argocd-cm (resource.customizations.health.<group>_<Kind>) run the way Argo CD's
// util/lua runs one (its runLua and ExecuteHealthLua): a gopher-lua state with the standard libraries skipped,
// then only package, base and table opened (Argo CD also opens a reduced `os`; a script of ours must not need it,
// so it is left closed here), a 1 s deadline on the state's context, the object as the global `obj` (decoded
// as Argo CD decodes it), and the returned table read as a health status whose code must be one Argo CD knows.
// The gitops-engine module that holds this code does not build here (test/gitops/README.md).

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// healthStatus is Argo CD's health.HealthStatus as a Lua script returns it.
type healthStatus struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// The codes Argo CD accepts from a script (isValidHealthStatusCode); anything else becomes Unknown.
var validHealthCodes = map[string]bool{"Unknown": true, "Progressing": true, "Suspended": true, "Healthy": true, "Degraded": true, "Missing": true}

func executeHealthLua(obj map[string]any, script string, timeout time.Duration) (*healthStatus, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", decodeValue(l, obj))
	if err := l.DoString(script); err != nil {
		return nil, err
	}
	ret := l.Get(-1)
	switch ret.Type() {
	case lua.LTNil:
		return &healthStatus{}, nil
	case lua.LTTable:
		raw, err := json.Marshal(encodeValue(ret))
		if err != nil {
			return nil, err
		}
		hs := &healthStatus{}
		if err := json.Unmarshal(raw, hs); err != nil {
			// An empty table encodes as an array: Argo CD reads that as an empty status.
			if string(raw) == "[]" {
				return &healthStatus{}, nil
			}
			return nil, err
		}
		if !validHealthCodes[hs.Status] {
			return &healthStatus{Status: "Unknown", Message: "Lua returned an invalid health status"}, nil
		}
		return hs, nil
	}
	return nil, fmt.Errorf("expect table output from Lua script, not %s", ret.Type().String())
}

// decodeValue turns the object into Lua values as Argo CD's decodeValue does (numbers of any Go type become
// numbers, lists 1-based tables, maps tables keyed by string, anything else nil).
func decodeValue(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case json.Number:
		return lua.LString(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(decodeValue(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for key, item := range v {
			t.RawSetH(lua.LString(key), decodeValue(l, item))
		}
		return t
	}
	return lua.LNil
}

// encodeValue turns the returned Lua value into JSON-able Go values as gopher-json (Argo CD's luajson) does: a
// table with keys 1..n is an array (an empty table too), any other table an object keyed by its string keys.
func encodeValue(v lua.LValue) any {
	switch x := v.(type) {
	case lua.LBool:
		return bool(x)
	case lua.LNumber:
		return float64(x)
	case lua.LString:
		return string(x)
	case *lua.LTable:
		if n := x.MaxN(); n > 0 || isEmpty(x) {
			arr := make([]any, 0, n)
			for i := 1; i <= n; i++ {
				arr = append(arr, encodeValue(x.RawGetInt(i)))
			}
			return arr
		}
		obj := map[string]any{}
		x.ForEach(func(k, val lua.LValue) {
			if s, ok := k.(lua.LString); ok {
				obj[string(s)] = encodeValue(val)
			}
		})
		return obj
	}
	return nil
}

func isEmpty(t *lua.LTable) bool {
	k, _ := t.Next(lua.LNil)
	return k == lua.LNil
}

func readObjectFile(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	obj := map[string]any{}
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return obj, nil
}

type healthResult struct {
	File    string `json:"file"`
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

func runHealth(args []string) (any, error) {
	fs := flag.NewFlagSet("health", flag.ExitOnError)
	scriptFile := fs.String("script", "", "the health.lua to run")
	timeout := fs.Duration("timeout", time.Second, "the Lua state's deadline (Argo CD: 1s)")
	_ = fs.Parse(args)
	script, err := os.ReadFile(*scriptFile)
	if err != nil {
		return nil, err
	}
	out := []healthResult{}
	for _, file := range fs.Args() {
		r := healthResult{File: file}
		obj, err := readObjectFile(file)
		if err == nil {
			var hs *healthStatus
			hs, err = executeHealthLua(obj, string(script), *timeout)
			if err == nil {
				r.Status, r.Message = hs.Status, hs.Message
			}
		}
		if err != nil {
			r.Error = err.Error()
		}
		out = append(out, r)
	}
	return out, nil
}

// Argo CD's health_test.yaml: each test names an object file and the health the script must report for it.
type healthTests struct {
	Tests []struct {
		InputPath    string       `json:"inputPath"`
		HealthStatus healthStatus `json:"healthStatus"`
	} `json:"tests"`
}

type fixtureResult struct {
	Script    string       `json:"script"`
	InputPath string       `json:"inputPath"`
	Expected  healthStatus `json:"expected"`
	Got       healthStatus `json:"got"`
	Error     string       `json:"error,omitempty"`
	OK        bool         `json:"ok"`
}

func runFixtures(args []string) (any, error) {
	fs := flag.NewFlagSet("fixtures", flag.ExitOnError)
	dir := fs.String("dir", "", "a resource_customizations directory")
	timeout := fs.Duration("timeout", time.Second, "the Lua state's deadline (Argo CD: 1s)")
	_ = fs.Parse(args)
	var scripts []string
	err := filepath.WalkDir(*dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "health.lua" {
			scripts = append(scripts, path)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(scripts) == 0 {
		return nil, fmt.Errorf("no health.lua under %s", *dir)
	}
	sort.Strings(scripts)
	out := []fixtureResult{}
	for _, path := range scripts {
		script, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		raw, err := os.ReadFile(filepath.Join(filepath.Dir(path), "health_test.yaml"))
		if err != nil {
			return nil, err
		}
		var tests healthTests
		if err := yaml.UnmarshalStrict(raw, &tests); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(filepath.Dir(path), "health_test.yaml"), err)
		}
		for _, t := range tests.Tests {
			r := fixtureResult{Script: path, InputPath: t.InputPath, Expected: t.HealthStatus}
			obj, err := readObjectFile(filepath.Join(filepath.Dir(path), t.InputPath))
			if err == nil {
				var hs *healthStatus
				if hs, err = executeHealthLua(obj, string(script), *timeout); err == nil {
					r.Got = *hs
				}
			}
			if err != nil {
				r.Error = err.Error()
			}
			r.OK = err == nil && r.Got == r.Expected
			out = append(out, r)
		}
	}
	return out, nil
}

type kstatusResult struct {
	File    string `json:"file"`
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

func runKstatus(files []string) (any, error) {
	out := []kstatusResult{}
	for _, file := range files {
		r := kstatusResult{File: file}
		// Decoded as the API machinery decodes objects (integers as int64, which kstatus requires).
		u := &unstructured.Unstructured{}
		raw, err := os.ReadFile(file)
		if err == nil {
			raw, err = yaml.YAMLToJSON(raw)
		}
		if err == nil {
			err = u.UnmarshalJSON(raw)
		}
		if err == nil {
			var res *status.Result
			if res, err = status.Compute(u); err == nil {
				r.Status, r.Message = res.Status.String(), res.Message
			}
		}
		if err != nil {
			r.Error = err.Error()
		}
		out = append(out, r)
	}
	return out, nil
}
